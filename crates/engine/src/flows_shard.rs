//! Flow accounting over the shards of a plan ([`capture::plan`]), each
//! range on its own ([`FlowsSpec::run_range`] gives a [`FlowsPart`]: the
//! range's [`monitor::FlowsRange`] and its [`capture::Boundary`], to
//! bytes and back), and the parts merged ([`merge_flows`]) into what
//! [`FlowsSpec::run`] gives over each whole file: the same ended flows
//! in the same order, the same summary (docs/shards.md, "Flows across
//! ranges"). A merge that may differ from one read says why
//! ([`MergedFlows::inexact`]).

use std::sync::atomic::{AtomicBool, AtomicU64};

use capture::{Boundary, PcapSource, Position, Shard};
use monitor::{Ended, FlowEngine, FlowSummary, FlowsJoin, FlowsRange, TableOptions, TimeOrder};
use pipeline::{Capture, Source, SourceError};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::monitor_spec::FlowsSpec;

/// Why shards' parts cannot be made or merged.
#[derive(Debug, thiserror::Error)]
pub enum PartsError {
    /// Bytes that are no part of this kind.
    #[error("not {what} (bytes from to_bytes): {why}")]
    Decode { what: &'static str, why: String },
    /// A part that did not encode.
    #[error("{what} did not encode: {why}")]
    Encode { what: &'static str, why: String },
    /// An option a range cannot take.
    #[error("{0}")]
    Option(String),
    /// The range's reading stopped before its end: no proof of it.
    #[error("{shard}: the range was stopped before its end")]
    Stopped { shard: String },
    /// A range whose start is not proven by the range before it.
    #[error(
        "range {index} ({shard}) is not proven: it must be read again from offset {offset} (sluice.check)"
    )]
    Unproven {
        index: usize,
        shard: String,
        offset: u64,
    },
    /// The ranges given of a file do not reach its end.
    #[error("{path}: its ranges end at byte {end}, not at its end ({size}): a range is missing")]
    Missing { path: String, end: u64, size: u64 },
    /// Nothing to merge.
    #[error("no parts to merge")]
    Empty,
    /// Boundaries that do not follow each other.
    #[error("{0}")]
    Shards(#[from] capture::ShardError),
}

/// One range's flow accounting: its part of the join, and the proof of
/// the records it read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowsPart {
    pub boundary: Boundary,
    pub range: FlowsRange,
}

/// Encodes `value` as CBOR.
pub(crate) fn encode<T: Serialize>(value: &T, what: &'static str) -> Result<Vec<u8>, Error> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).map_err(|e| PartsError::Encode {
        what,
        why: e.to_string(),
    })?;
    Ok(out)
}

/// Decodes CBOR made by [`encode`].
pub(crate) fn decode<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &'static str,
) -> Result<T, Error> {
    Ok(
        ciborium::from_reader(bytes).map_err(|e| PartsError::Decode {
            what,
            why: e.to_string(),
        })?,
    )
}

impl FlowsPart {
    /// The part as bytes (CBOR).
    pub fn to_bytes(&self) -> Result<Vec<u8>, Error> {
        encode(self, "a flows part")
    }

    /// A part from [`to_bytes`](Self::to_bytes)'s bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<FlowsPart, Error> {
        decode(bytes, "a flows part")
    }
}

/// The boundary as bytes (JSON, as every part's `_boundary_bytes()` gives
/// it to Python's `sluice.check`).
pub fn boundary_bytes(b: &Boundary) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(b).map_err(|e| {
        PartsError::Encode {
            what: "a boundary",
            why: e.to_string(),
        }
        .into()
    })
}

/// Opens the range `shard` from `proven` (else from the guess of its
/// first record), frames without an Ethernet form skipped (as a whole
/// capture's source skips them).
pub(crate) fn open_range(
    shard: &Shard,
    proven: Option<&Position>,
    stop: Option<&'static AtomicBool>,
) -> Result<PcapSource, Error> {
    PcapSource::open_range_with(shard, proven, stop)
        .map_err(|e| Error::Source(SourceError(e.to_string())))
}

impl FlowsSpec {
    /// Accounts the records of one range of a capture (`shard`, read from
    /// `proven` when given), for [`merge_flows`]. Only sluice's flow
    /// table, without a limit: the others' tables are not joined.
    pub fn run_range(
        &self,
        shard: &Shard,
        proven: Option<&Position>,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<FlowsPart, Error> {
        if self.engine != FlowEngine::Table {
            let why =
                "flows over shards are accounted by sluice's flow table only (engine \"table\")";
            return Err(PartsError::Option(why.into()).into());
        }
        if self.limit.is_some() {
            let why = "flows over shards take no packet count (each range is read whole)";
            return Err(PartsError::Option(why.into()).into());
        }
        let opts = self.options()?;
        let mut source = Capture::from_reader(open_range(shard, proven, stop)?, stop);
        let own = AtomicU64::new(0);
        let (range, _) =
            monitor::account_range(&mut source, &opts.table, progress.unwrap_or(&own))?;
        let boundary = source.boundary().ok_or_else(|| PartsError::Stopped {
            shard: shard.describe(),
        })?;
        Ok(FlowsPart { boundary, range })
    }
}

/// Flows merged from ranges: what [`FlowsSpec::run`] gives over each
/// file, its files in plan order.
#[derive(Clone, Debug)]
pub struct MergedFlows {
    pub summary: FlowSummary,
    /// The ended flows, in the order one read ends them.
    pub ended: Vec<Ended>,
    /// Why the merge may differ from one read (empty: it is exact).
    pub inexact: Vec<String>,
}

/// The boundaries proven, each file's ranges complete: else why not.
pub(crate) fn proven(boundaries: &[Boundary]) -> Result<(), Error> {
    if boundaries.is_empty() {
        return Err(PartsError::Empty.into());
    }
    if let Some(r) = capture::check(boundaries)
        .map_err(PartsError::from)?
        .first()
    {
        return Err(PartsError::Unproven {
            index: r.index,
            shard: r.shard.describe(),
            offset: r.from.offset,
        }
        .into());
    }
    for (i, b) in boundaries.iter().enumerate() {
        let last = boundaries.get(i + 1).is_none_or(|n| n.shard.start == 0);
        if last && b.shard.end < b.shard.size {
            return Err(PartsError::Missing {
                path: b.shard.path.display().to_string(),
                end: b.shard.end,
                size: b.shard.size,
            }
            .into());
        }
    }
    Ok(())
}

/// The files of `boundaries` (plan order), each as the range indices of
/// its sequential read (those past an error left out) and the error that
/// read ends on, its packet counted from the file's first frame.
pub(crate) fn files(boundaries: &[Boundary]) -> Vec<(Vec<usize>, Option<capture::IoError>)> {
    let mut files: Vec<(Vec<usize>, Option<capture::IoError>)> = Vec::new();
    let mut before = 0u64;
    for (i, b) in boundaries.iter().enumerate() {
        if b.shard.start == 0 || files.is_empty() {
            files.push((Vec::new(), None));
            before = 0;
        }
        let file = files.last_mut().expect("pushed");
        if file.1.is_some() {
            continue;
        }
        file.0.push(i);
        if let Some(e) = &b.error {
            let mut e = e.clone();
            e.packet = e.packet.map(|p| p + before as usize);
            file.1 = Some(e);
        }
        before += b.frames;
    }
    files
}

/// Merges the parts of every range of a plan (in plan order, each proven:
/// [`capture::check`] finds nothing to read again) into the flows of one
/// read of the files one after another (a flow goes on across a file's
/// end, as over a capture list split by time). `options`, when given, must be those the parts were
/// accounted with.
pub fn merge_flows(
    parts: &[FlowsPart],
    options: Option<&TableOptions>,
) -> Result<MergedFlows, Error> {
    let boundaries: Vec<Boundary> = parts.iter().map(|p| p.boundary.clone()).collect();
    proven(&boundaries)?;
    let opts = options.copied().unwrap_or(parts[0].range.options);
    let mut summary = FlowSummary::default();
    let mut order = TimeOrder::default();
    let (mut ended, mut inexact) = (Vec::new(), Vec::new());
    // The files one after another are one stream (as one process reading
    // them in plan order sees them): a flow goes on across a file's end.
    let mut join = FlowsJoin::new(opts);
    let mut first_path = None;
    for (indices, error) in files(&boundaries) {
        for &i in &indices {
            join.add(&parts[i].range).map_err(|e| {
                let shard = parts[i].boundary.shard.describe();
                monitor::MonitorError::Options(format!("{shard}: {e}"))
            })?;
        }
        first_path.get_or_insert(parts[indices[0]].boundary.shard.path.clone());
        if summary.source_error.is_none() {
            summary.source_error = error.map(|e| e.to_string());
        }
    }
    let j = join.finish()?;
    let many = files(&boundaries).len() > 1;
    let path = first_path
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    inexact.extend(j.inexact.into_iter().map(|w| match many {
        true => w,
        false => format!("{path}: {w}"),
    }));
    summary.packets += j.packets;
    summary.accounted += j.accounted;
    summary.flows += j.ended.len() as u64;
    for (sum, n) in summary.by_reason.iter_mut().zip(j.by_reason) {
        *sum += n;
    }
    order.backwards += j.backwards;
    ended.extend(j.ended);
    summary.order = order;
    Ok(MergedFlows {
        summary,
        ended,
        inexact,
    })
}
