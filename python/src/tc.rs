//! [`Tc`]: a tc configuration (lines of `tc` commands, or a file of
//! them) that packets run through in place of a program: `Tc.run` is
//! `sluice run --tc FILE` (the engine's [`TcRunSpec`]) and gives a
//! [`TcResult`]: the report of `sluice run --tc --json`, the verdicts,
//! mirred's deliveries, every filter's counters (as `tc -s filter show`
//! prints them, and as an Arrow table: [`crate::tc_table`]).

use std::path::PathBuf;

use arrow_array::RecordBatch;
use engine::{ClsactHook, Error, TcError, TcReport, TcRunSpec, TcSpec};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::output::Kept;
use crate::table::PacketStream;
use crate::{errors, interrupt, output, source};

/// A tc configuration: ``tc`` commands (``qdisc add dev v0 clsact``,
/// ``filter add dev v0 ingress ... action drop``), one a line, as a
/// ``tc -batch`` file (or ``sluice tc``'s configuration) holds them.
///
/// ``Tc(lines=[...])`` (a list of lines, or one string of them) or
/// ``Tc(path="rules.tc")``; ``name`` names lines in reports and errors
/// (default ``"<lines>"``). A line tc would refuse raises
/// ``sluice.TcError`` with the command line's message.
#[pyclass(module = "sluice", frozen)]
pub struct Tc {
    spec: TcSpec,
}

#[pymethods]
impl Tc {
    #[new]
    #[pyo3(signature = (lines = None, *, path = None, name = None))]
    fn new(
        py: Python<'_>,
        lines: Option<&Bound<'_, PyAny>>,
        path: Option<PathBuf>,
        name: Option<String>,
    ) -> PyResult<Tc> {
        let spec = match (lines, path) {
            (Some(lines), None) => {
                let text = match lines.extract::<String>() {
                    Ok(text) => text,
                    Err(_) => {
                        let lines: Vec<String> = lines.extract().map_err(|_| {
                            PyTypeError::new_err("lines=: a list of tc lines, or a string of them")
                        })?;
                        lines.join("\n") + "\n"
                    }
                };
                TcSpec::from_lines(name.unwrap_or_else(|| "<lines>".into()), text)
            }
            (None, Some(path)) => TcSpec::new(path),
            _ => {
                return Err(PyTypeError::new_err(
                    "Tc() takes exactly one of lines=, path=",
                ));
            }
        };
        // The lines, run once: a refused one is told now (the device
        // packets arrive at is the run's to say).
        match py.detach(|| spec.build(None).map(|_| ())) {
            Ok(_) | Err(Error::Tc(TcError::NoQdisc | TcError::WhichDevice(_))) => {}
            Err(e) => return Err(errors::to_py(e)),
        }
        Ok(Tc { spec })
    }

    /// What reports call the configuration: its path, or the lines' name.
    #[getter]
    fn name(&self) -> String {
        self.spec.config.display().to_string()
    }

    /// Runs packets through the configuration, as ``sluice run --tc FILE``
    /// does, and returns a :class:`TcResult`.
    ///
    /// Exactly one of ``pcap`` (a capture: a path, a binary file object,
    /// or its bytes), ``packets`` (Ethernet frames in memory) and ``gen``
    /// (generated traffic). ``dev``: the device packets arrive at
    /// (``--tc-dev``; default: the only one with a qdisc); ``hook``:
    /// ``"ingress"`` or ``"egress"`` (``--tc-hook``). ``limit``: stop after
    /// this many packets. ``output``: keep the packets of these routes in
    /// memory (:meth:`TcResult.output`). A fresh configuration each run:
    /// counters start at zero.
    ///
    /// The GIL is released while packets run; Ctrl-C stops the run and
    /// raises ``KeyboardInterrupt`` with the partial result as its
    /// ``result``. Raises ``sluice.TcError`` (a device not found),
    /// ``sluice.SourceError`` (a capture not read, or ended early).
    #[pyo3(signature = (
        pcap = None, packets = None, r#gen = None, *, dev = None, hook = "ingress",
        limit = None, output = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        pcap: Option<&Bound<'_, PyAny>>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        dev: Option<String>,
        hook: &str,
        limit: Option<u64>,
        output: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<TcResult>> {
        let mut tc = self.spec.clone();
        tc.dev = dev.or(tc.dev);
        tc.hook = match hook {
            "ingress" => ClsactHook::Ingress,
            "egress" => ClsactHook::Egress,
            other => {
                return Err(PyValueError::new_err(format!(
                    "hook={other:?}: \"ingress\" or \"egress\""
                )));
            }
        };
        let mut spec = TcRunSpec::new(tc, source::source(pcap, packets, r#gen)?);
        spec.limit = limit;
        spec.sinks = output::sinks(output)?;
        let (finished, interrupt) = interrupt::run(py, |stop| spec.run(Some(stop), None));
        let result = finished.map_err(errors::to_py).and_then(|f| {
            let early = errors::ended_early(f.report.source_error.as_deref(), f.report.packets);
            Ok((TcResult::new(f.report, &spec.sinks)?, early))
        });
        errors::finish(py, result, interrupt)
    }

    fn __repr__(&self) -> String {
        format!("sluice.Tc({:?})", self.name())
    }
}

/// The result of :meth:`Tc.run`.
#[pyclass(module = "sluice", frozen)]
pub struct TcResult {
    /// The report as `sluice run --tc --json` prints it.
    json: String,
    /// `tc -s filter show` text per `DEV HOOK`, in device order.
    shown: Vec<(String, String)>,
    table: RecordBatch,
    kept: Kept,
    summary: String,
}

impl TcResult {
    fn new(mut report: TcReport, sinks: &[engine::SinkSpec]) -> PyResult<TcResult> {
        let kept = Kept::new(std::mem::take(&mut report.output), sinks);
        let table =
            crate::tc_table::filters(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let json =
            serde_json::to_string(&report).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let shown = (report.shown.iter())
            .map(|f| (format!("{} {}", f.dev, f.hook), f.text.clone()))
            .collect();
        let verdicts: Vec<String> = (report.verdicts.iter())
            .map(|(v, n)| format!("{v:?}: {n}"))
            .collect();
        let summary = format!(
            "packets={}, verdicts={{{}}}",
            report.packets,
            verdicts.join(", ")
        );
        Ok(TcResult {
            json,
            shown,
            table,
            kept,
            summary,
        })
    }
}

#[pymethods]
impl TcResult {
    /// The whole report as a dict: what ``sluice run --tc FILE --json``
    /// prints for the same run (config, dev, hook, source, packets,
    /// verdicts, sent, too_deep, filters: ``tc -s -j filter show`` per
    /// ``"DEV HOOK"``).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.json,))
    }

    /// Packets per verdict at the arrival hook: ``{"OK": 9, "SHOT": 1}``.
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

    /// Where mirred sent packets: a list of dicts (``dev``, ``hook``,
    /// ``delivered``: packets that left that hook alive, ``consumed``:
    /// dropped there or taken on).
    #[getter]
    fn sent<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        Ok(self.report(py)?.get_item("sent")?.cast_into::<PyList>()?)
    }

    /// Every hook's filters with their counters, as ``tc -s filter show
    /// dev DEV HOOK`` prints them: a dict of text per ``"DEV HOOK"``.
    #[getter]
    fn shown<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, text) in &self.shown {
            d.set_item(k, text)?;
        }
        Ok(d)
    }

    /// Every filter's actions and their counters, a ``pyarrow.Table``, a
    /// row per action (a filter without one: a row, the action's columns
    /// null): ``dev``, ``hook``, ``chain``, ``prio``, ``protocol``,
    /// ``kind`` (u32, flower, matchall, bpf), ``handle``, ``order``,
    /// ``action`` (gact, mirred, ...), ``packets``, ``bytes``, ``drops``,
    /// ``overlimits``: the report's ``filters`` in columns.
    #[getter]
    fn filters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let stream = PacketStream::new(self.table.clone());
        py.import("pyarrow")?.call_method1("table", (stream,))
    }

    /// Whether a signal (Ctrl-C) stopped the run before its source's end.
    #[getter]
    fn stopped(&self, py: Python<'_>) -> PyResult<bool> {
        let report = self.report(py)?;
        Ok(report.contains("stopped")? && report.get_item("stopped")?.is_truthy()?)
    }

    /// The packets the run sent to ``route`` (``"pass"``, ``"redirect"``,
    /// ``"drop"``; ``"SHOT"`` is ``"drop"``), as :meth:`RunResult.output`.
    #[pyo3(signature = (route, *, scapy = false))]
    fn output<'py>(
        &self,
        py: Python<'py>,
        route: &str,
        scapy: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        self.kept.packets(py, route, scapy)
    }

    fn __repr__(&self) -> String {
        format!("sluice.TcResult({})", self.summary)
    }
}
