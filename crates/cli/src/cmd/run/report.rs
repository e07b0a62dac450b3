//! The report of `sluice run`: built from the pipeline's counters and the
//! maps after the replay, printed as text or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use runtime::{Hook, RedirectTarget};
use serde::Serialize;

use super::{Args, SentPort};
use crate::mapfmt::{self, MapDump};
use crate::report::print_json;

#[derive(Serialize, Default)]
pub(super) struct Percentiles {
    mean: f64,
    p50: u64,
    p99: u64,
    max: u64,
}

#[derive(Serialize)]
pub(super) struct ErrorReport {
    packet: u64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
}

#[derive(Serialize)]
pub(super) struct CoreReport {
    relocations: usize,
    target: String,
    poisoned: Vec<String>,
}

/// What was read and where packets were sent, beside the counters.
pub(super) struct Read<'a> {
    /// The capture, the generated traffic or the interface.
    pub source: String,
    /// The source's own account (a live interface's drops).
    pub note: Option<String>,
    pub ports: &'a [SentPort],
    /// Frames of the capture skipped, per link type.
    pub skipped: BTreeMap<String, u64>,
}

/// Packets of a route sent out of an interface.
#[derive(Serialize)]
pub(super) struct SentReport {
    route: String,
    interface: String,
    sent: u64,
    /// Dropped because the device stayed busy.
    dropped: u64,
    /// Refused by the interface (longer than its MTU, shorter than a header).
    refused: u64,
}

#[derive(Serialize)]
pub(super) struct RunReport {
    object: String,
    program: String,
    section: String,
    /// What was read: `capture F`, `generated SPEC`, `interface IF (live)`.
    source: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    core: Option<CoreReport>,
    /// "jit" or "interpreter".
    engine: &'static str,
    /// "verified" (no per-access checks) or "run-time".
    checks: &'static str,
    packets: u64,
    /// Worker threads that ran the program.
    threads: usize,
    seconds: f64,
    packets_per_second: f64,
    verdicts: BTreeMap<String, u64>,
    redirects: BTreeMap<String, u64>,
    /// Copies sent on by `bpf_clone_redirect`, per interface.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    clones: BTreeMap<String, u64>,
    insns_per_packet: Percentiles,
    helper_calls_per_packet: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_per_packet: Option<BTreeMap<String, [f64; 2]>>,
    pub(super) errors: u64,
    first_errors: Vec<ErrorReport>,
    trace: Vec<String>,
    trace_lines: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    ringbuf: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    perf_events: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    link_types: BTreeMap<String, u64>,
    /// Frames of the capture without an Ethernet form, not run, per link
    /// type (`--foreign skip`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    skipped: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sent: Vec<SentReport>,
    maps: Vec<MapDump>,
    /// Why the capture ended before its end (every packet before it ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    source_error: Option<String>,
    /// Stopped by SIGINT or SIGTERM before the source's end.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stopped: bool,
}

impl RunReport {
    pub(super) fn new(
        a: &Args,
        hook: &mut Hook,
        s: &pipeline::Summary,
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
            let key = match r.target {
                RedirectTarget::Device {
                    ifindex,
                    ingress: false,
                } => format!("ifindex {ifindex}"),
                RedirectTarget::Device {
                    ifindex,
                    ingress: true,
                } => format!("ifindex {ifindex} ingress"),
                RedirectTarget::Cpu(c) => format!("cpu {c}"),
                RedirectTarget::Socket(q) => format!("xsk queue {q}"),
                RedirectTarget::Broadcast { exclude_ingress } => {
                    let map = r.map.map_or("?", |m| map_names[m].as_str());
                    if exclude_ingress {
                        format!("broadcast {map} (not ingress)")
                    } else {
                        format!("broadcast {map}")
                    }
                }
            };
            *redirects.entry(key).or_default() += n;
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
                let e_prog = hook.program_of_vm(e.error.program);
                let line = (e.error.program == 0 || e_prog.is_some())
                    .then(|| e_prog.unwrap_or(&prog).line_at(e.error.pc))
                    .flatten()
                    .map(|l| format!("{}:{}: {}", l.file, l.line, l.source.trim()));
                ErrorReport {
                    packet: e.seq,
                    message: e.error.to_string(),
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
            .map(|(i, m)| mapfmt::dump(m, object.maps.get(i), btf, a.map_entries))
            .collect();
        let n = c.packets.max(1) as f64;
        let kinds = ["stack", "context", "packet", "map"];
        let memory_per_packet = a.count_memory.then(|| {
            (0..4)
                .map(|k| {
                    (
                        kinds[k].to_string(),
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
            object: a
                .object
                .as_deref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            program: prog.name.clone(),
            engine: if hook.jit_enabled() {
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
        }
    }

    pub(super) fn print(&self, json: bool) -> Result<(), String> {
        if json {
            print_json(self)
        } else {
            crate::report::print_text(&text(self))
        }
    }
}

/// The text report, whole (printed in one write).
fn text(r: &RunReport) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    macro_rules! say {
        ($($t:tt)*) => {
            let _ = writeln!(out, $($t)*);
        };
    }
    say!("{} ({}) of {}", r.program, r.section, r.object);
    say!("source        {}", r.source);
    if let Some(n) = &r.source_note {
        say!("              {n}");
    }
    if let Some(c) = &r.core {
        say!(
            "CO-RE         {} relocations against {}",
            c.relocations,
            c.target
        );
        for p in &c.poisoned {
            say!("  poisoned {p}");
        }
    }
    say!(
        "engine        {}, {}",
        r.engine,
        if r.checks == "verified" {
            "no per-access checks (verified)"
        } else {
            "checks on every access"
        }
    );
    say!(
        "packets       {} in {:.3} s ({:.0} packets/s) on {} thread{}",
        r.packets,
        r.seconds,
        r.packets_per_second,
        r.threads,
        if r.threads == 1 { "" } else { "s" }
    );
    if r.stopped {
        say!("stopped       by a signal: every packet read ran, outputs complete");
    }
    let total = r.packets.max(1) as f64;
    let v: Vec<String> = r
        .verdicts
        .iter()
        .map(|(k, n)| format!("{k} {n} ({:.1}%)", *n as f64 * 100.0 / total))
        .collect();
    say!("verdicts      {}", v.join("  "));
    if !r.redirects.is_empty() {
        let v: Vec<String> = r
            .redirects
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        say!("redirects     {}", v.join("  "));
    }
    if !r.clones.is_empty() {
        let v: Vec<String> = (r.clones.iter())
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        say!("clones        {}", v.join("  "));
    }
    let p = &r.insns_per_packet;
    say!(
        "insns/packet  mean {:.1}  p50 {}  p99 {}  max {}",
        p.mean,
        p.p50,
        p.p99,
        p.max
    );
    say!("helpers/pkt   {:.2}", r.helper_calls_per_packet);
    if let Some(m) = &r.memory_per_packet {
        let v: Vec<String> = m
            .iter()
            .filter(|(_, [l, s])| l + s > 0.0)
            .map(|(k, [l, s])| format!("{k} {l:.1} loads {s:.1} stores"))
            .collect();
        say!("memory/packet {}", v.join(", "));
    }
    if !r.link_types.is_empty() {
        let v: Vec<String> = r
            .link_types
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        say!(
            "link types    {} (Converted: given an Ethernet header; Foreign(N): bytes as captured)",
            v.join("  ")
        );
    }
    if !r.skipped.is_empty() {
        let v: Vec<String> = r.skipped.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        say!(
            "skipped       {} (frames without an Ethernet form; --foreign pass runs them)",
            v.join("  ")
        );
    }
    if r.errors > 0 {
        say!("errors        {} packets stopped with an error:", r.errors);
        for e in &r.first_errors {
            say!("  packet {}: {}", e.packet, e.message);
            if let Some(l) = &e.line {
                say!("    at {l}");
            }
        }
    }
    if r.trace_lines > 0 {
        say!(
            "trace_printk  {} lines{}",
            r.trace_lines,
            if r.trace_lines > r.trace.len() as u64 {
                " (first 100)"
            } else {
                ""
            }
        );
        for l in &r.trace {
            say!("  {l}");
        }
    }
    for p in &r.sent {
        say!(
            "sent          {} out of {}: {} ({} dropped, device busy; {} refused, too long or short)",
            p.route,
            p.interface,
            p.sent,
            p.dropped,
            p.refused
        );
    }
    for (k, n) in &r.ringbuf {
        say!("ringbuf       {k}: {n} records");
    }
    for (k, n) in &r.perf_events {
        say!("perf events   {k}: {n} records");
    }
    say!("maps");
    for m in &r.maps {
        say!(
            "  {} ({}, key {} B, value {} B, {} of {} entries)",
            m.name,
            m.map_type,
            m.key_size,
            m.value_size,
            m.len,
            m.max_entries
        );
        for e in &m.entries {
            if e.summed {
                say!(
                    "    {} => {}  (per CPU: {})",
                    e.key,
                    e.value,
                    e.cpus.join(" | ")
                );
            } else if e.cpus.len() > 1 {
                say!("    {} => {}", e.key, e.cpus.join(" | "));
            } else {
                say!("    {} => {}", e.key, e.value);
            }
        }
        let mut notes = Vec::new();
        if m.zero_entries > 0 && (!m.entries.is_empty() || m.zero_entries < m.len) {
            notes.push(format!("{} all-zero entries not shown", m.zero_entries));
        } else if m.zero_entries > 0 {
            notes.push("all zero".to_string());
        }
        if m.more > 0 {
            notes.push(format!("{} more entries (--map-entries)", m.more));
        }
        if !notes.is_empty() {
            say!("    ({})", notes.join(", "));
        }
    }
    out
}
