//! Flow-affine runs merged (docs/shards.md): a bucket's run kept raw as a
//! [`ShardRun`] ([`BucketRun::raw`]: its counters and the contents of its
//! maps), and [`merge_buckets`], which makes the N buckets' runs into the
//! report `sluice run --threads N` gives, their maps merged by the
//! policies of [`merge_runs`](crate::merge_runs) (per-CPU maps: each
//! bucket's CPU slot; hashes: each flow's entries, in one bucket only).
//! A bucket is no byte range: the partitions' boundaries were proven
//! before the buckets ran, so there is no proof to check here.

use std::collections::BTreeMap;
use std::path::PathBuf;

use capture::{Boundary, Position, ReaderState, Shard};
use maps::Map;
use runtime::Hook;

use crate::Error;
use crate::bucket_run::BucketRun;
use crate::hook_spec::HookSpec;
use crate::merge::{Merged, hook_for, merge_included};
use crate::merge_policy::{MapPolicies, MapPolicy, MergeError};
use crate::report::RunReport;
use crate::shard_run::{MapContents, ShardRun, contents_of, holds_values};

impl BucketRun {
    /// The run's raw parts, as [`merge_buckets`] takes them: the
    /// counters (without the per-packet log), the maps' contents, the
    /// CPUs, `buckets` threads. Its boundary names the bucket, with no
    /// frames (packets are numbered as in the whole plan already).
    pub fn raw(&self, bucket: usize, buckets: usize) -> ShardRun {
        let mut counters = self.counters.clone();
        counters.log = None;
        counters.coverage = None;
        let start = Position {
            offset: 0,
            state: ReaderState::Pcap,
        };
        ShardRun {
            index: bucket,
            boundary: Boundary {
                shard: Shard {
                    path: PathBuf::from(format!("bucket {bucket} of {buckets}")),
                    start: 0,
                    end: 0,
                    size: 0,
                },
                first: start.clone(),
                next: Some(start),
                frames: 0,
                error: None,
            },
            redone: false,
            threads: buckets,
            cpus: self.hook.maps().iter().map(Map::ncpus).max().unwrap_or(1),
            seconds: self.report.seconds,
            counters,
            maps: maps_of(&self.hook),
            ringbuf: self.report.ringbuf.clone(),
            perf_events: self.report.perf_events.clone(),
            skipped: Vec::new(),
            source_error: None,
        }
    }
}

/// The contents of `hook`'s maps that hold values, in the object's order.
fn maps_of(hook: &Hook) -> Vec<MapContents> {
    hook.maps()
        .iter()
        .filter(|m| holds_values(m))
        .map(|m| MapContents {
            name: m.name().to_string(),
            entries: contents_of(m),
        })
        .collect()
}

/// Merges the runs of every bucket of a flow-affine run (from
/// [`BucketRun::raw`], in bucket order) into `hook`, built from `spec`
/// and holding the maps every bucket started from: the report and the
/// policies applied. Its `merged.shards` counts the buckets; its source
/// says how many there were.
pub fn merge_buckets_on(
    hook: &mut Hook,
    spec: &HookSpec,
    runs: &[ShardRun],
    policies: &MapPolicies,
    map_entries: usize,
) -> Result<(RunReport, BTreeMap<String, MapPolicy>), Error> {
    if runs.is_empty() {
        return Err(MergeError::Empty.into());
    }
    let included: Vec<&ShardRun> = runs.iter().collect();
    let source = format!("{} flow-affine buckets", runs.len());
    merge_included(hook, spec, runs, &included, policies, map_entries, source)
}

/// [`merge_buckets_on`] on a hook built from `spec` with a CPU per bucket.
pub fn merge_buckets(
    spec: &HookSpec,
    runs: &[ShardRun],
    policies: &MapPolicies,
    map_entries: usize,
) -> Result<Merged, Error> {
    let (spec, mut hook) = hook_for(spec, runs)?;
    let (report, policies) = merge_buckets_on(&mut hook, &spec, runs, policies, map_entries)?;
    Ok(Merged {
        report,
        hook,
        policies,
    })
}
