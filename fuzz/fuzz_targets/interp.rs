//! Any bytes as a program over a small context and packet: loading and
//! running never panic, and the fast and counting modes agree.
#![no_main]

#[path = "../checks/interp.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
