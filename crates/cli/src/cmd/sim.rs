//! `sluice sim`: the paper's Figures 3 and 5. One flow from a source
//! through a router to a sink and back, run without processing delay and
//! through each model file (or constant delay), compared by round-trip
//! time, throughput and the router's drops.

mod plot;

use std::path::PathBuf;
use std::process::ExitCode;

use profile::sim::{
    DEFAULT_RWND, ModelDelay, ProcessingDelay, Router, RouterComparison, Scenario, Window, compare,
};

use crate::report::print_json;

#[derive(clap::Args)]
pub struct Args {
    /// A model file written by `sluice profile --model`: a scenario whose
    /// router spends the model's delay on every packet; repeatable
    #[arg(long, value_name = "FILE")]
    model: Vec<PathBuf>,
    /// The model the ACKs go through in every model scenario (e.g. the
    /// forwarding model, while the data direction runs an IPsec model)
    #[arg(long, value_name = "FILE")]
    ack_model: Option<PathBuf>,
    /// The model files' processor: a name in their `cpus` (the first by
    /// default), or a spec of one processor (f=1GHz,tmem=10ns)
    #[arg(long, value_name = "NAME")]
    cpu: Option<String>,
    /// A scenario with a constant delay of N ns per packet, both directions; repeatable
    #[arg(long = "delay-ns", value_name = "N")]
    delay_ns: Vec<u64>,
    /// Every link's rate, both directions (10Mbit, 100kbit, 1Gbit)
    #[arg(long, default_value = "10Mbit")]
    rate: String,
    /// Every link's one-way propagation delay (10ms, 500us)
    #[arg(long, default_value = "10ms")]
    prop: String,
    /// Data segment sizes, bytes on the wire, used in turn: 1500, or 1500,576
    #[arg(long, default_value = "1500")]
    segment: String,
    /// ACK size in bytes
    #[arg(long, default_value_t = 40)]
    ack: u32,
    /// A fixed window of N segments instead of Reno
    #[arg(long, value_name = "N", conflicts_with = "tcp")]
    window: Option<u32>,
    /// Reno's slow start and congestion avoidance (the default)
    #[arg(long)]
    tcp: bool,
    /// Reno's receive window in segments (43: 64 KiB of 1500-byte segments)
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RWND)]
    rwnd: u32,
    /// Segments to deliver (1000 unless --time is given)
    #[arg(long, value_name = "N")]
    segments: Option<u64>,
    /// Simulated time to run at most (10s, 500ms)
    #[arg(long, value_name = "TIME")]
    time: Option<String>,
    /// Packets each router queue holds waiting (the processor's input, each output)
    #[arg(long, value_name = "N", default_value_t = 64)]
    buffer: usize,
    /// Write every RTT sample as CSV to FILE (scenario,at_ns,rtt_ns,ack)
    #[arg(long, value_name = "FILE")]
    rtt_csv: Option<PathBuf>,
    /// Plot RTT over time, one line per scenario (SVG)
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Print everything as JSON (the scenario, each router, results and RTT samples)
    #[arg(long)]
    json: bool,
}

/// `10Mbit`, `10Mbps`, `100kbit`, `1Gbit`, `9600` (bits per second).
fn rate_bps(v: &str) -> Result<u64, String> {
    let bad = || format!("--rate {v}: expected a rate such as 10Mbit, 100kbit, 1Gbit");
    let lower = v.trim().to_ascii_lowercase();
    let num = ["bit/s", "bps", "bit", "b/s"]
        .iter()
        .find_map(|u| lower.strip_suffix(u))
        .unwrap_or(&lower);
    let (num, scale) = match num.chars().last() {
        Some('k') => (&num[..num.len() - 1], 1e3),
        Some('m') => (&num[..num.len() - 1], 1e6),
        Some('g') => (&num[..num.len() - 1], 1e9),
        _ => (num, 1.0),
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    let bps = (x * scale).round();
    if !(1.0..1e15).contains(&bps) {
        return Err(bad());
    }
    Ok(bps as u64)
}

/// `10ms`, `500us`, `2s`, `100ns`.
fn time_ns(flag: &str, v: &str) -> Result<u64, String> {
    let bad = || format!("{flag} {v}: expected a time such as 10ms, 500us, 2s");
    let t = v.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ns") {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(bad());
    };
    let x: f64 = num.trim().parse().map_err(|_| bad())?;
    if !(x >= 0.0 && x * scale < 1e18) {
        return Err(bad());
    }
    Ok((x * scale).round() as u64)
}

fn scenario(a: &Args) -> Result<Scenario, String> {
    let segment_sizes = a
        .segment
        .split(',')
        .map(|s| s.trim().parse::<u32>().ok().filter(|n| *n > 0))
        .collect::<Option<Vec<u32>>>()
        .ok_or_else(|| {
            format!(
                "--segment {}: expected sizes in bytes, e.g. 1500 or 1500,576",
                a.segment
            )
        })?;
    let until_ns = a
        .time
        .as_deref()
        .map(|t| time_ns("--time", t))
        .transpose()?;
    let segments = match (a.segments, until_ns) {
        (Some(n), _) => Some(n),
        (None, Some(_)) => None,
        (None, None) => Some(1000),
    };
    let s = Scenario {
        rate_bps: rate_bps(&a.rate)?,
        prop_ns: time_ns("--prop", &a.prop)?,
        buffer: a.buffer,
        segment_sizes,
        ack_bytes: a.ack,
        window: match a.window {
            Some(w) => Window::Fixed(w),
            None => Window::Reno { rwnd: a.rwnd },
        },
        segments,
        until_ns,
    };
    s.validate().map_err(|e| e.to_string())?;
    Ok(s)
}

fn routers(a: &Args) -> Result<Vec<(String, Router)>, String> {
    let read = |path: &PathBuf| {
        ModelDelay::read(path, a.cpu.as_deref()).map_err(|e| format!("--model {e}"))
    };
    let ack = a.ack_model.as_ref().map(read).transpose()?;
    let mut out: Vec<(String, Router)> = a
        .delay_ns
        .iter()
        .map(|&ns| {
            let d = ProcessingDelay::Constant { ns };
            (d.label(), Router::both(d))
        })
        .collect();
    for path in &a.model {
        let m = read(path)?;
        let mut name = m.program.clone();
        if out.iter().any(|(n, _)| *n == name) {
            name = format!("{name} ({})", path.display());
        }
        let router = match &ack {
            Some(am) => {
                if *am != m {
                    name = format!("{name} (ACKs: {})", am.program);
                }
                Router {
                    data: ProcessingDelay::Model(m),
                    ack: ProcessingDelay::Model(am.clone()),
                }
            }
            None => Router::both(ProcessingDelay::Model(m)),
        };
        out.push((name, router));
    }
    Ok(out)
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let s = scenario(&a)?;
    let routers = routers(&a)?;
    let c = compare(&s, &routers).map_err(|e| e.to_string())?;
    if let Some(path) = &a.rtt_csv {
        std::fs::write(path, rtt_csv(&c)).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &a.plot {
        plot::rtt_over_time(path, &c)?;
    }
    if a.json {
        print_json(&c)?;
    } else {
        print_text(&c);
    }
    Ok(ExitCode::SUCCESS)
}

fn rtt_csv(c: &RouterComparison) -> String {
    let mut out = String::from("scenario,at_ns,rtt_ns,ack\n");
    for row in &c.rows {
        let name = row.name.replace(',', ";");
        for x in &row.result.samples {
            out += &format!("{name},{},{},{}\n", x.at_ns, x.rtt_ns, x.ack);
        }
    }
    out
}

fn describe(s: &Scenario) -> String {
    let sizes: Vec<String> = s.segment_sizes.iter().map(u32::to_string).collect();
    format!(
        "{} Mb/s links, {} ms each way, router buffers of {} packets; {} of {} bytes, {}-byte ACKs, {}",
        s.rate_bps as f64 / 1e6,
        s.prop_ns as f64 / 1e6,
        s.buffer,
        match (s.segments, s.until_ns) {
            (Some(n), Some(t)) => format!("{n} segments (at most {} s)", t as f64 / 1e9),
            (Some(n), None) => format!("{n} segments"),
            (None, t) => format!("{} s of segments", t.unwrap_or(0) as f64 / 1e9),
        },
        sizes.join(","),
        s.ack_bytes,
        match s.window {
            Window::Fixed(w) => format!("a fixed window of {w}"),
            Window::Reno { rwnd } => format!("Reno (receive window {rwnd})"),
        }
    )
}

fn print_text(c: &RouterComparison) {
    let ms = |ns: f64| ns / 1e6;
    out!("{}", describe(&c.scenario));
    out!(
        "  round trip of a lone segment: {:.3} ms",
        ms(c.scenario.base_rtt_ns(c.scenario.segment_sizes[0]) as f64)
    );
    out!();
    let width = c
        .rows
        .iter()
        .map(|r| r.name.len())
        .max()
        .unwrap_or(8)
        .max(8);
    out!(
        "{:<width$} {:>11} {:>9} {:>9} {:>9} {:>9} {:>11} {:>6} {:>6}",
        "scenario",
        "proc/RT us",
        "mean ms",
        "median",
        "p99",
        "+mean",
        "Mb/s",
        "drops",
        "retx"
    );
    for row in &c.rows {
        let r = &row.result;
        out!(
            "{:<width$} {:>11.2} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>11.3} {:>6} {:>6}{}",
            row.name,
            row.round_trip_processing_ns as f64 / 1e3,
            ms(r.rtt.mean_ns),
            ms(r.rtt.median_ns as f64),
            ms(r.rtt.p99_ns as f64),
            ms(row.mean_rtt_increase_ns),
            r.throughput_bps / 1e6,
            r.router.dropped(),
            r.sender.retransmits,
            if r.complete { "" } else { "  (time ran out)" }
        );
    }
    out!();
    out!(
        "  proc/RT: what the router spends on a segment and its ACK (a window of 1 pays it once per round trip)"
    );
    for row in c.rows.iter().skip(1) {
        let rt = &row.result.router;
        out!(
            "  {}: data {}, ACKs {}; processor busy {:.3} s, {} packets waited at its input (at most {}), {} dropped there",
            row.name,
            row.router.data.label(),
            row.router.ack.label(),
            rt.processing_ns as f64 / 1e9,
            rt.input.queued,
            rt.input.max_waiting,
            rt.input.dropped
        );
    }
}
