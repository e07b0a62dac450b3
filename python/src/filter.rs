//! [`Filter`]: a tcpdump expression compiled by libpcap (the engine's
//! [`CompiledFilter`]): its classic BPF program, its `tcpdump -d` text, a
//! packet matched; `Filter.run` filters packets as `sluice filter` does
//! and gives a [`FilterResult`](crate::filter_result::FilterResult): the report of `sluice filter --json`
//! and the matching packets as an Arrow table.

use engine::{CompiledFilter, DumpForm, FilterEngineKind, FilterRunSpec};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::filter_result::FilterResult;
use crate::{errors, interrupt, source};

/// A tcpdump expression, compiled by libpcap as tcpdump compiles it.
///
/// ``Filter(expr, linktype="EN10MB", snaplen=262144)`` compiles for
/// packets of that link type (a name tcpdump's ``-y`` takes, or a
/// LINKTYPE number) and snapshot length; ``Filter(expr, pcap=...)`` for
/// the link type and snapshot length of a capture (a path, a binary file
/// object, or its bytes), as ``tcpdump -r F -d`` does. A bad expression
/// raises ``sluice.FilterError`` with the message of ``sluice filter``.
#[pyclass(module = "sluice", frozen)]
pub struct Filter {
    pub(crate) compiled: CompiledFilter,
}

/// `linktype=`: a LINKTYPE number, or a name (`EN10MB`, `RAW`, ...).
fn linktype(value: &Bound<'_, PyAny>) -> PyResult<u32> {
    if let Ok(n) = value.extract::<u32>() {
        return Ok(n);
    }
    let name: String = value.extract().map_err(|_| {
        PyTypeError::new_err("linktype=: a LINKTYPE number or a name such as \"EN10MB\"")
    })?;
    engine::linktype_from_name(&name).map_err(errors::to_py)
}

#[pymethods]
impl Filter {
    #[new]
    #[pyo3(signature = (expr, *, linktype = None, snaplen = None, pcap = None))]
    fn new(
        py: Python<'_>,
        expr: String,
        linktype: Option<&Bound<'_, PyAny>>,
        snaplen: Option<u32>,
        pcap: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Filter> {
        let (lt, snap) = match (pcap, linktype) {
            (Some(_), Some(_)) => {
                return Err(PyTypeError::new_err(
                    "Filter() takes linktype= or pcap= (the capture's), not both",
                ));
            }
            (Some(pcap), None) => {
                let spec = source::source(Some(pcap), None, None)?;
                py.detach(|| engine::capture_link(&spec.origin))
                    .map_err(errors::to_py)?
            }
            (None, Some(lt)) => (self::linktype(lt)?, engine::DEFAULT_SNAPLEN),
            (None, None) => (engine::ETHERNET, engine::DEFAULT_SNAPLEN),
        };
        let snap = snaplen.unwrap_or(snap);
        let compiled = py
            .detach(|| CompiledFilter::compile(&expr, lt, snap))
            .map_err(errors::to_py)?;
        Ok(Filter { compiled })
    }

    /// The expression.
    #[getter]
    fn expr(&self) -> String {
        self.compiled.expr.clone()
    }

    /// The LINKTYPE number compiled for (1: Ethernet).
    #[getter]
    fn linktype(&self) -> u32 {
        self.compiled.linktype
    }

    /// The snapshot length compiled for.
    #[getter]
    fn snaplen(&self) -> u32 {
        self.compiled.snaplen
    }

    /// The classic BPF program: ``(code, jt, jf, k)`` tuples, as
    /// ``tcpdump -ddd`` prints them.
    #[getter]
    fn instructions(&self) -> Vec<(u16, u8, u8, u32)> {
        (self.compiled.instructions().iter())
            .map(|i| (i.code, i.jt, i.jf, i.k))
            .collect()
    }

    /// The program as ``tcpdump -d`` prints it (``sluice filter -d``);
    /// ``form="dd"`` as C (``-dd``), ``"ddd"`` in decimal (``-ddd``).
    #[pyo3(signature = (form = "d"))]
    fn dump(&self, form: &str) -> PyResult<String> {
        let form = match form {
            "d" => DumpForm::Mnemonics,
            "dd" => DumpForm::C,
            "ddd" => DumpForm::Decimal,
            other => {
                return Err(PyValueError::new_err(format!(
                    "form={other:?}: \"d\", \"dd\" or \"ddd\""
                )));
            }
        };
        Ok(self.compiled.dump(form))
    }

    /// Whether the filter accepts ``packet`` (``bytes``, or a scapy
    /// packet), a packet of the filter's link type as captured;
    /// ``wire_len`` its length on the wire (default: its length).
    #[pyo3(signature = (packet, *, wire_len = None))]
    fn matches(&self, packet: &Bound<'_, PyAny>, wire_len: Option<u32>) -> PyResult<bool> {
        let (_, data) = source::frame(packet)?;
        self.compiled
            .matches(&data, wire_len)
            .map_err(errors::to_py)
    }

    /// Filters packets as ``sluice filter -r`` does and returns a
    /// :class:`FilterResult`.
    ///
    /// Exactly one of ``pcap`` (a capture: a path, a binary file object,
    /// or its bytes; each record through the program for its own link
    /// type, as tcpdump), ``packets`` (frames in memory, of the filter's
    /// link type: ``bytes``, ``(timestamp_ns, bytes)`` pairs, scapy
    /// packets) and ``gen`` (generated traffic). ``write``: write the
    /// matching packets to this capture file (``-w``; pcapng for a
    /// ``.pcapng`` name). ``count``: stop after this many matches
    /// (``-c``). ``engine``: what runs the program, as ``sluice filter
    /// --engine`` takes it: ``"interp"`` (the classic interpreter, the
    /// default), ``"jit"`` (sluice's classic JIT), ``"ebpf-jit"`` (the
    /// eBPF translation in sluice's JIT) or ``"kernel"`` (in the kernel;
    /// root); packets an engine refuses are decided by the interpreter
    /// and counted (``decided_by_interpreter``).
    ///
    /// The GIL is released while packets are filtered; Ctrl-C stops it and
    /// raises ``KeyboardInterrupt`` with the partial result as its
    /// ``result``. A capture that does not open raises
    /// ``sluice.SourceError``; one that ends early on a cut or corrupt
    /// record too, after the packets before it (its ``result``).
    #[pyo3(signature = (pcap = None, packets = None, r#gen = None, *, write = None, count = None, engine = "interp"))]
    #[allow(clippy::too_many_arguments)] // the keywords of a Python method
    fn run(
        &self,
        py: Python<'_>,
        pcap: Option<&Bound<'_, PyAny>>,
        packets: Option<&Bound<'_, PyAny>>,
        r#gen: Option<&Bound<'_, PyAny>>,
        write: Option<std::path::PathBuf>,
        count: Option<u64>,
        engine: &str,
    ) -> PyResult<Py<FilterResult>> {
        let engine = FilterEngineKind::from_name(engine).map_err(|e| match e {
            engine::Error::FilterEngine { engine, cause } => {
                PyValueError::new_err(format!("engine={engine}: {cause}"))
            }
            e => errors::to_py(e),
        })?;
        if count == Some(0) {
            return Err(PyValueError::new_err(
                "invalid packet count 0 (count= takes 1 or more)",
            ));
        }
        let origin = source::source(pcap, packets, r#gen)?.origin;
        let mut spec = FilterRunSpec::new(self.compiled.expr.clone(), origin);
        spec.linktype = self.compiled.linktype;
        spec.write = write;
        spec.count = count;
        spec.engine = engine;
        let (report, interrupt) = interrupt::run(py, |stop| spec.run(Some(stop)));
        let result = report.map_err(errors::to_py).and_then(|r| {
            let early = errors::ended_early(r.capture_error.as_deref(), r.read);
            Ok((FilterResult::new(r)?, early))
        });
        errors::finish(py, result, interrupt)
    }

    /// Filters the records of one shard of a plan (``sluice.plan``) and
    /// returns a :class:`FilterShard` for :meth:`Filter.merge`. ``shard``:
    /// a ``sluice.Shard`` or a dict with ``path``, ``start``, ``end``,
    /// ``size`` (and ``index``); ``proven``: the position to read it from
    /// (a ``sluice.Redo``'s ``position``), else its first record's guess.
    /// ``output_dir``: write the matching packets to
    /// ``output_dir/part-{index:05}.pcap`` (whole or not at all).
    #[pyo3(signature = (shard, proven = None, output_dir = None))]
    fn run_shard(
        &self,
        py: Python<'_>,
        shard: &Bound<'_, PyAny>,
        proven: Option<&Bound<'_, PyAny>>,
        output_dir: Option<std::path::PathBuf>,
    ) -> PyResult<crate::cluster_flows::FilterShard> {
        crate::cluster_flows::filter_shard(py, &self.compiled, shard, proven, output_dir)
    }

    /// Merges the :class:`FilterShard` of every shard of a plan (in plan
    /// order, proven: ``sluice.check`` finds nothing) into what
    /// :meth:`run` gives over the whole capture.
    fn merge(&self, py: Python<'_>, parts: &Bound<'_, PyAny>) -> PyResult<Py<FilterResult>> {
        crate::cluster_flows::merge_filter(py, parts)
    }

    fn __repr__(&self) -> String {
        format!(
            "sluice.Filter({:?}, linktype={})",
            self.compiled.expr, self.compiled.linktype
        )
    }
}
