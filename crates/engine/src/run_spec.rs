//! [`RunSpec`]: a run described as data (a hook, its packets, where each
//! route's packets go, threads, limits) and [`RunSpec::run`], which makes
//! it and returns the [`RunReport`]. [`RunSpec::start`] and
//! [`Replay::finish`] are the same in two steps, for front ends that show
//! progress or print the hook's notes as they come.

use std::sync::atomic::{AtomicBool, AtomicU64};

use pipeline::{Interface, Shard, Sinks, Source};
use runtime::Hook;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::hook_spec::HookSpec;
use crate::packet_table::PacketTable;
use crate::report::{Read, RunReport};
use crate::sink::{SentPort, SinkSpec};
use crate::source::{Skipped, SourceSpec};

#[derive(Serialize, Deserialize)]
#[serde(remote = "Shard", rename_all = "kebab-case")]
enum ShardDef {
    Symmetric,
    Directional,
    RoundRobin,
}

fn sixteen() -> usize {
    16
}

/// A replay: a hook over a source's packets, each route's packets to its sinks.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunSpec {
    pub hook: HookSpec,
    pub source: SourceSpec,
    /// Outputs per route (none: packets are only counted).
    #[serde(default)]
    pub sinks: Vec<SinkSpec>,
    /// Worker threads on the same maps, packets sharded by flow (0: one
    /// per core; 1: in capture order, exactly as one CPU).
    #[serde(default)]
    pub threads: usize,
    /// How packets are spread over threads.
    #[serde(default, with = "ShardDef")]
    pub shard: Shard,
    /// Stop after this many packets (with a filter: packets that pass it).
    #[serde(default)]
    pub limit: Option<u64>,
    /// The interface index packets arrive on [default: 1; from a live
    /// interface, its index].
    #[serde(default)]
    pub ifindex: Option<u32>,
    /// Entries shown per map in the report.
    #[serde(default = "sixteen")]
    pub map_entries: usize,
    /// Keep one record per packet: the report's
    /// [`RunReport::packet_table`] (not serialized).
    #[serde(default)]
    pub per_packet: bool,
}

/// A run started: the hook built, the source and sinks open.
pub struct Replay<'a> {
    spec: &'a RunSpec,
    hook: Hook,
    source: Box<dyn Source>,
    sinks: Sinks,
    ports: Vec<SentPort>,
    stop: Option<&'static AtomicBool>,
}

/// A finished run: its report, and the hook with its maps as the run
/// left them.
pub struct Finished {
    pub report: RunReport,
    pub hook: Hook,
}

impl RunSpec {
    /// `hook` over `source`, one thread, no outputs, the defaults elsewhere.
    pub fn new(hook: HookSpec, source: SourceSpec) -> RunSpec {
        RunSpec {
            hook,
            source,
            sinks: Vec::new(),
            threads: 1,
            shard: Shard::default(),
            limit: None,
            ifindex: None,
            map_entries: sixteen(),
            per_packet: false,
        }
    }

    /// The worker threads the replay uses.
    pub fn worker_threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }

    /// The hook to build: [`RunSpec::hook`] with a simulated CPU for each
    /// worker thread at least.
    pub fn hook_spec(&self) -> HookSpec {
        let mut spec = self.hook.clone();
        spec.cpus = spec.cpus.max(self.worker_threads() as u32).max(1);
        spec
    }

    /// Builds the hook, replays the packets and reports. `stop`, once set,
    /// ends the run after the packets read (the report says so);
    /// `progress` counts the packets read so far. The hook's notes are in
    /// [`RunReport::notes`].
    pub fn run(
        &self,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<RunReport, Error> {
        let built = self.hook_spec().build_with(stop)?;
        let notes = built.notes.clone();
        let mut report = self.start(built.hook, stop)?.finish(progress)?.report;
        report.notes = notes;
        Ok(report)
    }

    /// Replays the packets through `hook`, built before (from
    /// [`RunSpec::hook_spec`], or with as many CPUs as worker threads), and
    /// reports. The hook keeps its maps as the run leaves them, and stays
    /// the caller's when the run fails: runs one after another see the
    /// same maps, as a program loaded in the kernel does. The report's
    /// notes are left to the caller (the hook's build noted them).
    pub fn run_on(
        &self,
        hook: &mut Hook,
        stop: Option<&'static AtomicBool>,
        progress: Option<&AtomicU64>,
    ) -> Result<RunReport, Error> {
        let mut source = self.source.open(stop)?;
        let (sinks, ports) = crate::sink::open(&self.sinks)?;
        replay(self, hook, source.as_mut(), sinks, &ports, stop, progress)
    }

    /// Opens the source and the sinks for `hook` (built from
    /// [`RunSpec::hook_spec`]).
    pub fn start(
        &self,
        hook: Hook,
        stop: Option<&'static AtomicBool>,
    ) -> Result<Replay<'_>, Error> {
        let source = self.source.open(stop)?;
        let (sinks, ports) = crate::sink::open(&self.sinks)?;
        Ok(Replay {
            spec: self,
            hook,
            source,
            sinks,
            ports,
            stop,
        })
    }
}

impl Replay<'_> {
    /// The packets the run will take, when the source knows.
    pub fn expected(&self) -> Option<u64> {
        let limit = self.spec.limit;
        self.source
            .expected()
            .map(|n| limit.map_or(n, |l| l.min(n)))
    }

    /// Replays, saves the pinned maps and reports.
    pub fn finish(self, progress: Option<&AtomicU64>) -> Result<Finished, Error> {
        let Replay {
            spec,
            mut hook,
            mut source,
            sinks,
            ports,
            stop,
        } = self;
        let report = replay(
            spec,
            &mut hook,
            source.as_mut(),
            sinks,
            &ports,
            stop,
            progress,
        )?;
        Ok(Finished { report, hook })
    }
}

/// Replays `spec`'s packets from `source` through `hook`, saves the pinned
/// maps and reports.
fn replay(
    spec: &RunSpec,
    hook: &mut Hook,
    source: &mut dyn Source,
    sinks: Sinks,
    ports: &[SentPort],
    stop: Option<&'static AtomicBool>,
    progress: Option<&AtomicU64>,
) -> Result<RunReport, Error> {
    // The hook sees the interface read, unless told otherwise.
    let arrival = spec
        .source
        .interface()
        .map(|name| Interface::lookup(name).map_or(1, |i| i.index));
    let opts = pipeline::ReplayOptions {
        threads: spec.worker_threads(),
        shard: spec.shard,
        limit: spec.limit,
        ifindex: spec.ifindex.or(arrival).unwrap_or(1),
        stop,
        per_packet: spec.per_packet,
    };
    let mut summary = pipeline::replay(hook, source, sinks, &opts, progress)?;
    spec.hook.save_pins(hook)?;
    let read = Read {
        source: spec.source.describe(),
        note: source.note(),
        ports,
        skipped: Skipped::of(source),
    };
    let log = summary.counters.log.take();
    let mut report = RunReport::new(
        spec.hook.object.name(),
        spec.map_entries,
        hook,
        &summary,
        &read,
    );
    report.packet_table = log.map(|log| PacketTable::new(log, hook));
    Ok(report)
}
