//! Verifier soundness on fuzzer input: the first byte chooses between a
//! generated program (the rest are `verifier::randprog`'s decisions, one
//! byte each, so that the fuzzer's mutations change one part of a program
//! and its coverage guides them) and raw bytecode (the rest decoded as
//! instructions). Nothing may panic, and a program the
//! verifier accepts must run in the checked interpreter without tripping a
//! run-time check.
#[path = "../../crates/verifier/tests/support/soundness.rs"]
mod soundness;

use std::sync::OnceLock;

pub fn check(data: &[u8]) {
    static SETUP: OnceLock<soundness::Setup> = OnceLock::new();
    let setup = SETUP.get_or_init(soundness::Setup::new);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut seed = [0u8; 8];
    for (i, b) in rest.iter().take(8).enumerate() {
        seed[i] = *b;
    }
    let seed = u64::from_le_bytes(seed);
    let insns = if mode % 2 == 0 {
        isa::assemble(&verifier::randprog::program_from(rest))
            .expect("the generator writes valid assembly")
    } else {
        match isa::decode(rest) {
            Ok(insns) if !insns.is_empty() => insns,
            _ => return,
        }
    };
    if let Err(e) = setup.check(insns, seed) {
        panic!("{e}");
    }
}
