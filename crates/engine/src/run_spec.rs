//! [`RunSpec`]: a run described as data (a hook, its packets, where each
//! route's packets go, threads, limits) and [`RunSpec::run`], which makes
//! it and returns the [`RunReport`]. [`RunSpec::start`] and
//! [`Replay::finish`] are the same in two steps, for front ends that show
//! progress or print the hook's notes as they come.

use std::sync::atomic::{AtomicBool, AtomicU64};

use pipeline::{Interface, Sharding, Source};
use runtime::Hook;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::hook_spec::HookSpec;
use crate::packet_table::PacketTable;
use crate::report::{Read, RunReport};
use crate::shard_mode::ShardMode;
use crate::sink::{Opened, SinkSpec};
use crate::source::{Skipped, SourceSpec};
use coverage::Coverage;

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
    /// Worker threads on the same maps (0: one per core; 1: in capture
    /// order, exactly as one CPU).
    #[serde(default)]
    pub threads: usize,
    /// How threads share the packets: byte ranges of the capture or flows
    /// ([`ShardMode::Auto`] by default).
    #[serde(default)]
    pub shard: ShardMode,
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
    /// Count which source lines, branches and functions the packets ran:
    /// the report's [`RunReport::coverage`]. Implies the interpreter
    /// (covering runs are interpreted step by step).
    #[serde(default)]
    pub coverage: bool,
}

/// A run started: the hook built, the source and sinks open.
pub struct Replay<'a> {
    spec: &'a RunSpec,
    hook: Hook,
    source: Box<dyn Source>,
    opened: Opened,
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
            shard: ShardMode::default(),
            limit: None,
            ifindex: None,
            map_entries: sixteen(),
            per_packet: false,
            coverage: false,
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
    /// worker thread at least, and the interpreter for a coverage run.
    pub fn hook_spec(&self) -> HookSpec {
        let mut spec = self.hook.clone();
        spec.cpus = spec.cpus.max(self.worker_threads() as u32).max(1);
        if self.coverage {
            spec.engine = profile::VmEngine::Interpreter;
        }
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
        let opened = crate::sink::open(&self.sinks)?;
        if self.coverage {
            hook.set_coverage(true);
        }
        let report = replay(self, hook, source.as_mut(), opened, stop, progress);
        // A kept hook runs at full speed again after a coverage run.
        if self.coverage {
            hook.set_coverage(false);
        }
        report
    }

    /// Opens the source and the sinks for `hook` (built from
    /// [`RunSpec::hook_spec`]); with [`RunSpec::coverage`], the hook
    /// counts coverage from zero.
    pub fn start(
        &self,
        mut hook: Hook,
        stop: Option<&'static AtomicBool>,
    ) -> Result<Replay<'_>, Error> {
        if self.coverage {
            hook.set_coverage(true);
        }
        let source = self.source.open(stop)?;
        let opened = crate::sink::open(&self.sinks)?;
        Ok(Replay {
            spec: self,
            hook,
            source,
            opened,
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
            opened,
            stop,
        } = self;
        let report = replay(spec, &mut hook, source.as_mut(), opened, stop, progress)?;
        Ok(Finished { report, hook })
    }
}

/// Replays `spec`'s packets from `source` through `hook`, saves the pinned
/// maps and reports.
fn replay(
    spec: &RunSpec,
    hook: &mut Hook,
    source: &mut dyn Source,
    opened: Opened,
    stop: Option<&'static AtomicBool>,
    progress: Option<&AtomicU64>,
) -> Result<RunReport, Error> {
    replay_raw(spec, hook, source, opened, stop, progress).map(|r| r.report)
}

/// A replay's report and, raw, what it was made of: the pipeline's
/// summary (without its per-packet log and coverage counts, which went
/// into the report), what the source skipped and, for a byte range read
/// to its end, its boundary.
pub(crate) struct Raw {
    pub report: RunReport,
    pub summary: pipeline::ReplaySummary,
    pub skipped: Skipped,
    pub boundary: Option<capture::Boundary>,
}

/// [`replay`], keeping the raw parts of the report.
pub(crate) fn replay_raw(
    spec: &RunSpec,
    hook: &mut Hook,
    source: &mut dyn Source,
    opened: Opened,
    stop: Option<&'static AtomicBool>,
    progress: Option<&AtomicU64>,
) -> Result<Raw, Error> {
    let Opened { sinks, ports, kept } = opened;
    // The hook sees the interface read, unless told otherwise.
    let arrival = spec
        .source
        .interface()
        .map(|name| Interface::lookup(name).map_or(1, |i| i.index));
    let threads = spec.worker_threads();
    let sharing = Sharing::of(spec, hook, source, threads)?;
    let opts = pipeline::ReplayOptions {
        threads,
        shard: sharing.flows,
        ranges: sharing.ranges,
        range_bytes: 0,
        limit: spec.limit,
        ifindex: spec.ifindex.or(arrival).unwrap_or(1),
        stop,
        per_packet: spec.per_packet,
    };
    let mut summary = pipeline::replay(hook, source, sinks, &opts, progress)?;
    spec.hook.save_pins(hook)?;
    let skipped = match &summary.ranges {
        Some(r) => Skipped::by_linktype(r.skipped.clone()),
        None => Skipped::of(source),
    };
    let read = Read {
        source: spec.source.describe(),
        note: source.note(),
        ports: &ports,
        skipped,
    };
    let log = summary.counters.log.take();
    let counts = summary.counters.coverage.take();
    let mut report = RunReport::new(
        spec.hook.object.name(),
        spec.map_entries,
        hook,
        &summary,
        &read,
    );
    if summary.threads > 1 {
        report.shard = Some(match summary.ranges {
            Some(_) => "ranges",
            None => crate::bucket::shard_name(sharing.flows),
        });
        report.shard_note = sharing.note;
    }
    report.packet_table = log.map(|log| PacketTable::new(log, hook));
    report.output = Opened::output(&kept);
    report.coverage = counts.map(|counts| {
        let mut cover = Coverage::new();
        for (i, p) in counts.programs.iter().enumerate() {
            if let Some(program) = hook.program_of_vm(i) {
                cover.add_program(program, &p.runs, &p.taken);
            }
        }
        cover
    });
    Ok(Raw {
        report,
        summary,
        skipped: read.skipped,
        boundary: source.boundary(),
    })
}

/// How a run's threads share its packets, as [`RunSpec::shard`] asks and
/// the program and source allow.
struct Sharing {
    /// Byte ranges of the capture.
    ranges: bool,
    /// Else, flows spread so.
    flows: Sharding,
    /// Why `auto` did not take ranges.
    note: Option<String>,
}

impl Sharing {
    fn of(
        spec: &RunSpec,
        hook: &Hook,
        source: &dyn Source,
        threads: usize,
    ) -> Result<Sharing, Error> {
        let flows = |flows, note| Sharing {
            ranges: false,
            flows,
            note,
        };
        if threads <= 1 {
            return Ok(flows(Sharding::default(), None));
        }
        if let ShardMode::Flows(s) = spec.shard {
            return Ok(flows(s, None));
        }
        let why = crate::order_free::order_bound(hook)
            .or_else(|| {
                source.cuttable().is_none().then(|| {
                    format!(
                        "{} is not a capture file that can be cut into byte ranges",
                        spec.source.describe()
                    )
                })
            })
            .or_else(|| {
                spec.limit
                    .map(|_| "--limit reads the capture's first packets".to_string())
            });
        match (spec.shard, why) {
            (_, None) => Ok(Sharing {
                ranges: true,
                flows: Sharding::default(),
                note: None,
            }),
            (ShardMode::Ranges, Some(why)) => Err(Error::Ranges(why)),
            (_, Some(why)) => Ok(flows(
                Sharding::default(),
                Some(format!("not by ranges: {why}")),
            )),
        }
    }
}
