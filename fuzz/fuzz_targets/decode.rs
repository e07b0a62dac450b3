//! Any bytes: decoding never panics, and what decodes re-encodes to the same
//! bytes and survives a trip through the text form.
#![no_main]

#[path = "../checks/decode.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
