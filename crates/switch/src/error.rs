//! The switch's errors: [`OfError`], a request the switch refuses (the
//! OpenFlow error it answers and a sentence for people, the same type a
//! decode fails with), and [`SwitchError`], a run, a port, the XDP fast
//! path or the control socket that cannot go on. Their messages are the
//! ones `sluice switch` prints.

use std::path::PathBuf;

pub use openflow::DecodeError as OfError;

/// Why a switch cannot start or go on.
#[derive(Debug, thiserror::Error)]
pub enum SwitchError {
    /// A capture port that is not `pcap:IN[:OUT]`.
    #[error("{0}: a capture port is pcap:IN[:OUT]")]
    NotACapturePort(String),
    /// `pcap::` (neither side).
    #[error("{0}: a capture port needs an input or an output file")]
    NoCaptureFile(String),
    /// A port's input capture that cannot be opened.
    #[error("{}: {source}", path.display())]
    OpenCapture {
        path: PathBuf,
        source: pipeline::SourceError,
    },
    /// A port's output capture that cannot be created.
    #[error("{}: {source}", path.display())]
    CreateCapture {
        path: PathBuf,
        source: pipeline::SinkError,
    },
    /// A port's input capture that cannot be read on.
    #[error("{0}")]
    ReadCapture(pipeline::SourceError),
    /// A frame sent out of a port that cannot be written (or its output
    /// finished).
    #[error("port {port}: {source}")]
    WritePort {
        port: u32,
        source: pipeline::SinkError,
    },
    /// An interface that is not there (the message names the ones that are).
    #[error("{0}")]
    Interface(String),
    /// A port's AF_PACKET socket that cannot be opened or read.
    #[error("{0}")]
    Receive(pipeline::SourceError),
    /// A port's AF_PACKET socket for sending that cannot be opened.
    #[error("{0}")]
    Send(pipeline::SinkError),
    /// The AF_XDP datapath that cannot run.
    #[error("{0}")]
    Datapath(datapath::DatapathError),
    #[error("a packet thread panicked")]
    PacketThreadPanicked,
    /// `--offload xdp` asked for ports that are not AF_XDP.
    #[error("the XDP fast path (--offload xdp) needs AF_XDP ports")]
    OffloadNeedsAfXdp,
    #[error("--offload xdp takes at most {max} ports, not {given}")]
    OffloadTooManyPorts { max: usize, given: usize },
    #[error("the switch_xdp program was not built")]
    OffloadNotBuilt,
    /// The XDP fast path's program that the kernel does not load.
    #[error("loading the XDP fast path: {0}")]
    OffloadLoad(kernel::Error),
    /// A map of the XDP fast path's program that cannot be read or set.
    #[error("{0}")]
    OffloadMap(kernel::Error),
    #[error("the switch_xdp program has no map {0}")]
    OffloadNoMap(String),
    /// A port that cannot be put into the XDP fast path's maps.
    #[error("port {port}: {source}")]
    OffloadPort { port: u32, source: kernel::Error },
    #[error("the switch_xdp program's stats map is not the expected shape")]
    OffloadStatsShape,
    #[error("mapping the XDP fast path's counters: {0}")]
    OffloadCounters(std::io::Error),
    /// A running switch answers at the control socket's path already.
    #[error(
        "control socket {}: another switch is running there (give --ctl PATH)",
        .0.display()
    )]
    ControlInUse(PathBuf),
    /// Something other than a socket is at the control socket's path.
    #[error("control socket {}: exists and is not a socket (not replaced)", .0.display())]
    ControlNotASocket(PathBuf),
    /// The control socket that cannot be made or talked to.
    #[error("control socket {}: {source}", path.display())]
    ControlIo {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A control socket path a unix socket cannot take.
    #[error("control socket: {0}")]
    ControlPath(crate::ChannelError),
    /// No switch answers at the control socket's path.
    #[error(
        "control socket {}: {source} (is a live `sluice switch` running? --ctl names another socket)",
        path.display()
    )]
    ControlNoSwitch {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The switch's answer is not JSON.
    #[error("control socket {}: the answer: {source}", path.display())]
    ControlAnswer {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The switch refused the command (its words).
    #[error("{0}")]
    ControlRefused(String),
}
