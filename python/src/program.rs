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
    /// in the report.
    ///
    /// The GIL is released while packets run. Raises ``sluice.SourceError``
    /// when the source does not open, ``sluice.VerifierError`` when the
    /// verifier rejects the program, ``sluice.Error`` otherwise.
    #[pyo3(signature = (
        pcap = None, packets = None, r#gen = None, *, threads = 1, engine = "jit",
        limit = None, filter = None, per_packet = true, map_entries = 16
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
    ) -> PyResult<RunResult> {
        let mut source = run_args::source(pcap, packets, r#gen)?;
        source.filter = filter;
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        let mut spec = RunSpec::new(hook, source);
        spec.threads = threads;
        spec.limit = limit;
        spec.per_packet = per_packet;
        spec.map_entries = map_entries;
        let report = py.detach(|| spec.run(None, None)).map_err(errors::to_py)?;
        RunResult::new(report)
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
    /// state of per-flow state). The GIL is released while packets run;
    /// raises as :meth:`run` does.
    #[pyo3(signature = (
        pcap = None, packets = None, r#gen = None, *, engine = "jit", limit = None,
        filter = None, warm_up = false
    ))]
    #[allow(clippy::too_many_arguments)]
    fn profile(
        &self,
        py: Python<'_>,
        pcap: Option<std::path::PathBuf>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        engine: &str,
        limit: Option<u64>,
        filter: Option<String>,
        warm_up: bool,
    ) -> PyResult<crate::profile::Profile> {
        let mut source = run_args::source(pcap, packets, r#gen)?;
        source.filter = filter;
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        crate::profile::run(py, hook, source, limit, warm_up)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Program({:?} in {:?})",
            self.name(),
            self.hook.object.name()
        )
    }
}
