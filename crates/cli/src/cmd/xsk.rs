//! `sluice xsk rxdrop|txonly|l2fwd`: the AF_XDP datapath's benchmarks on
//! one interface (xdpsock's three), with live rates every second and a
//! summary at the end (docs/datapath.md).

use std::time::Duration;

use capture::xsk::{BindMode, PoolKind, XskConfig};
use datapath::{App, Totals, XskOptions, XskSummary};
use kernel::attach::XdpMode;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Bench {
    /// Receive and drop
    Rxdrop,
    /// Send one generated frame as fast as possible
    Txonly,
    /// Swap MAC addresses and send back out of the same port
    L2fwd,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Native,
    Skb,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bind {
    /// Zero-copy when the driver has it, else copy
    Auto,
    Copy,
    ZeroCopy,
}

#[derive(clap::Args)]
pub struct Args {
    bench: Bench,
    /// Interface
    #[arg(long)]
    dev: String,
    #[command(flatten)]
    common: Common,
    /// One UMEM for all queues (XDP_SHARED_UMEM) with one free-frame pool behind a mutex
    #[arg(long)]
    shared_umem: bool,
    /// Where per-packet metadata lives: an array on the heap, or inline in the frame's headroom
    #[arg(long, default_value = "array")]
    meta: datapath::MetaKind,
    /// The frame txonly sends (a `sluice gen` spec; the first frame)
    #[arg(long, default_value = "udp")]
    packet: String,
}

/// Options every AF_XDP command shares.
#[derive(clap::Args)]
pub struct Common {
    /// Queue to bind (repeatable: one socket and UMEM per queue)
    #[arg(long = "queue", default_values_t = [0u32])]
    pub queues: Vec<u32>,
    /// XDP attach mode of the redirect program
    #[arg(long, value_enum, default_value_t = Mode::Native)]
    pub mode: Mode,
    /// AF_XDP bind mode
    #[arg(long, value_enum, default_value_t = Bind::Auto)]
    pub bind: Bind,
    /// Packets per batch
    #[arg(long, default_value_t = 32)]
    pub batch: u32,
    /// No polling thread per queue: one thread waiting in poll() on every socket
    #[arg(long)]
    pub no_pmd: bool,
    /// Pin polling thread i to CPU i (modulo the CPU count)
    #[arg(long)]
    pub pin: bool,
    /// Polling threads, the ports' queues dealt out over them (`sluice datapath`, `sluice switch`) [default: one per queue; `sluice switch`: 1, as Open vSwitch's one PMD thread]
    #[arg(long, value_name = "N", conflicts_with = "no_pmd")]
    pub pmd_threads: Option<usize>,
    /// Free-frame pool design: stack (LIFO), ring or list
    #[arg(long, default_value = "stack")]
    pub pool: PoolKind,
    /// Kick TX once this many descriptors are outstanding [default: 512 or 3/4 of the TX ring]
    #[arg(long)]
    pub kick_at: Option<u32>,
    /// Bytes per UMEM frame (power of two, 2048 to the page size)
    #[arg(long, default_value_t = 4096)]
    pub frame_size: u32,
    /// Frames per UMEM (per queue)
    #[arg(long, default_value_t = 4096)]
    pub frames: u32,
    /// Bytes the kernel leaves free in each frame before a received packet, beyond XDP's 256
    #[arg(long, default_value_t = 0)]
    pub headroom: u32,
    /// Entries of each ring (power of two)
    #[arg(long, default_value_t = 2048)]
    pub ring_size: u32,
    /// Stop after this many seconds (else at Ctrl-C)
    #[arg(long)]
    pub duration: Option<f64>,
    /// Print one JSON summary at the end instead of live rates
    #[arg(long)]
    pub json: bool,
}

impl Common {
    pub fn xdp_mode(&self) -> XdpMode {
        match self.mode {
            Mode::Native => XdpMode::Native,
            Mode::Skb => XdpMode::Skb,
        }
    }

    pub fn config(&self) -> XskConfig {
        XskConfig {
            bind: match self.bind {
                Bind::Auto => BindMode::Auto,
                Bind::Copy => BindMode::Copy,
                Bind::ZeroCopy => BindMode::ZeroCopy,
            },
            frame_size: self.frame_size,
            frame_count: self.frames,
            headroom: self.headroom,
            rx_size: self.ring_size,
            tx_size: self.ring_size,
            fill_size: self.ring_size,
            comp_size: self.ring_size,
            ..XskConfig::default()
        }
    }

    pub fn duration(&self) -> Option<Duration> {
        self.duration.map(Duration::from_secs_f64)
    }
}

use crate::signals::stop_on_signals;

/// Prints a line of live rates from the totals now and at the last tick.
pub fn live_rates(last: &mut (Totals, Duration), t: &Totals, at: Duration) {
    let dt = (at - last.1).as_secs_f64().max(1e-9);
    let rate = |now: u64, then: u64| now.saturating_sub(then) as f64 / dt;
    say!(
        "{:>6.1}s  rx/s {:>12.0}  tx/s {:>12.0}  drop/s {:>12.0}  cycles/pkt {:>8.1}",
        at.as_secs_f64(),
        rate(t.rx, last.0.rx),
        rate(t.tx, last.0.tx),
        rate(t.dropped, last.0.dropped),
        t.cycles_per_packet()
    );
    *last = (*t, at);
}

pub fn run(a: Args) -> Result<std::process::ExitCode, String> {
    let frame = packet::GenSpec::parse(&a.packet)
        .map_err(|e| e.to_string())?
        .frame(0);
    let c = &a.common;
    let mut opts = XskOptions::new(&a.dev, frame);
    opts.queues = c.queues.clone();
    opts.mode = c.xdp_mode();
    opts.xsk = c.config();
    opts.batch = c.batch;
    opts.pool = c.pool;
    opts.meta = a.meta;
    opts.shared_umem = a.shared_umem;
    opts.pmd = !c.no_pmd;
    opts.pin = c.pin;
    opts.kick_at = c.kick_at;
    opts.duration = c.duration();
    let app = match a.bench {
        Bench::Rxdrop => App::RxDrop,
        Bench::Txonly => App::TxOnly,
        Bench::L2fwd => App::L2Fwd,
    };
    let stop = stop_on_signals();
    if !c.json {
        say!(
            "sluice xsk {}: {} queue(s) {:?}, {} XDP; Ctrl-C stops",
            app.name(),
            a.dev,
            c.queues,
            opts.mode.name()
        );
    }
    let mut last = (Totals::default(), Duration::ZERO);
    let summary = datapath::run(app, &opts, stop, |t, at| {
        if !c.json {
            live_rates(&mut last, t, at);
        }
    })
    .map_err(|e| e.to_string())?;
    print_summary(&summary, c.json);
    Ok(std::process::ExitCode::SUCCESS)
}

fn print_summary(s: &XskSummary, json: bool) {
    let t = &s.totals;
    let per_s = |n: u64| n as f64 / s.seconds.max(1e-9);
    if json {
        let v = serde_json::json!({
            "bench": s.app.name(),
            "dev": s.dev,
            "queues": s.queues,
            "xdp_mode": s.xdp_mode.name(),
            "bind": s.bind.name(),
            "seconds": s.seconds,
            "rx_packets": t.rx,
            "rx_bytes": t.rx_bytes,
            "tx_packets": t.tx,
            "dropped": t.dropped,
            "tx_kicks": t.kicks,
            "rx_pps": per_s(t.rx),
            "tx_pps": per_s(t.tx),
            "drop_pps": per_s(t.dropped),
            "cycles_per_packet": t.cycles_per_packet(),
            "frames": s.frames,
            "frames_unaccounted": s.frames_unaccounted,
            "kernel": {
                "rx_dropped": s.kernel.rx_dropped,
                "rx_ring_full": s.kernel.rx_ring_full,
                "rx_fill_ring_empty": s.kernel.rx_fill_ring_empty_descs,
                "rx_invalid_descs": s.kernel.rx_invalid_descs,
                "tx_invalid_descs": s.kernel.tx_invalid_descs,
                "tx_ring_empty": s.kernel.tx_ring_empty_descs,
            },
        });
        out!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
    } else {
        out!(
            "{} on {} ({} XDP, {} AF_XDP): {:.2} s, rx {} ({:.3} Mpps), tx {} ({:.3} Mpps), dropped {}, {:.1} cycles/packet, {} TX kicks, {} of {} frames unaccounted; kernel: {} dropped, RX ring full {}, FILL ring empty {}",
            s.app.name(),
            s.dev,
            s.xdp_mode.name(),
            s.bind.name(),
            s.seconds,
            t.rx,
            per_s(t.rx) / 1e6,
            t.tx,
            per_s(t.tx) / 1e6,
            t.dropped,
            t.cycles_per_packet(),
            t.kicks,
            s.frames_unaccounted,
            s.frames,
            s.kernel.rx_dropped,
            s.kernel.rx_ring_full,
            s.kernel.rx_fill_ring_empty_descs
        );
    }
}
