//! The fuzzers' kept inputs, replayed: every file under
//! `fuzz/regressions/<target>/` goes through the same check as the fuzz
//! target `<target>` (fuzz/checks/, shared with the targets), which panics
//! when the input breaks the target's property. Each was a crash once;
//! here none may be one again.

#[allow(dead_code, clippy::all)]
#[path = "../../../fuzz/checks/mod.rs"]
mod checks;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions")
}

/// Every kept input, as (target, file).
fn kept() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(regressions()).expect("fuzz/regressions") {
        let dir = dir.unwrap().path();
        let target = dir.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            checks::TARGETS.contains(&target.as_str()),
            "{}: no fuzz target {target}",
            dir.display()
        );
        for f in std::fs::read_dir(&dir).unwrap() {
            out.push((target.clone(), f.unwrap().path()));
        }
    }
    out.sort();
    out
}

#[test]
fn kept_fuzz_inputs_keep_their_targets_properties() {
    let kept = kept();
    // The assembler's first find (crates/isa/tests/bad_input.rs has it too).
    assert!(
        kept.iter()
            .any(|(t, f)| t == "assemble" && f.ends_with("lddw-parentheses-reversed"))
    );
    let mut failed = Vec::new();
    for (target, file) in &kept {
        let data = std::fs::read(file).unwrap();
        match catch_unwind(AssertUnwindSafe(|| checks::run(target, &data))) {
            Ok(known) => assert!(known),
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failed.push(format!("{}: {msg}", file.display()));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} kept inputs fail:\n{}",
        failed.len(),
        failed.join("\n")
    );
}
