//! The replay loop: a source's batches through a hook, each verdict
//! routed to its sink, counted where the work is done. One thread runs
//! the loop itself. With more, each worker has its own hook on the same
//! shared maps. Asked for ranges ([`ReplayOptions::ranges`]) over a
//! capture file that can be cut ([`Source::cuttable`]), workers take its
//! byte ranges and each record is read once (ranges.rs). Otherwise
//! packets are sharded by flow, as RSS spreads packets over CPUs: where
//! the source can be read again ([`Source::fork`]: files, generated
//! traffic, packets in memory) every worker reads it all and runs its own
//! share, with nothing passed between threads; otherwise one dispatcher
//! reads and hands each worker its packets in batches.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use runtime::PacketHook;

use crate::batch::Batch;
use crate::counters::ReplayCounters;
use crate::ordered::{DoneOnDrop, Ordered};
use crate::replay_shared::{ReplayError, ReplayOptions, WorkerEnd, join_all, stop_now};
use crate::sink::Sinks;
use crate::source::{Source, SourceError};
use crate::worker::Worker;

/// What a replay did.
pub struct ReplaySummary {
    pub counters: ReplayCounters,
    /// Workers that ran the program.
    pub threads: usize,
    pub seconds: f64,
    /// Why the source ended early (every packet before it was replayed).
    pub source_error: Option<SourceError>,
    /// Whether `ReplayOptions::stop` ended the replay before the source's end.
    pub stopped: bool,
    /// What reading by byte ranges did, when workers took ranges (`None`:
    /// one thread, or packets sharded by flow).
    pub ranges: Option<crate::ranges::RangesRead>,
}

/// Takes the next batch, cut at the limit; the source's error comes back
/// with the packets read before it.
fn next_batch(
    source: &mut dyn Source,
    batch: &mut Batch,
    read: u64,
    opts: &ReplayOptions,
) -> Option<SourceError> {
    batch.clear();
    let limit = opts.limit;
    if limit.is_some_and(|l| read >= l) || stop_now(source, opts) {
        return None;
    }
    let err = source.fill(batch).err();
    if let Some(l) = limit
        && read + batch.len() as u64 > l
    {
        batch.truncate((l - read) as usize);
    }
    err
}

/// Replays `source` through `hook` (and, with more threads, its siblings on
/// the same maps), routing packets to `sinks`. `progress` counts the
/// packets read so far, for a progress bar polled elsewhere.
pub fn replay<H: PacketHook>(
    hook: &mut H,
    source: &mut dyn Source,
    sinks: Sinks,
    opts: &ReplayOptions,
    progress: Option<&AtomicU64>,
) -> Result<ReplaySummary, ReplayError> {
    let start = Instant::now();
    let threads = opts.threads.max(1);
    let mut ranges = None;
    let (counters, source_error, result) = if threads == 1 {
        one_thread(hook, source, sinks, opts, progress)
    } else {
        let mut siblings = match siblings(hook, threads) {
            Ok(s) => s,
            Err(e) => {
                // Outputs stay valid files; the worker's error is the one told.
                let _ = sinks.finish();
                return Err(e);
            }
        };
        let workers: Vec<Worker<H>> = std::iter::once(hook)
            .chain(siblings.iter_mut())
            .map(|h| worker(h, &sinks, opts))
            .collect();
        let writes = !sinks.is_empty();
        let cut = opts.ranges && opts.limit.is_none();
        if let Some(path) = source.cuttable().filter(|_| cut).map(|p| p.to_path_buf()) {
            let ordered = Ordered::new(sinks, threads, true);
            let out = writes.then_some(&ordered);
            let (ends, read) =
                crate::ranges::by_ranges(workers, source, &path, out, opts, progress);
            ranges = Some(read);
            let outcome = merge(ends, ordered);
            outcome.2?;
            return Ok(ReplaySummary {
                counters: outcome.0,
                threads,
                seconds: start.elapsed().as_secs_f64(),
                source_error: outcome.1,
                stopped: opts.stop.is_some_and(|s| s.load(Ordering::Relaxed)),
                ranges,
            });
        }
        let forks: Option<Vec<_>> = (1..threads).map(|_| source.fork()).collect();
        // Forked workers may wait for each other; a sharded one must not
        // (the dispatcher could be waiting for it).
        let ordered = Ordered::new(sinks, threads, forks.is_some());
        let out = writes.then_some(&ordered);
        let ends = match forks {
            Some(forks) => forked(workers, source, forks, out, opts, progress),
            None => sharded(workers, source, out, opts, progress),
        };
        merge(ends, ordered)
    };
    result?;
    Ok(ReplaySummary {
        counters,
        threads,
        seconds: start.elapsed().as_secs_f64(),
        source_error,
        stopped: opts.stop.is_some_and(|s| s.load(Ordering::Relaxed)),
        ranges,
    })
}

/// A worker on `hook` as `opts` ask.
fn worker<'h, H: PacketHook>(
    hook: &'h mut H,
    sinks: &Sinks,
    opts: &ReplayOptions,
) -> Worker<'h, H> {
    let mut worker = Worker::new(hook, sinks, opts.ifindex);
    if opts.per_packet {
        worker.log_packets();
    }
    worker
}

type Outcome = (ReplayCounters, Option<SourceError>, Result<(), ReplayError>);

fn one_thread<H: PacketHook>(
    hook: &mut H,
    source: &mut dyn Source,
    mut sinks: Sinks,
    opts: &ReplayOptions,
    progress: Option<&AtomicU64>,
) -> Outcome {
    let mut worker = worker(hook, &sinks, opts);
    let mut batch = Batch::new();
    let mut source_error = None;
    let mut result = Ok(());
    let mut read = 0u64;
    while source_error.is_none() {
        source_error = next_batch(source, &mut batch, read, opts);
        if batch.is_empty() {
            break;
        }
        read += batch.len() as u64;
        worker.run(&batch);
        if let Err(e) = worker.flush(&mut sinks) {
            result = Err(e.into());
            break;
        }
        if let Some(p) = progress {
            p.store(read, Ordering::Relaxed);
        }
    }
    // Outputs stay valid files whatever stopped the loop.
    let finished = sinks.finish().map_err(ReplayError::from);
    (worker.into_counters(), source_error, result.and(finished))
}

/// Hooks for workers 1.. (worker 0 runs on `hook`).
fn siblings<H: PacketHook>(hook: &H, threads: usize) -> Result<Vec<H>, ReplayError> {
    (1..threads)
        .map(|w| {
            hook.sibling(w as u32)
                .map_err(|e| ReplayError::Sibling { worker: w, why: e })
        })
        .collect()
}

/// Hands a worker's outputs to the merge, with its mark.
fn deposit<H: PacketHook>(
    worker: &mut Worker<H>,
    ordered: &Ordered,
    w: usize,
    mark: u64,
) -> Result<(), ReplayError> {
    worker.deposit(ordered, w, mark).map_err(Into::into)
}

/// The workers' counts added up, the first error, worker 0's account of
/// how the source ended; the sinks finished.
fn merge(ends: Vec<WorkerEnd>, ordered: Ordered) -> Outcome {
    let mut total = ReplayCounters::default();
    let mut result = Ok(());
    let mut source_error = None;
    for (w, (c, err, r)) in ends.into_iter().enumerate() {
        total.merge(&c);
        if w == 0 {
            source_error = err;
        }
        if result.is_ok() {
            result = r;
        }
    }
    let (sinks, written) = ordered.into_sinks();
    if result.is_ok() {
        result = written.map_err(Into::into);
    }
    let finished = sinks.finish().map_err(ReplayError::from);
    (total, source_error, result.and(finished))
}

/// Every worker reads the whole source (its own fork) and runs the packets
/// that shard to it: no packet crosses threads.
fn forked<H: PacketHook>(
    workers: Vec<Worker<H>>,
    source: &mut dyn Source,
    forks: Vec<Box<dyn Source>>,
    ordered: Option<&Ordered>,
    opts: &ReplayOptions,
    progress: Option<&AtomicU64>,
) -> Vec<WorkerEnd> {
    let threads = workers.len();
    let mut forks: Vec<Option<Box<dyn Source>>> = forks.into_iter().map(Some).collect();
    std::thread::scope(|s| {
        let mut source = Some(source);
        let spawned: Vec<_> = workers
            .into_iter()
            .enumerate()
            .map(|(w, mut worker)| {
                let mut own = if w == 0 { None } else { forks[w - 1].take() };
                let first = if w == 0 { source.take() } else { None };
                let shard = opts.shard;
                s.spawn(move || -> WorkerEnd {
                    let _done = DoneOnDrop { ordered, worker: w };
                    let src: &mut dyn Source = match (first, own.as_deref_mut()) {
                        (Some(s), _) => s,
                        (None, Some(s)) => s,
                        (None, None) => unreachable!("every worker has a source"),
                    };
                    let mut batch = Batch::new();
                    let (mut read, mut source_error) = (0u64, None);
                    let mut mine = |seq: u64, data: &[u8]| shard.worker(threads, seq, data) == w;
                    while source_error.is_none() {
                        let max = opts.limit.map_or(u64::MAX, |l| l.saturating_sub(read));
                        if max == 0 || stop_now(src, opts) {
                            break;
                        }
                        batch.clear();
                        let (n, ended) = src.fill_where(&mut batch, max, &mut mine);
                        source_error = ended.err();
                        if n == 0 {
                            break;
                        }
                        read += n;
                        worker.run(&batch);
                        // Every packet of this worker's up to its batch's
                        // last is run: its mark is past that one.
                        if let Some(o) = ordered
                            && !batch.is_empty()
                        {
                            let mark = batch.info(batch.len() - 1).seq + 1;
                            if let Err(e) = deposit(&mut worker, o, w, mark) {
                                return (worker.into_counters(), source_error, Err(e));
                            }
                        }
                        if let (0, Some(p)) = (w, progress) {
                            p.store(read, Ordering::Relaxed);
                        }
                    }
                    (worker.into_counters(), source_error, Ok(()))
                })
            })
            .collect();
        join_all(spawned)
    })
}

/// Batches each worker may have queued: bounds memory whatever the
/// source's size.
const QUEUED: usize = 8;

/// One dispatcher (this thread) reads and hands each worker its packets.
fn sharded<H: PacketHook>(
    workers: Vec<Worker<H>>,
    source: &mut dyn Source,
    ordered: Option<&Ordered>,
    opts: &ReplayOptions,
    progress: Option<&AtomicU64>,
) -> Vec<WorkerEnd> {
    let threads = workers.len();
    let mut source_error = None;
    let mut read = 0u64;
    let mut ends = std::thread::scope(|s| {
        let (recycle_tx, recycle) = mpsc::channel::<Batch>();
        let mut queues = Vec::new();
        let mut spawned = Vec::new();
        for (w, mut worker) in workers.into_iter().enumerate() {
            // A batch with the worker's mark: every packet of this worker
            // below it is in this batch or an earlier one.
            let (tx, rx) = mpsc::sync_channel::<(Batch, u64)>(QUEUED);
            queues.push(tx);
            let recycle_tx = recycle_tx.clone();
            spawned.push(s.spawn(move || -> WorkerEnd {
                let _done = DoneOnDrop { ordered, worker: w };
                for (mut batch, mark) in rx {
                    worker.run(&batch);
                    if let Some(o) = ordered
                        && let Err(e) = deposit(&mut worker, o, w, mark)
                    {
                        return (worker.into_counters(), None, Err(e));
                    }
                    batch.clear();
                    // The dispatcher may have stopped; the batch is then freed.
                    let _ = recycle_tx.send(batch);
                }
                (worker.into_counters(), None, Ok(()))
            }));
        }
        let mut input = Batch::new();
        let mut pending: Vec<Batch> = (0..threads).map(|_| Batch::new()).collect();
        'read: while source_error.is_none() {
            source_error = next_batch(source, &mut input, read, opts);
            if input.is_empty() {
                break;
            }
            read += input.len() as u64;
            // A short batch: the source has nothing more for now (a live
            // interface between bursts), so every worker gets what is
            // waiting for it rather than hold it until more come. The
            // merge of outputs may ask for every worker's mark too.
            let short = !input.is_full();
            let marks = ordered.is_some_and(|o| o.take_mark_request());
            for (info, data) in input.iter() {
                let w = opts.shard.worker(threads, info.seq, data);
                pending[w].push(info.seq, info.timestamp_ns, info.link, data);
                if pending[w].is_full() {
                    let fresh = recycle.try_recv().unwrap_or_else(|_| Batch::new());
                    let full = std::mem::replace(&mut pending[w], fresh);
                    if queues[w].send((full, info.seq + 1)).is_err() {
                        // The worker stopped (a sink failed): its error tells.
                        break 'read;
                    }
                }
            }
            if short || marks {
                // Sent empty too when outputs are merged: the mark moves.
                let mark = input.info(input.len() - 1).seq + 1;
                for (q, waiting) in queues.iter().zip(pending.iter_mut()) {
                    if waiting.is_empty() && ordered.is_none() {
                        continue;
                    }
                    let fresh = recycle.try_recv().unwrap_or_else(|_| Batch::new());
                    if q.send((std::mem::replace(waiting, fresh), mark)).is_err() {
                        break 'read;
                    }
                }
            }
            if let Some(p) = progress {
                p.store(read, Ordering::Relaxed);
            }
        }
        for (q, rest) in queues.iter().zip(pending) {
            if !rest.is_empty() {
                let _ = q.send((rest, u64::MAX));
            }
        }
        drop(queues);
        join_all(spawned)
    });
    // The dispatcher read the source: it tells how it ended.
    if let Some(end) = ends.first_mut() {
        end.1 = source_error;
    }
    ends
}
