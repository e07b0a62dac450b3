//! `sluice capture`: frames crossing an interface (both ways, or one: `-Q`), through a tcpdump
//! expression the kernel runs (classic BPF on the AF_PACKET socket, as
//! libpcap captures), written to a pcap or pcapng file; the kernel's drop
//! count at the end; a clean stop on Ctrl-C, SIGTERM, `-c` or
//! `--duration`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;

use pipeline::{Direction, Live, PcapWriter, Sink};

use crate::report::print_json;

/// Capture frames from an interface through a tcpdump expression (needs root or CAP_NET_RAW)
#[derive(clap::Args)]
pub struct Args {
    /// The filter expression, as tcpdump takes it (none: every frame)
    #[arg(value_name = "EXPR")]
    expr: Vec<String>,
    /// Interface to capture on
    #[arg(short = 'i', long = "interface", value_name = "IF")]
    iface: String,
    /// Write the frames here (.pcapng for pcapng); without it, a line per frame
    #[arg(short = 'w', long = "write", value_name = "FILE")]
    write: Option<PathBuf>,
    /// Stop after this many frames
    #[arg(short = 'c', long = "count", value_name = "N")]
    count: Option<u64>,
    /// Stop after this many seconds
    #[arg(long, value_name = "S")]
    duration: Option<f64>,
    /// Which frames: `in` (arriving), `out` (sent by this host) or `inout` (both, tcpdump's default)
    #[arg(short = 'Q', long = "direction", value_name = "DIR", default_value = "inout",
          value_parser = ["in", "out", "inout"])]
    direction: String,
    /// Print JSON at the end
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    interface: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expression: Option<String>,
    captured: u64,
    bytes: u64,
    /// Frames the kernel dropped because the socket was full.
    kernel_drops: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    written: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// Takes frames and keeps nothing (no `-w`).
struct Nowhere;

impl Sink for Nowhere {
    fn write(&mut self, _: &[u8], _: &[u8], _: u64) -> Result<(), pipeline::SinkError> {
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<(), pipeline::SinkError> {
        Ok(())
    }
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let expr = (!a.expr.is_empty()).then(|| a.expr.join(" "));
    let stop = crate::signals::stop_on_signals();
    let direction = match a.direction.as_str() {
        "in" => Direction::In,
        "out" => Direction::Out,
        _ => Direction::InOut,
    };
    let prog = match &expr {
        Some(e) => Some(
            cbpf::compile_expr(e, cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN)
                .map_err(|err| format!("{e}: {err}"))?,
        ),
        None => None,
    };
    let mut live = Live::capture(&a.iface, Some(stop), prog.as_deref(), direction)
        .map_err(|e| e.to_string())?;
    if let Some(s) = a.duration {
        let d = Duration::try_from_secs_f64(s).map_err(|e| format!("--duration {s}: {e}"))?;
        std::thread::spawn(move || {
            std::thread::sleep(d);
            stop.store(true, Ordering::Relaxed);
        });
    }
    let mut sink: Box<dyn Sink> = match &a.write {
        Some(p) => Box::new(PcapWriter::create(p).map_err(|e| e.to_string())?),
        None => Box::new(Nowhere),
    };
    let print = a.write.is_none() && !a.json;
    let done = pipeline::record(&mut live, sink.as_mut(), a.count, |ts, data| {
        if print {
            out!(
                "{}.{:09} {} bytes",
                ts / 1_000_000_000,
                ts % 1_000_000_000,
                data.len()
            );
        }
    });
    let finished = sink.finish();
    let stats = live.stats();
    let (recorded, error) = match done {
        Ok(r) => {
            let e = r.source_error.as_ref().map(|e| e.to_string());
            (r, e)
        }
        Err(e) => (pipeline::Recorded::default(), Some(e.to_string())),
    };
    let error = error.or(finished.err().map(|e| e.to_string()));
    let report = Report {
        interface: live.interface().name.clone(),
        expression: expr,
        captured: recorded.packets,
        bytes: recorded.bytes,
        kernel_drops: stats.dropped,
        written: a.write.as_ref().map(|p| p.display().to_string()),
        error,
    };
    if a.json {
        print_json(&report)?;
    } else {
        say!(
            "{} frames captured on {}{}, {} dropped by the kernel",
            report.captured,
            report.interface,
            report
                .written
                .as_ref()
                .map(|w| format!(", written to {w}"))
                .unwrap_or_default(),
            report.kernel_drops
        );
        if let Some(e) = &report.error {
            say!("sluice: {e}");
        }
    }
    Ok(if report.error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
