//! Any bytes as a capture file (pcap or pcapng): reading never panics,
//! a source ends after its first error, every frame is appended whole, and
//! the link-type conversions (802.11 behind radio headers, Linux cooked,
//! ...) take any record.
#![no_main]

#[path = "../checks/captures.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
