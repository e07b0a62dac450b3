//! A program's run over one shard ([`run_shard`], `Program.run_shard`)
//! and the merge of the runs over every shard of a plan ([`merge`],
//! `Program.merge`): a [`ShardResult`] keeps the range's raw counts, maps
//! and proof ([`engine::ShardRun`]), pickles to bytes, and writes the
//! range's per-packet table (Parquet) and each route's packets (pcap) as
//! partitions named by the shard's index, atomically (a temporary name,
//! then a rename): a task run twice writes the same files.

use std::path::{Path, PathBuf};

use engine::shards::Position;
use engine::{HookMaps, HookSpec, MapPolicies, MapPolicy, MapValue, Origin, RunSpec, ShardRun};
use engine::{Route, SinkSpec, SourceSpec, Target, Value};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use serde::{Deserialize, Serialize};

use crate::errors;
use crate::result::RunResult;
use crate::shard::{Shard, not_pickled, reduce, to_py_json};

/// The routes, each written to `{output_dir}/{route}/part-{index:05}.pcap`.
const ROUTES: [(&str, Route); 4] = [
    ("pass", Route::Pass),
    ("tx", Route::Tx),
    ("redirect", Route::Redirect),
    ("drop", Route::Drop),
];

/// The result of :meth:`Program.run_shard`: one range's run, raw, for
/// :meth:`Program.merge` and :func:`sluice.check`.
#[pyclass(module = "sluice", frozen)]
#[derive(Clone, Serialize, Deserialize)]
pub struct ShardResult {
    pub(crate) run: ShardRun,
    /// The range's own report, as `sluice run --json` over its packets.
    report: String,
    /// The Parquet file of its per-packet table, when written.
    table: Option<PathBuf>,
    /// Each route's capture file, when written.
    outputs: Vec<(String, PathBuf)>,
}

impl ShardResult {
    fn report_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.report,))
    }
}

#[pymethods]
impl ShardResult {
    /// The shard's place in the plan.
    #[getter]
    fn index(&self) -> usize {
        self.run.index
    }

    /// The shard run, a :class:`Shard`.
    #[getter]
    fn shard(&self) -> Shard {
        Shard {
            shard: self.run.boundary.shard.clone(),
            index: self.run.index,
        }
    }

    /// The proof of the range's reading, a dict: ``first`` (the position
    /// its reader began at), ``next`` (where its records crossed the
    /// range's end), ``frames``, ``error`` (see docs/shards.md).
    #[getter]
    fn boundary<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py_json(py, &self.run.boundary)
    }

    /// The boundary serialized (JSON), as :func:`sluice.check` takes it.
    fn _boundary_bytes(&self) -> PyResult<Vec<u8>> {
        serde_json::to_vec(&self.run.boundary).map_err(|e| errors::Error::new_err(e.to_string()))
    }

    /// Packets the range's run ran.
    #[getter]
    fn packets(&self) -> u64 {
        self.run.packets()
    }

    /// Frames the range's reader read (skipped ones too).
    #[getter]
    fn frames(&self) -> u64 {
        self.run.boundary.frames
    }

    /// Packets per verdict in the range, as the report's ``verdicts``.
    #[getter]
    fn verdicts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.report_dict(py)?.get_item("verdicts")
    }

    /// The range's own report: ``sluice run --json``'s over its packets
    /// (its packet numbers count from the range's first frame).
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.report_dict(py)
    }

    /// Whether the range was read from a proven position given to it.
    #[getter]
    fn redone(&self) -> bool {
        self.run.redone
    }

    /// The Parquet file of the range's per-packet table (``table_dir=``),
    /// or ``None``.
    #[getter]
    fn table_path(&self) -> Option<String> {
        self.table.as_ref().map(|p| p.display().to_string())
    }

    /// Each route's capture file (``output_dir=``): ``{"pass": path, ...}``.
    #[getter]
    fn output_paths<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (route, path) in &self.outputs {
            d.set_item(route, path.display().to_string())?;
        }
        Ok(d)
    }

    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let mut bytes = Vec::new();
        ciborium::into_writer(self, &mut bytes)
            .map_err(|e| errors::Error::new_err(e.to_string()))?;
        reduce(py, "_shard_result_from_bytes", &bytes)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.ShardResult({:?}, index={}, packets={})",
            self.run.boundary.shard.describe(),
            self.run.index,
            self.run.packets()
        )
    }
}

/// A shard result from a pickle's bytes.
#[pyfunction]
pub(crate) fn _shard_result_from_bytes(bytes: &[u8]) -> PyResult<ShardResult> {
    ciborium::from_reader(bytes).map_err(|e| not_pickled("sluice.ShardResult", e))
}

/// `{dir}/.{name}.{pid}.tmp{ext}` beside `{dir}/{name}{ext}`: written
/// first, renamed once complete.
fn temporary(dir: &Path, name: &str, ext: &str) -> (PathBuf, PathBuf) {
    let tmp = dir.join(format!(".{name}.{}.tmp{ext}", std::process::id()));
    (tmp, dir.join(format!("{name}{ext}")))
}

fn io_error(path: &Path, e: std::io::Error) -> PyErr {
    errors::Error::new_err(format!("{}: {e}", path.display()))
}

/// Pins the calling thread (and the threads it starts) to host CPU `cpu`.
fn pin(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("cpu={cpu}: no such CPU"));
    }
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET writes within
    // it (cpu < CPU_SETSIZE); sched_setaffinity reads the set we own.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    match rc {
        0 => Ok(()),
        _ => Err(format!("cpu={cpu}: {}", std::io::Error::last_os_error())),
    }
}

/// What `Program.run_shard` asks for.
pub(crate) struct ShardArgs {
    pub shard: Shard,
    pub proven: Option<Position>,
    pub threads: usize,
    pub cpu: Option<usize>,
    pub table_dir: Option<PathBuf>,
    pub output_dir: Option<PathBuf>,
}

/// Runs `hook` (fresh, its maps written with `initial`) over one shard.
pub(crate) fn run_shard(
    py: Python<'_>,
    hook: &HookSpec,
    initial: &[(String, Value, MapValue)],
    args: ShardArgs,
) -> PyResult<ShardResult> {
    let index = args.shard.index;
    let shard = &args.shard.shard;
    let origin = Origin::Range {
        path: shard.path.clone(),
        start: shard.start,
        end: shard.end,
        proven: args.proven,
        foreign: engine::Foreign::Skip,
    };
    let mut spec = RunSpec::new(hook.clone(), SourceSpec::new(origin));
    spec.threads = args.threads;
    spec.per_packet = args.table_dir.is_some();
    let name = format!("part-{index:05}");
    let mut renames = Vec::new();
    if let Some(dir) = &args.output_dir {
        for (route, r) in ROUTES {
            let dir = dir.join(route);
            std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
            let (tmp, path) = temporary(&dir, &name, ".pcap");
            spec.sinks.push(SinkSpec {
                route: r,
                to: Target::File(tmp.clone()),
            });
            renames.push((route.to_string(), tmp, path));
        }
    }
    let (ran, interrupt) = crate::interrupt::run(py, |stop| {
        let cpus = hook.cpus.max(spec.worker_threads() as u32);
        let (mut loaded, _) = crate::program::load(hook, cpus, initial)?;
        loaded.built.verify().map_err(errors::to_py)?;
        if let Some(cpu) = args.cpu {
            pin(cpu).map_err(errors::Error::new_err)?;
        }
        spec.run_range_on(&mut loaded.built.hook, Some(stop), None)
            .map_err(errors::to_py)
    });
    if let Some(e) = interrupt {
        return Err(e);
    }
    let mut ran = ran?;
    ran.run.index = index;
    let mut table = None;
    if let Some(dir) = &args.table_dir {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let log = ran.report.packet_table.take();
        let batch = log
            .map(tables::packets)
            .transpose()
            .map_err(errors::table_error)?;
        if let Some(batch) = batch {
            let (tmp, path) = temporary(dir, &name, ".parquet");
            tables::write(&tmp, &batch).map_err(errors::table_error)?;
            std::fs::rename(&tmp, &path).map_err(|e| io_error(&path, e))?;
            table = Some(path);
        }
    }
    let mut outputs = Vec::new();
    for (route, tmp, path) in renames {
        std::fs::rename(&tmp, &path).map_err(|e| io_error(&path, e))?;
        outputs.push((route, path));
    }
    let report =
        serde_json::to_string(&ran.report).map_err(|e| errors::Error::new_err(e.to_string()))?;
    Ok(ShardResult {
        run: ran.run,
        report,
        table,
        outputs,
    })
}

/// `policies=`: `{map: "sum" | "union" | "last" | "keep"}`.
pub(crate) fn policies_arg(policies: Option<&Bound<'_, PyDict>>) -> PyResult<MapPolicies> {
    let mut out = MapPolicies::new();
    for (name, policy) in policies.iter().flat_map(|d| d.iter()) {
        let text: String = policy.extract()?;
        let policy: MapPolicy = text
            .parse()
            .map_err(|e: engine::MergeError| errors::to_py(e.into()))?;
        out.insert(name.extract()?, policy);
    }
    Ok(out)
}

/// Merges `results` (every shard of a plan, in plan order) into the
/// report one process gives, on a fresh hook whose maps hold `initial`.
/// `Program.merge`'s results: the raw runs, and whether they are a
/// flow-affine run's buckets (all of them :class:`BucketResult`) rather
/// than ranges (all :class:`ShardResult`).
pub(crate) fn runs_arg(results: &[Bound<'_, PyAny>]) -> PyResult<(Vec<ShardRun>, bool)> {
    let mut runs = Vec::with_capacity(results.len());
    let mut kinds = (0, 0);
    for r in results {
        if let Ok(shard) = r.cast::<ShardResult>() {
            runs.push(shard.borrow().run.clone());
            kinds.0 += 1;
        } else if let Ok(bucket) = r.cast::<crate::partition::BucketResult>() {
            runs.push(bucket.get().run.clone());
            kinds.1 += 1;
        } else {
            let what = r.get_type().name()?;
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "merge() takes ShardResult or BucketResult objects, not {what}"
            )));
        }
    }
    if kinds.0 > 0 && kinds.1 > 0 {
        return Err(errors::MergeError::new_err(
            "merge() takes the ShardResults of ranges or the BucketResults of a flow-affine run's buckets, not both",
        ));
    }
    Ok((runs, kinds.1 > 0))
}

/// Merges `results` (ranges' runs, or with `buckets` a flow-affine
/// run's buckets') into the one process's result.
pub(crate) fn merge(
    py: Python<'_>,
    hook: &HookSpec,
    initial: &[(String, Value, MapValue)],
    results: &[ShardRun],
    buckets: bool,
    policies: &MapPolicies,
    map_entries: usize,
) -> PyResult<RunResult> {
    py.detach(|| {
        let cpus = results
            .iter()
            .map(|r| r.cpus)
            .fold(hook.cpus.max(1), u32::max);
        let (mut loaded, maps) = crate::program::load(hook, cpus, initial)?;
        loaded.built.verify().map_err(errors::to_py)?;
        let built = &mut loaded.built.hook;
        let merged = if buckets {
            engine::merge_buckets_on(built, hook, results, policies, map_entries)
        } else {
            engine::merge_runs_on(built, hook, results, policies, map_entries)
        };
        let (report, _) = merged.map_err(errors::to_py)?;
        let maps: HookMaps = maps;
        let values = report
            .maps
            .iter()
            .filter_map(|d| {
                let entries = maps.get(&d.name).ok()?.report_entries(map_entries);
                Some((d.name.clone(), entries))
            })
            .collect();
        RunResult::new(report, values, &[])
    })
}
