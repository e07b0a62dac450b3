//! [`RunReport`]: what a run did, as data: built from the pipeline's
//! counters and the maps after the replay; it serializes as `sluice run
//! --json` prints it.

use std::collections::BTreeMap;

use coverage::Coverage;
use runtime::Hook;
use serde::Serialize;

use crate::mapfmt::{self, MapDump};
use crate::names::{REGIONS, redirect_name};
use crate::packet_table::PacketTable;
use crate::sink::Output;
use crate::sink::SentPort;
use crate::source::Skipped;

/// A distribution summed up.
#[derive(Serialize, Default, Clone, Debug)]
pub struct Percentiles {
    pub mean: f64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// A packet the program stopped on with an error.
#[derive(Serialize, Clone, Debug)]
pub struct ErrorReport {
    pub packet: u64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
}

/// CO-RE relocations of the program.
#[derive(Serialize, Clone, Debug)]
pub struct CoreReport {
    pub relocations: usize,
    pub target: String,
    pub poisoned: Vec<String>,
}

/// What was read and where packets were sent, beside the counters.
pub(crate) struct Read<'a> {
    /// The capture, the generated traffic or the interface.
    pub source: String,
    /// The source's own account (a live interface's drops).
    pub note: Option<String>,
    pub ports: &'a [SentPort],
    /// Frames of the capture skipped, per link type.
    pub skipped: Skipped,
}

/// Packets of a route sent out of an interface.
#[derive(Serialize, Clone, Debug)]
pub struct SentReport {
    pub route: String,
    pub interface: String,
    pub sent: u64,
    /// Dropped because the device stayed busy.
    pub dropped: u64,
    /// Refused by the interface (longer than its MTU, shorter than a header).
    pub refused: u64,
}

/// What a run did: verdicts, costs, redirects, errors, maps.
#[derive(Serialize, Clone, Debug)]
pub struct RunReport {
    pub object: String,
    pub program: String,
    pub section: String,
    /// What was read: `capture F`, `generated SPEC`, `interface IF (live)`.
    pub source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<CoreReport>,
    /// "jit" or "interpreter".
    pub engine: &'static str,
    /// "verified" (no per-access checks) or "run-time".
    pub checks: &'static str,
    pub packets: u64,
    /// Worker threads that ran the program.
    pub threads: usize,
    /// How the threads shared the packets, with more than one: `ranges`
    /// (byte ranges of the capture, each record read once) or the flow
    /// sharding (`symmetric`, `directional`, `round-robin`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<&'static str>,
    /// Why `--shard auto` sharded by flow rather than by ranges.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard_note: Option<String>,
    pub seconds: f64,
    pub packets_per_second: f64,
    pub verdicts: BTreeMap<String, u64>,
    pub redirects: BTreeMap<String, u64>,
    /// Copies sent on by `bpf_clone_redirect`, per interface.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub clones: BTreeMap<String, u64>,
    pub insns_per_packet: Percentiles,
    pub helper_calls_per_packet: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_per_packet: Option<BTreeMap<String, [f64; 2]>>,
    pub errors: u64,
    pub first_errors: Vec<ErrorReport>,
    pub trace: Vec<String>,
    pub trace_lines: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub ringbuf: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub perf_events: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub link_types: BTreeMap<String, u64>,
    /// Frames of the capture without an Ethernet form, not run, per link
    /// type (`--foreign skip`).
    #[serde(skip_serializing_if = "Skipped::is_empty")]
    pub skipped: Skipped,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sent: Vec<SentReport>,
    pub maps: Vec<MapDump>,
    /// Why the capture ended before its end (every packet before it ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_error: Option<String>,
    /// Stopped by SIGINT or SIGTERM before the source's end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stopped: bool,
    /// A report merged from runs over byte ranges
    /// ([`merge_runs`](crate::merge_runs)): how many, and each map's policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<crate::merge_policy::MergedReport>,
    /// What building the hook noted ([`Built::notes`](crate::Built)), when
    /// [`RunSpec::run`](crate::RunSpec::run) built it; not serialized.
    #[serde(skip)]
    pub notes: Vec<String>,
    /// One row per packet, when [`RunSpec::per_packet`](crate::RunSpec)
    /// asked for it; not serialized.
    #[serde(skip)]
    pub packet_table: Option<PacketTable>,
    /// The source lines, branches and functions run, when
    /// [`RunSpec::coverage`](crate::RunSpec) asked for it; serialized as
    /// its summary (found and hit lines, branches, functions).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "coverage_summary"
    )]
    pub coverage: Option<Coverage>,
    /// The packets of the routes kept in memory ([`Target::Memory`](crate::Target));
    /// not serialized.
    #[serde(skip)]
    pub output: Output,
}

/// A coverage as its summary.
fn coverage_summary<S: serde::Serializer>(c: &Option<Coverage>, s: S) -> Result<S::Ok, S::Error> {
    c.as_ref().map(Coverage::summary).serialize(s)
}

impl RunReport {
    /// The report of `hook`'s run summed up in `s`; `object` names the
    /// object, `map_entries` caps the entries shown per map.
    pub(crate) fn new(
        object_name: String,
        map_entries: usize,
        hook: &mut Hook,
        s: &pipeline::ReplaySummary,
        read: &Read<'_>,
    ) -> RunReport {
        let c = &s.counters;
        let prog = hook.program().clone();
        let mut verdicts: BTreeMap<String, u64> = c
            .verdicts
            .iter()
            .map(|(v, n)| (v.name().to_string(), n))
            .fold(BTreeMap::new(), |mut m, (k, n)| {
                *m.entry(k).or_default() += n;
                m
            });
        if c.errors > 0 {
            verdicts.insert("ERROR".into(), c.errors);
        }
        let map_names: Vec<String> = hook.maps().iter().map(|m| m.name().to_string()).collect();
        let mut redirects = BTreeMap::new();
        for (r, n) in c.redirects.iter() {
            *redirects.entry(redirect_name(&r, &map_names)).or_default() += n;
        }
        let clones = c
            .clones
            .iter()
            .map(|((ifindex, ingress), n)| {
                let dir = if ingress { " ingress" } else { "" };
                (format!("ifindex {ifindex}{dir}"), n)
            })
            .collect();
        let mut link_types: BTreeMap<String, u64> = c
            .link_types
            .iter()
            .map(|(k, n)| (format!("{k:?}"), n))
            .collect();
        if link_types.len() == 1 && link_types.contains_key("Ethernet") {
            link_types.clear();
        }
        let first_errors = c
            .first_errors
            .iter()
            .map(|e| {
                let e_prog = hook.program_of_vm(e.program);
                let line = (e.program == 0 || e_prog.is_some())
                    .then(|| e_prog.unwrap_or(&prog).line_at(e.pc))
                    .flatten()
                    .map(|l| format!("{}:{}: {}", l.file, l.line, l.source.trim()));
                ErrorReport {
                    packet: e.seq,
                    message: e.message.clone(),
                    line,
                }
            })
            .collect();

        let mut ringbuf = BTreeMap::new();
        let mut perf_events = BTreeMap::new();
        for i in 0..hook.maps().len() {
            let name = hook.maps()[i].name().to_string();
            let map = &hook.maps()[i];
            if let Some(mut rb) = map.ringbuf() {
                ringbuf.insert(name.clone(), rb.consume().len() as u64);
            }
            let perf = map.perf_drain();
            if !perf.is_empty() {
                perf_events.insert(name, perf.len() as u64);
            }
        }
        let object = hook.object();
        let btf = object.btf.as_ref();
        let maps = hook
            .maps()
            .iter()
            .enumerate()
            .map(|(i, m)| mapfmt::dump(m, object.maps.get(i), btf, map_entries))
            .collect();
        let n = c.packets.max(1) as f64;
        let memory_per_packet = hook.is_counting().then(|| {
            (0..REGIONS.len())
                .map(|k| {
                    (
                        REGIONS[k].to_string(),
                        [c.loads[k] as f64 / n, c.stores[k] as f64 / n],
                    )
                })
                .collect()
        });
        let core = (prog.core_relocations > 0).then(|| CoreReport {
            relocations: prog.core_relocations,
            target: object.core_target.clone().unwrap_or_default(),
            poisoned: prog
                .core_poisoned
                .iter()
                .map(|(pc, why)| format!("instruction {pc}: {why}"))
                .collect(),
        });
        RunReport {
            object: object_name,
            program: prog.name.clone(),
            engine: if hook.jit_enabled() && !hook.is_covering() {
                "jit"
            } else {
                "interpreter"
            },
            checks: if hook.is_trusted() {
                "verified"
            } else {
                "run-time"
            },
            section: prog.section.clone(),
            source: read.source.clone(),
            source_note: read.note.clone(),
            sent: read
                .ports
                .iter()
                .map(|p| SentReport {
                    route: format!("{:?}", p.route).to_lowercase(),
                    interface: p.iface.clone(),
                    sent: p.counts.sent(),
                    dropped: p.counts.dropped(),
                    refused: p.counts.refused(),
                })
                .collect(),
            core,
            packets: c.packets,
            threads: s.threads,
            shard: None,
            shard_note: None,
            seconds: s.seconds,
            packets_per_second: c.packets as f64 / s.seconds.max(1e-9),
            verdicts,
            redirects,
            clones,
            insns_per_packet: Percentiles {
                mean: c.insns.mean(),
                p50: c.insns.quantile(0.5),
                p99: c.insns.quantile(0.99),
                max: c.insns.max(),
            },
            helper_calls_per_packet: c.helper_calls as f64 / n,
            memory_per_packet,
            errors: c.errors,
            first_errors,
            trace: c.trace.iter().map(|(_, l)| l.clone()).collect(),
            trace_lines: c.trace_lines,
            ringbuf,
            perf_events,
            link_types,
            skipped: read.skipped.clone(),
            maps,
            source_error: s.source_error.as_ref().map(|e| e.to_string()),
            stopped: s.stopped,
            merged: None,
            notes: Vec::new(),
            packet_table: None,
            coverage: None,
            output: Output::new(),
        }
    }
}
