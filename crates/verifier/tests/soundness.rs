//! Soundness: random programs the verifier accepts never trip a run-time
//! check of the checked interpreter, over random packets and map contents.
//! `SOUNDNESS_PROGRAMS` sets how many programs (100 000 by default); the
//! fuzz target `verifier` runs the same property on fuzzer input.

#[path = "support/soundness.rs"]
mod soundness;

use soundness::Setup;
use verifier::randprog;

#[test]
fn accepted_random_programs_never_trip_a_runtime_check() {
    let n: u64 = std::env::var("SOUNDNESS_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let setup = Setup::new();
    let mut accepted = 0u64;
    let mut failures = Vec::new();
    for seed in 0..n {
        let text = randprog::program(seed);
        let insns = isa::assemble(&text)
            .unwrap_or_else(|e| panic!("seed {seed}: generator wrote bad assembly: {e}\n{text}"));
        match setup.check(insns, seed) {
            Ok(true) => accepted += 1,
            Ok(false) => {}
            Err(e) => failures.push(format!("seed {seed}: {e}\n{text}")),
        }
        if failures.len() >= 3 {
            break;
        }
    }
    eprintln!("{n} random programs, {accepted} accepted and run over 4 packets each");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The generator must exercise both verdicts.
    assert!(accepted * 10 > n, "only {accepted} of {n} accepted");
    assert!(
        accepted * 10 < n * 9,
        "{accepted} of {n} accepted: too few rejections to be a test"
    );
}
