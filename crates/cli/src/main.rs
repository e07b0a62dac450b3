//! The `sluice` command: a thin layer over the crates.

mod cmd;
mod input;
mod mapfmt;
mod pin;
mod report;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// sluice: write an eBPF packet program once; verify, replay, profile and run it.
#[derive(Parser)]
#[command(name = "sluice", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Assemble a text program into raw bytecode
    Asm(cmd::asm::Args),
    /// Disassemble raw bytecode or an ELF object into assembly text
    Disasm(cmd::disasm::Args),
    /// Replay a capture or generated traffic through a program in the VM
    Run(Box<cmd::run::Args>),
    /// Compare the VM with the kernel, packet by packet (BPF_PROG_TEST_RUN; needs root)
    Diff(cmd::diff::Args),
    /// Run a program once in the interpreter and report r0 and its cost
    Exec(cmd::exec::Args),
    /// Run the DDoS filter example over generated traffic (no root needed)
    Demo(cmd::demo::Args),
    /// Run the BPF ISA conformance suite through the interpreter
    Conformance(cmd::conformance::SuiteArgs),
    /// Speak the bpf_conformance plugin protocol (program as hex on stdin)
    #[command(name = "conformance-plugin")]
    ConformancePlugin(cmd::conformance::PluginArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Asm(a) => cmd::asm::run(a),
        Command::Disasm(a) => cmd::disasm::run(a),
        Command::Run(a) => cmd::run::run(*a),
        Command::Diff(a) => cmd::diff::run(a),
        Command::Exec(a) => cmd::exec::run(a),
        Command::Demo(a) => cmd::demo::run(a),
        Command::Conformance(a) => cmd::conformance::run_suite(a),
        Command::ConformancePlugin(a) => cmd::conformance::run_plugin(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("sluice: {e}");
            ExitCode::FAILURE
        }
    }
}
