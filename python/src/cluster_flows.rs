//! Flow accounting and tcpdump filters over the shards of a plan, for a
//! cluster's tasks: `sluice.flows_shard` gives a [`FlowsShard`] and
//! `sluice.merge_flows` merges them into what `sluice.flows` gives over
//! the whole capture; `Filter.run_shard` gives a [`FilterShard`] and
//! `Filter.merge` what `Filter.run` gives (the engine's
//! [`engine::FlowsPart`], [`engine::FilterPart`]). Parts pickle as their
//! bytes; each has its range's boundary (`.boundary`, `_boundary_bytes()`
//! for `sluice.check`).

use engine::{
    CompiledFilter, FilterPart, FilterRunSpec, FlowEngine, FlowsPart, FlowsSpec, Origin,
    SourceSpec, TableOptions,
};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::filter_result::FilterResult;
use crate::monitor::{MonitorResult, flows_summary};
use crate::{errors, interrupt};

/// `shard=`: a `sluice.Shard`, or anything with `path`, `start`, `end`,
/// `size` (items of a dict or attributes), and its `index` (0 without).
fn shard_arg(shard: &Bound<'_, PyAny>) -> PyResult<(engine::shards::Shard, usize)> {
    let s = crate::shard::shard_arg(shard)?;
    if s.shard.start > s.shard.end {
        return Err(PyValueError::new_err(format!(
            "shard=: start {} is past end {}",
            s.shard.start, s.shard.end
        )));
    }
    Ok((s.shard, s.index))
}

/// A boundary as bytes, as `sluice.check` reads them.
fn boundary_py_bytes<'py>(
    py: Python<'py>,
    b: &engine::shards::Boundary,
) -> PyResult<Bound<'py, PyBytes>> {
    let b = engine::boundary_bytes(b).map_err(errors::to_py)?;
    Ok(PyBytes::new(py, &b))
}

/// A boundary as a dict (its JSON form).
fn boundary_dict<'py>(
    py: Python<'py>,
    b: &engine::shards::Boundary,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(b).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

/// The parts of `parts` (any iterable), each of the class `T`.
fn parts_of<T>(parts: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<T>>
where
    T: pyo3::PyClass + Clone,
    for<'a, 'py> T: FromPyObject<'a, 'py>,
{
    let mut out = Vec::new();
    for p in parts.try_iter()? {
        let p = p?;
        out.push(p.extract::<T>().map_err(|_| {
            PyTypeError::new_err(format!("parts: each a {what}, not {}", p.get_type()))
        })?);
    }
    Ok(out)
}

/// One shard's flow accounting (:func:`flows_shard`), for
/// :func:`merge_flows`. Pickles as its bytes.
#[pyclass(module = "sluice", frozen, from_py_object)]
#[derive(Clone)]
pub struct FlowsShard {
    part: FlowsPart,
    index: usize,
}

#[pymethods]
impl FlowsShard {
    /// The shard's index in its plan.
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// Packets read in the range.
    #[getter]
    fn packets(&self) -> u64 {
        self.part.range.packets
    }

    /// The range's boundary, a dict: ``shard``, ``first`` (where its
    /// reader began), ``next`` (where its records crossed its end),
    /// ``frames``, ``error`` (docs/shards.md).
    #[getter]
    fn boundary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        boundary_dict(py, &self.part.boundary)
    }

    /// The boundary as bytes, for ``sluice.check``.
    fn _boundary_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        boundary_py_bytes(py, &self.part.boundary)
    }

    /// The part as bytes (:func:`FlowsShard.from_bytes` reads them back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.bytes()?;
        Ok(PyBytes::new(py, &b))
    }

    /// A part from :meth:`to_bytes`'s bytes.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<FlowsShard> {
        flows_shard_from_bytes(data)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        crate::shard::reduce(py, "_flows_shard_from_bytes", &self.bytes()?)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.FlowsShard({}, {} packets)",
            self.part.boundary.shard.describe(),
            self.part.range.packets
        )
    }
}

impl FlowsShard {
    fn bytes(&self) -> PyResult<Vec<u8>> {
        let mut b = self.part.to_bytes().map_err(errors::to_py)?;
        b.extend_from_slice(&(self.index as u64).to_le_bytes());
        Ok(b)
    }
}

/// A :class:`FlowsShard` from its bytes (pickling's constructor).
#[pyfunction]
#[pyo3(name = "_flows_shard_from_bytes")]
pub(crate) fn flows_shard_from_bytes(data: &[u8]) -> PyResult<FlowsShard> {
    let (part, index) = split_index(data)?;
    Ok(FlowsShard {
        part: FlowsPart::from_bytes(part).map_err(errors::to_py)?,
        index,
    })
}

/// A part's bytes and the index after them.
fn split_index(data: &[u8]) -> PyResult<(&[u8], usize)> {
    let at = data
        .len()
        .checked_sub(8)
        .ok_or_else(|| errors::Error::new_err("not a shard's part: too short"))?;
    let index = u64::from_le_bytes(data[at..].try_into().expect("8 bytes"));
    Ok((&data[..at], index as usize))
}

/// The flow accounting options of `sluice.flows`.
fn flows_spec(
    engine: &str,
    capacity: Option<usize>,
    idle: f64,
    active: f64,
) -> PyResult<FlowsSpec> {
    let mut spec = FlowsSpec::new(SourceSpec::generated(Vec::<String>::new()));
    spec.engine = match engine {
        "table" => FlowEngine::Table,
        other => {
            return Err(PyValueError::new_err(format!(
                "engine={other:?}: flows over shards are accounted by \"table\" only"
            )));
        }
    };
    spec.capacity = capacity;
    spec.idle = idle;
    spec.active = active;
    Ok(spec)
}

/// Accounts flows over one shard of a plan (``sluice.plan``), as
/// :func:`flows` does over a whole capture, for :func:`merge_flows`.
///
/// ``shard``: a ``sluice.Shard`` or a dict with ``path``, ``start``,
/// ``end``, ``size`` (and ``index``); ``proven``: the position to read it
/// from (a ``sluice.Redo``'s ``position``), else its first record's
/// guess. ``engine`` (``"table"`` only), ``capacity``, ``idle``,
/// ``active``: as :func:`flows`. The GIL is released. Raises
/// ``sluice.SourceError`` when the capture does not open.
#[pyfunction]
#[pyo3(signature = (shard, proven = None, *, engine = "table", capacity = None, idle = 15.0, active = 1800.0))]
pub(crate) fn flows_shard(
    py: Python<'_>,
    shard: &Bound<'_, PyAny>,
    proven: Option<&Bound<'_, PyAny>>,
    engine: &str,
    capacity: Option<usize>,
    idle: f64,
    active: f64,
) -> PyResult<FlowsShard> {
    let (shard, index) = shard_arg(shard)?;
    let proven = crate::shard::position_arg(proven)?;
    let spec = flows_spec(engine, capacity, idle, active)?;
    let (part, interrupt) = interrupt::run(py, |stop| {
        spec.run_range(&shard, proven.as_ref(), Some(stop), None)
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let part = part.map_err(errors::to_py)?;
    Ok(FlowsShard { part, index })
}

/// Merges the :class:`FlowsShard` of every shard of a plan (in plan
/// order, proven: ``sluice.check`` finds nothing to read again) into
/// what :func:`flows` gives over the whole capture (several files: one
/// stream, read one after another, a flow going on across a file's
/// end, as over their concatenation): the same ended
/// flows in the same order, the same summary. When the merge may differ
/// from one read (a range starting earlier than the packets before it, a
/// table that may have filled), the summary says why in ``"inexact"``.
/// ``engine``, ``capacity``, ``idle``, ``active``, when given, must be
/// those the shards were accounted with.
#[pyfunction]
#[pyo3(signature = (parts, *, engine = None, capacity = None, idle = None, active = None))]
pub(crate) fn merge_flows(
    py: Python<'_>,
    parts: &Bound<'_, PyAny>,
    engine: Option<&str>,
    capacity: Option<usize>,
    idle: Option<f64>,
    active: Option<f64>,
) -> PyResult<MonitorResult> {
    let parts: Vec<FlowsShard> = parts_of(parts, "sluice.FlowsShard")?;
    let given = engine.is_some() || capacity.is_some() || idle.is_some() || active.is_some();
    let options: Option<TableOptions> = match (given, parts.first()) {
        (true, Some(first)) => {
            let o = first.part.range.options;
            let spec = flows_spec(
                engine.unwrap_or("table"),
                Some(capacity.unwrap_or(o.capacity)),
                idle.unwrap_or(o.idle_timeout_ns as f64 / 1e9),
                active.unwrap_or(o.active_timeout_ns as f64 / 1e9),
            )?;
            Some(spec.options().map_err(errors::to_py)?.table)
        }
        _ => None,
    };
    let parts: Vec<FlowsPart> = parts.into_iter().map(|p| p.part).collect();
    let merged = py
        .detach(|| engine::merge_flows(&parts, options.as_ref()))
        .map_err(errors::to_py)?;
    let mut summary = flows_summary(merged.summary);
    if !merged.inexact.is_empty() {
        summary["inexact"] = serde_json::json!(merged.inexact);
    }
    let records = tables::flows(&merged.ended).map_err(errors::table_error)?;
    Ok(MonitorResult::new("flows", records, summary))
}

/// One shard filtered (:meth:`Filter.run_shard`), for :meth:`Filter.merge`.
/// Pickles as its bytes.
#[pyclass(module = "sluice", frozen, from_py_object)]
#[derive(Clone)]
pub struct FilterShard {
    part: FilterPart,
    index: usize,
}

#[pymethods]
impl FilterShard {
    /// The shard's index in its plan.
    #[getter]
    fn index(&self) -> usize {
        self.index
    }

    /// Records read in the range.
    #[getter]
    fn read(&self) -> u64 {
        self.part.read
    }

    /// Records the filter matched in the range.
    #[getter]
    fn matched(&self) -> u64 {
        self.part.matched
    }

    /// The partition written (``output_dir/part-{index:05}.pcap``), or None.
    #[getter]
    fn written(&self) -> Option<String> {
        self.part.written.as_ref().map(|p| p.display().to_string())
    }

    /// The range's boundary, a dict (as :attr:`FlowsShard.boundary`).
    #[getter]
    fn boundary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        boundary_dict(py, &self.part.boundary)
    }

    /// The boundary as bytes, for ``sluice.check``.
    fn _boundary_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        boundary_py_bytes(py, &self.part.boundary)
    }

    /// The part as bytes (:func:`FilterShard.from_bytes` reads them back).
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.bytes()?;
        Ok(PyBytes::new(py, &b))
    }

    /// A part from :meth:`to_bytes`'s bytes.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<FilterShard> {
        filter_shard_from_bytes(data)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        crate::shard::reduce(py, "_filter_shard_from_bytes", &self.bytes()?)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.FilterShard({}, read={}, matched={})",
            self.part.boundary.shard.describe(),
            self.part.read,
            self.part.matched
        )
    }
}

impl FilterShard {
    fn bytes(&self) -> PyResult<Vec<u8>> {
        let mut b = self.part.to_bytes().map_err(errors::to_py)?;
        b.extend_from_slice(&(self.index as u64).to_le_bytes());
        Ok(b)
    }
}

/// A :class:`FilterShard` from its bytes (pickling's constructor).
#[pyfunction]
#[pyo3(name = "_filter_shard_from_bytes")]
pub(crate) fn filter_shard_from_bytes(data: &[u8]) -> PyResult<FilterShard> {
    let (part, index) = split_index(data)?;
    Ok(FilterShard {
        part: FilterPart::from_bytes(part).map_err(errors::to_py)?,
        index,
    })
}

/// [`crate::filter::Filter`]'s `run_shard`.
pub(crate) fn filter_shard(
    py: Python<'_>,
    compiled: &CompiledFilter,
    shard: &Bound<'_, PyAny>,
    proven: Option<&Bound<'_, PyAny>>,
    output_dir: Option<std::path::PathBuf>,
) -> PyResult<FilterShard> {
    let (shard, index) = shard_arg(shard)?;
    let proven = crate::shard::position_arg(proven)?;
    let origin = Origin::Capture {
        path: shard.path.clone(),
        foreign: Default::default(),
    };
    let spec = FilterRunSpec::new(compiled.expr.clone(), origin);
    let (part, interrupt) = interrupt::run(py, |stop| {
        spec.run_range(
            &shard,
            proven.as_ref(),
            index,
            output_dir.as_deref(),
            Some(stop),
        )
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let part = part.map_err(errors::to_py)?;
    Ok(FilterShard { part, index })
}

/// [`crate::filter::Filter`]'s `merge`: as `Filter.run`, a capture that
/// ended early raises `sluice.SourceError` with the result.
pub(crate) fn merge_filter(py: Python<'_>, parts: &Bound<'_, PyAny>) -> PyResult<Py<FilterResult>> {
    let parts: Vec<FilterShard> = parts_of(parts, "sluice.FilterShard")?;
    let parts: Vec<FilterPart> = parts.into_iter().map(|p| p.part).collect();
    let report = py.detach(|| engine::merge_filter(&parts));
    let result = report.map_err(errors::to_py).and_then(|r| {
        let early = errors::ended_early(r.capture_error.as_deref(), r.read);
        Ok((FilterResult::new(r)?, early))
    });
    errors::finish(py, result, None)
}
