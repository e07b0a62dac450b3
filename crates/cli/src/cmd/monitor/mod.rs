//! `sluice monitor`: the xPF paper's monitoring applications, each in its
//! own file: `flows` (accounting, IPFIX export), `rtt` (passive round-trip
//! times).

use std::process::ExitCode;

mod flows;
mod rtt;

/// In-filter monitoring: flow accounting with IPFIX export, passive RTT (docs/monitor.md)
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Account 5-tuple flows and export them as IPFIX
    Flows(flows::FlowArgs),
    /// Passive round-trip times per TCP flow: handshake (SYN to ACK) and TCP timestamps (pping's)
    Rtt(rtt::RttArgs),
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    match a.command {
        Command::Flows(a) => flows::run(a),
        Command::Rtt(a) => rtt::run(a),
    }
}
