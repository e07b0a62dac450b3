//! The report of `sluice run` (and `sluice demo`), printed: the engine's
//! [`RunReport`] as text or as JSON.

use std::fmt::Write as _;

use engine::RunReport;

use crate::report::print_json;

/// Prints the report: JSON, or the text, in one write.
pub(super) fn print(r: &RunReport, json: bool) -> Result<(), String> {
    if json {
        print_json(r)
    } else {
        crate::report::print_text(&text(r))
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
    let shard = match (r.shard, &r.shard_note) {
        (Some("ranges"), _) => ", by byte ranges".to_string(),
        (Some(flows), Some(note)) => format!(", by flow ({flows}; {note})"),
        (Some(flows), None) => format!(", by flow ({flows})"),
        (None, _) => String::new(),
    };
    say!(
        "packets       {} in {:.3} s ({:.0} packets/s) on {} thread{}{shard}",
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
    if let Some(c) = &r.coverage {
        say!("coverage      {}", c.summary());
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
        let v: Vec<String> = r
            .skipped
            .by_name()
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
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
