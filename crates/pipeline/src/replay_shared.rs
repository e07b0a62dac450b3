//! What every way of running a replay shares (one thread, workers that
//! each read the source, a dispatcher, byte ranges): its options and
//! errors, the stop check, and how the workers' ends are joined.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::counters::ReplayCounters;
use crate::shard::Sharding;
use crate::sink::SinkError;
use crate::source::{Source, SourceError};

/// How to replay.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// Worker threads (1: the caller's thread runs everything, in order).
    pub threads: usize,
    /// How flows are spread over workers (when they are).
    pub shard: Sharding,
    /// Workers take byte ranges of the capture rather than flows, when
    /// the source is a capture file that can be cut and no limit is set:
    /// for programs whose result does not depend on the order of packets
    /// across flows (the caller decides which).
    pub ranges: bool,
    /// Bytes per range with [`ReplayOptions::ranges`] (0: [`RANGE_BYTES`](crate::RANGE_BYTES));
    /// at least one range per worker whatever the size.
    pub range_bytes: u64,
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// The interface packets arrive on.
    pub ifindex: u32,
    /// Set (by a signal handler, say) to stop reading: the packets read so
    /// far are run, the sinks finished, the summary says it stopped.
    pub stop: Option<&'static AtomicBool>,
    /// Keep one record per packet ([`ReplayCounters::log`]), in the
    /// source's order.
    pub per_packet: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            threads: 1,
            shard: Sharding::default(),
            ranges: false,
            range_bytes: 0,
            limit: None,
            ifindex: 1,
            stop: None,
            per_packet: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{0}")]
    Sink(#[from] SinkError),
    /// The hook has no sibling for a worker.
    #[error("worker {worker}: {why}")]
    Sibling {
        worker: usize,
        why: runtime::SiblingError,
    },
    /// A worker's thread panicked.
    #[error("worker {0}: panicked")]
    Panicked(usize),
    /// A byte range's records were not read as its proof said.
    #[error("{range}: the range was not read as proven: {why}")]
    Range { range: String, why: String },
}

/// Whether the replay stops reading now: the stop flag is set and the
/// source does not end by itself on it (one that does is read to its end,
/// which comes once it has given the packets it holds).
pub(crate) fn stop_now(source: &dyn Source, opts: &ReplayOptions) -> bool {
    opts.stop.is_some_and(|s| s.load(Ordering::Relaxed)) && !source.ends_on_stop()
}

/// How a worker ended: its counts, how its source ended, its error.
pub(crate) type WorkerEnd = (ReplayCounters, Option<SourceError>, Result<(), ReplayError>);

/// Waits for every worker.
pub(crate) fn join_all(
    spawned: Vec<std::thread::ScopedJoinHandle<'_, WorkerEnd>>,
) -> Vec<WorkerEnd> {
    spawned
        .into_iter()
        .enumerate()
        .map(|(w, h)| {
            h.join().unwrap_or_else(|_| {
                let err = Err(ReplayError::Panicked(w));
                (ReplayCounters::default(), None, err)
            })
        })
        .collect()
}
