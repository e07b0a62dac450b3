//! [`RunResult`]: what `Program.run` gives: the report of `sluice run
//! --json` (as a dict), its verdict counts, the per-packet table, and the
//! packets of the routes kept in memory.

use arrow_array::RecordBatch;
use engine::{RunReport, Value};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::coverage::Coverage;
use crate::errors;
use crate::output::Kept;
use crate::table::{PacketStream, buffer_addresses, pyarrow_table};

/// The result of :meth:`Program.run`.
#[pyclass(module = "sluice", frozen)]
pub struct RunResult {
    /// The report as `sluice run --json` prints it.
    json: String,
    /// One row per packet (without `per_packet=False`).
    table: Option<RecordBatch>,
    /// `packets=N, verdicts={...}`, for `repr`.
    summary: String,
    /// The entries each map's dump in the report lists, as values.
    maps: Vec<(String, Vec<(Value, Value)>)>,
    /// The lines, branches and functions run (with `coverage=True`).
    coverage: Option<engine::Coverage>,
    /// The packets of the routes `output=` kept.
    kept: Kept,
}

impl RunResult {
    /// A text key of the report, `None` when it is absent.
    fn report_key(&self, py: Python<'_>, key: &str) -> PyResult<Option<String>> {
        let report = self.report(py)?;
        match report.contains(key)? {
            true => report.get_item(key)?.extract(),
            false => Ok(None),
        }
    }

    /// `maps`: the entries the report's map dumps list, decoded; `sinks`:
    /// the run's, to know which routes it kept in memory.
    pub(crate) fn new(
        mut report: RunReport,
        maps: Vec<(String, Vec<(Value, Value)>)>,
        sinks: &[engine::SinkSpec],
    ) -> PyResult<RunResult> {
        let kept = Kept::new(std::mem::take(&mut report.output), sinks);
        let table = report
            .packet_table
            .take()
            .map(tables::packets)
            .transpose()
            .map_err(errors::table_error)?;
        let json =
            serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let coverage = report.coverage.take();
        let verdicts: Vec<String> = report
            .verdicts
            .iter()
            .map(|(v, n)| format!("{v:?}: {n}"))
            .collect();
        let summary = format!(
            "packets={}, verdicts={{{}}}",
            report.packets,
            verdicts.join(", ")
        );
        Ok(RunResult {
            json,
            table,
            summary,
            maps,
            coverage,
            kept,
        })
    }
}

#[pymethods]
impl RunResult {
    /// The whole report as a dict: what ``sluice run --json`` prints for the
    /// same run (verdicts, costs, redirects, errors, maps).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.json,))
    }

    /// Packets per verdict, as the report's ``verdicts``:
    /// ``{"PASS": 9, "DROP": 1}`` (``ERROR``: runs that stopped with an error).
    #[getter]
    fn verdicts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        Ok(self
            .report(py)?
            .get_item("verdicts")?
            .cast_into::<PyDict>()?)
    }

    /// Packets run.
    #[getter]
    fn count(&self, py: Python<'_>) -> PyResult<u64> {
        self.report(py)?.get_item("packets")?.extract()
    }

    /// The report's maps as Python values: ``{map: {key: value}}``, the
    /// entries the report lists (values not all zeros, at most
    /// ``map_entries`` per map), decoded as :class:`Map` reads decode them;
    /// a per-CPU value as the report gives it (summed over CPUs when it is
    /// made of integer counters, else CPU 0's). Struct keys are tuples of
    /// their members' values. The maps as the run left them.
    #[getter]
    fn maps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, entries) in &self.maps {
            let d = PyDict::new(py);
            for (k, v) in entries {
                d.set_item(
                    crate::values::hashable(py, crate::values::to_py(py, k)?)?,
                    crate::values::to_py(py, v)?,
                )?;
            }
            out.set_item(name, d)?;
        }
        Ok(out)
    }

    /// One row per packet, a ``pyarrow.Table``: ``index`` (from 1),
    /// ``timestamp``, ``length``, ``verdict``, ``redirect`` (null without
    /// one), ``instructions``, ``helper_calls``; with ``count_memory=True``
    /// ``stack_loads``, ``stack_stores``, ``context_loads``, ...,
    /// ``map_stores`` (the report's ``memory_per_packet`` regions);
    /// ``error`` (the message of the error the run stopped with, null
    /// otherwise). ``None`` when the run kept no rows
    /// (``per_packet=False``). The columns are the engine's buffers, not
    /// copied.
    #[getter]
    fn packets<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.table {
            Some(batch) => pyarrow_table(py, batch),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// The per-packet table for any reader of the Arrow PyCapsule
    /// interface (polars, DuckDB) without pyarrow.
    #[getter]
    fn packet_stream(&self) -> Option<PacketStream> {
        self.table.clone().map(PacketStream::new)
    }

    /// Diagnostics: per column of the per-packet table, the address of the
    /// buffer its values live in, as the native module allocated it
    /// (``{"instructions": 140..., ...}``; a dictionary column: its codes).
    /// pyarrow's ``Array.buffers()[1].address`` is the same when the table
    /// reached it without a copy. Empty with ``per_packet=False``.
    fn _column_addresses<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let addresses = PyDict::new(py);
        for (name, address) in self
            .table
            .as_ref()
            .map(buffer_addresses)
            .unwrap_or_default()
        {
            addresses.set_item(name, address)?;
        }
        Ok(addresses)
    }

    /// The source lines, branches and functions the packets ran, a
    /// :class:`Coverage` (``None`` without ``coverage=True``).
    #[getter]
    fn coverage(&self) -> Option<Coverage> {
        self.coverage.clone().map(Coverage::new)
    }

    /// The packets the run sent to ``route`` (``"pass"``, ``"tx"``,
    /// ``"redirect"``, ``"drop"``; a verdict's name such as ``"TX"`` too),
    /// as the program left them, in the run's order: a list of ``bytes``,
    /// or with ``scapy=True`` of scapy ``Ether`` packets (their ``time``
    /// the packet's). The run keeps them only when asked:
    /// ``run(..., output="tx")`` (or a list of routes, or ``True``); a
    /// route not kept raises ``ValueError``.
    #[pyo3(signature = (route, *, scapy = false))]
    fn output<'py>(
        &self,
        py: Python<'py>,
        route: &str,
        scapy: bool,
    ) -> PyResult<Bound<'py, pyo3::types::PyList>> {
        self.kept.packets(py, route, scapy)
    }

    /// The report as JSON text: what ``sluice run --json`` prints.
    fn to_json(&self) -> String {
        self.json.clone()
    }

    /// A merged result's map policies (:meth:`Program.merge`):
    /// ``{map: "sum" | "union" | "last" | "keep"}``; ``None`` for a run.
    #[getter]
    fn map_policies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let report = self.report(py)?;
        match report.get_item("merged") {
            Ok(merged) => merged.get_item("map_policies"),
            Err(_) => Ok(py.None().into_bound(py)),
        }
    }

    /// Whether a signal (Ctrl-C) stopped the run before its source's end.
    #[getter]
    fn stopped(&self, py: Python<'_>) -> PyResult<bool> {
        let report = self.report(py)?;
        Ok(report.contains("stopped")? && report.get_item("stopped")?.is_truthy()?)
    }

    /// How the threads shared the packets, as the report's ``shard``:
    /// ``"ranges"`` (byte ranges of the capture, each record read once) or
    /// the flow sharding (``"symmetric"``, ``"directional"``,
    /// ``"round-robin"``); ``None`` with one thread.
    #[getter]
    fn shard(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.report_key(py, "shard")
    }

    /// Why ``shard="auto"`` sharded by flow rather than by byte ranges (the
    /// report's ``shard_note``), else ``None``.
    #[getter]
    fn shard_note(&self, py: Python<'_>) -> PyResult<Option<String>> {
        self.report_key(py, "shard_note")
    }

    fn __repr__(&self) -> String {
        format!("sluice.RunResult({})", self.summary)
    }
}
