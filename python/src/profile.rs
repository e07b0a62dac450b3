//! `Program.profile`: a program's cost per packet and the cost model
//! fitted to it (the engine's [`ProfileSpec`], as `sluice profile` runs
//! it), the GIL released; a [`Profile`] holds the model's parameters as
//! `sluice profile --json` reports them, the per-packet table, and a plot.

use engine::{HookSpec, ProfileSpec, SourceSpec};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;
use tables::RecordBatch;

use crate::errors;
use crate::table::{PacketStream, pyarrow_table};

/// A program's profile, from :meth:`Program.profile`.
#[pyclass(module = "sluice", frozen)]
pub struct Profile {
    /// The report as `sluice profile --json` prints it (without processors).
    json: String,
    /// `alpha`, `beta`, `gamma`, `delta`.
    coefficients: [f64; 4],
    /// One row per packet that ran to a verdict.
    packets: RecordBatch,
    /// `program: N packets`, for `repr`.
    summary: String,
}

/// Profiles `hook`'s program over `source`.
pub(crate) fn run(
    py: Python<'_>,
    hook: HookSpec,
    source: SourceSpec,
    limit: Option<u64>,
    warm_up: bool,
) -> PyResult<Profile> {
    let object = hook.object.name();
    let mut spec = ProfileSpec::new(hook, source);
    spec.limit = limit;
    spec.warm_up = warm_up;
    let done = py.detach(|| spec.run(None)).map_err(errors::to_py)?;
    let m = &done.model;
    let coefficients = [m.alpha(), m.beta(), m.gamma(), m.delta()];
    let report = json!({
        "object": object,
        "model": m,
        "alpha": coefficients[0],
        "beta": coefficients[1],
        "gamma": coefficients[2],
        "delta": coefficients[3],
    });
    let json = serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let packets = tables::profile(&done.profile).map_err(errors::table_error)?;
    Ok(Profile {
        json,
        coefficients,
        packets,
        summary: format!("{}: {} packets", m.program, m.packets),
    })
}

#[pymethods]
impl Profile {
    /// The report as a dict: what ``sluice profile --json`` prints for the
    /// same packets (``object``, ``model`` with its fits, rows per length
    /// and notes, ``alpha``, ``beta``, ``gamma``, ``delta``), without the
    /// processors' predictions.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.json,))
    }

    /// Instructions per packet at length 0: the intercept of
    /// ``instructions = alpha + beta * length``.
    #[getter]
    fn alpha(&self) -> f64 {
        self.coefficients[0]
    }

    /// Instructions per byte of packet: the slope of the instructions' fit.
    #[getter]
    fn beta(&self) -> f64 {
        self.coefficients[1]
    }

    /// Memory accesses per packet at length 0: the intercept of
    /// ``accesses = gamma + delta * length``.
    #[getter]
    fn gamma(&self) -> f64 {
        self.coefficients[2]
    }

    /// Memory accesses per byte of packet.
    #[getter]
    fn delta(&self) -> f64 {
        self.coefficients[3]
    }

    /// One row per packet that ran to a verdict, a ``pyarrow.Table``:
    /// ``seq``, ``len``, ``insns``, ``branches``, ``taken``,
    /// ``helper_calls``, ``loads``, ``stores``, ``helper_reads``,
    /// ``helper_writes``, ``verdict`` (the columns of ``sluice profile
    /// --per-packet``).
    #[getter]
    fn packets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pyarrow_table(py, &self.packets)
    }

    /// The per-packet table for any reader of the Arrow PyCapsule
    /// interface (polars, DuckDB) without pyarrow.
    #[getter]
    fn packet_stream(&self) -> PacketStream {
        PacketStream::new(self.packets.clone())
    }

    /// A matplotlib ``Figure``: instructions against packet length, one
    /// point per packet, with the fitted line ``alpha + beta * length``
    /// (``sluice profile --plot``'s cost plot).
    fn plot<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("sluice._plot")?
            .call_method1("profile_figure", (slf,))
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Profile({}, alpha={:.2}, beta={:.4})",
            self.summary, self.coefficients[0], self.coefficients[1]
        )
    }
}
