//! Any text: the assembler never panics, and what it accepts disassembles
//! and re-assembles to the same bytes.
#![no_main]

#[path = "../checks/assemble.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
