//! Any bytes as a program over a small context and packet: the interpreter
//! and the JIT (checked, counting, and unchecked where the checked run
//! succeeded) give the same r0, error, counts and memory.
#![no_main]

#[path = "../checks/jit.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
