//! A capture filtered as `tcpdump -r IN -w OUT EXPR` filters it: each
//! record, as captured, through the program libpcap compiles for its link
//! type, with its length on the wire as `len`; the matches written with
//! their link type and timestamps. A [`FilterEngine`] decides each packet (the
//! classic interpreter, or the eBPF translation in sluice's JIT or the
//! kernel); the packets it refuses are decided by the interpreter and
//! counted.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use capture::{PcapSink, PcapSource, SinkFormat};

use crate::engine::{Decider, EngineError, FilterEngine, decide_or_interpret};
use crate::expr::{DEFAULT_SNAPLEN, compile_expr_until};
use crate::insn::Insn;
use crate::interp::{Filter, Meta};

/// What to do besides counting.
#[derive(Clone, Debug, Default)]
pub struct FilterOptions<'a> {
    /// Write the matching packets here (pcapng when it ends in `.pcapng`).
    pub write: Option<&'a Path>,
    /// Stop after this many matches (`tcpdump -c`).
    pub count: Option<u64>,
    /// Set (by a signal handler) to stop reading: the packets read so far
    /// are decided, the output finished, the summary says it stopped.
    pub stop: Option<&'static AtomicBool>,
}

/// How a filtered capture went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterSummary {
    /// The engine that decided ([`FilterEngine::name`]).
    pub engine: &'static str,
    /// Records read.
    pub read: u64,
    /// Records the filter accepted (and wrote).
    pub matched: u64,
    /// The program of each link type met, in order met.
    pub programs: Vec<(u32, Vec<Insn>)>,
    /// Records the engine refused ([`Decision::Refused`](crate::Decision::Refused)) and the
    /// interpreter decided instead, by reason, in order met.
    pub interpreted: Vec<(&'static str, u64)>,
    /// Why reading stopped early, if it did: every record before it was
    /// filtered (a cut or corrupt capture, as tcpdump reports it).
    pub capture_error: Option<String>,
    /// Whether [`FilterOptions::stop`] ended it before the capture's end.
    pub stopped: bool,
}

impl FilterSummary {
    /// Records the interpreter decided in the engine's place.
    pub fn interpreted_total(&self) -> u64 {
        self.interpreted.iter().map(|r| r.1).sum()
    }
}

/// Why a capture could not be filtered.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("{0}")]
    Io(#[from] capture::IoError),
    #[error("{}: {why}", shortened(expr))]
    Expr { expr: String, why: String },
    #[error("{path}: packet {packet} has link type {linktype}, the output {first}; write pcapng")]
    MixedLinkTypes {
        path: String,
        packet: u64,
        linktype: u32,
        first: u32,
    },
    #[error(
        "`{}` for link type {linktype}: the {engine} engine cannot run it: {why}",
        shortened(expr)
    )]
    Engine {
        expr: String,
        linktype: u32,
        engine: &'static str,
        why: EngineError,
    },
    #[error("stopped by a signal while libpcap compiled the expression ({chars} characters)")]
    CompileStopped { chars: usize },
    #[error("{path}: packet {packet}: the {engine} engine failed: {why}")]
    Run {
        path: String,
        packet: u64,
        engine: &'static str,
        why: EngineError,
    },
}

/// An expression as errors quote it: whole up to 200 characters, else its
/// start and its length (a chain of a thousand `host` terms is not
/// repeated in full).
fn shortened(expr: &str) -> String {
    const MAX: usize = 200;
    if expr.len() <= MAX {
        return expr.to_string();
    }
    let mut end = MAX - 40;
    while !expr.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} ... ({} characters)", &expr[..end], expr.len())
}

/// One link type's program, as the engine and the interpreter run it.
struct Program {
    linktype: u32,
    decide: Decider,
    /// For the packets the engine refuses.
    classic: Filter,
}

/// Filters `input` through `expr`, each packet decided by `engine`.
pub fn filter_capture(
    input: &Path,
    expr: &str,
    engine: &mut dyn FilterEngine,
    opts: &FilterOptions,
) -> Result<FilterSummary, FilterError> {
    filter_capture_each(input, expr, engine, opts, &mut |_| {})
}

/// A record the filter accepted, as read (cut at the snapshot length).
pub struct Matched<'a> {
    /// The record's position in the capture, from 1.
    pub index: u64,
    pub data: &'a [u8],
    /// Its length on the wire.
    pub orig_len: u32,
    pub linktype: u32,
    pub timestamp_ns: u64,
}

/// [`filter_capture`], handing each accepted record to `each` in order
/// (a printer, as tcpdump prints what it does not write).
pub fn filter_capture_each(
    input: &Path,
    expr: &str,
    engine: &mut dyn FilterEngine,
    opts: &FilterOptions,
    each: &mut dyn FnMut(&Matched),
) -> Result<FilterSummary, FilterError> {
    // Given the stop flag, the source ends cleanly after the packets it
    // holds once the flag is set (a pipe kept open too).
    let source = PcapSource::open_with(input, opts.stop)?;
    filter_source_each(source, expr, engine, opts, each)
}

/// [`filter_capture_each`] over a capture already open (a file, or bytes
/// in memory through [`PcapSource::from_reader`], or one byte range of a
/// file, lent so that its boundary can be read after); its path names it in
/// errors. A source opened without the stop flag still looks at it
/// before each record.
pub fn filter_source_each(
    mut source: impl std::borrow::BorrowMut<PcapSource>,
    expr: &str,
    engine: &mut dyn FilterEngine,
    opts: &FilterOptions,
    each: &mut dyn FnMut(&Matched),
) -> Result<FilterSummary, FilterError> {
    let source: &mut PcapSource = source.borrow_mut();
    let input = source.path().to_path_buf();
    let mut programs: Vec<Program> = Vec::new();
    // The last link type's program (a capture rarely has more than one).
    let mut cur = usize::MAX;
    let mut summary = FilterSummary {
        engine: engine.name(),
        ..FilterSummary::default()
    };
    let mut sink: Option<(PcapSink, u32)> = None;
    // libpcap cuts a record longer than the file's snapshot length there
    // (tcpdump filters and writes what is left).
    let cut = source
        .snaplen()
        .filter(|&s| s > 0)
        .map_or(usize::MAX, |s| s as usize);
    let engine_name = engine.name();
    // A loop of its own over the capture's records, not the pipeline's
    // (`pipeline::Source`, which is above this crate anyway): tcpdump's
    // semantics need each record as captured, with its own link type (a
    // program compiled per link type, the output written in it), its
    // length on the wire and the file's snapshot length, where a pipeline
    // source gives Ethernet frames in batches; and `-c N` stops reading
    // at the Nth match, with no batch read ahead.
    while opts.count.is_none_or(|c| summary.matched < c) {
        if opts
            .stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
        {
            summary.stopped = true;
            break;
        }
        let frame = match source.next_raw() {
            None => {
                summary.stopped = source.stopped();
                break;
            }
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                summary.capture_error = Some(e.to_string());
                break;
            }
        };
        summary.read += 1;
        let linktype = frame.linktype;
        let data = &frame.data[..frame.data.len().min(cut)];
        if programs.get(cur).is_none_or(|p| p.linktype != linktype) {
            cur = match programs.iter().position(|p| p.linktype == linktype) {
                Some(i) => i,
                None => {
                    // A signal ends the wait for libpcap's compiler (minutes
                    // on a long expression).
                    let prog = compile_expr_until(expr, linktype, DEFAULT_SNAPLEN, opts.stop)
                        .map_err(|e| FilterError::Expr {
                            expr: expr.to_string(),
                            why: e.0,
                        })?
                        .ok_or(FilterError::CompileStopped { chars: expr.len() })?;
                    let decide =
                        engine
                            .decider(linktype, &prog)
                            .map_err(|why| FilterError::Engine {
                                expr: expr.to_string(),
                                linktype,
                                engine: engine_name,
                                why,
                            })?;
                    programs.push(Program {
                        linktype,
                        decide,
                        classic: Filter::new(&prog),
                    });
                    summary.programs.push((linktype, prog));
                    programs.len() - 1
                }
            };
        }
        let program = &mut programs[cur];
        let meta = Meta {
            len: Some(frame.orig_len),
            ..Meta::default()
        };
        let failed = |why: EngineError| FilterError::Run {
            path: input.display().to_string(),
            packet: summary.read,
            engine: engine_name,
            why,
        };
        let ret = decide_or_interpret(
            &mut program.decide,
            &program.classic,
            data,
            &meta,
            &mut summary.interpreted,
        )
        .map_err(failed)?;
        if ret == 0 {
            continue;
        }
        summary.matched += 1;
        each(&Matched {
            index: summary.read,
            data,
            orig_len: frame.orig_len,
            linktype,
            timestamp_ns: frame.timestamp_ns,
        });
        if let Some(path) = opts.write {
            if sink.is_none() {
                let format = if path.extension().is_some_and(|e| e == "pcapng") {
                    SinkFormat::PcapNg
                } else {
                    SinkFormat::Pcap
                };
                sink = Some((PcapSink::create_for(path, format, linktype)?, linktype));
            }
            let (out, first) = sink.as_mut().expect("created above");
            if *first != linktype {
                return Err(FilterError::MixedLinkTypes {
                    path: path.display().to_string(),
                    packet: summary.read,
                    linktype,
                    first: *first,
                });
            }
            out.write_record(data, frame.orig_len, frame.timestamp_ns)?;
        }
    }
    if let Some((out, _)) = sink {
        out.finish()?;
    } else if let Some(path) = opts.write {
        // No match: an empty capture of the first link type, as tcpdump
        // leaves one.
        let linktype = summary
            .programs
            .first()
            .map_or(crate::expr::ETHERNET, |p| p.0);
        PcapSink::create_for(path, SinkFormat::Pcap, linktype)?.finish()?;
    }
    Ok(summary)
}
