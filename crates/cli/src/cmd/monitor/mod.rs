//! `sluice monitor`: the xPF paper's monitoring applications, each in its
//! own file: `flows` (accounting, IPFIX export), `sample` (trajectory
//! sampling), `rtt` (passive round-trip times).

use std::process::ExitCode;

mod flows;
mod rtt;
mod sample;

/// In-filter monitoring: flow accounting with IPFIX export, trajectory sampling, passive RTT (docs/monitor.md)
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    /// Account 5-tuple flows and export them as IPFIX
    Flows(flows::FlowArgs),
    /// Trajectory sampling: the same packets at every point, by hash (h mod A < B)
    Sample(sample::SampleArgs),
    /// Passive round-trip times per TCP flow: handshake (SYN to ACK) and TCP timestamps (pping's)
    Rtt(rtt::RttArgs),
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    match a.command {
        Command::Flows(a) => flows::run(a),
        Command::Sample(a) => sample::run(a),
        Command::Rtt(a) => rtt::run(a),
    }
}
