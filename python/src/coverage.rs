//! [`Coverage`]: the source lines, branches and functions runs exercised
//! (`Program.run(coverage=True)` gives one as `RunResult.coverage`),
//! adding up over runs, written as the lcov tracefile `sluice run
//! --coverage FILE` writes.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors;

/// Coverage of C source by packet runs: per line, how often it ran; per
/// conditional jump, how often each way went; per function, its calls.
/// ``Coverage()`` is empty; coverages add up (``a + b``, ``a += b``,
/// ``a.add(b)``): a test suite's runs give the suite's coverage.
#[pyclass(module = "sluice", name = "Coverage")]
#[derive(Default)]
pub struct Coverage {
    inner: engine::Coverage,
}

impl Coverage {
    pub(crate) fn new(inner: engine::Coverage) -> Coverage {
        Coverage { inner }
    }
}

/// `{"found": F, "hit": H}`.
fn tally<'py>(
    py: Python<'py>,
    t: &engine::CoverageSummary,
    pick: usize,
) -> PyResult<Bound<'py, PyDict>> {
    let t = [t.lines, t.branches, t.functions][pick];
    let d = PyDict::new(py);
    d.set_item("found", t.found)?;
    d.set_item("hit", t.hit)?;
    Ok(d)
}

#[pymethods]
impl Coverage {
    /// An empty coverage, to add runs' coverages to.
    #[new]
    fn py_new() -> Coverage {
        Coverage::default()
    }

    /// ``{(file, line): count}``: every source line with instructions and
    /// how often it ran (its most-run instruction's count).
    #[getter]
    fn lines<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (file, line, n) in self.inner.lines() {
            d.set_item((file, line), n)?;
        }
        Ok(d)
    }

    /// ``{(file, line, block, branch): count}``: every conditional jump
    /// (``block``: its number among the line's jumps, from 0) and its two
    /// ways (``branch`` 0: the jump taken, 1: fall-through); ``None`` for
    /// a jump never reached.
    #[getter]
    fn branches<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (file, line, block, branch, n) in self.inner.branches() {
            d.set_item((file, line, block, branch), n)?;
        }
        Ok(d)
    }

    /// ``{(file, name): calls}``: the program and its subprograms, with
    /// the runs of their first instruction.
    #[getter]
    fn functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (file, c) in self.inner.files() {
            for (name, f) in &c.functions {
                d.set_item((file, name), f.calls)?;
            }
        }
        Ok(d)
    }

    /// Found and hit lines, branches and functions:
    /// ``{"lines": {"found": F, "hit": H}, "branches": ..., "functions": ...}``,
    /// as the run report's ``coverage``.
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.summary();
        let d = PyDict::new(py);
        for (i, name) in ["lines", "branches", "functions"].into_iter().enumerate() {
            d.set_item(name, tally(py, &s, i)?)?;
        }
        Ok(d)
    }

    /// The lcov tracefile (``TN:``, ``SF:``, ``FN:``/``FNDA:``, ``BRDA:``,
    /// ``DA:``, ``LF``/``LH``, ``BRF``/``BRH``, ``end_of_record``), as
    /// ``sluice run --coverage FILE`` writes it; ``test_name`` is its ``TN:``.
    #[pyo3(signature = (test_name = ""))]
    fn lcov(&self, test_name: &str) -> String {
        self.inner.lcov(test_name)
    }

    /// Writes :meth:`lcov` to ``path`` (``genhtml path`` draws it).
    /// Raises ``sluice.Error`` when the file is not written.
    #[pyo3(signature = (path, test_name = ""))]
    fn write(&self, path: PathBuf, test_name: &str) -> PyResult<()> {
        self.inner
            .write(&path, test_name)
            .map_err(|e| errors::Error::new_err(e.to_string()))
    }

    /// Adds ``other``'s counts to this coverage, in place.
    fn add(&mut self, other: &Coverage) {
        self.inner.add(&other.inner);
    }

    fn __add__(&self, other: &Coverage) -> Coverage {
        Coverage::new(self.inner.clone() + &other.inner)
    }

    fn __iadd__(&mut self, other: &Coverage) {
        self.inner.add(&other.inner);
    }

    fn __eq__(&self, other: &Coverage) -> bool {
        self.inner == other.inner
    }

    fn __repr__(&self) -> String {
        format!("sluice.Coverage({})", self.inner.summary())
    }
}
