//! [`merge_runs`]: the runs over a plan's byte ranges ([`ShardRun`]s, in
//! plan order) made into the report one process gives over the same
//! packets: their proof checked ([`capture::check`]), counts summed in
//! plan order (packet numbers counted on from the ranges before), maps
//! merged by a [`MapPolicy`] per map into a hook built once from the
//! specification, and the report made by the path `sluice run` takes
//! ([`RunReport`]), with a `merged` part saying how (docs/shards.md).

use std::collections::BTreeMap;

use pipeline::{ReplayCounters, ReplaySummary, SourceError};
use runtime::Hook;

use crate::Error;
use crate::hook_spec::HookSpec;
use crate::map_merge;
use crate::merge_policy::{MapPolicies, MapPolicy, MergeError, MergedReport};
use crate::report::{Read, RunReport};
use crate::shard_run::ShardRun;
use crate::source::Skipped;

/// A merge: the report one process gives (with its `merged` part), the
/// hook holding the merged maps, and the policy each map was merged by.
pub struct Merged {
    pub report: RunReport,
    pub hook: Hook,
    pub policies: BTreeMap<String, MapPolicy>,
}

/// Merges `runs` (every range of a plan, in plan order, each proven) into
/// the report one process gives: `hook` built from the specification
/// with as many CPUs as the runs used, maps merged as `policies` say
/// (else by default: see [`MapPolicy`] and docs/shards.md), at most
/// `map_entries` entries shown per map.
pub fn merge_runs(
    hook: &HookSpec,
    runs: &[ShardRun],
    policies: &MapPolicies,
    map_entries: usize,
) -> Result<Merged, Error> {
    let (spec, mut built) = hook_for(hook, runs)?;
    let (report, policies) = merge_runs_on(&mut built, &spec, runs, policies, map_entries)?;
    Ok(Merged {
        report,
        hook: built,
        policies,
    })
}

/// The hook a merge writes into: built from `spec` with as many CPUs as
/// the runs used (and the specification so widened).
pub(crate) fn hook_for(spec: &HookSpec, runs: &[ShardRun]) -> Result<(HookSpec, Hook), Error> {
    let mut spec = spec.clone();
    spec.cpus = runs.iter().map(|r| r.cpus).fold(spec.cpus.max(1), u32::max);
    let hook = spec.build()?.hook;
    Ok((spec, hook))
}

/// [`merge_runs`] into `hook`, built from `spec` and holding the maps
/// every range started from (a caller that wrote maps before the runs
/// writes them here too); the report and the policies applied.
pub fn merge_runs_on(
    hook: &mut Hook,
    spec: &HookSpec,
    runs: &[ShardRun],
    policies: &MapPolicies,
    map_entries: usize,
) -> Result<(RunReport, BTreeMap<String, MapPolicy>), Error> {
    let included = proven(runs)?;
    merge_included(
        hook,
        spec,
        runs,
        &included,
        policies,
        map_entries,
        describe(runs),
    )
}

/// The merge of `included` (of `runs`, whose proof is checked or not
/// needed) into `hook`, the report saying `source` was read.
pub(crate) fn merge_included(
    hook: &mut Hook,
    spec: &HookSpec,
    runs: &[ShardRun],
    included: &[&ShardRun],
    policies: &MapPolicies,
    map_entries: usize,
    source: String,
) -> Result<(RunReport, BTreeMap<String, MapPolicy>), Error> {
    let (summary, skipped) = summed(runs, included);
    let merged = map_merge::merge(hook, included, policies, map_entries)?;
    let read = Read {
        source,
        note: None,
        ports: &[],
        skipped,
    };
    let mut report = RunReport::new(spec.object.name(), map_entries, hook, &summary, &read);
    // Every run names every ring buffer (0 when it held no record).
    report.ringbuf = sum_counts(included.iter().map(|r| &r.ringbuf));
    report.perf_events = sum_counts(included.iter().map(|r| &r.perf_events));
    report.perf_events.retain(|_, n| *n > 0);
    report.merged = Some(MergedReport {
        shards: runs.len(),
        redone: runs.iter().filter(|r| r.redone).count(),
        map_policies: merged.policies.clone(),
        kept: merged.kept,
    });
    Ok((report, merged.policies))
}

/// The runs whose records belong to the sequential read, once every
/// range's start is proven and every file's ranges are all there: those
/// of a file after a range that ended on an error are left out.
fn proven(runs: &[ShardRun]) -> Result<Vec<&ShardRun>, MergeError> {
    if runs.is_empty() {
        return Err(MergeError::Empty);
    }
    let boundaries: Vec<capture::Boundary> = runs.iter().map(|r| r.boundary.clone()).collect();
    if let Some(redo) = capture::check(&boundaries)?.first() {
        return Err(MergeError::Unproven {
            range: redo.shard.describe(),
            first: boundaries[redo.index].first.offset,
            from: redo.from.offset,
        });
    }
    let mut included = Vec::with_capacity(runs.len());
    let mut errored = false;
    for (i, run) in runs.iter().enumerate() {
        let shard = &run.boundary.shard;
        if shard.start == 0 {
            errored = false;
        }
        let last_of_file = runs
            .get(i + 1)
            .is_none_or(|n| n.boundary.shard.path != shard.path || n.boundary.shard.start == 0);
        if last_of_file && shard.end < shard.size {
            return Err(MergeError::Incomplete {
                path: shard.path.clone(),
                end: shard.end,
                size: shard.size,
            });
        }
        if !errored {
            included.push(run);
        }
        errored |= run.boundary.error.is_some();
    }
    Ok(included)
}

/// The runs' counts summed in plan order, packet numbers counted on from
/// the frames of the ranges before (as one sequential read numbers
/// them); the first source error, its packet counted from its file's
/// first frame; the frames skipped.
fn summed(runs: &[ShardRun], included: &[&ShardRun]) -> (ReplaySummary, Skipped) {
    let mut total = ReplayCounters::default();
    let mut before = 0u64;
    let mut file_before = 0u64;
    let mut source_error = None;
    let mut skipped: Vec<(String, u64)> = Vec::new();
    for run in included {
        if run.boundary.shard.start == 0 {
            file_before = 0;
        }
        let mut c = run.counters.clone();
        for e in &mut c.first_errors {
            e.seq += before;
        }
        for t in &mut c.trace {
            t.0 += before;
        }
        total.merge(&c);
        if source_error.is_none()
            && let Some(text) = &run.source_error
        {
            source_error = Some(renumbered(run, text, file_before));
        }
        for (link, n) in &run.skipped {
            match skipped.iter_mut().find(|(l, _)| l == link) {
                Some((_, m)) => *m += n,
                None => skipped.push((link.clone(), *n)),
            }
        }
        before += run.boundary.frames;
        file_before += run.boundary.frames;
    }
    let summary = ReplaySummary {
        counters: total,
        threads: runs.iter().map(|r| r.threads).max().unwrap_or(1),
        seconds: runs.iter().map(|r| r.seconds).sum(),
        source_error,
        stopped: false,
        ranges: None,
    };
    (summary, Skipped(skipped))
}

/// A range's source error with its packet counted from its file's first
/// frame (`before` frames in the ranges before it).
fn renumbered(run: &ShardRun, text: &str, before: u64) -> SourceError {
    let name = &run.boundary.shard.path;
    let mut e = capture::IoError::from_text(name, text);
    match e.packet {
        Some(p) => {
            e.packet = Some(p + before as usize);
            SourceError(e.to_string())
        }
        None => SourceError(text.to_string()),
    }
}

/// Per name, the counts of every run added.
fn sum_counts<'a>(each: impl Iterator<Item = &'a BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for counts in each {
        for (name, n) in counts {
            *out.entry(name.clone()).or_default() += n;
        }
    }
    out
}

/// What the merged report says was read: `capture F` for one file,
/// `captures F1 + F2 + ...` for several.
fn describe(runs: &[ShardRun]) -> String {
    let mut files: Vec<&std::path::Path> = Vec::new();
    for r in runs {
        let p = r.boundary.shard.path.as_path();
        if files.last() != Some(&p) {
            files.push(p);
        }
    }
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    match names.len() {
        1 => format!("capture {}", names[0]),
        _ => format!("captures {}", names.join(" + ")),
    }
}
