//! `sluice tc`: `tc` command lines, verbatim, against a configuration
//! file (the commands that succeeded, one a line, replayed before each
//! run): `sluice tc [-s] [-j] [--config F] filter add dev v0 ingress ...`,
//! `-b FILE` for a batch. The subsystem is the `tc` crate (docs/tc.md).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use tc::{Config, ShowOptions};

/// tc command lines (qdisc clsact, filter u32, actions gact/mirred) against a sluice configuration file (docs/tc.md)
#[derive(clap::Args)]
pub struct Args {
    /// The configuration: the tc commands that succeeded, one a line (created when missing)
    #[arg(long, value_name = "FILE", default_value = "sluice-tc.conf")]
    config: PathBuf,
    /// Counters, as tc -s
    #[arg(short = 's', long = "stats")]
    stats: bool,
    /// JSON, as tc -j
    #[arg(short = 'j', long = "json")]
    json: bool,
    /// Run the commands of FILE, one a line, as tc -batch (the first failing one stops it and nothing is kept)
    #[arg(short = 'b', long = "batch", value_name = "FILE")]
    batch: Option<PathBuf>,
    /// Push the configuration's lines for device DEV (its qdisc, filters and the shared actions) into the kernel with the real tc, all or nothing (the kernel has u32, bpf and mirred)
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

/// The configuration a file of tc lines builds (`sluice tc`'s file, or
/// any `tc -batch` file).
pub fn load(path: &std::path::Path) -> Result<Config, String> {
    load_with_devices(path, &[])
}

/// The configuration of a file, with some devices' real indexes known
/// before its lines are read (ports of a datapath).
pub fn load_with_devices(
    path: &std::path::Path,
    devices: &[(String, u32)],
) -> Result<Config, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut config = Config::default();
    for (name, index) in devices {
        config.devices.set(name, *index);
    }
    config
        .run_batch(&text, ShowOptions::default())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(config)
}

/// `--kernel DEV`: the configuration's lines for DEV into the kernel.
fn push(a: &Args, dev: &str) -> Result<ExitCode, String> {
    let text =
        std::fs::read_to_string(&a.config).map_err(|e| format!("{}: {e}", a.config.display()))?;
    // Checked by sluice first: a bad line is named before the kernel sees any.
    load(&a.config)?;
    let n = difftest::tc::push(&text, dev, a.netns.as_deref(), a.replace)
        .map_err(|e| format!("{}: {e}", a.config.display()))?;
    let at = a
        .netns
        .as_ref()
        .map_or(String::new(), |ns| format!(" (namespace {ns})"));
    println!(
        "{}: {n} lines pushed to {dev}{at} with tc; see them with `tc{} -s filter show dev {dev} ingress`, compare with `sluice diff --tc {} --pcap FILE`",
        a.config.display(),
        a.netns
            .as_ref()
            .map_or(String::new(), |ns| format!(" -n {ns}")),
        a.config.display()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if let Some(dev) = &a.kernel {
        return push(&a, dev);
    }
    if a.command.first().map(String::as_str) == Some("compile") {
        return super::tc_compile::run(&a.config, &a.command[1..]);
    }
    let show = ShowOptions {
        stats: a.stats,
        json: a.json,
    };
    let saved = match std::fs::read_to_string(&a.config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", a.config.display())),
    };
    let mut config = if saved.is_empty() {
        Config::default()
    } else {
        load(&a.config)?
    };
    let (text, kept) = match (&a.batch, a.command.is_empty()) {
        (Some(f), true) => {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
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
            let w: Vec<&str> = a.command.iter().map(String::as_str).collect();
            let out = config.run(&w, show)?;
            let kept = if changes(&w) {
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
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&a.config)
            .map_err(|e| format!("{}: {e}", a.config.display()))?;
        let mut lines = String::new();
        if !saved.is_empty() && !saved.ends_with('\n') {
            lines.push('\n');
        }
        for l in kept {
            lines += &l;
            lines.push('\n');
        }
        f.write_all(lines.as_bytes())
            .map_err(|e| format!("{}: {e}", a.config.display()))?;
    }
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
