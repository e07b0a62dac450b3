//! Verifier soundness on fuzzer input: the first byte chooses between a
//! generated program (the rest are `verifier::randprog`'s decisions, one
//! byte each, so that the fuzzer's mutations change one part of a program
//! and its coverage guides them) and raw bytecode (the rest decoded as
//! instructions). Nothing may panic, and a program the
//! verifier accepts must run in the checked interpreter without tripping a
//! run-time check.
#![no_main]

#[path = "../checks/verifier.rs"]
mod check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| check::check(data));
