//! A capture filtered as `tcpdump -r IN -w OUT EXPR` filters it: each
//! record, as captured, through the program libpcap compiles for its link
//! type, with its length on the wire as `len`; the matches written with
//! their link type and timestamps.

use std::collections::HashMap;
use std::path::Path;

use io::{PcapSink, PcapSource, SinkFormat};

use crate::expr::{DEFAULT_SNAPLEN, compile_expr};
use crate::insn::Insn;
use crate::interp::{Filter, Meta};

/// What to do besides counting.
#[derive(Clone, Debug, Default)]
pub struct FilterOptions<'a> {
    /// Write the matching packets here (pcapng when it ends in `.pcapng`).
    pub write: Option<&'a Path>,
    /// Stop after this many matches (`tcpdump -c`).
    pub count: Option<u64>,
}

/// How a filtered capture went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilterSummary {
    /// Records read.
    pub read: u64,
    /// Records the filter accepted (and wrote).
    pub matched: u64,
    /// The program of each link type met, in order met.
    pub programs: Vec<(u32, Vec<Insn>)>,
    /// Why reading stopped early, if it did: every record before it was
    /// filtered (a cut or corrupt capture, as tcpdump reports it).
    pub capture_error: Option<String>,
}

/// Why a capture could not be filtered.
#[derive(Debug, thiserror::Error)]
pub enum FilterError {
    #[error("{0}")]
    Io(#[from] io::IoError),
    #[error("{expr}: {why}")]
    Expr { expr: String, why: String },
    #[error("{path}: packet {packet} has link type {linktype}, the output {first}; write pcapng")]
    MixedLinkTypes {
        path: String,
        packet: u64,
        linktype: u32,
        first: u32,
    },
    #[error("{0}: a filter failed: {1}")]
    Run(String, crate::RunError),
}

/// Filters `input` through `expr`.
pub fn filter_capture(
    input: &Path,
    expr: &str,
    opts: &FilterOptions,
) -> Result<FilterSummary, FilterError> {
    let mut source = PcapSource::open(input)?;
    let mut programs: HashMap<u32, Filter> = HashMap::new();
    // The last link type's filter (a capture rarely has more than one).
    let mut last: Option<(u32, Filter)> = None;
    let mut summary = FilterSummary::default();
    let mut sink: Option<(PcapSink, u32)> = None;
    // libpcap cuts a record longer than the file's snapshot length there
    // (tcpdump filters and writes what is left).
    let cut = source
        .snaplen()
        .filter(|&s| s > 0)
        .map_or(usize::MAX, |s| s as usize);
    while opts.count.is_none_or(|c| summary.matched < c) {
        let frame = match source.next_raw() {
            None => break,
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                summary.capture_error = Some(e.to_string());
                break;
            }
        };
        summary.read += 1;
        let linktype = frame.linktype;
        let data = &frame.data[..frame.data.len().min(cut)];
        if last.as_ref().is_none_or(|(l, _)| *l != linktype) {
            if let std::collections::hash_map::Entry::Vacant(slot) = programs.entry(linktype) {
                let prog = compile_expr(expr, linktype, DEFAULT_SNAPLEN).map_err(|e| {
                    FilterError::Expr {
                        expr: expr.to_string(),
                        why: e.0,
                    }
                })?;
                slot.insert(Filter::new(&prog));
                summary.programs.push((linktype, prog));
            }
            last = Some((linktype, programs[&linktype].clone()));
        }
        let filter = &last.as_ref().expect("set above").1;
        let meta = Meta {
            len: Some(frame.orig_len),
            ..Meta::default()
        };
        let verdict = filter
            .run(data, &meta)
            .map_err(|e| FilterError::Run(input.display().to_string(), e))?;
        if verdict.ret == 0 {
            continue;
        }
        summary.matched += 1;
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
