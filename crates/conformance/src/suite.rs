//! Runs every `.data` file of a directory through the plugin path.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::data::TestCase;
use crate::plugin::{PluginError, PluginRequest, run_plugin};

/// Why one conformance test failed.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub(crate) enum CaseError {
    #[error("assembler: {0}")]
    Assembler(#[from] isa::AsmError),
    /// The assembled program's words are not the `-- raw` section's.
    #[error("encoding {words:#018x?} differs from the -- raw section {raw:#018x?}")]
    Encoding { words: Vec<u64>, raw: Vec<u64> },
    /// The plugin refused its arguments.
    #[error("{0}")]
    Request(PluginError),
    #[error("r0 = {r0:#x}, expected {want:#x}")]
    WrongResult { r0: u64, want: u64 },
    /// The program ran where the test expects an error.
    #[error("r0 = {r0:#x}, expected the error `{error}`")]
    NoError { r0: u64, error: String },
    #[error("the test gives neither a result nor an error")]
    NoExpectation,
    /// The program failed where the test expects a result.
    #[error("error: {0}")]
    Run(PluginError),
}

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
pub(crate) fn run_case(case: &TestCase, options: &[&str]) -> Result<(), CaseError> {
    let insns = isa::assemble(&case.asm)?;
    let bytes = isa::encode(&insns);
    if let Some(raw) = &case.raw {
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        if &words != raw {
            return Err(CaseError::Encoding {
                words,
                raw: raw.clone(),
            });
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
    let req =
        PluginRequest::from_args(&args, hex(&bytes).as_bytes()).map_err(CaseError::Request)?;
    match (run_plugin(&req), &case.result, &case.error) {
        (Ok(r0), Some(want), _) if r0 == *want => Ok(()),
        (Ok(r0), Some(want), _) => Err(CaseError::WrongResult { r0, want: *want }),
        (Ok(r0), None, Some(e)) => Err(CaseError::NoError {
            r0,
            error: e.clone(),
        }),
        (Ok(_), None, None) => Err(CaseError::NoExpectation),
        (Err(_), _, Some(_)) => Ok(()),
        (Err(e), _, None) => Err(CaseError::Run(e)),
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
        let result = TestCase::parse(&text)
            .map_err(|e| e.to_string())
            .and_then(|case| run_case(&case, options).map_err(|e| e.to_string()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_case_names_the_values() {
        let case = TestCase {
            asm: "mov r0, 1\nexit\n".into(),
            result: Some(2),
            ..TestCase::default()
        };
        let e = run_case(&case, &[]).unwrap_err();
        assert_eq!(e, CaseError::WrongResult { r0: 1, want: 2 });
        assert_eq!(e.to_string(), "r0 = 0x1, expected 0x2");
        let case = TestCase {
            asm: "bogus r0\n".into(),
            ..TestCase::default()
        };
        let e = run_case(&case, &[]).unwrap_err();
        assert!(matches!(e, CaseError::Assembler(_)), "{e:?}");
        assert!(e.to_string().starts_with("assembler: line 1"), "{e}");
    }
}
