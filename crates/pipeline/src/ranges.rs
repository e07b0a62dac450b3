//! Threads over byte ranges of a capture file: each record is read once,
//! by the worker that takes its range, for programs whose result does not
//! depend on the order of packets across flows (the engine decides which;
//! docs/performance.md, "Threads over byte ranges").
//!
//! The file is cut into ranges (about [`RANGE_BYTES`] each, at least one
//! per worker); workers take them in order, one at a time. A range's
//! first record is known for sure before any of its packets runs: range 0
//! starts at the file's header, and range k+1 where the chain of records
//! of range k, followed from its proven start, crosses its end. Each
//! worker follows its range's chain from the guess of its first record
//! ([`capture::PcapSource::open_range`]) as soon as it takes it, in
//! parallel with the others, then waits for the proof of its start: when
//! the guess was right (nearly always) its chain's end proves the next
//! range's start at once; when it was wrong, the chain is followed again
//! from the proven start. Only then are the packets run, so a wrong guess
//! costs a second walk, never a packet run twice or out of place.
//!
//! A classic pcap range is read from the file once: its walk reads its
//! bytes into memory and follows the records' headers there, and its run
//! reads the records from those bytes in place ([`capture::RangeStart`]);
//! a pcapng range's walk reads it through a reader, and its run again.
//!
//! Packets are numbered within their range while they run (range k's
//! packet i as `k << RANGE_SHIFT | i`, which orders them as the file
//! does), so the merge of outputs ([`Ordered`]) writes them in the file's
//! order; once every range is read, the numbers in the counts become the
//! file's (`i` plus the frames of the ranges before).

use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use capture::{PcapSource, Position, RangeStart, WalkedRange};
use runtime::PacketHook;

use crate::batch::Batch;
use crate::counters::ReplayCounters;
use crate::ordered::{DoneOnDrop, Ordered};
use crate::replay_shared::{ReplayError, ReplayOptions, WorkerEnd, join_all, stop_now};
use crate::source::{Source, SourceError};
use crate::worker::Worker;

/// Bytes of a range when the file has enough of them for every worker.
pub const RANGE_BYTES: u64 = 1 << 20;

/// Packets of range k are numbered `k << RANGE_SHIFT | i` while they run.
const RANGE_SHIFT: u32 = 40;

/// What reading by ranges did, beside the counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangesRead {
    /// Ranges the file was cut into.
    pub ranges: usize,
    /// Ranges whose first record was guessed wrong and found again from
    /// the proven position (before any of their packets ran).
    pub guessed_wrong: usize,
    /// Frames without an Ethernet form the ranges skipped, per LINKTYPE_*
    /// number, in order of first appearance in the file
    /// ([`Source::skipped`]).
    pub skipped: Vec<(u32, u64)>,
    /// Frames given shorter than on the wire ([`Source::snapped`]).
    pub snapped: u64,
}

/// How `size` bytes are cut for `workers`: at least one range per worker,
/// ranges of at most `bytes` (0: [`RANGE_BYTES`]; a range's outputs wait in
/// memory for the ranges before it: small ranges keep that short).
pub fn range_count(size: u64, workers: usize, bytes: u64) -> usize {
    let bytes = if bytes == 0 { RANGE_BYTES } else { bytes };
    let by_size = size.div_ceil(bytes).max(1);
    (workers.max(1) as u64)
        .max(by_size)
        .min(size.max(1))
        .try_into()
        .unwrap_or(usize::MAX)
}

/// Range `k` of `n` over a file of `size` bytes.
fn cut(path: &Path, size: u64, k: usize, n: usize) -> capture::Shard {
    let at = |i: usize| (u128::from(size) * i as u128 / n as u128) as u64;
    capture::Shard {
        path: path.to_path_buf(),
        start: at(k),
        end: at(k + 1),
        size,
    }
}

/// Where each range starts, as it becomes known.
#[derive(Clone)]
enum Start {
    Pending,
    /// The first record, proven.
    At(Position),
    /// The file's read ends before this range (an error in a range
    /// before it, or the replay stopped): it has no records to run.
    None,
}

/// The proven starts, shared by the workers.
struct Proofs {
    starts: Mutex<Vec<Start>>,
    moved: Condvar,
}

impl Proofs {
    fn new(n: usize) -> Proofs {
        let mut starts = vec![Start::Pending; n + 1];
        starts[0] = Start::At(Position {
            offset: 0,
            state: capture::ReaderState::Pcap,
        });
        Proofs {
            starts: Mutex::new(starts),
            moved: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Start>> {
        self.starts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Range `k`'s proven start, once it is known (`None`: not read).
    fn wait(&self, k: usize) -> Option<Position> {
        let mut starts = self.lock();
        loop {
            match &starts[k] {
                Start::Pending => {}
                Start::At(p) => return Some(p.clone()),
                Start::None => return None,
            }
            starts = self.moved.wait(starts).unwrap_or_else(|p| p.into_inner());
        }
    }

    fn publish(&self, k: usize, start: Start) {
        let mut starts = self.lock();
        if matches!(starts[k], Start::Pending) {
            starts[k] = start;
        }
        drop(starts);
        self.moved.notify_all();
    }

    /// Every range not yet proven is not read (a worker failed).
    fn abort(&self) {
        let mut starts = self.lock();
        for s in starts.iter_mut() {
            if matches!(s, Start::Pending) {
                *s = Start::None;
            }
        }
        drop(starts);
        self.moved.notify_all();
    }
}

/// Follows the chain of records of `range` from `from` (from the guess
/// of its first record without), reading a classic pcap range once and
/// keeping its bytes for the run; `None` when no start was found or
/// reading stopped.
fn walk(
    range: &capture::Shard,
    from: Option<&Position>,
    opts: &ReplayOptions,
) -> Option<WalkedRange> {
    PcapSource::walk_range(range, from, opts.stop)
        .ok()
        .flatten()
}

/// One range as run: its frames (every record read, skipped or not), what
/// its source skipped, and how its reading ended.
#[derive(Default)]
struct RangeEnd {
    frames: u64,
    skipped: Vec<(u32, u64)>,
    snapped: u64,
    /// The source's error, its packet counted from the range's first frame
    /// when the reader tells it ([`capture::IoError`]).
    error: Option<(Option<capture::IoError>, SourceError)>,
}

/// What the workers share.
struct Shared<'a> {
    /// The whole capture's source, which opens the ranges (one at a time).
    source: Mutex<&'a mut dyn Source>,
    /// Whether the source ends by itself on the stop flag.
    ends_on_stop: bool,
    path: &'a Path,
    size: u64,
    n: usize,
    opts: &'a ReplayOptions,
    ordered: Option<&'a Ordered>,
    proofs: Proofs,
    next: AtomicUsize,
    read: AtomicU64,
    progress: Option<&'a AtomicU64>,
    guessed_wrong: AtomicUsize,
    ends: Mutex<Vec<Option<RangeEnd>>>,
}

impl Shared<'_> {
    /// Whether the replay stops reading now.
    fn stopping(&self) -> bool {
        let stop = self.opts.stop.is_some_and(|s| s.load(Ordering::Relaxed));
        stop && !self.ends_on_stop
    }
}

/// Replays `source` (a [`cuttable`](Source::cuttable) capture) by byte
/// ranges over `workers`: the counts, summed and numbered as the file
/// numbers its packets; how the file's read ended; what reading by ranges
/// did.
pub(crate) fn by_ranges<H: PacketHook>(
    workers: Vec<Worker<H>>,
    source: &mut dyn Source,
    path: &Path,
    ordered: Option<&Ordered>,
    opts: &ReplayOptions,
    progress: Option<&AtomicU64>,
) -> (Vec<WorkerEnd>, RangesRead) {
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    let n = range_count(size, workers.len(), opts.range_bytes);
    let shared = Shared {
        ends_on_stop: source.ends_on_stop(),
        source: Mutex::new(source),
        path,
        size,
        n,
        opts,
        ordered,
        proofs: Proofs::new(n),
        next: AtomicUsize::new(0),
        read: AtomicU64::new(0),
        progress,
        guessed_wrong: AtomicUsize::new(0),
        ends: Mutex::new((0..n).map(|_| None).collect()),
    };
    let mut ends = std::thread::scope(|s| {
        let spawned: Vec<_> = workers
            .into_iter()
            .enumerate()
            .map(|(w, worker)| {
                let shared = &shared;
                s.spawn(move || run_worker(shared, worker, w))
            })
            .collect();
        join_all(spawned)
    });
    let ranges = shared.ends.into_inner().unwrap_or_else(|p| p.into_inner());
    // Range k's packets follow the frames of every range before it.
    let mut before = Vec::with_capacity(n);
    let mut total = 0u64;
    let mut read = RangesRead {
        ranges: n,
        guessed_wrong: shared.guessed_wrong.into_inner(),
        ..RangesRead::default()
    };
    let mut source_error = None;
    for end in ranges.iter() {
        before.push(total);
        let Some(end) = end else { continue };
        if source_error.is_none()
            && let Some((io, text)) = &end.error
        {
            source_error = Some(match io {
                Some(e) => {
                    let mut e = e.clone();
                    e.packet = e.packet.map(|p| p + total as usize);
                    SourceError(e.to_string())
                }
                None => text.clone(),
            });
        }
        total += end.frames;
        for &(l, k) in &end.skipped {
            match read.skipped.iter_mut().find(|(t, _)| *t == l) {
                Some((_, c)) => *c += k,
                None => read.skipped.push((l, k)),
            }
        }
        read.snapped += end.snapped;
    }
    let number = |seq: u64| {
        let k = (seq >> RANGE_SHIFT) as usize;
        before.get(k).copied().unwrap_or(0) + (seq & ((1 << RANGE_SHIFT) - 1))
    };
    for end in &mut ends {
        renumber(&mut end.0, &number);
        end.1 = None;
    }
    if let Some(first) = ends.first_mut() {
        first.1 = source_error;
    }
    (ends, read)
}

/// The file's numbers in place of the ranges' in `c`.
fn renumber(c: &mut ReplayCounters, number: &impl Fn(u64) -> u64) {
    for e in &mut c.first_errors {
        e.seq = number(e.seq);
    }
    for t in &mut c.trace {
        t.0 = number(t.0);
    }
    if let Some(log) = &mut c.log {
        log.seq.iter_mut().for_each(|s| *s = number(*s));
        log.redirects.iter_mut().for_each(|r| r.0 = number(r.0));
        log.errors.iter_mut().for_each(|e| e.0 = number(e.0));
    }
}

/// Worker `w`: takes ranges in order until none is left, runs each once
/// its start is proven.
fn run_worker<H: PacketHook>(
    shared: &Shared<'_>,
    mut worker: Worker<'_, H>,
    w: usize,
) -> WorkerEnd {
    let _done = DoneOnDrop {
        ordered: shared.ordered,
        worker: w,
    };
    let result = loop {
        let k = shared.next.fetch_add(1, Ordering::Relaxed);
        if k >= shared.n {
            break Ok(());
        }
        if let Err(e) = one_range(shared, &mut worker, w, k) {
            shared.proofs.abort();
            break Err(e);
        }
    };
    (worker.into_counters(), None, result)
}

/// Range `k` on worker `w`: its start proven, the next range's start
/// proven from it, then its packets run.
fn one_range<H: PacketHook>(
    shared: &Shared<'_>,
    worker: &mut Worker<'_, H>,
    w: usize,
    k: usize,
) -> Result<(), ReplayError> {
    let base = (k as u64) << RANGE_SHIFT;
    // Nothing more from this worker below this range's first packet.
    if let Some(o) = shared.ordered {
        worker.deposit(o, w, base)?;
    }
    let range = cut(shared.path, shared.size, k, shared.n);
    let opts = shared.opts;
    // The walk from the guess, while the ranges before are proven.
    let guessed = if k == 0 || shared.stopping() {
        None
    } else {
        walk(&range, None, opts)
    };
    let Some(start) = shared.proofs.wait(k) else {
        shared.proofs.publish(k + 1, Start::None);
        return Ok(());
    };
    let walked = match guessed {
        Some(g) if g.start.position == start => Some(g),
        _ => {
            if k > 0 {
                shared.guessed_wrong.fetch_add(1, Ordering::Relaxed);
            }
            walk(&range, Some(&start), opts)
        }
    };
    let (from, next) = match walked {
        Some(w) => (w.start, w.next),
        None => (RangeStart::from(start), None),
    };
    shared.proofs.publish(
        k + 1,
        match &next {
            Some(p) => Start::At(p.clone()),
            None => Start::None,
        },
    );
    let end = run_range(shared, worker, w, &range, from, base, next.as_ref())?;
    let mut ends = shared.ends.lock().unwrap_or_else(|p| p.into_inner());
    ends[k] = Some(end);
    Ok(())
}

/// Runs the packets of `range` from its proven `start` (its bytes in
/// place when the walk kept them); `next`: where its walk said the next
/// range starts, which its reading must confirm.
fn run_range<H: PacketHook>(
    shared: &Shared<'_>,
    worker: &mut Worker<'_, H>,
    w: usize,
    range: &capture::Shard,
    start: RangeStart,
    base: u64,
    next: Option<&Position>,
) -> Result<RangeEnd, ReplayError> {
    let opts = shared.opts;
    let opened = shared
        .source
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .range(range, start);
    let mut source = match opened {
        Ok(s) => s,
        Err(e) => {
            return Ok(RangeEnd {
                error: Some((None, e)),
                ..RangeEnd::default()
            });
        }
    };
    let mut batch = Batch::new();
    let mut error = None;
    let mut last = 0u64;
    while error.is_none() {
        if stop_now(source.as_ref(), opts) {
            break;
        }
        batch.clear();
        let (n, ended) = source.fill_where(&mut batch, u64::MAX, &mut |_, _| true);
        error = ended.err();
        if n == 0 && batch.is_empty() {
            break;
        }
        batch.offset_seqs(base);
        worker.run(&batch);
        if !batch.is_empty() {
            last = batch.info(batch.len() - 1).seq - base;
            if let Some(o) = shared.ordered {
                worker.deposit(o, w, batch.info(batch.len() - 1).seq + 1)?;
            }
        }
        let read = shared.read.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(p) = shared.progress {
            p.store(read, Ordering::Relaxed);
        }
    }
    let boundary = source.boundary();
    // The walk and the run read the same records from the same start:
    // they cross the range's end at the same place (or the run stopped).
    if let Some(b) = &boundary
        && b.next.as_ref() != next
    {
        return Err(ReplayError::Range {
            range: range.describe(),
            why: format!(
                "its walk ended at {:?}, its run at {:?}",
                next.map(|p| p.offset),
                b.next.as_ref().map(|p| p.offset)
            ),
        });
    }
    Ok(RangeEnd {
        frames: boundary.as_ref().map_or(last, |b| b.frames),
        skipped: source.skipped(),
        snapped: source.snapped(),
        error: error.map(|e| (boundary.and_then(|b| b.error), e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_has_a_range_and_ranges_stay_small() {
        assert_eq!(range_count(1000, 2, 0), 2);
        assert_eq!(range_count(1000, 4, 0), 4);
        assert_eq!(range_count(3, 4, 0), 3);
        assert_eq!(range_count(0, 4, 0), 1);
        assert_eq!(range_count(100 * RANGE_BYTES, 2, 0), 100);
        assert_eq!(range_count(100 * RANGE_BYTES + 1, 2, 0), 101);
        assert_eq!(range_count(1000, 2, 10), 100);
        let path = Path::new("x.pcap");
        let ranges: Vec<_> = (0..7).map(|k| cut(path, 1001, k, 7)).collect();
        assert_eq!(ranges[0].start, 0);
        assert_eq!(ranges[6].end, 1001);
        assert!(ranges.windows(2).all(|r| r[0].end == r[1].start));
    }
}
