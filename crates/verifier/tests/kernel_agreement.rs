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
    let mut tally: BTreeMap<(bool, bool), u64> = BTreeMap::new();
    let mut only_sluice = Vec::new();
    let mut only_kernel = Vec::new();
    let mut kernel_bugs = Vec::new();
    for seed in 0..n {
        let text = randprog::program(seed);
        let program = Setup::program(isa::assemble(&text).unwrap());
        let ours = setup.accepts(&program);
        let theirs = kernel::verify::verify_program(&program, setup.maps(), None, &|_| None)
            .unwrap_or_else(|e| panic!("seed {seed}: the kernel load failed: {e}"));
        if !theirs.accepted && theirs.reason().contains("verifier bug") {
            // The kernel's own internal error (its message says so), not a
            // verdict on the program.
            kernel_bugs.push(format!("seed {seed}: {}", theirs.reason()));
            continue;
        }
        *tally.entry((ours, theirs.accepted)).or_default() += 1;
        match (ours, theirs.accepted) {
            (true, false) => only_sluice.push(format!("seed {seed}: {}", theirs.reason())),
            (false, true) => only_kernel.push(format!(
                "seed {seed}: {}",
                setup.rejection(&program).unwrap_or_default()
            )),
            _ => {}
        }
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
