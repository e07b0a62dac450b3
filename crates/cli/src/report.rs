//! Shared output helpers: JSON printing and cost summaries.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use vm::{RegionKind, Stats};

/// Prints `value` as one JSON object on stdout.
pub fn print_json<T: Serialize>(value: &T) -> Result<(), String> {
    let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    print_text(&(text + "\n"))
}

/// Set when a capture goes to standard output (`-w -`): reports then go
/// to standard error, as tcpdump's counts do.
static REPORT_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Sends reports to standard error if one of `outputs` is `-` (standard
/// output); more than one `-` is an error (their packets would mix).
pub fn outputs_on_stdout<'a>(
    outputs: impl IntoIterator<Item = Option<&'a Path>>,
) -> Result<(), String> {
    let n = outputs
        .into_iter()
        .flatten()
        .filter(|p| capture::is_stdout(p))
        .count();
    if n > 1 {
        return Err("only one output can be standard output (-)".into());
    }
    if n == 1 {
        REPORT_TO_STDERR.store(true, Ordering::Relaxed);
    }
    Ok(())
}

/// Sends reports to standard error: standard output carries something
/// else (`sluice filter`'s packet lines).
pub fn reports_to_stderr() {
    REPORT_TO_STDERR.store(true, Ordering::Relaxed);
}

/// Writes `text` to stdout (or stderr, see [`outputs_on_stdout`]); a
/// failure (a full disk, a closed pipe) is an error saying so, not a
/// panic as `println!`'s.
pub fn print_text(text: &str) -> Result<(), String> {
    use std::io::Write;
    let (mut out, what): (Box<dyn Write>, _) = if REPORT_TO_STDERR.load(Ordering::Relaxed) {
        (Box::new(std::io::stderr().lock()), "standard error")
    } else {
        (Box::new(std::io::stdout().lock()), "standard output")
    };
    out.write_all(crate::terminal::escape(text).as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("writing {what}: {}", io_cause(&e)))
}

/// The system's words for an I/O error, without Rust's `(os error N)`.
pub fn io_cause(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}

/// Loads and stores of one region kind.
#[derive(Serialize)]
pub struct Accesses {
    pub loads: u64,
    pub stores: u64,
}

/// What a run cost, for JSON.
#[derive(Serialize)]
pub struct CostReport {
    pub insns: u64,
    pub helper_calls: u64,
    /// Accesses per region kind: `stack`, `context`, `packet`, `map`.
    pub memory: BTreeMap<&'static str, Accesses>,
}

impl CostReport {
    pub fn new(s: &Stats) -> CostReport {
        let memory = RegionKind::ALL
            .iter()
            .map(|&k| {
                let a = Accesses {
                    loads: s.loads_of(k),
                    stores: s.stores_of(k),
                };
                (k.name(), a)
            })
            .collect();
        CostReport {
            insns: s.insns,
            helper_calls: s.helper_calls,
            memory,
        }
    }
}

/// `stack 2/1, context 3/0` (loads/stores) for the regions that were touched.
pub fn accesses_line(s: &Stats) -> String {
    let parts: Vec<String> = RegionKind::ALL
        .iter()
        .filter(|&&k| s.loads_of(k) + s.stores_of(k) > 0)
        .map(|&k| format!("{k} {} loads, {} stores", s.loads_of(k), s.stores_of(k)))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join("; ")
    }
}

/// Tells on standard error the frames a capture skipped for want of an
/// Ethernet form, as every front end does, `hint` after it (what the
/// command can do with them, or nothing).
pub fn warn_skipped(skipped: &engine::Skipped, hint: &str) {
    if let Some(w) = skipped.warning() {
        say!("sluice: warning: {w}{hint}");
    }
}

/// The one rule for an input that ended on an error (a capture cut
/// mid-record or otherwise damaged, an interface that went away), for
/// every command that reads packets, as `sluice run` and tcpdump have it:
/// what was read has been processed and output, one line on standard
/// error says after how many packets and why reading stopped, and the exit
/// status is 1. `None`: the input ended cleanly (exit status 0).
pub fn input_ended(error: Option<&str>, packets: u64, live: bool) -> std::process::ExitCode {
    let Some(e) = error else {
        return std::process::ExitCode::SUCCESS;
    };
    let what = if live {
        "reading the interface stopped"
    } else {
        "the capture ended early"
    };
    say!("sluice: {what} after {packets} packets: {e}");
    std::process::ExitCode::FAILURE
}
