//! tcpdump expressions as the engine's own: [`CompiledFilter`] (an
//! expression compiled by libpcap for a link type and snapshot length:
//! its classic BPF program, its `tcpdump -d` text, a packet matched), and
//! [`FilterRunSpec`], packets filtered as `sluice filter -r IN [-w OUT]
//! [-c N] EXPR` filters a capture, whose [`FilterReport`] serializes as
//! `sluice filter --json` prints it, with the matching packets in columns.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use capture::{PcapSink, PcapSource, SinkFormat};
use cbpf::{FilterOptions, FilterSummary, Insn, Matched};
use pipeline::{Batch, SourceError};
use serde::Serialize;

use crate::Error;
use crate::source::{Origin, SourceSpec};

/// How [`CompiledFilter::dump`] prints the program: as `tcpdump -d`,
/// `-dd` or `-ddd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpForm {
    /// `-d`: mnemonics.
    Mnemonics,
    /// `-dd`: a C array.
    C,
    /// `-ddd`: decimal.
    Decimal,
}

/// The LINKTYPE number of `name`: a number, or a name tcpdump's `-y`
/// takes (`EN10MB`, `RAW`, `LINUX_SLL`, ...).
pub fn linktype_from_name(name: &str) -> Result<u32, Error> {
    Ok(capture::linktype_from_name(name)?)
}

/// The link type and snapshot length `tcpdump -r F -d` compiles for: the
/// capture's header's (for pcapng, its first packet's interface), the
/// snapshot length libpcap's default where the file gives none. `origin`
/// is a capture (a file or bytes); for any other, Ethernet and the default.
pub fn capture_link(origin: &Origin) -> Result<(u32, u32), Error> {
    let Some(mut source) = open_capture(origin, None)? else {
        return Ok((cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN));
    };
    let source_error = |e: capture::IoError| Error::Source(SourceError(e.to_string()));
    let linktype = match source.linktype() {
        Some(lt) => lt,
        None => match source.next_raw() {
            Some(Ok(f)) => f.linktype,
            Some(Err(e)) => return Err(source_error(e)),
            None => {
                return Err(Error::Source(SourceError(format!(
                    "{}: no packet to take a link type from",
                    source.path().display()
                ))));
            }
        },
    };
    let snaplen = source
        .snaplen()
        .filter(|&s| s > 0)
        .unwrap_or(cbpf::DEFAULT_SNAPLEN);
    Ok((linktype, snaplen))
}

/// A capture `origin` holds, opened (a file or bytes in memory); `None`
/// for the origins that are not captures.
pub(crate) fn open_capture(
    origin: &Origin,
    stop: Option<&'static AtomicBool>,
) -> Result<Option<PcapSource>, Error> {
    let opened = match origin {
        Origin::Capture { path, .. } => PcapSource::open_with(path, stop),
        Origin::CaptureBytes { name, bytes, .. } => {
            let cursor = std::io::Cursor::new(bytes.clone());
            PcapSource::from_reader(Path::new(name), Box::new(cursor))
        }
        _ => return Ok(None),
    };
    opened
        .map(Some)
        .map_err(|e| Error::Source(SourceError(e.to_string())))
}

/// A tcpdump expression compiled by libpcap for packets of one link type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompiledFilter {
    pub expr: String,
    /// LINKTYPE_* of the packets it is for.
    pub linktype: u32,
    pub snaplen: u32,
    program: Vec<Insn>,
}

impl CompiledFilter {
    /// Compiles `expr` as tcpdump does (optimised); a bad expression is an
    /// [`Error::Expr`] with libpcap's message, as `sluice filter -d` says it.
    pub fn compile(expr: &str, linktype: u32, snaplen: u32) -> Result<CompiledFilter, Error> {
        let program = cbpf::compile_expr(expr, linktype, snaplen).map_err(|cause| Error::Expr {
            expr: expr.to_string(),
            cause,
        })?;
        Ok(CompiledFilter {
            expr: expr.to_string(),
            linktype,
            snaplen,
            program,
        })
    }

    /// The classic BPF program (`struct sock_filter`s).
    pub fn instructions(&self) -> &[Insn] {
        &self.program
    }

    /// The program as `tcpdump -d` (`-dd`, `-ddd`) prints it.
    pub fn dump(&self, form: DumpForm) -> String {
        match form {
            DumpForm::Mnemonics => cbpf::image(&self.program),
            DumpForm::C => cbpf::image_c(&self.program),
            DumpForm::Decimal => cbpf::image_decimal(&self.program),
        }
    }

    /// Whether the filter accepts `packet` (of its link type, as
    /// captured), `wire_len` its length on the wire (`None`: its length).
    pub fn matches(&self, packet: &[u8], wire_len: Option<u32>) -> Result<bool, Error> {
        let meta = cbpf::Meta {
            len: wire_len,
            ..cbpf::Meta::default()
        };
        let ret = cbpf::run(&self.program, packet, &meta)
            .map_err(|e| {
                Error::FilterRun(cbpf::FilterError::Run {
                    path: "the packet".into(),
                    packet: 1,
                    engine: "interp",
                    why: e.into(),
                })
            })?
            .ret;
        Ok(ret != 0)
    }
}

/// What runs a filter's classic program (`sluice filter --engine`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FilterEngineKind {
    /// sluice's classic interpreter: any program libpcap compiles.
    #[default]
    Interp,
    /// The classic program compiled to x86-64 code by sluice's classic JIT.
    Jit,
    /// The eBPF translation, verified by sluice's verifier, in sluice's
    /// eBPF JIT.
    EbpfJit,
    /// The eBPF translation in the kernel, a `BPF_PROG_TEST_RUN` per
    /// packet (root, or CAP_BPF and CAP_NET_ADMIN).
    Kernel,
}

impl FilterEngineKind {
    pub const ALL: [FilterEngineKind; 4] = [
        FilterEngineKind::Interp,
        FilterEngineKind::Jit,
        FilterEngineKind::EbpfJit,
        FilterEngineKind::Kernel,
    ];

    /// The name `--engine` takes and reports give.
    pub fn name(self) -> &'static str {
        match self {
            FilterEngineKind::Interp => "interp",
            FilterEngineKind::Jit => "jit",
            FilterEngineKind::EbpfJit => "ebpf-jit",
            FilterEngineKind::Kernel => "kernel",
        }
    }

    /// The engine named `name` ([`FilterEngineKind::name`]).
    pub fn from_name(name: &str) -> Result<FilterEngineKind, Error> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
                Error::FilterEngine {
                    engine: name.to_string(),
                    cause: format!("not an engine ({})", names.join(", ")),
                }
            })
    }

    /// The engine, ready to take programs: the kernel's fails, naming what
    /// is missing, where this process may not load programs.
    pub fn open(self) -> Result<Box<dyn cbpf::FilterEngine>, Error> {
        Ok(match self {
            FilterEngineKind::Interp => Box::new(cbpf::Interp),
            FilterEngineKind::Jit => Box::new(cbpf::Jit),
            FilterEngineKind::EbpfJit => Box::new(xpf::classic::EbpfJit),
            FilterEngineKind::Kernel => {
                Box::new(
                    xpf::classic::Kernel::new().map_err(|e| Error::FilterEngine {
                        engine: self.name().to_string(),
                        cause: e.to_string(),
                    })?,
                )
            }
        })
    }
}

/// Packets filtered by a tcpdump expression, as `sluice filter` filters a
/// capture: a capture's records each through the program compiled for
/// its own link type (cut at its snapshot length, `len` its length on the
/// wire); frames in memory and generated traffic through the program for
/// [`FilterRunSpec::linktype`], decided by [`FilterRunSpec::engine`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterRunSpec {
    pub expr: String,
    pub origin: Origin,
    /// The link type of frames in memory and of generated traffic
    /// (Ethernet by default); a capture's records have their own.
    pub linktype: u32,
    /// Write the matching packets here (`-w`; pcapng for a `.pcapng` name).
    pub write: Option<PathBuf>,
    /// Stop after this many matches (`-c`, 1 or more).
    pub count: Option<u64>,
    /// What runs the program (the interpreter by default); packets it
    /// refuses are decided by the interpreter, and counted.
    pub engine: FilterEngineKind,
}

/// The packets a filter matched, in columns, in the source's order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct MatchTable {
    /// The packet's position in the source, from 1.
    pub index: Vec<u64>,
    pub timestamp_ns: Vec<u64>,
    /// Bytes filtered (as captured, cut at the snapshot length).
    pub length: Vec<u32>,
    /// Its length on the wire.
    pub wire_length: Vec<u32>,
}

impl MatchTable {
    fn push(&mut self, m: &Matched) {
        self.index.push(m.index);
        self.timestamp_ns.push(m.timestamp_ns);
        self.length.push(m.data.len() as u32);
        self.wire_length.push(m.orig_len);
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }
}

/// What filtering did: serializes as `sluice filter --json` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct FilterReport {
    /// The capture (its path, or its name), or what else was read.
    pub input: String,
    pub expression: String,
    pub engine: &'static str,
    pub read: u64,
    pub matched: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// Link types met, with the number of instructions of their program.
    pub programs: Vec<(u32, usize)>,
    /// Packets the engine refused and the interpreter decided.
    pub decided_by_interpreter: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub interpreter_reasons: BTreeMap<&'static str, u64>,
    /// Why the capture ended before its end (every packet before it was
    /// filtered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
    /// Stopped by the stop flag before the source's end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// The matching packets; not serialized.
    #[serde(skip)]
    pub matches: MatchTable,
}

impl FilterRunSpec {
    /// `expr` over the packets of `origin`, Ethernet frames in memory,
    /// nothing written, no count.
    pub fn new(expr: impl Into<String>, origin: Origin) -> FilterRunSpec {
        FilterRunSpec {
            expr: expr.into(),
            origin,
            linktype: cbpf::ETHERNET,
            write: None,
            count: None,
            engine: FilterEngineKind::Interp,
        }
    }

    /// Filters, writes the matches when asked, reports. `stop`, once set,
    /// ends the run after the packets read (the report says so).
    pub fn run(&self, stop: Option<&'static AtomicBool>) -> Result<FilterReport, Error> {
        let mut matches = MatchTable::default();
        let mut report = self.run_each(stop, &mut |m| matches.push(m))?;
        report.matches = matches;
        Ok(report)
    }

    /// As [`run`](FilterRunSpec::run), handing each matching packet to
    /// `each` (as it is written) instead of keeping it: the report's
    /// `matches` stay empty.
    pub fn run_each(
        &self,
        stop: Option<&'static AtomicBool>,
        each: &mut dyn FnMut(&Matched),
    ) -> Result<FilterReport, Error> {
        let opts = FilterOptions {
            write: self.write.as_deref(),
            count: self.count,
            stop,
        };
        let mut engine = self.engine.open()?;
        let (input, summary) = match open_capture(&self.origin, stop)? {
            Some(source) => {
                let input = source.path().display().to_string();
                let summary =
                    cbpf::filter_source_each(source, &self.expr, engine.as_mut(), &opts, each)
                        .map_err(|e| filter_error(e, self.write.as_deref()))?;
                (input, summary)
            }
            None => {
                let input = SourceSpec::new(self.origin.clone()).describe();
                (input, self.frames(engine.as_mut(), &opts, each)?)
            }
        };
        Ok(FilterReport {
            input,
            expression: self.expr.clone(),
            engine: summary.engine,
            read: summary.read,
            matched: summary.matched,
            written: self.write.as_ref().map(|p| p.display().to_string()),
            programs: summary
                .programs
                .iter()
                .map(|(l, p)| (*l, p.len()))
                .collect(),
            decided_by_interpreter: summary.interpreted_total(),
            interpreter_reasons: summary.interpreted.iter().copied().collect(),
            capture_error: summary.capture_error.clone(),
            stopped: summary.stopped,
            matches: MatchTable::default(),
        })
    }

    /// Frames in memory, generated or live, of [`FilterRunSpec::linktype`].
    fn frames(
        &self,
        engine: &mut dyn cbpf::FilterEngine,
        opts: &FilterOptions,
        each: &mut dyn FnMut(&Matched),
    ) -> Result<FilterSummary, Error> {
        let filter = CompiledFilter::compile(&self.expr, self.linktype, cbpf::DEFAULT_SNAPLEN)?;
        let classic = cbpf::Filter::new(filter.instructions());
        let name = engine.name();
        let mut decide = engine
            .decider(self.linktype, filter.instructions())
            .map_err(|why| {
                Error::FilterRun(cbpf::FilterError::Engine {
                    expr: self.expr.clone(),
                    linktype: self.linktype,
                    engine: name,
                    why,
                })
            })?;
        let mut source = SourceSpec::new(self.origin.clone()).open(opts.stop)?;
        let mut summary = FilterSummary {
            engine: name,
            programs: vec![(self.linktype, filter.program.clone())],
            ..FilterSummary::default()
        };
        let mut sink = match &self.write {
            Some(path) => Some(create_sink(path, self.linktype)?),
            None => None,
        };
        let mut batch = Batch::new();
        let stopped = || opts.stop.is_some_and(|s| s.load(Ordering::Relaxed));
        'read: loop {
            if stopped() {
                summary.stopped = true;
                break;
            }
            batch.clear();
            let filled = source.fill(&mut batch);
            for (info, data) in batch.iter() {
                if opts.count.is_some_and(|c| summary.matched >= c) {
                    break 'read;
                }
                summary.read += 1;
                let meta = cbpf::Meta::default();
                let failed = |why: cbpf::EngineError| {
                    Error::FilterRun(cbpf::FilterError::Run {
                        path: SourceSpec::new(self.origin.clone()).describe(),
                        packet: info.seq,
                        engine: name,
                        why,
                    })
                };
                let ret = cbpf::decide_or_interpret(
                    &mut decide,
                    &classic,
                    data,
                    &meta,
                    &mut summary.interpreted,
                )
                .map_err(failed)?;
                if ret == 0 {
                    continue;
                }
                summary.matched += 1;
                let m = Matched {
                    index: info.seq,
                    data,
                    orig_len: data.len() as u32,
                    linktype: self.linktype,
                    timestamp_ns: info.timestamp_ns,
                };
                each(&m);
                if let Some(out) = sink.as_mut() {
                    out.write_record(data, m.orig_len, m.timestamp_ns)
                        .map_err(|e| Error::FilterRun(e.into()))?;
                }
            }
            if let Err(e) = filled {
                summary.capture_error = Some(e.to_string());
                break;
            }
            if batch.is_empty() {
                break;
            }
        }
        if let Some(out) = sink {
            out.finish().map_err(|e| Error::FilterRun(e.into()))?;
        }
        Ok(summary)
    }
}

fn create_sink(path: &Path, linktype: u32) -> Result<PcapSink, Error> {
    let format = if path.extension().is_some_and(|e| e == "pcapng") {
        SinkFormat::PcapNg
    } else {
        SinkFormat::Pcap
    };
    PcapSink::create_for(path, format, linktype).map_err(|e| Error::FilterRun(e.into()))
}

/// A capture that did not read is the source's error; the rest (the
/// output `write` among them) are the filter's.
fn filter_error(e: cbpf::FilterError, write: Option<&Path>) -> Error {
    match e {
        cbpf::FilterError::Io(io) if write != Some(io.path.as_path()) => {
            Error::Source(SourceError(io.to_string()))
        }
        e => Error::FilterRun(e),
    }
}
