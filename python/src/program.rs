//! [`Program`]: one program of an object, ready to run: `run` replays
//! packets through it (a fresh hook and maps each run, as `sluice run`)
//! with the GIL released.

use engine::{HookSpec, RunSpec};
use pyo3::prelude::*;

use crate::errors;
use crate::result::RunResult;
use crate::run_args;
use crate::{interrupt, output, source};

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
    /// The packets: exactly one of ``pcap`` (a pcap or pcapng capture: its
    /// path, a binary file object such as ``io.BytesIO`` or an open file,
    /// or its bytes), ``packets`` (Ethernet frames: ``bytes``, ``(timestamp_ns, bytes)``
    /// pairs, or scapy packets) and ``gen`` (a generator spec such as
    /// ``"udp,flows=10,count=1000"``, or a list of them).
    ///
    /// ``threads``: worker threads on the same maps (0: one per core).
    /// ``engine``: ``"jit"`` or ``"interpreter"``. ``limit``: stop after
    /// this many packets. ``filter``: a tcpdump expression; only the
    /// packets it matches are run. ``per_packet``: keep one row per packet
    /// (:attr:`RunResult.packets`). ``map_entries``: entries shown per map
    /// in the report. ``output``: keep the packets of these routes in
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
        pcap = None, packets = None, r#gen = None, *, threads = 1, engine = "jit",
        limit = None, filter = None, per_packet = true, map_entries = 16, output = None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        py: Python<'_>,
        pcap: Option<&Bound<'_, PyAny>>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        threads: usize,
        engine: &str,
        limit: Option<u64>,
        filter: Option<String>,
        per_packet: bool,
        map_entries: usize,
        output: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<RunResult>> {
        let mut source = source::source(pcap, packets, r#gen)?;
        source.filter = filter;
        let mut hook = self.hook.clone();
        hook.engine = run_args::vm_engine(engine)?;
        let mut spec = RunSpec::new(hook, source);
        spec.threads = threads;
        spec.limit = limit;
        spec.per_packet = per_packet;
        spec.map_entries = map_entries;
        spec.sinks = output::sinks(output)?;
        let (report, interrupt) = interrupt::run(py, |stop| spec.run(Some(stop), None));
        let result = report.map_err(errors::to_py).and_then(|r| {
            let early = errors::ended_early(r.source_error.as_deref(), r.packets);
            Ok((RunResult::new(r, &spec.sinks)?, early))
        });
        errors::finish(py, result, interrupt)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Program({:?} in {:?})",
            self.name(),
            self.hook.object.name()
        )
    }
}
