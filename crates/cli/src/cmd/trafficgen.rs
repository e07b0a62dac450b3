//! `sluice gen`: generated traffic into an interface, through XDP live
//! frames (as xdp-trafficgen) or an AF_PACKET socket.

use std::io::IsTerminal;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use kernel::traffic::{self, Plan, Sent};
use serde::Serialize;

use crate::cmd::kernel::need_privilege;
use crate::report::print_json;

#[derive(Copy, Clone, PartialEq, Eq, clap::ValueEnum)]
pub enum Method {
    /// Live frames when the traffic allows, else a packet socket
    Auto,
    /// XDP live frames (BPF_PROG_TEST_RUN, BPF_F_TEST_XDP_LIVE_FRAMES)
    Live,
    /// An AF_PACKET socket
    Packet,
}

/// Send generated traffic out of an interface (needs root)
#[derive(clap::Args)]
pub struct Args {
    /// Interface to send from
    #[arg(long)]
    dev: String,
    /// Traffic as in `sluice run --gen`, e.g. udp,flows=64,size=64,count=10000000
    /// (rate=PPS paces it: live frames in bursts of a twentieth of a second, as each kernel call costs
    /// milliseconds; --method packet paces every millisecond. Without rate, or with rate=max, it sends flat out)
    spec: String,
    /// How to send
    #[arg(long, value_enum, default_value = "auto")]
    method: Method,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report {
    dev: String,
    method: &'static str,
    packets: u64,
    seconds: f64,
    pps: f64,
    bytes_per_packet: usize,
    flows: usize,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    need_privilege("sluice gen")?;
    let paced = a
        .spec
        .split(',')
        .any(|f| f.trim().starts_with("rate=") && f.trim() != "rate=max");
    let text: Vec<&str> = a
        .spec
        .split(',')
        .filter(|f| f.trim() != "rate=max")
        .collect();
    let spec = packet::GenSpec::parse(&text.join(",")).map_err(|e| e.to_string())?;
    let ifindex = kernel::netdev::ifindex(&a.dev).map_err(|e| e.to_string())?;
    let flows = u64::from(spec.flows).min(spec.count.max(1)) as usize;
    if flows > 1 << 18 {
        return Err(format!(
            "{flows} flows: sluice gen keeps one frame per flow, at most {}",
            1 << 18
        ));
    }
    let frames: Vec<Vec<u8>> = (0..flows as u32).map(|f| spec.frame(f)).collect();
    let plan = Plan {
        frames: &frames,
        count: spec.count,
        rate: paced.then_some(spec.rate),
    };
    let bar = (std::io::stderr().is_terminal() && !a.json).then(|| {
        ProgressBar::new(spec.count).with_style(
            ProgressStyle::with_template("{spinner} {bar:40} {pos}/{len} packets  {per_sec}")
                .expect("template"),
        )
    });
    let progress = |n: u64| {
        if let Some(b) = &bar {
            b.set_position(n);
        }
    };
    let why_not_live = traffic::live_unsuitable(&frames);
    let sent = match (a.method, &why_not_live) {
        (Method::Live, Some(why)) => return Err(format!("--method live: {why}")),
        (Method::Packet, _) | (Method::Auto, Some(_)) => {
            if let (Method::Auto, Some(why)) = (a.method, &why_not_live)
                && !a.json
            {
                say!("sluice gen: {why}: sending through an AF_PACKET socket");
            }
            traffic::send_packet_socket(ifindex, &plan, progress).map_err(|e| e.to_string())?
        }
        (Method::Live | Method::Auto, None) => send_live(ifindex, &frames, &plan, progress)?,
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    report(&a, &sent, &frames)
}

fn send_live(
    ifindex: u32,
    frames: &[Vec<u8>],
    plan: &Plan<'_>,
    progress: impl FnMut(u64),
) -> Result<Sent, String> {
    let object = programs::tool("gen").ok_or("the gen tool program was not built")?;
    let prefix = traffic::varying_prefix(frames).unwrap_or(0);
    let set = vec![
        format!("ifindex={ifindex}"),
        format!("n_templates={}", frames.len()),
        format!("prefix={prefix}"),
    ];
    let mut spec = engine::KernelSpec::from_bytes("gen.o", object);
    spec.settings.set = set;
    spec.settings.map_size = vec![format!("templates={}", frames.len())];
    let kobj = spec.load(None).map_err(|e| e.to_string())?;
    let templates = kobj
        .maps()
        .map_err(|e| e.to_string())?
        .into_iter()
        .find(|m| m.name == "templates")
        .ok_or("gen.o has no templates map")?;
    traffic::fill_templates(&templates, frames, prefix).map_err(|e| e.to_string())?;
    let prog = kobj.program("sluice_gen").map_err(|e| e.to_string())?;
    traffic::send_live(prog.fd, plan, progress).map_err(|e| e.to_string())
}

fn report(a: &Args, sent: &Sent, frames: &[Vec<u8>]) -> Result<ExitCode, String> {
    let r = Report {
        dev: a.dev.clone(),
        method: sent.method,
        packets: sent.packets,
        seconds: sent.seconds,
        pps: sent.pps(),
        bytes_per_packet: frames.first().map_or(0, Vec::len),
        flows: frames.len(),
    };
    if a.json {
        print_json(&r)?;
    } else {
        out!(
            "sent {} packets of {} bytes ({} flows) out of {} in {:.3} s: {:.0} packets/s ({:.2} Mpps) via {}",
            r.packets,
            r.bytes_per_packet,
            r.flows,
            r.dev,
            r.seconds,
            r.pps,
            r.pps / 1e6,
            r.method
        );
    }
    Ok(ExitCode::SUCCESS)
}
