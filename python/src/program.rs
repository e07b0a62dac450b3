//! [`Program`]: one program of an object, loaded as the kernel holds a
//! loaded program: its hook and maps, made once (with its settings and
//! initial map contents) and kept. `run` replays packets through it with
//! the GIL released, on the maps as they are; `reset` starts again from
//! fresh maps; `maps` reads and writes them; `verify` checks it as
//! `sluice verify` does.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

use engine::{Built, HookMaps, HookSpec, MapValue, RunSpec, Value, VmEngine};
use pyo3::prelude::*;

use crate::errors::{self, MapError};
use crate::maps::Maps;
use crate::result::RunResult;
use crate::run_args;
use crate::verify::VerifyResult;
use crate::{interrupt, output, source};

/// The hook as loaded: the program, its maps, verified or not yet.
pub(crate) struct Loaded {
    pub(crate) built: Built,
    verified: bool,
    /// The CPUs per-CPU maps hold a value for.
    cpus: u32,
}

/// A program of an :class:`Object`, from :meth:`Object.program`.
#[pyclass(module = "sluice", frozen)]
pub struct Program {
    hook: HookSpec,
    /// Written into the maps each time they are made (`maps=`).
    initial: Vec<(String, Value, MapValue)>,
    loaded: Mutex<Loaded>,
    maps: Mutex<HookMaps>,
    /// No run yet, and no map written since the maps were made: they may
    /// be made again with more CPUs without losing anything.
    pristine: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Loads `hook` with `cpus` CPUs and writes `initial` into its maps.
pub(crate) fn load(
    hook: &HookSpec,
    cpus: u32,
    initial: &[(String, Value, MapValue)],
) -> PyResult<(Loaded, HookMaps)> {
    let mut spec = hook.clone();
    spec.cpus = cpus.max(1);
    let built = spec.load().map_err(errors::object_error)?;
    let maps = HookMaps::of(&built.hook);
    for (name, key, value) in initial {
        maps.get(name)
            .and_then(|m| m.update(key, value))
            .map_err(errors::map_error)?;
    }
    let loaded = Loaded {
        built,
        verified: false,
        cpus: spec.cpus,
    };
    Ok((loaded, maps))
}

/// The fewest CPUs the per-CPU maps hold values for (`None`: no per-CPU map).
fn per_cpu(maps: &HookMaps) -> Option<u32> {
    maps.names()
        .iter()
        .filter_map(|n| maps.get(n).ok()?.per_cpu())
        .min()
}

impl Program {
    /// `hook` loaded with `hook.cpus` CPUs, `initial` written into its
    /// maps; without a program named, the object's only runnable one.
    pub(crate) fn new(
        mut hook: HookSpec,
        initial: Vec<(String, Value, MapValue)>,
    ) -> PyResult<Program> {
        let (loaded, maps) = load(&hook, hook.cpus, &initial)?;
        hook.program = Some(loaded.built.hook.program().name.clone());
        Ok(Program {
            hook,
            initial,
            loaded: Mutex::new(loaded),
            maps: Mutex::new(maps),
            pristine: AtomicBool::new(true),
        })
    }

    /// The maps as they are now.
    pub(crate) fn hook_maps(&self) -> HookMaps {
        lock(&self.maps).clone()
    }

    /// A map is about to be written from Python.
    pub(crate) fn touched(&self) {
        self.pristine.store(false, Ordering::Relaxed);
    }

    /// Makes the hook and maps again, `cpus` CPUs for per-CPU maps.
    fn reload(&self, loaded: &mut Loaded, cpus: u32) -> PyResult<()> {
        let (fresh, maps) = load(&self.hook, cpus, &self.initial)?;
        *loaded = fresh;
        *lock(&self.maps) = maps;
        self.pristine.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Runs `spec` on the hook, verified first if it is not yet, until
    /// `stop`; with the message of a capture that ended early.
    fn run_spec(
        &self,
        spec: &RunSpec,
        stop: &'static AtomicBool,
    ) -> PyResult<(RunResult, Option<String>)> {
        let mut loaded = lock(&self.loaded);
        let threads = spec.worker_threads() as u32;
        let pristine = self.pristine.load(Ordering::Relaxed);
        if loaded.cpus < threads && per_cpu(&self.hook_maps()).is_some() {
            if !pristine {
                return Err(MapError::new_err(format!(
                    "threads={threads}: this program's per-CPU maps hold values for {} CPUs; \
                     give cpus={threads} to Object.program(), or reset() to start again from fresh maps",
                    loaded.cpus
                )));
            }
            self.reload(&mut loaded, threads)?;
        }
        if !loaded.verified {
            loaded.built.verify().map_err(errors::to_py)?;
            loaded.verified = true;
        }
        self.pristine.store(false, Ordering::Relaxed);
        let mut notes = loaded.built.notes.clone();
        let hook = &mut loaded.built.hook;
        match spec.hook.engine {
            VmEngine::Jit if !hook.jit_enabled() => {
                if let Err(e) = hook.enable_jit() {
                    notes.push(e.to_string());
                }
            }
            VmEngine::Interpreter => hook.disable_jit(),
            VmEngine::Jit => {}
        }
        hook.set_counting(spec.hook.count_memory);
        let mut report = spec.run_on(hook, Some(stop), None).map_err(errors::to_py)?;
        let early = errors::ended_early(report.source_error.as_deref(), report.packets);
        report.notes = notes;
        let maps = HookMaps::of(&loaded.built.hook);
        let values = report
            .maps
            .iter()
            .filter_map(|d| {
                Some((
                    d.name.clone(),
                    maps.get(&d.name).ok()?.report_entries(spec.map_entries),
                ))
            })
            .collect();
        Ok((RunResult::new(report, values, &spec.sinks)?, early))
    }
}

#[pymethods]
impl Program {
    /// The program's name (its function's).
    #[getter]
    fn name(&self) -> String {
        self.hook.program.clone().unwrap_or_default()
    }

    /// What reports call the program's object.
    #[getter]
    fn object(&self) -> String {
        self.hook.object.name()
    }

    /// The CPUs the program's per-CPU maps hold a value for: ``cpus=`` of
    /// :meth:`Object.program` (1 by default), or the threads of the first
    /// run when it asked for more.
    #[getter]
    fn cpus(&self, py: Python<'_>) -> u32 {
        py.detach(|| lock(&self.loaded).cpus)
    }

    /// The program's maps by name, a mapping of :class:`Map`: read and
    /// written as user space does (``bpf()``), between runs or during one.
    #[getter]
    fn maps(slf: &Bound<'_, Self>) -> Maps {
        Maps::new(slf.clone().unbind())
    }

    /// Runs the program over packets, as ``sluice run`` does, and returns a
    /// :class:`RunResult`.
    ///
    /// The packets: exactly one of ``pcap`` (a pcap or pcapng capture: its
    /// path, a binary file object such as ``io.BytesIO`` or an open file,
    /// or its bytes), ``packets`` (Ethernet frames: ``bytes``, ``(timestamp_ns, bytes)``
    /// pairs, or scapy packets) and ``gen`` (a generator spec such as
    /// ``"udp,flows=10,count=1000"``, or a list of them).
    ///
    /// The run continues on the program's maps as they are (as earlier
    /// runs and map writes left them) and leaves them changed, as packets
    /// do to a program loaded in the kernel; :meth:`reset` starts again from
    /// fresh maps. The first run of a fresh program is ``sluice run`` on the
    /// same inputs. The program is verified before its first run.
    ///
    /// ``threads``: worker threads on the same maps (0: one per core); a
    /// per-CPU map needs a CPU per thread: a program not run yet (and whose
    /// maps were not written) is made again with as many; otherwise give
    /// ``cpus=`` to :meth:`Object.program` up front (``sluice.MapError``).
    /// ``shard``: how the threads share the packets, as ``--shard``:
    /// ``"auto"`` (byte ranges of a capture file where the program's result
    /// cannot depend on the order of packets across flows, else
    /// ``"symmetric"``), ``"ranges"``, ``"symmetric"``, ``"directional"``,
    /// ``"round-robin"`` (:attr:`RunResult.shard` says which ran).
    /// ``engine``: ``"jit"`` or ``"interpreter"``. ``limit``: stop after this many
    /// packets. ``filter``: a tcpdump expression; only the packets it
    /// matches are run. ``per_packet``: keep one row per packet
    /// (:attr:`RunResult.packets`). ``map_entries``: entries shown per map
    /// in the report. ``count_memory``: count memory accesses per region
    /// (the report's ``memory_per_packet``, the table's ``*_loads`` and
    /// ``*_stores`` columns), as ``--count-memory``. ``coverage``: count
    /// the source lines, branches and functions run
    /// (:attr:`RunResult.coverage`), as ``--coverage``; the run is then
    /// interpreted step by step.
    /// ``output``: keep the packets of these routes in
    /// memory (``"tx"``, a list of routes, or ``True`` for all), for
    /// :meth:`RunResult.output`.
    ///
    /// The GIL is released while packets run. Ctrl-C (SIGINT) stops the
    /// run after the packets it read and raises ``KeyboardInterrupt``,
    /// whose ``result`` is the partial :class:`RunResult` (its report
    /// says ``stopped``). Raises ``sluice.SourceError`` when the source
    /// does not open, or a capture ends early on a cut or corrupt record
    /// (its ``result``: the packets before it), ``sluice.VerifierError``
    /// when the verifier rejects the program, ``sluice.Error`` otherwise.
    #[pyo3(signature = (
        pcap = None, packets = None, r#gen = None, *, threads = 1, shard = "auto", engine = "jit",
        limit = None, filter = None, per_packet = true, map_entries = 16,
        count_memory = false, coverage = false, output = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        pcap: Option<&Bound<'_, PyAny>>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        threads: usize,
        shard: &str,
        engine: &str,
        limit: Option<u64>,
        filter: Option<String>,
        per_packet: bool,
        map_entries: usize,
        count_memory: bool,
        coverage: bool,
        output: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<RunResult>> {
        let mut source = source::source(pcap, packets, r#gen)?;
        source.filter = filter;
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        hook.count_memory = count_memory;
        let mut spec = RunSpec::new(hook, source);
        spec.threads = threads;
        spec.shard = shard.parse().map_err(|e: engine::UnknownShardMode| {
            pyo3::exceptions::PyValueError::new_err(format!("shard=: {e}"))
        })?;
        spec.limit = limit;
        spec.per_packet = per_packet;
        spec.map_entries = map_entries;
        spec.coverage = coverage;
        spec.sinks = output::sinks(output)?;
        let (result, interrupt) = interrupt::run(py, |stop| self.run_spec(&spec, stop));
        errors::finish(py, result, interrupt)
    }

    /// Starts again from fresh maps: the program loaded anew with its
    /// settings and ``maps=`` contents, as :meth:`Object.program` gave it.
    fn reset(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| {
            let mut loaded = lock(&self.loaded);
            let cpus = self.hook.cpus;
            self.reload(&mut loaded, cpus)
        })
    }

    /// Checks the program with sluice's verifier, as ``sluice verify``
    /// does, and returns a :class:`VerifyResult` (a rejection is a result,
    /// not an exception). ``kernel``: ask the running kernel too (None:
    /// when running as root, as ``sluice verify`` does). ``unprivileged``:
    /// check as a loader without CAP_PERFMON. ``log``: keep the verifier's
    /// walk (:attr:`VerifyResult.log`).
    #[pyo3(signature = (*, kernel = None, unprivileged = false, log = false))]
    fn verify(
        &self,
        py: Python<'_>,
        kernel: Option<bool>,
        unprivileged: bool,
        log: bool,
    ) -> PyResult<VerifyResult> {
        py.detach(|| crate::verify::verify(&self.hook, kernel, unprivileged, log))
    }

    /// Profiles the program's cost per packet, as ``sluice profile`` does,
    /// and returns a :class:`Profile`: the cost model (``alpha``,
    /// ``beta``, ``gamma``, ``delta``, as ``sluice profile --json`` reports
    /// them), one row per packet, and a plot.
    ///
    /// The packets: exactly one of ``pcap``, ``packets`` and ``gen`` (as
    /// :meth:`run`). ``engine``: ``"jit"`` or ``"interpreter"`` (the
    /// counts are the same). ``limit``: packets taken at most. ``filter``:
    /// a tcpdump expression; only the packets it matches are profiled.
    /// ``warm_up``: run the packets once, uncounted, first (the steady
    /// state of per-flow state). The profile runs a fresh copy of the
    /// program (its settings, not the maps it holds), as ``sluice profile``
    /// does. The GIL is released while packets run; raises as :meth:`run`
    /// does.
    #[pyo3(signature = (
        pcap = None, packets = None, r#gen = None, *, engine = "jit", limit = None,
        filter = None, warm_up = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn profile(
        &self,
        py: Python<'_>,
        pcap: Option<&Bound<'_, PyAny>>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        engine: &str,
        limit: Option<u64>,
        filter: Option<String>,
        warm_up: bool,
    ) -> PyResult<crate::profile::Profile> {
        let mut source = crate::source::source(pcap, packets, r#gen)?;
        source.filter = filter;
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        crate::profile::run(py, hook, source, limit, warm_up)
    }

    /// Flow-affine mode, its shuffle: reads one range of a capture (a
    /// :class:`Shard` of :func:`sluice.plan`, or a capture's path for the
    /// whole file) and splits its packets by flow into the buckets of
    /// ``buckets`` workers, as ``sluice run --threads BUCKETS --shard
    /// SHARDING`` spreads them. Returns ``(Partition, blobs)``: one
    /// ``bytes`` per bucket, its packets in source order tagged with their
    /// global order (the range's ``index``, their number in it), with
    /// timestamps, wire lengths and link types. ``proven``: the position
    /// to read the range from (:attr:`Redo.position`). ``filter``: a
    /// tcpdump expression; only the packets it matches are kept. Raises
    /// ``sluice.SourceError`` when the capture does not open, or ends
    /// early (its ``result``: the tuple of the packets before it).
    #[pyo3(signature = (shard, buckets, proven = None, *, sharding = "symmetric", filter = None))]
    fn partition<'py>(
        &self,
        py: Python<'py>,
        shard: &Bound<'py, PyAny>,
        buckets: usize,
        proven: Option<&Bound<'py, PyAny>>,
        sharding: &str,
        filter: Option<String>,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        crate::partition::partition(py, shard, buckets, proven, sharding, filter)
    }

    /// Flow-affine mode, its run: the program over bucket ``bucket`` of
    /// ``buckets`` (``blobs``: that bucket's blob of every range, in plan
    /// order, from :meth:`partition`) in source order, as worker
    /// ``bucket`` of ``sluice run --threads BUCKETS`` runs them: on fresh
    /// maps (the program's settings and ``maps=`` contents, not the maps
    /// it holds) with ``buckets`` CPUs, as CPU ``bucket``. Returns a
    /// :class:`BucketResult`; merging the buckets' (verdicts summed,
    /// each worker's entries taken) gives ``sluice run --threads
    /// BUCKETS``'s for programs whose state is per flow. ``engine`` and
    /// ``map_entries`` as for :meth:`run`. Raises ``sluice.Error`` for a
    /// blob of another bucket, sharding or order.
    #[pyo3(signature = (bucket, buckets, blobs, *, engine = "jit", map_entries = 16))]
    fn run_bucket(
        &self,
        py: Python<'_>,
        bucket: usize,
        buckets: usize,
        blobs: Vec<pyo3::pybacked::PyBackedBytes>,
        engine: &str,
        map_entries: usize,
    ) -> PyResult<crate::partition::BucketResult> {
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        let mut spec = engine::BucketRunSpec::new(hook, bucket, buckets);
        spec.map_entries = map_entries;
        let (mut loaded, _) = load(&spec.hook, spec.hook_spec().cpus, &self.initial)?;
        py.detach(|| loaded.built.verify()).map_err(errors::to_py)?;
        crate::partition::run_bucket(py, loaded.built, spec, blobs)
    }

    /// Runs the program over one shard of a plan (:func:`sluice.plan`), on
    /// fresh maps (its settings and ``maps=`` contents, not the maps it
    /// holds), and returns a :class:`ShardResult`: the range's counts,
    /// maps and proof, raw, for :meth:`merge` and :func:`sluice.check`.
    ///
    /// ``shard``: a :class:`Shard` (or a dict or object with ``path``,
    /// ``start``, ``end``, ``size``, ``index``). ``proven``: the position
    /// to read the range from (:attr:`Redo.position`), for a range
    /// :func:`sluice.check` listed; else its first record is found from
    /// its start. ``threads``: worker threads on the range. ``cpu``: pin
    /// the run to this host CPU. ``table_dir``: write the range's
    /// per-packet table as ``{table_dir}/part-{index:05}.parquet``;
    /// ``output_dir``: each route's packets as
    /// ``{output_dir}/{route}/part-{index:05}.pcap`` (``pass``, ``tx``,
    /// ``redirect``, ``drop``): both written under a temporary name, then
    /// renamed, so a run repeated writes the same files. Raises as
    /// :meth:`run` does; ``sluice.MergeError`` when the run has no proof
    /// (stopped before the range's end).
    #[pyo3(signature = (
        shard, proven = None, *, threads = 1, cpu = None, table_dir = None, output_dir = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run_shard(
        &self,
        py: Python<'_>,
        shard: &Bound<'_, PyAny>,
        proven: Option<&Bound<'_, PyAny>>,
        threads: usize,
        cpu: Option<usize>,
        table_dir: Option<std::path::PathBuf>,
        output_dir: Option<std::path::PathBuf>,
    ) -> PyResult<crate::shard_result::ShardResult> {
        let args = crate::shard_result::ShardArgs {
            shard: crate::shard::shard_arg(shard)?,
            proven: crate::shard::position_arg(proven)?,
            threads,
            cpu,
            table_dir,
            output_dir,
        };
        crate::shard_result::run_shard(py, &self.hook, &self.initial, args)
    }

    /// Merges the runs over every shard of a plan (:class:`ShardResult`
    /// in plan order, each proven: :func:`sluice.check` lists none) into
    /// the :class:`RunResult` one process gives over the same packets:
    /// its report is ``sluice run --json``'s, plus ``merged`` (shards,
    /// ranges redone, every map's policy). Counts are summed in plan
    /// order; maps merged by ``policies`` (``{map: "sum" | "union" |
    /// "last" | "keep"}``), else by default (docs/shards.md);
    /// ``map_entries``: entries shown per map. ``results`` may instead be
    /// the :class:`BucketResult` of every bucket of a flow-affine run (in
    /// bucket order): the result is then ``sluice run --threads
    /// BUCKETS``'s. Raises ``sluice.MergeError`` for a range not proven or
    /// missing, a policy for no map, results of both kinds.
    #[pyo3(signature = (results, policies = None, *, map_entries = 16))]
    fn merge(
        &self,
        py: Python<'_>,
        results: Vec<Bound<'_, PyAny>>,
        policies: Option<&Bound<'_, pyo3::types::PyDict>>,
        map_entries: usize,
    ) -> PyResult<RunResult> {
        let policies = crate::shard_result::policies_arg(policies)?;
        let (runs, buckets) = crate::shard_result::runs_arg(&results)?;
        crate::shard_result::merge(
            py,
            &self.hook,
            &self.initial,
            &runs,
            buckets,
            &policies,
            map_entries,
        )
    }

    /// Pickles as its specification: the object, settings and ``maps=``
    /// contents (not the maps it holds).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let mut bytes = Vec::new();
        ciborium::into_writer(&(&self.hook, &self.initial), &mut bytes)
            .map_err(|e| errors::Error::new_err(e.to_string()))?;
        crate::shard::reduce(py, "_program_from_bytes", &bytes)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Program({:?} in {:?})",
            self.name(),
            self.hook.object.name()
        )
    }
}

/// A program from a pickle's bytes (its specification), loaded anew.
#[pyfunction]
pub(crate) fn _program_from_bytes(bytes: &[u8]) -> PyResult<Program> {
    let (hook, initial): (HookSpec, Vec<(String, Value, MapValue)>) =
        ciborium::from_reader(bytes).map_err(|e| crate::shard::not_pickled("sluice.Program", e))?;
    Program::new(hook, initial)
}
