//! Any bytes as IPFIX read back by a collector: a stream of messages
//! (a file, RFC 5655, or TCP) and the same bytes as one datagram, decoded
//! with the templates the stream announced; and as `nfdump -o raw` text.
//! Decoding never panics; every flow decoded that sluice could export
//! (`Flow::check`) encodes, with sluice's encoder, to messages that decode
//! to the same flow (to the millisecond, as IPFIX carries times).
#![no_main]

#[path = "../checks/ipfix.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
