//! The generated programs against the running kernel's verifier: every
//! program sluice accepts and the kernel rejects is reported with the
//! kernel's reason (an accept the kernel would refuse is where an unsound
//! rule hides), and so is the other way round. Root only; loud skip else.
//! A load the kernel fails with "verifier bug" (its own internal error,
//! seen on some bpf-to-bpf calls beside callbacks) is listed apart.
//! `AGREEMENT_PROGRAMS` sets how many programs (2000 by default).

#[path = "support/soundness.rs"]
mod soundness;

use std::collections::BTreeMap;

use soundness::Setup;
use verifier::randprog;

#[test]
fn generated_programs_get_the_kernels_verdicts() {
    if !testkit::kernel_available("generated programs against the kernel's verifier") {
        return;
    }
    let n: u64 = std::env::var("AGREEMENT_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let setup = Setup::new();
    // Two workers (the machine has two cores), each every other seed; the
    // outcomes are then taken in seed order, as one worker would.
    let outcomes: BTreeMap<u64, Outcome> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let setup = &setup;
                s.spawn(move || {
                    (w..n)
                        .step_by(2)
                        .map(|seed| (seed, outcome(setup, seed)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut tally: BTreeMap<(bool, bool), u64> = BTreeMap::new();
    let mut only_sluice = Vec::new();
    let mut only_kernel = Vec::new();
    let mut kernel_bugs = Vec::new();
    for (seed, outcome) in outcomes {
        let (ours, theirs) = match outcome {
            Outcome::KernelBug(reason) => {
                // The kernel's own internal error (its message says so), not a
                // verdict on the program.
                kernel_bugs.push(format!("seed {seed}: {reason}"));
                continue;
            }
            Outcome::Verdicts {
                ours,
                theirs,
                reason,
            } => {
                match (ours, theirs) {
                    (true, false) => only_sluice.push(format!("seed {seed}: {reason}")),
                    (false, true) => only_kernel.push(format!("seed {seed}: {reason}")),
                    _ => {}
                }
                (ours, theirs)
            }
        };
        *tally.entry((ours, theirs)).or_default() += 1;
    }
    let count = |k| tally.get(&k).copied().unwrap_or(0);
    eprintln!(
        "{n} generated programs: both accept {}, both reject {}, only sluice accepts {}, only the kernel accepts {}",
        count((true, true)),
        count((false, false)),
        count((true, false)),
        count((false, true)),
    );
    for line in &kernel_bugs {
        eprintln!("  the kernel reports a bug of its own: {line}");
    }
    for line in &only_sluice {
        eprintln!("  sluice accepts, the kernel rejects: {line}");
    }
    for line in &only_kernel {
        eprintln!("  the kernel accepts, sluice rejects: {line}");
    }
    assert!(
        only_sluice.is_empty(),
        "sluice accepts {} generated programs that the kernel rejects",
        only_sluice.len()
    );
}

/// What one generated program gave.
enum Outcome {
    /// The kernel failed with an internal error of its own, with its reason.
    KernelBug(String),
    /// Both verdicts, with the reason of the side that rejected when they
    /// differ (the kernel's when only sluice accepts, sluice's when only
    /// the kernel does).
    Verdicts {
        ours: bool,
        theirs: bool,
        reason: String,
    },
}

fn outcome(setup: &Setup, seed: u64) -> Outcome {
    let text = randprog::program(seed);
    let program = Setup::program(isa::assemble(&text).unwrap());
    let ours = setup.accepts(&program);
    let theirs = kernel::verify::verify_program(&program, setup.maps(), None, &|_| None)
        .unwrap_or_else(|e| panic!("seed {seed}: the kernel load failed: {e}"));
    if !theirs.accepted && theirs.reason().contains("verifier bug") {
        return Outcome::KernelBug(theirs.reason().to_string());
    }
    let reason = match (ours, theirs.accepted) {
        (true, false) => theirs.reason().to_string(),
        (false, true) => setup.rejection(&program).unwrap_or_default(),
        _ => String::new(),
    };
    Outcome::Verdicts {
        ours,
        theirs: theirs.accepted,
        reason,
    }
}
