//! Every test of the BPF ISA conformance suite passes in the interpreter
//! and in the JIT, checked and unchecked, with and without counting.

use std::path::PathBuf;

fn suite_dir() -> PathBuf {
    match std::env::var_os("SLUICE_CONFORMANCE_DIR") {
        Some(dir) => dir.into(),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/bpf_conformance/tests"),
    }
}

fn check(options: &[&str]) {
    let dir = suite_dir();
    let report = conformance::run_suite(&dir, options).unwrap_or_else(|e| {
        panic!(
            "cannot read the conformance suite at {}: {e}",
            dir.display()
        )
    });
    for t in report.failures() {
        eprintln!("FAIL {}: {}", t.name, t.reason.as_deref().unwrap_or(""));
    }
    println!(
        "conformance ({options:?}): {} passed, {} failed",
        report.passed, report.failed
    );
    assert_eq!(
        report.failed, 0,
        "{} conformance tests failed",
        report.failed
    );
    assert_eq!(report.passed, 313, "the suite should have 313 tests");
}

#[test]
fn interpreter_passes_the_whole_suite() {
    check(&[]);
}

#[test]
fn counting_interpreter_passes_the_whole_suite() {
    check(&["--counting"]);
}

#[cfg(target_arch = "x86_64")]
#[test]
fn jit_passes_the_whole_suite_checked_and_fast() {
    check(&["--jit"]);
    check(&["--jit", "--counting"]);
    check(&["--jit-fast"]);
}
