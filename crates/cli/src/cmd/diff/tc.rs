//! `sluice diff --tc FILE`: a tc configuration in the kernel (the real
//! `tc`) and in sluice over the same frames, live on veth pairs in a
//! network namespace of the run's own (`difftest::tc`); prints every
//! counter side by side and exits 1 when any differs.

use std::process::ExitCode;

use difftest::tc::TcDiff;
use engine::TcSpec;
use serde::Serialize;

use super::Args;
use crate::report::print_json;

#[derive(Serialize)]
struct Report<'a> {
    config: String,
    dev: String,
    hook: &'static str,
    agrees: bool,
    #[serde(flatten)]
    diff: &'a TcDiff,
}

pub fn run(a: &Args, file: &std::path::Path) -> Result<ExitCode, String> {
    let spec = TcSpec {
        config: file.to_path_buf(),
        dev: a.tc_dev.clone(),
        hook: a.tc_hook.into(),
        lines: None,
    };
    let lines = tc::read_lines(file, Some(crate::signals::flag())).map_err(|e| e.to_string())?;
    let config = tc::Config::from_lines(&lines, file, &[]).map_err(|e| e.to_string())?;
    let dev = spec.arrival(&config).map_err(|e| e.to_string())?;
    let hook = spec.hook;
    let mut source = a.source().open(None).map_err(|e| e.to_string())?;
    let mut frames = Vec::new();
    pipeline::for_each_packet(source.as_mut(), a.limit, |_, data| {
        frames.push(data.to_vec())
    })
    .map_err(|e| e.to_string())?;
    let diff = difftest::tc::tc_diff(&lines, &dev, hook, &frames)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let report = Report {
        config: file.display().to_string(),
        dev,
        hook: hook.name(),
        agrees: diff.agrees(),
        diff: &diff,
    };
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report, a.show);
    }
    Ok(if report.agrees {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_text(r: &Report<'_>, show: usize) {
    let d = r.diff;
    out!(
        "{} at {} {}: {} frames through the kernel's tc and sluice's ({} not sendable: under 14 bytes or over the link's size); {}",
        r.config,
        r.dev,
        r.hook,
        d.frames,
        d.unsendable,
        if r.agrees {
            "every counter agrees"
        } else {
            "they differ"
        }
    );
    let pair = |c: difftest::tc::Count| format!("{} pkt {} B", c.packets, c.bytes);
    for h in &d.hooks {
        out!("{} {}:", h.dev, h.hook);
        out!("  {:<22} {:<22} counter of", "kernel", "sluice");
        for c in &h.counters {
            let mark = if c.kernel == c.sluice { ' ' } else { '!' };
            out!(
                "{mark} {:<22} {:<22} {}",
                pair(c.kernel),
                pair(c.sluice),
                c.what
            );
        }
        if h.kernel_show != h.sluice_show {
            out!("  the filters show differently (first lines that differ):");
            let k: Vec<&str> = h.kernel_show.lines().collect();
            let s: Vec<&str> = h.sluice_show.lines().collect();
            let differing = (0..k.len().max(s.len()))
                .filter(|&i| k.get(i) != s.get(i))
                .take(show);
            for i in differing {
                out!("    kernel: {}", k.get(i).unwrap_or(&"(nothing)"));
                out!("    sluice: {}", s.get(i).unwrap_or(&"(nothing)"));
            }
        }
    }
    out!(
        "{}clsact at {}: kernel {} packets {} dropped, sluice {} packets {} dropped",
        if d.kernel_qdisc == d.sluice_qdisc {
            ""
        } else {
            "! "
        },
        r.dev,
        d.kernel_qdisc.0,
        d.kernel_qdisc.1,
        d.sluice_qdisc.0,
        d.sluice_qdisc.1
    );
}
