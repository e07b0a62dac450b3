//! `sluice run --tc FILE`: packets through a tc configuration (filters and
//! actions, the `tc` crate) instead of a program: they arrive at one
//! device's clsact hook; the engine's [`engine::TcRunSpec`] runs them, and
//! this prints its report: the verdicts, where mirred sent packets, and
//! every hook's filters and actions with their counters as `tc -s filter
//! show` prints them.

use std::process::ExitCode;

use engine::{TcReport, TcRunSpec, TcSpec};

use super::Args;
use crate::report::print_json;

/// The run the arguments describe.
fn spec(a: &Args, file: &std::path::Path) -> TcRunSpec {
    TcRunSpec {
        tc: TcSpec {
            config: file.to_path_buf(),
            dev: a.tc_dev.clone(),
            hook: a.tc_hook.into(),
            lines: None,
        },
        source: a.source(),
        sinks: a.sinks(),
        limit: a.limit,
    }
}

pub fn run(a: &Args, file: &std::path::Path) -> Result<ExitCode, String> {
    if a.object.is_some() {
        return Err("--tc runs a tc configuration instead of a program: give no object".into());
    }
    let spec = spec(a, file);
    crate::report::outputs_on_stdout(super::files(&spec.sinks))?;
    let stop = crate::signals::stop_on_signals();
    let replay = spec.start(Some(stop)).map_err(|e| e.to_string())?;
    let total = replay.expected();
    let report = crate::progress::with_progress(total, a.json, |count| replay.finish(Some(count)))
        .map_err(|e| e.to_string())?
        .report;
    crate::report::warn_skipped(
        &report.skipped,
        " (--foreign pass gives them to the program as captured)",
    );
    if a.json {
        print_json(&report)?;
    } else {
        crate::report::print_text(&text_report(&report))?;
    }
    if let Some(e) = &report.source_error {
        return Err(format!(
            "the capture ended early after {} packets: {e}",
            report.packets
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The text report (printed in one write, to standard error when a
/// capture goes to standard output).
fn text_report(r: &TcReport) -> String {
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
    for f in &r.shown {
        let _ = write!(
            out,
            "\n$ tc -s filter show dev {} {}\n{}",
            f.dev, f.hook, f.text
        );
    }
    out
}
