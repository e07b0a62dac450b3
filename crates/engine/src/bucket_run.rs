//! [`BucketRunSpec`]: the run of a flow-affine bucket: the packets one
//! worker of `sluice run --threads N` takes (one blob per range, in plan
//! order, from [`partition`](crate::partition)), run in source order as
//! that worker runs them: on a hook with N CPUs, as CPU `bucket` (its
//! per-CPU slots, `bpf_get_smp_processor_id`), numbered as in the whole
//! capture list. Its [`BucketRun`] holds the pipeline's counters, the
//! report and the hook whose maps the run left (for a merge).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pipeline::{Batch, ReplayCounters, ReplayError, Sinks, Worker};
use runtime::{Hook, PacketHook};
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::bucket::{Bucket, PartitionError, shard_name};
use crate::hook_spec::HookSpec;
use crate::packet_table::PacketTable;
use crate::report::{Read, RunReport};
use crate::source::Skipped;

/// A bucket's run, described as data.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BucketRunSpec {
    pub hook: HookSpec,
    /// The worker this run is (0 to `buckets - 1`).
    pub bucket: usize,
    /// The workers of the run it is part of (`--threads`).
    pub buckets: usize,
    /// The interface index packets arrive on [default: 1].
    #[serde(default)]
    pub ifindex: Option<u32>,
    /// Entries shown per map in the report.
    pub map_entries: usize,
    /// Keep one record per packet: the report's
    /// [`RunReport::packet_table`], packets numbered as in the whole plan.
    #[serde(default)]
    pub per_packet: bool,
}

/// A bucket run: its counters (without the per-packet log, which is
/// the report's table), its report, and its hook with the maps as
/// the run left them (only this worker's flows in them; per-CPU maps hold
/// values in the slot of CPU `bucket`).
pub struct BucketRun {
    pub counters: ReplayCounters,
    pub report: RunReport,
    pub hook: Hook,
}

impl BucketRunSpec {
    /// Worker `bucket` of `buckets` on `hook`, 16 entries per map shown.
    pub fn new(hook: HookSpec, bucket: usize, buckets: usize) -> BucketRunSpec {
        BucketRunSpec {
            hook,
            bucket,
            buckets,
            ifindex: None,
            map_entries: 16,
            per_packet: false,
        }
    }

    /// The hook to build: [`BucketRunSpec::hook`] with a CPU per worker
    /// at least, as a run with `buckets` threads builds it.
    pub fn hook_spec(&self) -> HookSpec {
        let mut spec = self.hook.clone();
        spec.cpus = spec.cpus.max(self.buckets as u32).max(1);
        spec
    }

    /// Builds the hook and runs the bucket's `blobs` (one per range, in
    /// plan order). `stop`, once set, ends the run between batches.
    pub fn run(
        &self,
        blobs: &[&[u8]],
        stop: Option<&'static AtomicBool>,
    ) -> Result<BucketRun, Error> {
        let built = self.hook_spec().build_with(stop)?;
        let notes = built.notes.clone();
        let mut run = self.run_on(built.hook, blobs, stop)?;
        run.report.notes = notes;
        Ok(run)
    }

    /// Runs the bucket's `blobs` on `hook` (built from
    /// [`BucketRunSpec::hook_spec`], fresh for an exact run): as the hook
    /// itself for bucket 0, as its sibling on CPU `bucket` otherwise.
    pub fn run_on(
        &self,
        mut hook: Hook,
        blobs: &[&[u8]],
        stop: Option<&'static AtomicBool>,
    ) -> Result<BucketRun, Error> {
        let buckets = self.check(blobs)?;
        let start = Instant::now();
        let mut sibling = match self.bucket {
            0 => None,
            b => Some(
                PacketHook::sibling(&hook, b as u32)
                    .map_err(|why| ReplayError::Sibling { worker: b, why })?,
            ),
        };
        let sinks = Sinks::new();
        let ifindex = self.ifindex.unwrap_or(1);
        let mut worker = Worker::new(sibling.as_mut().unwrap_or(&mut hook), &sinks, ifindex);
        if self.per_packet {
            worker.log_packets();
        }
        let mut batch = Batch::new();
        let mut stopped = false;
        // Packets numbered as in the whole plan: past the ranges before.
        let mut before = 0u64;
        'blobs: for bucket in &buckets {
            for p in bucket.iter() {
                batch.push(before + p.number, p.timestamp_ns, p.link, p.data);
                if batch.is_full() {
                    worker.run(&batch);
                    batch.clear();
                    if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
                        stopped = true;
                        break 'blobs;
                    }
                }
            }
            before += bucket.frames;
        }
        worker.run(&batch);
        let counters = worker.into_counters();
        drop(sibling);
        let mut summary = pipeline::ReplaySummary {
            counters,
            threads: self.buckets,
            seconds: start.elapsed().as_secs_f64(),
            source_error: None,
            stopped,
            ranges: None,
        };
        let read = Read {
            source: format!(
                "bucket {} of {} ({} ranges)",
                self.bucket,
                self.buckets,
                buckets.len()
            ),
            note: None,
            ports: &[],
            skipped: Skipped::default(),
        };
        let log = summary.counters.log.take();
        let mut report = RunReport::new(
            self.hook.object.name(),
            self.map_entries,
            &mut hook,
            &summary,
            &read,
        );
        report.packet_table = log.map(|log| PacketTable::new(log, &hook));
        Ok(BucketRun {
            counters: summary.counters,
            report,
            hook,
        })
    }

    /// The blobs read back: each this run's bucket, with one sharding,
    /// the ranges in plan order.
    fn check<'a>(&self, blobs: &[&'a [u8]]) -> Result<Vec<Bucket<'a>>, Error> {
        if self.buckets == 0 || u32::try_from(self.buckets).is_err() {
            return Err(PartitionError::Buckets(self.buckets).into());
        }
        if self.bucket >= self.buckets {
            let (bucket, buckets) = (self.bucket, self.buckets);
            return Err(PartitionError::Bucket { bucket, buckets }.into());
        }
        let mut read: Vec<Bucket<'a>> = Vec::with_capacity(blobs.len());
        for (i, blob) in blobs.iter().enumerate() {
            let b = Bucket::parse(blob, i)?;
            let shard = read.first().map_or(b.shard, |f| f.shard);
            if b.bucket as usize != self.bucket
                || b.buckets as usize != self.buckets
                || b.shard != shard
            {
                return Err(PartitionError::Mismatch {
                    blob: i,
                    bucket: b.bucket,
                    buckets: b.buckets,
                    shard: shard_name(b.shard),
                    want: self.bucket as u32,
                    want_buckets: self.buckets as u32,
                    want_shard: shard_name(shard),
                }
                .into());
            }
            if let Some(last) = read.last()
                && b.index < last.index
            {
                let (index, before) = (b.index, last.index);
                return Err(PartitionError::Order {
                    blob: i,
                    index,
                    before,
                }
                .into());
            }
            read.push(b);
        }
        Ok(read)
    }
}
