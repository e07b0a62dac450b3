//! Every test of the BPF ISA conformance suite passes in the interpreter.

use std::path::PathBuf;

fn suite_dir() -> PathBuf {
    match std::env::var_os("SLUICE_CONFORMANCE_DIR") {
        Some(dir) => dir.into(),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/conformance/bpf_conformance/tests"),
    }
}

fn check(counting: bool) {
    let dir = suite_dir();
    let report = conformance::run_suite(&dir, counting).unwrap_or_else(|e| {
        panic!(
            "cannot read the conformance suite at {}: {e}",
            dir.display()
        )
    });
    for t in report.failures() {
        eprintln!("FAIL {}: {}", t.name, t.reason.as_deref().unwrap_or(""));
    }
    println!(
        "conformance ({}): {} passed, {} failed",
        if counting { "counting" } else { "fast" },
        report.passed,
        report.failed
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
    check(false);
}

#[test]
fn counting_interpreter_passes_the_whole_suite() {
    check(true);
}
