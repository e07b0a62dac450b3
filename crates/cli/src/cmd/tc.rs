//! `sluice tc`: `tc` command lines, verbatim, against a configuration
//! file (the commands that succeeded, one a line, replayed before each
//! run): `sluice tc [-s] [-j] [--config F] filter add dev v0 ingress ...`,
//! `-b FILE` (or tc's `-batch FILE`) for a batch. The subsystem is the
//! `tc` crate (docs/tc.md); the file is kept, read and replaced as
//! `tc::read_config` and `tc::write_config` say (its owner's state
//! directory by default, no links followed, written whole or not at all).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tc::{Config, ShowOptions};

/// tc command lines (qdisc clsact; filter u32, flower, matchall, bpf; actions gact, mirred, police, skbedit, pedit, vlan, csum) against a sluice configuration file (docs/tc.md)
#[derive(clap::Args)]
#[command(after_help = "\
Qdisc:       clsact (its ingress and egress hooks)
Classifiers: u32, flower, matchall, bpf (cls_bpf, da or not)
Actions:     gact (pass, drop, ok, continue, pipe, reclassify, jump N, goto chain N, random),
             mirred (egress|ingress redirect|mirror dev DEV), police, skbedit, pedit, vlan, csum
Devices:     a device a rule names (mirred dev, indev) must exist: a clsact qdisc in the
             configuration, or an interface of this network namespace
Counters:    -s shows the configuration's own counters, and a configuration file keeps lines,
             not packets: `sluice run --tc FILE` shows them after a run, `sluice diff --tc` beside
             the kernel's
Config file: by default /var/lib/sluice/tc.conf for root, $XDG_STATE_HOME/sluice/tc.conf
             (or ~/.local/state/sluice/tc.conf) for others; a file is read only if it is a
             regular file (not a symbolic link) owned by you or root that nobody else may
             write, and replaced whole (a new file renamed over it), never half-written
Compile:     sluice tc compile [--dev DEV] [--hook ingress|egress] -o OUT.o: the hook's flower, u32
             and matchall chains as one eBPF object (tc and XDP programs; sluice tc compile --help)
Examples:    sluice tc qdisc add dev v0 clsact
             sluice tc filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff classid 1:1
             sluice tc -batch rules.tc")]
pub struct Args {
    /// The configuration: the tc commands that succeeded, one a line (created when missing; default: /var/lib/sluice/tc.conf for root, else $XDG_STATE_HOME/sluice/tc.conf or ~/.local/state/sluice/tc.conf)
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Counters, as tc -s
    #[arg(short = 's', long = "stats")]
    stats: bool,
    /// JSON, as tc -j
    #[arg(short = 'j', long = "json")]
    json: bool,
    /// Run the commands of FILE (- for stdin), one a line, as tc -batch, which is taken too (the first failing one stops it and nothing is kept)
    #[arg(short = 'b', long = "batch", value_name = "FILE")]
    batch: Option<PathBuf>,
    /// Push the configuration's lines for device DEV (its qdisc, filters and the shared actions) into the kernel with the real tc, all or nothing (a kernel built without one of its classifiers or actions refuses it, naming the line)
    #[arg(long, value_name = "DEV", conflicts_with_all = ["batch", "command"])]
    kernel: Option<String>,
    /// With --kernel: the network namespace DEV is in
    #[arg(long, value_name = "NS", requires = "kernel")]
    netns: Option<String>,
    /// With --kernel: replace a clsact qdisc DEV has in the kernel already
    #[arg(long, requires = "kernel")]
    replace: bool,
    /// The command: qdisc|filter|actions VERB ..., as after `tc`
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    command: Vec<String>,
}

/// Whether a command changes the configuration (and so is kept).
fn changes(words: &[&str]) -> bool {
    matches!(words, [_, verb, ..] if !matches!(*verb, "show" | "list" | "ls" | "get"))
}

/// `--kernel DEV`: the configuration's lines for DEV into the kernel.
fn push(a: &Args, config: &Path, dev: &str) -> Result<ExitCode, String> {
    let text = tc::read_config(config).map_err(|e| e.to_string())?;
    // Checked by sluice first: a bad line is named before the kernel sees
    // any. The devices are the kernel's to find (in --netns): every one
    // the lines name is taken as there.
    let mut check = Config::default();
    for l in text.lines() {
        for pair in tc::words(l.split('#').next().unwrap_or("")).windows(2) {
            if pair[0] == "dev" {
                check.devices.index(&pair[1]);
            }
        }
    }
    check
        .run_batch(&text, ShowOptions::default())
        .map_err(|e| format!("{}: {e}", config.display()))?;
    let n = kernel::tc::push(
        &tc::lines_for(&text, dev),
        dev,
        a.netns.as_deref(),
        a.replace,
    )
    .map_err(|e| format!("{}: {e}", config.display()))?;
    let at = a
        .netns
        .as_ref()
        .map_or(String::new(), |ns| format!(" (namespace {ns})"));
    out!(
        "{}: {n} lines pushed to {dev}{at} with tc; see them with `tc{} -s filter show dev {dev} ingress`, compare with `sluice diff --tc {} --pcap FILE`",
        config.display(),
        a.netns
            .as_ref()
            .map_or(String::new(), |ns| format!(" -n {ns}")),
        config.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// tc's own spelling of the batch option, `-batch FILE` (any prefix of
/// it from `-b`, as tc takes options), which clap leaves in the command.
fn tc_batch_option(a: &mut Args) {
    if let [opt, file] = a.command.as_slice()
        && opt.len() >= 2
        && "-batch".starts_with(opt.as_str())
        && a.batch.is_none()
    {
        a.batch = Some(PathBuf::from(file));
        a.command.clear();
    }
}

/// A batch file's text (`-`: standard input, as tc reads it).
fn read_batch(f: &std::path::Path) -> Result<String, String> {
    tc::read_lines(f, Some(crate::signals::flag())).map_err(|e| e.to_string())
}

/// Whether the command shows (and so, with -s, prints counters).
fn shows(command: &[String]) -> bool {
    matches!(
        command.get(1).map(String::as_str),
        Some("show" | "list" | "ls" | "get")
    )
}

/// The configuration's path: `--config`, or the default (its directory
/// made if missing when it is to be written). A `./sluice-tc.conf`, the
/// old default, is named on stderr but not read.
fn config_path(a: &Args) -> Result<(PathBuf, bool), String> {
    if let Some(p) = &a.config {
        return Ok((p.clone(), false));
    }
    let path = tc::default_config_path().map_err(|e| e.to_string())?;
    if std::fs::symlink_metadata("sluice-tc.conf").is_ok() {
        say!(
            "sluice tc: note: ./sluice-tc.conf is no longer read by default (a file in the \
             current directory could be anyone's); the configuration is {}; give \
             --config sluice-tc.conf to use that file",
            path.display()
        );
    }
    Ok((path, true))
}

/// `saved` with `kept` added, a line each.
fn with_lines(saved: &str, kept: &[String]) -> String {
    let mut text = saved.to_string();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    for l in kept {
        text += l;
        text.push('\n');
    }
    text
}

pub fn run(mut a: Args) -> Result<ExitCode, String> {
    tc_batch_option(&mut a);
    let (path, default) = config_path(&a)?;
    if let Some(dev) = &a.kernel {
        return push(&a, &path, dev);
    }
    if a.command.first().map(String::as_str) == Some("compile") {
        return super::tc_compile::run(&path, &a.command[1..]);
    }
    let show = ShowOptions {
        stats: a.stats,
        json: a.json,
    };
    // A command that may change the file holds the directory's lock from
    // reading it to writing it back: two at once would lose a line.
    let words: Vec<&str> = a.command.iter().map(String::as_str).collect();
    let _turn = if a.batch.is_some() || changes(&words) {
        if default {
            tc::create_state_dir(&path).map_err(|e| e.to_string())?;
        }
        Some(tc::lock_config(&path).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let saved = tc::read_config(&path).map_err(|e| e.to_string())?;
    let mut config = Config::from_lines(&saved, &path, &[]).map_err(|e| e.to_string())?;
    let (text, kept) = match (&a.batch, a.command.is_empty()) {
        (Some(f), true) => {
            let text = read_batch(f)?;
            let out = config
                .run_batch(&text, show)
                .map_err(|e| format!("{}: {e}", f.display()))?;
            let kept: Vec<String> = text
                .lines()
                .filter(|l| {
                    let w = tc::words(l.split('#').next().unwrap_or(""));
                    let w: Vec<&str> = w.iter().map(String::as_str).collect();
                    changes(&w)
                })
                .map(str::to_string)
                .collect();
            (out, kept)
        }
        (None, false) => {
            let out = config.run(&words, show).map_err(|e| e.to_string())?;
            let kept = if changes(&words) {
                vec![a.command.join(" ")]
            } else {
                Vec::new()
            };
            (out, kept)
        }
        (Some(_), false) => return Err("give a command or --batch FILE, not both".into()),
        (None, true) => {
            return Err("give a command (qdisc|filter|actions ...) or --batch FILE".into());
        }
    };
    if !kept.is_empty() {
        tc::write_config(&path, &with_lines(&saved, &kept)).map_err(|e| e.to_string())?;
    }
    out_part!("{text}");
    if a.stats && (a.batch.is_some() || shows(&a.command)) {
        // tc's counters are the kernel's; these are a file's, which no
        // packet has passed.
        say!(
            "sluice tc: these counters are the configuration's, which keeps lines, not packets \
             (so they are zero): `sluice run --tc {0} --pcap F` shows every hook's counters after \
             a run, `sluice diff --tc {0} --pcap F` beside the kernel's",
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
