//! `sluice shards`: a capture list planned as shards (whole small files,
//! byte ranges of large ones) and, with `--check`, every range read and
//! its start proven, the ranges whose guess was wrong read again (see
//! docs/shards.md).

use std::process::ExitCode;

use capture::{Checked, Shard};
use serde::Serialize;

use crate::report::print_json;

/// Plan captures as shards: files and glob patterns, in the order given;
/// a file larger than the split size cut into byte ranges of about that
/// size, each read on its own (a run's `Origin::Range`, a cluster's task).
#[derive(clap::Args)]
pub struct Args {
    /// Captures: files and glob patterns (quoted, so that sluice expands them in a stable order)
    #[arg(required = true, value_name = "CAPTURE")]
    inputs: Vec<String>,
    /// Cut files larger than this into byte ranges of about this size (bytes, or with K, M or G)
    #[arg(long, value_name = "SIZE", default_value = "64M", value_parser = split)]
    split: u64,
    /// Read every range, prove where each began (where the range before ended), and read again those whose guess was wrong
    #[arg(long)]
    check: bool,
    /// Print JSON: the shards and, with --check, their boundaries and re-reads
    #[arg(long)]
    json: bool,
}

fn split(text: &str) -> Result<u64, String> {
    capture::parse_split(text).map_err(|e| e.to_string())
}

#[derive(Serialize)]
struct Report<'a> {
    split: u64,
    shards: &'a [Shard],
    #[serde(skip_serializing_if = "Option::is_none")]
    check: Option<CheckReport<'a>>,
}

#[derive(Serialize)]
struct CheckReport<'a> {
    boundaries: &'a [capture::Boundary],
    redone: &'a [capture::Redo],
    rounds: usize,
    /// Frames of the files' sequential reads (ranges past an error left out).
    frames: u64,
    /// The error each file's read ends on, as a sequential read gives it.
    errors: Vec<String>,
}

pub(crate) fn run(a: Args) -> Result<ExitCode, String> {
    let shards = capture::plan(&a.inputs, a.split).map_err(|e| e.to_string())?;
    let checked = match a.check {
        true => Some(capture::read_checked(&shards, |_, _| ()).map_err(|e| e.to_string())?),
        false => None,
    };
    let check = checked.as_ref().map(|c| CheckReport {
        boundaries: &c.boundaries,
        redone: &c.redone,
        rounds: c.rounds,
        frames: frames(c),
        errors: c.errors().iter().map(ToString::to_string).collect(),
    });
    let failed = check.as_ref().is_some_and(|c| !c.errors.is_empty());
    let report = Report {
        split: a.split,
        shards: &shards,
        check,
    };
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Frames of the ranges within their files' sequential reads.
fn frames(c: &Checked<()>) -> u64 {
    (0..c.boundaries.len())
        .filter(|&i| !c.past_error(i))
        .map(|i| c.boundaries[i].frames)
        .sum()
}

fn print_text(r: &Report<'_>) {
    let files = r.shards.iter().filter(|s| s.start == 0).count();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    out!(
        "{} of {} (split {} bytes)",
        plural(r.shards.len(), "shard"),
        plural(files, "file"),
        r.split
    );
    let Some(check) = &r.check else {
        for s in r.shards {
            out!("  {}", s.describe());
        }
        return;
    };
    for (i, b) in check.boundaries.iter().enumerate() {
        let redone = check.redone.iter().any(|d| d.index == i);
        let next = match &b.next {
            Some(p) => format!("next record at {}", p.offset),
            None => "ended on an error".to_string(),
        };
        let how = if b.shard.start == 0 {
            "from the header"
        } else if redone {
            "guess wrong, read again from the proven offset"
        } else {
            "guess proven"
        };
        out!(
            "  {}: {} frames, begins at {} ({how}), {next}",
            b.shard.describe(),
            b.frames,
            b.first.offset,
        );
    }
    out!(
        "{} frames; {} ranges read again, {} rounds of checking",
        check.frames,
        check.redone.len(),
        check.rounds
    );
    for e in &check.errors {
        say!("sluice: {e}");
    }
}
