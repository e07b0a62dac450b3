//! `sluice monitor`: the xPF paper's monitoring applications, each in its
//! own file: `flows` (accounting, IPFIX export), `sample` (trajectory
//! sampling), `rtt` (passive round-trip times), over the inputs they
//! share ([`Input`]: a capture, generated traffic, or live on an interface).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use pipeline::{Capture, Generated, Source};

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

/// Where the packets come from, the same for every application.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["pcap", "gen", "dev"])))]
pub struct Input {
    /// Capture to read (pcap or pcapng)
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Generated traffic, e.g. udp,flows=100,count=10000 or tcp-conv,flows=10,rtt=5..50 (repeat to mix streams)
    #[arg(long)]
    r#gen: Vec<String>,
    /// Live: the application's eBPF program in the kernel, attached (XDP) to this interface, until Ctrl-C, SIGTERM or --duration (needs root)
    #[arg(long, value_name = "IF")]
    dev: Option<String>,
    /// With --dev: stop after this many seconds
    #[arg(long, value_name = "S", requires = "dev")]
    duration: Option<f64>,
    /// With --dev: XDP in the driver (native) or generic (skb)
    #[arg(long, value_enum, default_value_t = ModeArg::Native)]
    mode: ModeArg,
    /// Stop after this many packets
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
}

#[derive(clap::ValueEnum, Clone, Copy)]
enum ModeArg {
    Native,
    Skb,
}

/// A live run's interface, mode, stop flag (Ctrl-C, SIGTERM) and duration.
pub struct Live<'a> {
    pub dev: &'a str,
    pub mode: kernel::attach::XdpMode,
    pub stop: &'static AtomicBool,
    pub duration: Option<Duration>,
}

impl Input {
    /// Whether the run is live (`--dev`).
    pub fn is_live(&self) -> bool {
        self.dev.is_some()
    }

    /// The live run, when `--dev` was given.
    pub fn live(&self) -> Result<Option<Live<'_>>, String> {
        let Some(dev) = &self.dev else {
            return Ok(None);
        };
        let duration = match self.duration {
            Some(s) => Some(Duration::from_nanos(seconds(s, "duration")?)),
            None => None,
        };
        Ok(Some(Live {
            dev,
            mode: match self.mode {
                ModeArg::Native => kernel::attach::XdpMode::Native,
                ModeArg::Skb => kernel::attach::XdpMode::Skb,
            },
            stop: crate::cmd::xsk::stop_on_signals(),
            duration,
        }))
    }

    /// The replayed source (a capture or generated traffic) and how many
    /// packets it will give, when known (for the progress bar).
    pub fn source(&self) -> Result<(Box<dyn Source>, Option<u64>), String> {
        let source: Box<dyn Source> = match &self.pcap {
            Some(p) => Box::new(Capture::open(p).map_err(|e| e.to_string())?),
            None => Box::new(Generated::parse(&self.r#gen).map_err(|e| e.0)?),
        };
        let total = source
            .expected()
            .map(|n| self.count.map_or(n, |c| c.min(n)));
        Ok((source, total))
    }
}

/// Nanoseconds of a positive number of seconds given as `--what`.
pub(super) fn seconds(s: f64, what: &str) -> Result<u64, String> {
    if !(s > 0.0 && s.is_finite()) {
        return Err(format!("--{what} {s}: a positive number of seconds"));
    }
    Ok((s * 1e9) as u64)
}
