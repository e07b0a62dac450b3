//! `sluice monitor`: the xPF paper's monitoring applications, each in its
//! own file: `flows` (accounting, IPFIX export), `sample` (trajectory
//! sampling), `rtt` (passive round-trip times), over the inputs they
//! share ([`Input`]: a capture, generated traffic, or live on an interface).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use engine::{Origin, Source, SourceSpec};

mod flows;
mod rtt;
mod sample;

/// In-filter monitoring: flow accounting (IPFIX export), trajectory sampling, passive RTT; by sluice's table, an eBPF or an xPF program, over captures or live (docs/monitor.md)
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
    /// Capture to read (pcap or pcapng): a file, a FIFO, or - for standard input; -r as tcpdump's
    #[arg(short = 'r', long)]
    pcap: Option<PathBuf>,
    /// Generated traffic, e.g. udp,flows=100,count=10000 or tcp-conv,flows=10,rtt=5..50 (repeat to mix streams)
    #[arg(long)]
    r#gen: Vec<String>,
    /// Live on this interface until Ctrl-C, SIGTERM or --duration (needs root): where the application runs is --datapath's choice
    #[arg(long, value_name = "IF")]
    dev: Option<String>,
    /// With --dev: kernel (the default: the application's eBPF program attached by XDP, maps and ring buffer read by user space), afxdp (frames taken into user space by sluice's AF_XDP datapath, the application run there by --engine; the host's stack no longer sees them: for a mirror or tap port), or afpacket (a copy of each arriving frame through an AF_PACKET socket, the application in user space)
    #[arg(long, value_enum, value_name = "kernel|afxdp|afpacket")]
    datapath: Option<DatapathArg>,
    /// With --dev: stop after this many seconds
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// With --dev: XDP in the driver (native) or generic (skb)
    #[arg(long, value_enum, default_value_t = ModeArg::Native)]
    mode: ModeArg,
    /// Stop after this many packets
    #[arg(short = 'c', long = "count", value_name = "N")]
    pub count: Option<u64>,
}

#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq)]
enum DatapathArg {
    Kernel,
    Afxdp,
    Afpacket,
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
    /// Whether the application runs in the kernel (`--dev` with
    /// `--datapath kernel`, the default).
    pub fn in_kernel(&self) -> bool {
        self.dev.is_some() && self.datapath.is_none_or(|d| d == DatapathArg::Kernel)
    }

    /// The live run in the kernel, when `--dev` was given with
    /// `--datapath kernel`.
    pub fn live(&self) -> Result<Option<Live<'_>>, String> {
        let Some(dev) = &self.dev else {
            return Ok(None);
        };
        if self.datapath.is_some_and(|d| d != DatapathArg::Kernel) {
            return Ok(None);
        }
        Ok(Some(Live {
            dev,
            mode: self.xdp_mode(),
            stop: crate::signals::stop_on_signals(),
            duration: self.duration()?,
        }))
    }

    fn duration(&self) -> Result<Option<Duration>, String> {
        Ok(match self.duration {
            Some(s) => Some(Duration::from_nanos(seconds(s, "duration")?)),
            None => None,
        })
    }

    fn xdp_mode(&self) -> kernel::attach::XdpMode {
        match self.mode {
            ModeArg::Native => kernel::attach::XdpMode::Native,
            ModeArg::Skb => kernel::attach::XdpMode::Skb,
        }
    }

    /// The source the application reads in user space (a capture,
    /// generated traffic, or a live interface through AF_XDP or
    /// AF_PACKET) and how many packets it will give, when known (for the
    /// progress bar).
    pub fn source(&self) -> Result<(Box<dyn Source>, Option<u64>), String> {
        if self.dev.is_none() && (self.duration.is_some() || self.datapath.is_some()) {
            return Err("--duration and --datapath go with --dev".into());
        }
        let source = match &self.dev {
            Some(dev) if self.pcap.is_none() => self.live_source(dev)?,
            // Ctrl-C or SIGTERM: the capture (or the generated traffic)
            // ends after what was read, the application finishes its
            // tables and exports, and reports.
            _ => self
                .spec()
                .open(Some(crate::signals::stop_on_signals()))
                .map_err(|e| e.to_string())?,
        };
        let total = source
            .expected()
            .map(|n| self.count.map_or(n, |c| c.min(n)));
        Ok((source, total))
    }

    /// The packets of `--pcap` or `--gen`.
    fn spec(&self) -> SourceSpec {
        match &self.pcap {
            Some(path) => SourceSpec::capture(path),
            None => SourceSpec::generated(self.r#gen.clone()),
        }
    }
}

impl Input {
    /// Whether a capture or generated traffic was cut short by SIGINT or
    /// SIGTERM (a live source ends that way by design: not counted as
    /// stopped).
    pub fn stopped(&self) -> bool {
        self.dev.is_none() && crate::signals::stop_requested()
    }

    /// Tells on stderr what a live source saw (frames, kernel drops),
    /// and the frames a capture skipped for want of an Ethernet form
    /// (with the warning `sluice run` gives).
    pub fn tell(&self, source: &dyn Source) {
        crate::report::warn_skipped(&engine::Skipped::of(source), "");
        if self.stopped() {
            say!(
                "sluice: stopped by a signal: every packet read was accounted, outputs are complete"
            );
        }
        if self.dev.is_some()
            && let Some(note) = source.note()
        {
            say!("sluice: {note}");
        }
    }

    /// `--dev` read in user space: the stop flag (Ctrl-C, SIGTERM) ends
    /// the source, and so does `--duration` (a timer sets the flag).
    fn live_source(&self, dev: &str) -> Result<Box<dyn Source>, String> {
        let stop = crate::signals::stop_on_signals();
        let name = dev.to_string();
        let (origin, datapath) = match self.datapath.unwrap_or(DatapathArg::Kernel) {
            DatapathArg::Afxdp => (
                Origin::AfXdp {
                    name,
                    mode: self.xdp_mode(),
                },
                "afxdp",
            ),
            DatapathArg::Afpacket => (Origin::Interface { name }, "afpacket"),
            DatapathArg::Kernel => {
                return Err("--datapath kernel runs the eBPF program in the kernel".into());
            }
        };
        let source = SourceSpec::new(origin)
            .open(Some(stop))
            .map_err(|e| format!("--dev {dev} --datapath {datapath}: {e}"))?;
        if let Some(d) = self.duration()? {
            std::thread::spawn(move || {
                std::thread::sleep(d);
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
        }
        Ok(source)
    }
}

/// Nanoseconds of a positive number of seconds given as `--what`.
pub(super) fn seconds(s: f64, what: &str) -> Result<u64, String> {
    if !(s > 0.0 && s.is_finite()) {
        return Err(format!("--{what} {s}: a positive number of seconds"));
    }
    Ok((s * 1e9) as u64)
}

/// Tells on stderr that the input was not in time order, and what that
/// does to `what` the command measures.
pub(crate) fn warn_out_of_order(order: &monitor::TimeOrder, consequence: &str) {
    if let Some(first) = order.first_backwards {
        say!(
            "sluice: warning: the input is not in time order: {} packets come earlier than a packet before them (the first: packet {first}); {consequence} (sort the capture by time first: `reordercap IN OUT`)",
            order.backwards
        );
    }
}

pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
