//! Any bytes as OpenFlow 1.3 messages: decoding never panics, and what
//! decodes encodes to bytes that decode to the same message. The bytes are
//! tried as they are, as a stream cut by `frame_len`, and with the header's
//! length mended to theirs (so that bodies, not lengths, get explored).
#![no_main]

#[path = "../checks/openflow.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
