//! `sluice monitor`: the xPF paper's monitoring applications, each in its
//! own file: `flows` (accounting, IPFIX export).

use std::process::ExitCode;

mod flows;

/// In-filter monitoring: flow accounting with IPFIX export (docs/monitor.md)
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Account 5-tuple flows and export them as IPFIX
    Flows(flows::FlowArgs),
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    match a.command {
        Command::Flows(a) => flows::run(a),
    }
}
