//! `sluice.flows`, `sluice.rtt`, `sluice.sample`: `sluice monitor`'s
//! applications over a capture, packets in memory or generated traffic
//! (the engine's [`FlowsSpec`], [`RttSpec`], [`SampleSpec`], as the
//! command line runs them), the GIL released; a [`MonitorResult`] holds
//! the records as a table and the summary of the command's `--json`.

use engine::{FlowEngine, FlowsSpec, RttEngine, RttSpec, SampleEngine, SampleSpec, XpfEngine};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::{Value, json};
use tables::RecordBatch;

use crate::table::{PacketStream, pyarrow_table};
use crate::{errors, interrupt};

/// What :func:`flows`, :func:`rtt` and :func:`sample` give: the records
/// (one row each) and the summary.
#[pyclass(module = "sluice", frozen)]
pub struct MonitorResult {
    /// `flows`, `rtt` or `sample`: which application ran.
    kind: &'static str,
    records: RecordBatch,
    /// The summary as the command's `--json` prints it.
    summary: String,
}

impl MonitorResult {
    pub(crate) fn new(kind: &'static str, records: RecordBatch, summary: Value) -> MonitorResult {
        MonitorResult {
            kind,
            records,
            summary: summary.to_string(),
        }
    }
}

#[pymethods]
impl MonitorResult {
    /// The records, a ``pyarrow.Table``, in the order they came: ended
    /// flows (columns named as IPFIX's information elements), RTT samples,
    /// or trajectory sampling's records (docs/tables.md).
    #[getter]
    fn records<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pyarrow_table(py, &self.records)
    }

    /// The records for any reader of the Arrow PyCapsule interface
    /// (polars, DuckDB) without pyarrow.
    #[getter]
    fn record_stream(&self) -> PacketStream {
        PacketStream::new(self.records.clone())
    }

    /// The summary as a dict, as the last line of ``sluice monitor KIND
    /// --json`` gives it (``{"summary": {...}}``'s inside).
    #[getter]
    fn summary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.summary,))
    }

    /// Rows in :attr:`records`.
    fn __len__(&self) -> usize {
        self.records.num_rows()
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.MonitorResult({}, {} records)",
            self.kind,
            self.records.num_rows()
        )
    }
}

/// `xpf_engine=`: `"interp"`, `"vm"` or `"jit"`.
fn xpf_engine(name: &str) -> PyResult<XpfEngine> {
    match name {
        "interp" => Ok(XpfEngine::Interp),
        "vm" => Ok(XpfEngine::Vm),
        "jit" => Ok(XpfEngine::Jit),
        other => Err(PyValueError::new_err(format!(
            "xpf_engine={other:?}: \"interp\", \"vm\" or \"jit\""
        ))),
    }
}

fn unknown_engine(name: &str, choices: &str) -> PyErr {
    PyValueError::new_err(format!("engine={name:?}: {choices}"))
}

/// `source_error` and `out_of_order` as the command line adds them: only
/// when there is one.
fn optional(summary: &mut Value, source_error: Option<String>, out_of_order: u64) {
    if let Some(e) = source_error {
        summary["source_error"] = json!(e);
    }
    if out_of_order > 0 {
        summary["out_of_order"] = json!(out_of_order);
    }
}

/// Accounts flows, as ``sluice monitor flows --json`` does, and returns a
/// :class:`MonitorResult` whose ``records`` has one row per ended flow.
///
/// The packets: exactly one of ``pcap``, ``packets`` and ``gen`` (as
/// :meth:`Program.run`). ``engine``: ``"table"`` (sluice's flow table),
/// ``"ebpf"`` (programs/flows.c in sluice's VM) or ``"xpf"``
/// (programs/xpf/flows.s). ``capacity``: flows kept at once (65536; xpf:
/// 2048). ``idle``, ``active``: the timeouts in seconds. ``count``: stop
/// after this many packets. Raises ``sluice.SourceError`` when the source
/// does not open, ``sluice.Error`` otherwise (an option out of range: the
/// command line's message).
#[pyfunction]
#[pyo3(signature = (
    pcap = None, packets = None, r#gen = None, *, engine = "table", capacity = None,
    idle = 15.0, active = 1800.0, count = None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn flows(
    py: Python<'_>,
    pcap: Option<&Bound<'_, PyAny>>,
    packets: Option<&Bound<'_, PyAny>>,
    r#gen: Option<&Bound<'_, PyAny>>,
    engine: &str,
    capacity: Option<usize>,
    idle: f64,
    active: f64,
    count: Option<u64>,
) -> PyResult<MonitorResult> {
    let mut spec = FlowsSpec::new(crate::source::source(pcap, packets, r#gen)?);
    spec.engine = match engine {
        "table" => FlowEngine::Table,
        "ebpf" => FlowEngine::Ebpf,
        "xpf" => FlowEngine::Xpf(XpfEngine::Interp),
        other => return Err(unknown_engine(other, "\"table\", \"ebpf\" or \"xpf\"")),
    };
    spec.capacity = capacity;
    spec.idle = idle;
    spec.active = active;
    spec.limit = count;
    let mut rows = Vec::new();
    let (run, interrupt) = interrupt::run(py, |stop| {
        spec.run(Some(stop), None, |ended| rows.extend_from_slice(ended))
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let run = run.map_err(errors::to_py)?;
    let summary = flows_summary(run);
    let records = tables::flows(&rows).map_err(errors::table_error)?;
    Ok(MonitorResult::new("flows", records, summary))
}

/// The summary of `sluice monitor flows --json` for `run`.
pub(crate) fn flows_summary(run: engine::FlowSummary) -> Value {
    let r = &run.by_reason;
    let mut summary = json!({
        "packets": run.packets,
        "accounted": run.accounted,
        "flows": run.flows,
        "idle_timeout": r[1],
        "active_timeout": r[2],
        "end_of_flow": r[3],
        "forced_end": r[4],
        "evicted": run.evicted,
        "stopped": false,
    });
    optional(&mut summary, run.source_error, run.order.backwards);
    summary
}

/// Measures round-trip times passively, as ``sluice monitor rtt --json``
/// does, and returns a :class:`MonitorResult` whose ``records`` has one
/// row per sample (``src``, ``dst``, ``src_port``, ``dst_port``,
/// ``method``, ``rtt_ns``, ``time_ns``).
///
/// The packets: exactly one of ``pcap``, ``packets`` and ``gen``.
/// ``engine``: ``"table"`` (sluice's reference meter), ``"ebpf"``
/// (programs/rtt.c) or ``"xpf"`` (programs/xpf/rtt.s, on ``xpf_engine``
/// ``"interp"``, ``"vm"`` or ``"jit"``). ``syn_table``, ``ts_table``,
/// ``flow_table``: the tables' sizes; ``max_age``: seconds after which a
/// SYN or TSval not answered is forgotten; ``count``: stop after this
/// many packets. Raises as :func:`flows`.
#[pyfunction]
#[pyo3(signature = (
    pcap = None, packets = None, r#gen = None, *, engine = "table", xpf_engine = "interp",
    syn_table = None, ts_table = None, flow_table = 65536, max_age = 10.0, count = None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn rtt(
    py: Python<'_>,
    pcap: Option<&Bound<'_, PyAny>>,
    packets: Option<&Bound<'_, PyAny>>,
    r#gen: Option<&Bound<'_, PyAny>>,
    engine: &str,
    xpf_engine: &str,
    syn_table: Option<usize>,
    ts_table: Option<usize>,
    flow_table: usize,
    max_age: f64,
    count: Option<u64>,
) -> PyResult<MonitorResult> {
    let mut spec = RttSpec::new(crate::source::source(pcap, packets, r#gen)?);
    spec.engine = match engine {
        "table" => RttEngine::Table,
        "ebpf" => RttEngine::Ebpf,
        "xpf" => RttEngine::Xpf(self::xpf_engine(xpf_engine)?),
        other => return Err(unknown_engine(other, "\"table\", \"ebpf\" or \"xpf\"")),
    };
    spec.syn_table = syn_table;
    spec.ts_table = ts_table;
    spec.flow_table = flow_table;
    spec.max_age = max_age;
    spec.limit = count;
    let mut rows = Vec::new();
    let (run, interrupt) = interrupt::run(py, |stop| {
        spec.run(Some(stop), None, |s| rows.extend_from_slice(s))
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let run = run.map_err(errors::to_py)?;
    let c = &run.counters;
    let mut summary = json!({
        "packets": run.packets,
        "tcp": run.tcp,
        "handshake_samples": run.samples[1],
        "timestamp_samples": run.samples[2],
        "flows": run.flows.len(),
        "syn_table_full": c.syn_full,
        "ts_table_full": c.ts_full,
        "flow_table_full": c.flows_full,
        "lost": c.lost,
        "stopped": false,
    });
    optional(&mut summary, run.source_error, run.order.backwards);
    let records = tables::rtt(&rows).map_err(errors::table_error)?;
    Ok(MonitorResult::new("rtt", records, summary))
}

/// Samples trajectories, as ``sluice monitor sample --json`` does, and
/// returns a :class:`MonitorResult` whose ``records`` has one row per
/// record: ``record`` is ``"flow"`` (a label's 5-tuple, before its first
/// sample) or ``"sample"`` (``label``, ``hash``, ``time_ns``).
///
/// The packets: exactly one of ``pcap``, ``packets`` and ``gen``.
/// ``engine``: ``"ebpf"`` (programs/sample.c), ``"xpf"``
/// (programs/xpf/sample.s on ``xpf_engine``) or ``"reference"``. The rate:
/// ``rate`` (``"1/100"`` or ``"0.01"``), or ``a`` and ``b`` (sampled when
/// h mod A < B); 1/100 without them. ``table``: slots of the label table;
/// ``count``: stop after this many packets. Raises as :func:`flows`.
#[pyfunction]
#[pyo3(signature = (
    pcap = None, packets = None, r#gen = None, *, engine = "ebpf", xpf_engine = "interp",
    rate = None, a = None, b = None, table = 4096, count = None
))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sample(
    py: Python<'_>,
    pcap: Option<&Bound<'_, PyAny>>,
    packets: Option<&Bound<'_, PyAny>>,
    r#gen: Option<&Bound<'_, PyAny>>,
    engine: &str,
    xpf_engine: &str,
    rate: Option<String>,
    a: Option<u32>,
    b: Option<u32>,
    table: usize,
    count: Option<u64>,
) -> PyResult<MonitorResult> {
    let mut spec = SampleSpec::new(crate::source::source(pcap, packets, r#gen)?);
    spec.engine = match engine {
        "ebpf" => SampleEngine::Ebpf,
        "reference" => SampleEngine::Reference,
        "xpf" => SampleEngine::Xpf(self::xpf_engine(xpf_engine)?),
        other => return Err(unknown_engine(other, "\"ebpf\", \"xpf\" or \"reference\"")),
    };
    spec.rate = rate;
    spec.a = a;
    spec.b = b;
    spec.table = table;
    spec.limit = count;
    let (ma, mb) = spec.rate().map_err(errors::to_py)?;
    let mut rows = Vec::new();
    let (run, interrupt) = interrupt::run(py, |stop| {
        spec.run(Some(stop), None, |r| rows.extend_from_slice(r))
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let run = run.map_err(errors::to_py)?;
    let c = &run.counts;
    let mut summary = json!({
        "a": ma,
        "b": mb,
        "packets": run.packets,
        "hashed": c.hashed,
        "sampled": c.sampled,
        "flow_records": c.flows,
        "table_full": c.full,
        "lost": c.lost,
        "stopped": false,
    });
    optional(&mut summary, run.source_error, 0);
    let records = tables::samples(&rows).map_err(errors::table_error)?;
    Ok(MonitorResult::new("sample", records, summary))
}
