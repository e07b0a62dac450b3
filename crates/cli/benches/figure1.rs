//! The xPF paper's Figure 1 on this machine: the highest rate a monitor
//! receives without loss, as its processing per packet grows, when the
//! packets are (a) copied to user space and processed there, or (b)
//! processed inside the filter. The monitor is `programs/burn.c` in the
//! kernel, attached (native XDP) to one end of a veth pair between two
//! network namespaces that this benchmark creates and deletes; `sluice gen`
//! sends paced 64-byte UDP frames from the other end (AF_PACKET, a
//! millisecond's worth at a time).
//!
//! The processing is N iterations of a small loop (multiply and add): in
//! the filter (b), `burn = N` and the program counts in a per-CPU map; in
//! user space (a), the program sends a 64-byte ring-buffer record per
//! packet and this process runs the same loop N times per record. The
//! x axis is the filter loop's cost in eBPF instructions, measured in
//! sluice's VM (instructions per packet at N minus at 0).
//!
//! For each N, the rate is found by bisection: a run of about a second of
//! traffic is loss-free when every packet sent was counted (b) or
//! processed (a) and the sender kept the rate (a veth pushes back on its
//! sender when the receiver falls behind, instead of dropping); the top is
//! what the sender reaches flat out, so a result at the top is the
//! sender's limit, not the monitor's (marked).
//!
//! `cargo bench -p sluice --bench figure1` (root). Prints a table, writes
//! `target/figure1.svg` (or `SLUICE_FIG1_SVG`); `SLUICE_FIG1_N` sets the
//! iteration counts (default `0,100,200,400,800,1600,3200,6400,8192`; the filter runs at most 8192),
//! `SLUICE_FIG1_STEPS` the bisection steps (default 7),
//! `SLUICE_FIG1_SECONDS` the length of each run (default 1).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kernel::ringbuf::RingReader;
use kernel::{KernelObject, MapInfo};
use plotters::prelude::*;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");
const TX: &str = "slf1_tx";
const RX: &str = "slf1_rx";

mod common;

use testkit::Pair;

fn setup() -> Pair {
    Pair::new("slf", TX, RX)
}

/// The loop of the filter, in user space: N iterations of the same
/// multiply and add, each kept (`black_box`).
fn burn(n: u32, seed: u64) -> u64 {
    let mut x = seed;
    for i in 0..u64::from(n) {
        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
    }
    x
}

/// `programs/burn.c` with its globals set, as sluice's loader lays them out.
fn image(iterations: u32, to_user: bool) -> runtime::Image {
    let object = obj::Object::parse(programs::object("burn").expect("built")).unwrap();
    let opts = runtime::LoadOptions {
        globals: vec![
            ("burn".into(), i128::from(iterations)),
            ("to_user".into(), i128::from(to_user)),
        ],
        ..runtime::LoadOptions::default()
    };
    runtime::Image::load(object, &opts).unwrap()
}

/// eBPF instructions the filter runs per packet with `iterations`.
fn insns_per_packet(iterations: u32) -> u64 {
    let mut hook = runtime::Hook::new(image(iterations, false), 0, 0).unwrap();
    let frame = vec![0u8; 64];
    let out = hook.run(&frame, &runtime::PacketMeta::default()).unwrap();
    out.stats.insns
}

struct Monitor {
    _object: KernelObject,
    stats: MapInfo,
    ring: Option<RingReader>,
    user_burn: u32,
}

impl Monitor {
    /// Loads and attaches the monitor of `iterations` per packet, in the
    /// filter or (`to_user`) in this process.
    fn attach(iterations: u32, to_user: bool) -> Monitor {
        let image = image(if to_user { 0 } else { iterations }, to_user);
        let kopts = kernel::load_options(&image.object, &image.maps);
        let object = KernelObject::load(programs::object("burn").unwrap(), "burn", &kopts).unwrap();
        let prog = object.program("xdp_burn").unwrap();
        let maps = object.maps().unwrap();
        let find = |name: &str| {
            maps.iter()
                .find(|m| kernel::same_map(&m.name, name))
                .unwrap()
                .clone()
        };
        let stats = find("burn_stats");

        let ring = to_user.then(|| RingReader::new(find("copies").fd).unwrap());
        let _ = kernel::attach::xdp_detach(RX);
        kernel::attach::xdp_attach(RX, prog.fd, kernel::attach::XdpMode::Native).unwrap();
        Monitor {
            _object: object,
            stats,
            ring,
            user_burn: if to_user { iterations } else { 0 },
        }
    }

    fn stat(&self, i: u32) -> u64 {
        self.stats.lookup(&i.to_ne_bytes()).unwrap().map_or(0, |v| {
            v.chunks_exact(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                .sum()
        })
    }

    /// Records processed in user space (all there are now, within `ms`).
    fn consume(&mut self, ms: i32) -> u64 {
        let Some(ring) = &mut self.ring else {
            std::thread::sleep(Duration::from_millis(ms as u64));
            return 0;
        };
        let mut n = 0;
        for r in ring.poll(ms).unwrap() {
            std::hint::black_box(burn(self.user_burn, u64::from(r[0])));
            n += 1;
        }
        n
    }

    /// Sends `count` frames at `rate` from the other namespace; returns
    /// (sent, processed, the sender's packets per second).
    fn trial(&mut self, ns: &Pair, rate: Option<u64>, count: u64) -> (u64, u64, f64) {
        let before = self.stat(0);
        let spec = match rate {
            Some(r) => format!("udp,size=64,count={count},rate={r}"),
            None => format!("udp,size=64,count={count}"),
        };
        let child = Command::new(SLUICE)
            .args(["gen", "--netns", &ns.a, "--dev", TX, "--method", "packet"])
            .args(["--json", &spec])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut processed = 0;
        let mut child = child;
        while child.try_wait().unwrap().is_none() {
            processed += self.consume(5);
        }
        // What is still in flight.
        let mut quiet = 0;
        while quiet < 3 {
            let n = self.consume(20);
            processed += n;
            quiet = if n == 0 { quiet + 1 } else { 0 };
        }
        let out = child.wait_with_output().unwrap();
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let sent = report["packets"].as_u64().unwrap();
        if self.ring.is_none() {
            processed = self.stat(0) - before;
        }
        (sent, processed, report["pps"].as_f64().unwrap_or(0.0))
    }
}

/// The highest loss-free rate for `mon`, at most `top`, and whether the
/// top itself was loss-free (the sender's limit).
fn loss_free_rate(mon: &mut Monitor, ns: &Pair, top: u64, steps: u32, seconds: f64) -> (u64, bool) {
    // Long enough that the ring buffer (about 14,500 records) cannot hide
    // a consumer that falls behind.
    let count = |rate: u64| ((rate as f64 * seconds) as u64).clamp(10_000, 5_000_000);
    // Every packet processed, at the rate asked: a veth whose receiver
    // falls behind pushes back on the sender (its queue stops) rather
    // than dropping, so a slow monitor shows as a slower send.
    let lossless = |mon: &mut Monitor, rate: u64| {
        let (sent, got, pps) = mon.trial(ns, Some(rate), count(rate));
        got >= sent && pps >= 0.97 * rate as f64
    };
    if lossless(mon, top) {
        return (top, true);
    }
    let (mut lo, mut hi) = (0u64, top);
    for _ in 0..steps {
        let mid = (lo + hi) / 2;
        if lossless(mon, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, false)
}

struct Point {
    insns: u64,
    user: (u64, bool),
    filter: (u64, bool),
}

// The CLI's font registration, shared by path (a bench is its own crate).
#[path = "../src/plotfont.rs"]
mod plotfont;

fn plot(points: &[Point], path: &str) -> Result<(), String> {
    plotfont::register()?;
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let x_max = points.iter().map(|p| p.insns).max().unwrap_or(1) as f64;
    let y_max = points
        .iter()
        .map(|p| p.user.0.max(p.filter.0))
        .max()
        .unwrap_or(1) as f64
        / 1e3;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Loss-free rate vs processing per packet (xPF paper, Figure 1)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..x_max * 1.05, 0f64..y_max * 1.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("extra eBPF instructions per packet (N)")
        .y_desc("loss-free rate (thousand packets/s)")
        .draw()
        .map_err(|e| e.to_string())?;
    let series = [
        ("in the filter (XDP, count in a map)", BLUE, true),
        ("copied to user space (ring buffer)", RED, false),
    ];
    for (label, color, filter) in series {
        let pts: Vec<(f64, f64)> = points
            .iter()
            .map(|p| {
                let r = if filter { p.filter.0 } else { p.user.0 };
                (p.insns as f64, r as f64 / 1e3)
            })
            .collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("figure1: SKIPPED: needs root (network namespaces, XDP)");
        return;
    }
    let iterations: Vec<u32> = std::env::var("SLUICE_FIG1_N")
        .unwrap_or_else(|_| "0,100,200,400,800,1600,3200,6400,8192".into())
        .split(',')
        .map(|n| n.trim().parse().expect("SLUICE_FIG1_N: numbers"))
        .collect();
    let steps: u32 = std::env::var("SLUICE_FIG1_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    let seconds: f64 = std::env::var("SLUICE_FIG1_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    let svg = std::env::var("SLUICE_FIG1_SVG")
        .unwrap_or_else(|_| format!("{}/../../target/figure1.svg", env!("CARGO_MANIFEST_DIR")));
    let ns = setup();
    kernel::netdev::enter_netns(&ns.b).unwrap();
    let base = insns_per_packet(0);
    let started = Instant::now();
    // The sender's own limit: flat out into the filter at N = 0.
    let top = {
        let mut m = Monitor::attach(0, false);
        let (_, _, pps) = m.trial(&ns, None, 1_000_000);
        pps as u64
    };
    println!("sender flat out (AF_PACKET, 64-byte frames): about {top} packets/s");
    println!(
        "{:>10} {:>12} {:>22} {:>22}",
        "iterations", "eBPF insns", "user space (pkt/s)", "in the filter (pkt/s)"
    );
    let mut points = Vec::new();
    for &n in &iterations {
        let insns = insns_per_packet(n) - base;
        let mut user = Monitor::attach(n, true);
        let u = loss_free_rate(&mut user, &ns, top, steps, seconds);
        drop(user);
        let mut filter = Monitor::attach(n, false);
        let f = loss_free_rate(&mut filter, &ns, top, steps, seconds);
        drop(filter);
        let mark = |(r, at_top): (u64, bool)| format!("{r}{}", if at_top { "+" } else { " " });
        println!("{n:>10} {insns:>12} {:>22} {:>22}", mark(u), mark(f));
        points.push(Point {
            insns,
            user: u,
            filter: f,
        });
    }
    let _ = kernel::attach::xdp_detach(RX);
    println!("(+: the sender's limit, not the monitor's)");
    for p in &points {
        if p.user.0 > 0 {
            println!(
                "N = {:>6} eBPF insns: in the filter / user space = {:.2}",
                p.insns,
                p.filter.0 as f64 / p.user.0 as f64
            );
        }
    }
    match plot(&points, &svg) {
        Ok(()) => println!("plot: {svg}"),
        Err(e) => eprintln!("figure1: plot: {e}"),
    }
    println!("{:.0} s", started.elapsed().as_secs_f64());
}
