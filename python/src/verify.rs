//! `Program.verify()`: sluice's verifier on one program, as `sluice
//! verify` runs it (settings applied), and the kernel's verdict beside it
//! when asked; [`VerifyResult`] holds the [`ProgramVerdict`].

use engine::{CheckOptions, HookSpec, ProgramVerdict, Verifiable};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;

/// Verifies `hook`'s program.
pub(crate) fn verify(
    hook: &HookSpec,
    kernel: Option<bool>,
    unprivileged: bool,
    log: bool,
) -> PyResult<VerifyResult> {
    let v = Verifiable::load(&hook.object, &hook.settings).map_err(errors::object_error)?;
    let name = hook.program.as_deref().unwrap_or_default();
    let p = v
        .object
        .programs
        .iter()
        .find(|p| p.name == name)
        .ok_or_else(|| {
            errors::ObjectError::new_err(format!("{}: no program `{name}`", hook.object.name()))
        })?;
    let opts = CheckOptions {
        unprivileged,
        log,
        kernel: kernel.unwrap_or_else(Verifiable::kernel_at_hand),
    };
    let verdict = v.check(p, &opts);
    let json =
        serde_json::to_string(&verdict).map_err(|e| errors::Error::new_err(e.to_string()))?;
    Ok(VerifyResult { verdict, json })
}

/// What :meth:`Program.verify` found: sluice's verifier's verdict, where
/// and why it rejects, its figures, and the kernel's verdict beside it.
#[pyclass(module = "sluice", frozen)]
pub struct VerifyResult {
    verdict: ProgramVerdict,
    /// The verdict as one program of `sluice verify --json`.
    json: String,
}

#[pymethods]
impl VerifyResult {
    /// Whether sluice's verifier accepts the program.
    #[getter]
    fn accepted(&self) -> bool {
        self.verdict.verdict == "accept"
    }

    /// ``"accept"``, ``"reject"``, or ``"unsupported"`` (a feature the
    /// verifier does not check yet: the program runs with run-time checks).
    #[getter]
    fn verdict(&self) -> &'static str {
        self.verdict.verdict
    }

    /// The program's name.
    #[getter]
    fn program(&self) -> String {
        self.verdict.name.clone()
    }

    /// The instruction at fault (None when accepted).
    #[getter]
    fn insn(&self) -> Option<usize> {
        self.verdict.insn
    }

    /// Its source line, ``FILE:LINE`` (from BTF line info; None without).
    #[getter]
    fn line(&self) -> Option<String> {
        self.verdict.line.clone()
    }

    /// The text of that source line.
    #[getter]
    fn source(&self) -> Option<String> {
        self.verdict.source.clone()
    }

    /// The instruction at fault, disassembled.
    #[getter]
    fn disasm(&self) -> Option<String> {
        self.verdict.disasm.clone()
    }

    /// Why it is rejected, in one plain sentence with what to do.
    #[getter]
    fn explanation(&self) -> Option<String> {
        self.verdict.reason.clone()
    }

    /// Why, as the kernel's verifier says it.
    #[getter]
    fn kernel_message(&self) -> Option<String> {
        self.verdict.kernel_message.clone()
    }

    /// The rule broken, as ``sluice verify --json`` names it.
    #[getter]
    fn rule(&self, py: Python<'_>) -> PyResult<Option<String>> {
        Ok(self
            .report(py)?
            .get_item("rule")?
            .and_then(|r| r.extract().ok()))
    }

    /// The registers and stack on the failing path.
    #[getter]
    fn registers(&self) -> Option<String> {
        self.verdict.registers.clone()
    }

    /// Instructions the verifier walked.
    #[getter]
    fn insns_processed(&self) -> usize {
        self.verdict.insns_processed
    }

    /// States stored for pruning.
    #[getter]
    fn states(&self) -> usize {
        self.verdict.states
    }

    /// The deepest stack use, in bytes.
    #[getter]
    fn stack_depth(&self) -> usize {
        self.verdict.stack_depth
    }

    /// The kernel's verdict (``{"verdict", "message", "insns_processed",
    /// "micros"}``), or None when the kernel was not asked.
    #[getter]
    fn kernel<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.report(py)?.get_item("kernel")
    }

    /// Whether the kernel agrees (None: not asked, it could not say, or
    /// the verdict is ``unsupported``).
    #[getter]
    fn agrees(&self) -> Option<bool> {
        self.verdict.agrees()
    }

    /// The verifier's walk, kernel-style (with ``log=True``).
    #[getter]
    fn log(&self) -> Vec<String> {
        self.verdict.log.clone()
    }

    /// The verdict as a dict: one program of ``sluice verify --json``.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(py
            .import("json")?
            .call_method1("loads", (&self.json,))?
            .cast_into::<PyDict>()?)
    }

    fn __repr__(&self) -> String {
        match (&self.verdict.insn, &self.verdict.line) {
            (Some(insn), Some(line)) => format!(
                "sluice.VerifyResult({}: {} at insn {insn}, {line})",
                self.verdict.name, self.verdict.verdict
            ),
            (Some(insn), None) => format!(
                "sluice.VerifyResult({}: {} at insn {insn})",
                self.verdict.name, self.verdict.verdict
            ),
            _ => format!(
                "sluice.VerifyResult({}: {})",
                self.verdict.name, self.verdict.verdict
            ),
        }
    }
}
