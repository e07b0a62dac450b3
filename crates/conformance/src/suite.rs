//! Runs every `.data` file of a directory through the plugin path.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::data::TestCase;
use crate::plugin::{PluginRequest, run_plugin};

/// A conformance test's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestResult {
    Pass,
    Fail,
}

#[derive(Clone, Debug, Serialize)]
pub struct TestReport {
    pub name: String,
    pub outcome: TestResult,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SuiteReport {
    pub passed: usize,
    pub failed: usize,
    pub tests: Vec<TestReport>,
}

impl SuiteReport {
    pub fn failures(&self) -> impl Iterator<Item = &TestReport> {
        self.tests.iter().filter(|t| t.outcome == TestResult::Fail)
    }
}

/// The `.data` files of `dir`, sorted by name.
pub fn test_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "data"))
        .collect();
    files.sort();
    Ok(files)
}

/// Assembles, encodes and runs one test exactly as the suite's runner
/// drives a plugin (program as hex on stdin, memory as a hex argument).
pub fn run_case(case: &TestCase, options: &[&str]) -> Result<(), String> {
    let insns = isa::assemble(&case.asm).map_err(|e| format!("assembler: {e}"))?;
    let bytes = isa::encode(&insns);
    if let Some(raw) = &case.raw {
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if &words != raw {
            return Err(format!(
                "encoding {words:#018x?} differs from the -- raw section {raw:#018x?}"
            ));
        }
    }
    let hex = |b: &[u8]| {
        b.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let mut args = vec![hex(&case.mem)];
    args.extend(options.iter().map(|o| o.to_string()));
    let req = PluginRequest::from_args(&args, hex(&bytes).as_bytes()).map_err(|e| e.0)?;
    match (run_plugin(&req), &case.result, &case.error) {
        (Ok(r0), Some(want), _) if r0 == *want => Ok(()),
        (Ok(r0), Some(want), _) => Err(format!("r0 = {r0:#x}, expected {want:#x}")),
        (Ok(r0), None, Some(e)) => Err(format!("r0 = {r0:#x}, expected the error `{e}`")),
        (Ok(_), None, None) => Err("the test gives neither a result nor an error".into()),
        (Err(_), _, Some(_)) => Ok(()),
        (Err(e), _, None) => Err(format!("error: {e}")),
    }
}

/// Runs every test of `dir` with the plugin `options` (`--counting`,
/// `--jit`, `--jit-fast`).
pub fn run_suite(dir: &Path, options: &[&str]) -> std::io::Result<SuiteReport> {
    let mut tests = Vec::new();
    for path in test_files(dir)? {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path)?;
        let result = TestCase::parse(&text).and_then(|case| run_case(&case, options));
        tests.push(TestReport {
            name,
            outcome: if result.is_ok() {
                TestResult::Pass
            } else {
                TestResult::Fail
            },
            reason: result.err(),
        });
    }
    let passed = tests
        .iter()
        .filter(|t| t.outcome == TestResult::Pass)
        .count();
    Ok(SuiteReport {
        passed,
        failed: tests.len() - passed,
        tests,
    })
}
