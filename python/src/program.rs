//! [`Program`]: one program of an object, ready to run: `run` replays
//! packets through it (a fresh hook and maps each run, as `sluice run`)
//! with the GIL released.

use engine::{HookSpec, RunSpec};
use pyo3::prelude::*;

use crate::errors;
use crate::result::RunResult;
use crate::run_args;

/// A program of an :class:`Object`, from :meth:`Object.program`.
#[pyclass(module = "sluice", frozen)]
pub struct Program {
    hook: HookSpec,
}

impl Program {
    /// `hook` names its program.
    pub(crate) fn new(hook: HookSpec) -> Program {
        Program { hook }
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

    /// Runs the program over packets, as ``sluice run`` does, and returns a
    /// :class:`RunResult`.
    ///
    /// The packets: exactly one of ``pcap`` (a pcap or pcapng file's path),
    /// ``packets`` (Ethernet frames: ``bytes``, ``(timestamp_ns, bytes)``
    /// pairs, or scapy packets) and ``gen`` (a generator spec such as
    /// ``"udp,flows=10,count=1000"``, or a list of them).
    ///
    /// ``threads``: worker threads on the same maps (0: one per core).
    /// ``engine``: ``"jit"`` or ``"interpreter"``. ``limit``: stop after
    /// this many packets. ``filter``: a tcpdump expression; only the
    /// packets it matches are run. ``per_packet``: keep one row per packet
    /// (:attr:`RunResult.packets`). ``map_entries``: entries shown per map
    /// in the report. ``count_memory``: count memory accesses per region
    /// (the report's ``memory_per_packet``, the table's ``*_loads`` and
    /// ``*_stores`` columns), as ``--count-memory``. ``coverage``: count
    /// the source lines, branches and functions run
    /// (:attr:`RunResult.coverage`), as ``--coverage``; the run is then
    /// interpreted step by step.
    ///
    /// The GIL is released while packets run. Raises ``sluice.SourceError``
    /// when the source does not open, ``sluice.VerifierError`` when the
    /// verifier rejects the program, ``sluice.Error`` otherwise.
    #[pyo3(signature = (
        pcap = None, packets = None, r#gen = None, *, threads = 1, engine = "jit",
        limit = None, filter = None, per_packet = true, map_entries = 16,
        count_memory = false, coverage = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        pcap: Option<std::path::PathBuf>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        threads: usize,
        engine: &str,
        limit: Option<u64>,
        filter: Option<String>,
        per_packet: bool,
        map_entries: usize,
        count_memory: bool,
        coverage: bool,
    ) -> PyResult<RunResult> {
        let mut source = run_args::source(pcap, packets, r#gen)?;
        source.filter = filter;
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        hook.count_memory = count_memory;
        let mut spec = RunSpec::new(hook, source);
        spec.threads = threads;
        spec.limit = limit;
        spec.per_packet = per_packet;
        spec.map_entries = map_entries;
        spec.coverage = coverage;
        let report = py.detach(|| spec.run(None, None)).map_err(errors::to_py)?;
        RunResult::new(report)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Program({:?} in {:?})",
            self.name(),
            self.hook.object.name()
        )
    }
}
