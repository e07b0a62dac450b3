use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::report::print_json;

/// Run every `.data` test of the BPF ISA conformance suite.
#[derive(clap::Args)]
pub struct SuiteArgs {
    /// Directory of `.data` files
    #[arg(default_value = "../shared/conformance/bpf_conformance/tests")]
    dir: PathBuf,
    /// Also count memory accesses (the results must not change)
    #[arg(long)]
    counting: bool,
    /// Run in the JIT: `checked`, or `fast` (each test's successful checked
    /// run repeated without checks; both must agree)
    #[arg(long, value_name = "MODE")]
    jit: Option<JitMode>,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Copy, Clone, clap::ValueEnum)]
enum JitMode {
    Checked,
    Fast,
}

pub fn run_suite(a: SuiteArgs) -> Result<ExitCode, String> {
    let mut options = Vec::new();
    if a.counting {
        options.push("--counting");
    }
    match a.jit {
        Some(JitMode::Checked) => options.push("--jit"),
        Some(JitMode::Fast) => options.push("--jit-fast"),
        None => {}
    }
    let report = conformance::run_suite(&a.dir, &options)
        .map_err(|e| format!("{}: {e}", a.dir.display()))?;
    if a.json {
        print_json(&report)?;
    } else {
        for t in &report.tests {
            match &t.reason {
                None => out!("PASS {}", t.name),
                Some(why) => out!("FAIL {}: {why}", t.name),
            }
        }
        out!("{} passed, {} failed", report.passed, report.failed);
    }
    Ok(if report.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The plugin of github.com/Alan-Jowett/bpf_conformance: reads the program
/// as hex on stdin, takes memory as hex in the first argument and options
/// (`--elf`, `--counting`, `--jit`, `--jit-fast`) after it, prints r0 in hex.
#[derive(clap::Args)]
pub struct PluginArgs {
    /// [MEMORY-HEX] [OPTIONS...]
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

pub fn run_plugin(a: PluginArgs) -> Result<ExitCode, String> {
    let mut stdin = Vec::new();
    std::io::stdin()
        .read_to_end(&mut stdin)
        .map_err(|e| format!("stdin: {e}"))?;
    let result = conformance::PluginRequest::from_args(&a.args, &stdin)
        .and_then(|req| conformance::run_plugin(&req));
    match result {
        Ok(r0) => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{r0:x}").map_err(|e| e.to_string())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            say!("{e}");
            Ok(ExitCode::FAILURE)
        }
    }
}
