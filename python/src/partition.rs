//! Flow-affine runs from Python: `Program.partition` reads one range of a
//! capture and splits its packets by flow into the buckets of N workers
//! ([`Partition`], with one `bytes` blob per bucket), and
//! `Program.run_bucket` runs one bucket's blobs (one per range, in plan
//! order) as worker B of `sluice run --threads N` does ([`BucketResult`]).
//! Both pickle (by their state as JSON), for a cluster's tasks.

use std::collections::BTreeMap;

use engine::{BucketRunSpec, Built, Foreign, Origin, Sharding, SourceSpec};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::{PyBytes, PyList, PyTuple};

use crate::errors;

/// What a [`Partition`] holds besides its blobs (its pickled state).
#[derive(Clone, IntoPyObject, FromPyObject)]
#[pyo3(from_item_all)]
struct State {
    index: u32,
    sharding: String,
    buckets: usize,
    /// The boundary as JSON.
    boundary: Option<String>,
    frames: u64,
    packets: u64,
    per_bucket: Vec<u64>,
    skipped: BTreeMap<String, u64>,
    snapped: u64,
    source_error: Option<String>,
}

/// One range of a capture split by flow into the buckets of N workers,
/// from :meth:`Program.partition` (its blobs beside it). Picklable.
#[pyclass(module = "sluice", frozen)]
pub struct Partition {
    state: State,
}

fn json_loads<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

fn json_error(e: serde_json::Error) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl Partition {
    /// The range's place in the plan.
    #[getter]
    fn index(&self) -> u32 {
        self.state.index
    }

    /// How packets were spread: ``"symmetric"`` or ``"directional"``.
    #[getter]
    fn sharding(&self) -> &str {
        &self.state.sharding
    }

    /// The number of buckets (the workers of the run).
    #[getter]
    fn buckets(&self) -> usize {
        self.state.buckets
    }

    /// Where the range's reader began (``first``) and where its records
    /// crossed the range's end (``next``), with its ``frames`` and
    /// ``error``, as ``sluice shards --json`` gives a range's; None for a
    /// whole capture. :func:`sluice.check` proves it.
    #[getter]
    fn boundary<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match &self.state.boundary {
            Some(b) => Ok(Some(json_loads(py, b)?)),
            None => Ok(None),
        }
    }

    /// Frames the range read (those skipped for want of an Ethernet form
    /// included).
    #[getter]
    fn frames(&self) -> u64 {
        self.state.frames
    }

    /// Packets put in the buckets.
    #[getter]
    fn packets(&self) -> u64 {
        self.state.packets
    }

    /// Packets per bucket.
    #[getter]
    fn per_bucket(&self) -> Vec<u64> {
        self.state.per_bucket.clone()
    }

    /// Frames skipped for want of an Ethernet form, per link type.
    #[getter]
    fn skipped(&self) -> BTreeMap<String, u64> {
        self.state.skipped.clone()
    }

    /// Frames captured shorter than they were on the wire.
    #[getter]
    fn snapped(&self) -> u64 {
        self.state.snapped
    }

    /// The error the range's reading ended on (None: it read to its end).
    #[getter]
    fn source_error(&self) -> Option<String> {
        self.state.source_error.clone()
    }

    /// The boundary as bytes (its JSON), for :func:`sluice.check`; None
    /// for a whole capture.
    fn _boundary_bytes<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match &self.state.boundary {
            Some(b) => Ok(Some(PyBytes::new(py, b.as_bytes()))),
            None => Ok(None),
        }
    }

    /// A partition from its pickled state.
    #[staticmethod]
    fn _from_state(state: &Bound<'_, PyAny>) -> PyResult<Partition> {
        let state = state.extract().map_err(|e| {
            PyValueError::new_err(format!("not the state of a sluice.Partition: {e}"))
        })?;
        Ok(Partition { state })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let make = py.get_type::<Partition>().getattr("_from_state")?;
        let state = slf.get().state.clone().into_pyobject(py)?;
        PyTuple::new(py, [make, PyTuple::new(py, [state])?.into_any()])
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Partition(index={}, packets={}, per_bucket={:?})",
            self.state.index, self.state.packets, self.state.per_bucket
        )
    }
}

/// The range `shard` names: a `sluice.Shard` (or any object with `path`,
/// `start`, `end` and optionally `index`), or a path (a whole capture,
/// index 0); read from `proven` when given (a position as
/// :func:`sluice.check` gives it: a dict, or its JSON).
fn range_of(
    shard: &Bound<'_, PyAny>,
    proven: Option<&Bound<'_, PyAny>>,
) -> PyResult<(SourceSpec, u32)> {
    let proven = crate::shard::position_arg(proven)?;
    if let Ok(path) = shard.extract::<std::path::PathBuf>() {
        if proven.is_some() {
            return Err(PyTypeError::new_err(
                "proven=: a position is for a range (a sluice.Shard), not a whole capture",
            ));
        }
        return Ok((SourceSpec::capture(path), 0));
    }
    let s = crate::shard::shard_arg(shard)?;
    let index = u32::try_from(s.index)
        .map_err(|_| PyValueError::new_err(format!("shard: index {} too large", s.index)))?;
    let origin = Origin::Range {
        path: s.shard.path,
        start: s.shard.start,
        end: s.shard.end,
        proven,
        foreign: Foreign::Skip,
    };
    Ok((SourceSpec::new(origin), index))
}

/// `Program.partition`: the range read, its packets split into `buckets`.
pub(crate) fn partition<'py>(
    py: Python<'py>,
    shard: &Bound<'py, PyAny>,
    buckets: usize,
    proven: Option<&Bound<'py, PyAny>>,
    sharding: &str,
    filter: Option<String>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (mut source, index) = range_of(shard, proven)?;
    source.filter = filter;
    let how: Sharding = sharding
        .parse()
        .map_err(|e| PyValueError::new_err(format!("sharding={sharding:?}: {e}")))?;
    let (result, interrupt) = crate::interrupt::run(py, |stop| {
        engine::partition(&source, index, buckets, how, Some(stop))
    });
    if let Some(interrupt) = interrupt {
        return Err(interrupt);
    }
    let p = result.map_err(errors::to_py)?;
    let state = State {
        index: p.index,
        sharding: sharding.to_string(),
        buckets,
        boundary: p
            .boundary
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(json_error)?,
        frames: p.frames,
        packets: p.packets,
        per_bucket: p.per_bucket.clone(),
        skipped: p.skipped.by_name(),
        snapped: p.snapped,
        source_error: p.source_error.clone(),
    };
    let blobs = PyList::new(py, p.buckets.iter().map(|b| PyBytes::new(py, b)))?;
    let out = PyTuple::new(
        py,
        [
            Bound::new(py, Partition { state })?.into_any(),
            blobs.into_any(),
        ],
    )?;
    if let Some(e) = &p.source_error {
        let message = format!("the capture ended early after {} packets: {e}", p.packets);
        let err = errors::SourceError::new_err(message);
        err.value(py).setattr("result", &out)?;
        return Err(err);
    }
    Ok(out)
}

/// What one bucket's run gave, from :meth:`Program.run_bucket`: its
/// report (``sluice run --json``'s keys, for this worker's packets:
/// per-CPU maps hold values in the slot of CPU ``bucket`` only).
/// Picklable.
#[pyclass(module = "sluice", frozen)]
pub struct BucketResult {
    bucket: usize,
    buckets: usize,
    /// The run's raw parts, for :meth:`Program.merge`.
    pub(crate) run: engine::ShardRun,
    /// The report as JSON.
    json: String,
    /// `packets=N, verdicts={...}`, for `repr`.
    summary: String,
}

#[pymethods]
impl BucketResult {
    /// The worker this run was (0 to ``buckets - 1``).
    #[getter]
    fn bucket(&self) -> usize {
        self.bucket
    }

    /// The workers of the run it is part of (``--threads``).
    #[getter]
    fn buckets(&self) -> usize {
        self.buckets
    }

    /// The bucket's report as a dict, with the keys of ``sluice run
    /// --json`` (``threads`` is ``buckets``).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_loads(py, &self.json)
    }

    /// The packets the bucket ran.
    #[getter]
    fn packets(&self, py: Python<'_>) -> PyResult<u64> {
        self.report(py)?.get_item("packets")?.extract()
    }

    /// Packets per verdict (``"PASS"``, ``"DROP"``, ...).
    #[getter]
    fn verdicts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.report(py)?.get_item("verdicts")
    }

    /// The report as JSON text.
    fn to_json(&self) -> String {
        self.json.clone()
    }

    /// A result from its pickled state.
    #[staticmethod]
    fn _from_state(
        bucket: usize,
        buckets: usize,
        json: String,
        run: &[u8],
    ) -> PyResult<BucketResult> {
        Ok(BucketResult {
            bucket,
            buckets,
            run: engine::ShardRun::from_bytes(run).map_err(|e| errors::to_py(e.into()))?,
            summary: format!("bucket {bucket} of {buckets}"),
            json,
        })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let me = slf.get();
        let make = py.get_type::<BucketResult>().getattr("_from_state")?;
        let run = me.run.to_bytes().map_err(|e| errors::to_py(e.into()))?;
        let run = pyo3::types::PyBytes::new(py, &run);
        let args = (me.bucket, me.buckets, me.json.clone(), run).into_pyobject(py)?;
        PyTuple::new(py, [make, args.into_any()])
    }

    fn __repr__(&self) -> String {
        format!("sluice.BucketResult({})", self.summary)
    }
}

/// `Program.run_bucket` on `built` (a fresh hook with `buckets` CPUs and
/// the program's initial map contents, verified).
pub(crate) fn run_bucket(
    py: Python<'_>,
    built: Built,
    spec: BucketRunSpec,
    blobs: Vec<PyBackedBytes>,
) -> PyResult<BucketResult> {
    let (result, interrupt) = crate::interrupt::run(py, |stop| {
        let blobs: Vec<&[u8]> = blobs.iter().map(|b| b.as_ref()).collect();
        spec.run_on(built.hook, &blobs, Some(stop))
    });
    if let Some(interrupt) = interrupt {
        return Err(interrupt);
    }
    let mut run = result.map_err(errors::to_py)?;
    run.report.notes = built.notes;
    let json = serde_json::to_string(&run.report).map_err(json_error)?;
    let verdicts: Vec<String> = run
        .report
        .verdicts
        .iter()
        .map(|(v, n)| format!("{v:?}: {n}"))
        .collect();
    Ok(BucketResult {
        bucket: spec.bucket,
        buckets: spec.buckets,
        run: run.raw(spec.bucket, spec.buckets),
        summary: format!(
            "bucket {} of {}, packets={}, verdicts={{{}}}",
            spec.bucket,
            spec.buckets,
            run.report.packets,
            verdicts.join(", ")
        ),
        json,
    })
}
