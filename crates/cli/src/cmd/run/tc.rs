//! `sluice run --tc FILE`: packets through a tc configuration (filters and
//! actions, the `tc` crate) instead of a program: they arrive at one
//! device's clsact hook; the report gives the verdicts, where mirred sent
//! packets, and every hook's filters and actions with their counters as
//! `tc -s filter show` prints them.

use std::collections::BTreeMap;
use std::process::ExitCode;

use pipeline::Summary;
use serde::Serialize;
use tc::{ClsactHook, Config, Runner, ShowOptions};

use super::Args;
use crate::report::print_json;

/// Which clsact hook packets arrive at.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum TcHook {
    #[default]
    Ingress,
    Egress,
}

impl From<TcHook> for ClsactHook {
    fn from(h: TcHook) -> ClsactHook {
        match h {
            TcHook::Ingress => ClsactHook::Ingress,
            TcHook::Egress => ClsactHook::Egress,
        }
    }
}

#[derive(Serialize)]
struct Delivery {
    dev: String,
    hook: &'static str,
    /// Packets that left the hook alive.
    delivered: u64,
    /// Packets the hook dropped or took on (a redirect onwards).
    consumed: u64,
}

#[derive(Serialize)]
struct TcReport {
    config: String,
    dev: String,
    hook: &'static str,
    source: String,
    packets: u64,
    seconds: f64,
    packets_per_second: f64,
    verdicts: BTreeMap<String, u64>,
    sent: Vec<Delivery>,
    /// Packets past mirred's nesting limit (dropped).
    too_deep: u64,
    /// `tc -s -j filter show` per device and hook.
    filters: BTreeMap<String, serde_json::Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stopped: bool,
}

/// The device packets arrive at: the one named, or the only one with a
/// qdisc.
pub(crate) fn arrival(config: &Config, dev: Option<&str>) -> Result<String, String> {
    if let Some(d) = dev {
        return Ok(d.to_string());
    }
    let names: Vec<&str> = config.qdiscs().map(|(d, _)| d).collect();
    match names.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err("--tc: the configuration has no qdisc (qdisc add dev DEV clsact)".into()),
        many => Err(format!(
            "--tc: packets arrive at which device? --tc-dev {}",
            many.join("|")
        )),
    }
}

/// The show commands of every hook with filters.
fn shown(config: &Config) -> Vec<(String, ClsactHook)> {
    let mut out = Vec::new();
    for (dev, q) in config.qdiscs() {
        for (hook, block) in [
            (ClsactHook::Ingress, &q.ingress),
            (ClsactHook::Egress, &q.egress),
        ] {
            if block.chains().next().is_some() {
                out.push((dev.to_string(), hook));
            }
        }
    }
    out
}

fn show(config: &mut Config, dev: &str, hook: ClsactHook, json: bool) -> Result<String, String> {
    config
        .run(
            &["filter", "show", "dev", dev, hook.name()],
            ShowOptions { stats: true, json },
        )
        .map_err(|e| e.to_string())
}

pub fn run(a: &Args, file: &std::path::Path) -> Result<ExitCode, String> {
    if a.object.is_some() {
        return Err("--tc runs a tc configuration instead of a program: give no object".into());
    }
    let config = crate::cmd::tc::load(file)?;
    let dev = arrival(&config, a.tc_dev.as_deref())?;
    let hook = ClsactHook::from(a.tc_hook);
    let mut runner = Runner::new(config, &dev, hook);
    let stop = crate::signals::stop_on_signals();
    let spec = a.source();
    let mut source = spec.open(Some(stop)).map_err(|e| e.to_string())?;
    let outputs = a.sinks();
    crate::report::outputs_on_stdout(super::files(&outputs))?;
    let sinks = engine::open_sinks(&outputs).map_err(|e| e.to_string())?;
    let opts = pipeline::Options {
        // One table of counters and policers for every packet.
        threads: 1,
        limit: a.limit,
        ifindex: runner.ifindex(),
        stop: Some(stop),
        ..pipeline::Options::default()
    };
    let total = source.expected().map(|n| a.limit.map_or(n, |l| l.min(n)));
    let summary: Summary = crate::progress::with_progress(total, a.json, |count| {
        pipeline::replay(&mut runner, source.as_mut(), sinks, &opts, Some(count))
    })
    .map_err(|e| e.to_string())?;
    crate::report::warn_skipped(
        &engine::Skipped::of(source.as_ref()),
        " (--foreign pass gives them to the program as captured)",
    );
    let c = &summary.counters;
    let mut verdicts = BTreeMap::new();
    for (v, n) in c.verdicts.iter() {
        *verdicts.entry(v.name().to_string()).or_default() += n;
    }
    let sent_counts = runner.sent().clone();
    let mut sent: BTreeMap<(String, ClsactHook), Delivery> = BTreeMap::new();
    for (map, delivered) in [
        (&sent_counts.delivered, true),
        (&sent_counts.consumed, false),
    ] {
        for ((d, h), n) in map {
            let e = sent.entry((d.clone(), *h)).or_insert_with(|| Delivery {
                dev: d.clone(),
                hook: h.name(),
                delivered: 0,
                consumed: 0,
            });
            if delivered {
                e.delivered += n;
            } else {
                e.consumed += n;
            }
        }
    }
    let mut config = runner.into_config();
    let mut filters = BTreeMap::new();
    let mut text = String::new();
    for (d, h) in shown(&config) {
        let j = show(&mut config, &d, h, true)?;
        filters.insert(
            format!("{d} {}", h.name()),
            serde_json::from_str(&j).map_err(|e| format!("tc -j: {e}"))?,
        );
        text += &format!("\n$ tc -s filter show dev {d} {}\n", h.name());
        text += &show(&mut config, &d, h, false)?;
    }
    let report = TcReport {
        config: file.display().to_string(),
        dev,
        hook: hook.name(),
        source: spec.describe(),
        packets: c.packets,
        seconds: summary.seconds,
        packets_per_second: c.packets as f64 / summary.seconds.max(1e-9),
        verdicts,
        sent: sent.into_values().collect(),
        too_deep: sent_counts.too_deep,
        filters,
        stopped: summary.stopped,
    };
    if a.json {
        print_json(&report)?;
    } else {
        crate::report::print_text(&text_report(&report, &text))?;
    }
    if let Some(e) = &summary.source_error {
        return Err(format!(
            "the capture ended early after {} packets: {e}",
            c.packets
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The text report (printed in one write, to standard error when a
/// capture goes to standard output).
fn text_report(r: &TcReport, filters: &str) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tc configuration {}: packets arrive at {} {}",
        r.config, r.dev, r.hook
    );
    let _ = writeln!(out, "source        {}", r.source);
    let _ = writeln!(
        out,
        "packets       {} in {:.3} s ({:.0} packets/s)",
        r.packets, r.seconds, r.packets_per_second
    );
    let v: Vec<String> = r.verdicts.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let _ = writeln!(out, "verdicts      {}", v.join("  "));
    for s in &r.sent {
        let _ = writeln!(
            out,
            "sent          {} {}: {} delivered, {} dropped or taken on",
            s.dev, s.hook, s.delivered, s.consumed
        );
    }
    if r.too_deep > 0 {
        let _ = writeln!(out, "too deep      {} (mirred nesting limit 4)", r.too_deep);
    }
    out + filters
}
