//! Verifier soundness on fuzzer input: the first byte chooses between a
//! generated program (the rest seeds `verifier::randprog`) and raw bytecode
//! (the rest decoded as instructions). Nothing may panic, and a program the
//! verifier accepts must run in the checked interpreter without tripping a
//! run-time check.
#![no_main]

#[path = "../checks/verifier.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
