//! The AF_XDP datapath beside a libxdp baseline (xdpsock's rxdrop and
//! l2fwd, `crates/datapath/baseline/xsk_baseline.c`, built here with cc),
//! and the Open vSwitch AF_XDP paper's ablation, in two network namespaces
//! joined by a veth pair that this benchmark creates and deletes. `sluice
//! gen` sends flat out from one end (XDP live frames); the receiver at the
//! other end runs in native XDP, copy mode. Rate = frames the receiver
//! handled / the sender's time; each figure is the median of
//! `SLUICE_XSK_RUNS` runs (default 3).
//!
//! The queue cases run `sluice datapath` with a program (`xdp_count.o`)
//! on one, then two queues of a second veth pair with two RX and two TX
//! queues, one sender pinned to each CPU: flat out (Mpps, the 2q/1q
//! ratio, the split between the queues and where the CPUs' time went),
//! then paced to `SLUICE_XSK_RATE` packets/s in all (default 200,000),
//! below what one queue handles, for the CPU per packet of each stage.
//!
//! `cargo bench -p sluice --bench xsk` (root; `SLUICE_XSK_FRAMES`, default
//! 3,000,000 frames per run; `SLUICE_XSK_CASES`, default
//! `baseline,ablation,queues`, picks the parts).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

mod common;

use common::wait_xdp;
use testkit::Pair;

fn setup() -> Pair {
    Pair::new("slb", "slb_tx", "slb_rx")
}

fn build_baseline(dir: &Path) -> Result<PathBuf, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datapath/baseline/xsk_baseline.c");
    let out = dir.join("xsk_baseline");
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .args(["-lxdp", "-lbpf"])
        .status()
        .map_err(|e| format!("cc: {e}"))?;
    if !status.success() {
        return Err("building the libxdp baseline failed (libxdp-dev installed?)".into());
    }
    Ok(out)
}

/// Starts `receiver`, sends `frames` flat out, stops the receiver; frames
/// it handled (`field` of its JSON) per second of sending.
fn measure(ns: &Pair, mut receiver: Command, field: &str, frames: u64) -> Result<f64, String> {
    let mut child: Child = receiver
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if !wait_xdp(&ns.b, "slb_rx", true) {
        let _ = child.kill();
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        return Err(format!(
            "the receiver did not start: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let sent = Command::new(SLUICE)
        .args(["--netns", &ns.a, "gen", "--dev", "slb_tx", "--json"])
        .arg(format!("udp,count={frames}"))
        .output()
        .map_err(|e| e.to_string())?;
    let sent: serde_json::Value =
        serde_json::from_slice(&sent.stdout).map_err(|e| format!("sluice gen: {e}"))?;
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    // The kernel releases a socket's queue a little after the process
    // ends: wait for the program to go, and a moment more.
    wait_xdp(&ns.b, "slb_rx", false);
    std::thread::sleep(Duration::from_millis(500));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "receiver output: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    let handled = v[field].as_f64().ok_or(format!("no {field} in {v}"))?;
    Ok(handled / sent["seconds"].as_f64().unwrap_or(f64::NAN) / 1e6)
}

/// The median of `runs` measurements (an error if any fails).
fn median(runs: u64, mut f: impl FnMut() -> Result<f64, String>) -> Result<f64, String> {
    let mut v = (0..runs)
        .map(|_| f())
        .collect::<Result<Vec<f64>, String>>()?;
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}

/// The JSON field with the frames a receiver handled in `bench`.
fn handled(bench: &str) -> &'static str {
    if bench == "l2fwd" {
        "tx_packets"
    } else {
        "rx_packets"
    }
}

fn sluice_xsk(ns: &Pair, bench: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(SLUICE);
    c.args(["--netns", &ns.b, "xsk", bench, "--dev", "slb_rx", "--json"])
        .args(extra);
    c
}

/// The veth pair of the queue cases: 2 RX and 2 TX queues on both ends.
const MQ_TX: &str = "slq_tx";
const MQ_RX: &str = "slq_rx";

fn setup_multiqueue(ns: &Pair) {
    ns.a.veth_to(MQ_TX, &ns.b, MQ_RX, Some(2));
}

/// Clock ticks of each CPU from /proc/stat: [user + nice, system,
/// softirq, idle + iowait, everything].
fn cpu_ticks() -> Vec<[u64; 5]> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .map(|l| {
            let f: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .map(|v| v.parse().unwrap_or(0))
                .collect();
            let at = |i: usize| f.get(i).copied().unwrap_or(0);
            [at(0) + at(1), at(2), at(6), at(3) + at(4), f.iter().sum()]
        })
        .collect()
}

/// Seconds of CPU (user + system) of the process `pid`, from
/// /proc/PID/stat (all its threads).
fn process_cpu(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is
    // the 14th field of the line, the 12th after ")".
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    ticks as f64 / clock_ticks()
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no memory effects.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

/// Seconds of CPU (user + system) of the children waited for so far.
fn children_cpu() -> f64 {
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid rusage to fill.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut r) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(r.ru_utime) + s(r.ru_stime)
}

/// One run of `sluice datapath` with a program on `queues` queues of the
/// two-queue veth.
#[derive(Clone, Debug, Default)]
struct QueueRun {
    /// Frames the datapath received / the senders' time, in Mpps.
    mpps: f64,
    sent: u64,
    received: u64,
    /// Frames received on each queue.
    per_queue: Vec<u64>,
    /// The slowest sender's time.
    seconds: f64,
    /// CPU seconds of the senders (their whole lives; with tick-based
    /// accounting this includes the softirq work that ran in their
    /// context: veth's NAPI, the redirect program and the copy into the
    /// UMEM).
    sender_cpu: f64,
    /// CPU seconds of the datapath process while the senders ran.
    receiver_cpu: f64,
    /// Timestamp-counter cycles of the datapath's polls that handled
    /// packets (all queues).
    busy_cycles: u64,
    /// While the senders ran, each CPU's share of time in user, system,
    /// softirq and idle.
    cpus: Vec<[f64; 4]>,
    /// Seconds of softirq (all CPUs) while the senders ran (sampled at
    /// each tick: coarse).
    softirq: f64,
    /// Seconds of CPU (all CPUs) while the senders ran, neither idle nor
    /// the senders' nor the datapath's: ksoftirqd and anything else
    /// running on the machine.
    others: f64,
}

/// Runs `sluice datapath --prog obj` (with `extra` options) on queues
/// 0..queues of the two-queue veth while one `sluice gen` per queue, pinned to CPU i with
/// taskset, sends `frames` in all (`rate`: packets per second in all,
/// else flat out).
///
/// Why one sender per CPU: veth's XDP transmit (`veth_xdp_xmit` in
/// drivers/net/veth.c, the path a redirected live frame takes) puts the
/// frame on the peer's RX queue `veth_select_rxq(rcv)`, which is
/// `smp_processor_id() % rcv->real_num_rx_queues`: the queue is chosen
/// by the CPU that sends, not by a hash of the flow. `sluice gen`'s live
/// frames are redirected on the CPU that calls BPF_PROG_TEST_RUN, so a
/// sender pinned to CPU 0 fills RX queue 0 and one on CPU 1 fills queue 1
/// (veth's NAPI for that queue is scheduled from there too).
fn measure_queues(
    ns: &Pair,
    obj: &Path,
    queues: usize,
    extra: &[&str],
    frames: u64,
    rate: Option<u64>,
) -> Result<QueueRun, String> {
    let mut c = Command::new(SLUICE);
    c.args(["--netns", &ns.b, "datapath", "--port", MQ_RX, "--prog"])
        .arg(obj)
        .arg("--json")
        .args(extra);
    for q in 0..queues {
        c.args(["--queue", &q.to_string()]);
    }
    let child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id();
    let stop = |child: Child| -> Result<serde_json::Value, String> {
        // SAFETY: signalling our own child by its PID.
        unsafe { libc::kill(pid as i32, libc::SIGINT) };
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        wait_xdp(&ns.b, MQ_RX, false);
        std::thread::sleep(Duration::from_millis(500));
        serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "sluice datapath: {e}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })
    };
    if !wait_xdp(&ns.b, MQ_RX, true) {
        return stop(child).and(Err("sluice datapath did not start".into()));
    }
    let each = frames / queues as u64;
    let cpu_before = cpu_ticks();
    let (children_before, receiver_before) = (children_cpu(), process_cpu(pid));
    let senders: Vec<_> = (0..queues)
        .map(|cpu| {
            let mut spec = format!("udp,count={each}");
            if let Some(r) = rate {
                spec += &format!(",rate={}", r / queues as u64);
            }
            Command::new("taskset")
                .args(["-c", &cpu.to_string(), SLUICE, "--netns", &ns.a, "gen"])
                .args(["--dev", MQ_TX, "--json", &spec])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        })
        .collect();
    let mut run = QueueRun::default();
    let mut failed = None;
    for s in senders {
        let out = s.and_then(|s| s.wait_with_output());
        match out.map_err(|e| e.to_string()).and_then(|o| {
            serde_json::from_slice::<serde_json::Value>(&o.stdout).map_err(|e| {
                format!(
                    "sluice gen: {e}: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                )
            })
        }) {
            Ok(v) => {
                run.sent += v["packets"].as_u64().unwrap_or(0);
                run.seconds = run.seconds.max(v["seconds"].as_f64().unwrap_or(f64::NAN));
            }
            Err(e) => failed = Some(e),
        }
    }
    let cpu_after = cpu_ticks();
    run.sender_cpu = children_cpu() - children_before;
    run.receiver_cpu = process_cpu(pid) - receiver_before;
    std::thread::sleep(Duration::from_millis(200));
    let v = stop(child)?;
    if let Some(e) = failed {
        return Err(e);
    }
    let hz = clock_ticks();
    let mut busy = 0.0;
    for (b, a) in cpu_before.iter().zip(&cpu_after) {
        let d = |i: usize| a[i].saturating_sub(b[i]) as f64;
        let all = d(4).max(1.0);
        run.cpus
            .push([d(0) / all, d(1) / all, d(2) / all, d(3) / all]);
        run.softirq += d(2) / hz;
        busy += (d(4) - d(3)) / hz;
    }
    run.others = (busy - run.sender_cpu - run.receiver_cpu).max(0.0);
    let port = &v["ports"][0];
    run.received = port["rx_packets"]
        .as_u64()
        .ok_or(format!("no rx_packets in {v}"))?;
    for q in port["queues"].as_array().into_iter().flatten() {
        run.per_queue.push(q["rx_packets"].as_u64().unwrap_or(0));
        run.busy_cycles += q["cycles"].as_u64().unwrap_or(0);
    }
    run.mpps = run.received as f64 / run.seconds / 1e6;
    Ok(run)
}

/// The run with the median rate of `runs` (an error if any fails).
fn median_run(
    runs: u64,
    mut f: impl FnMut() -> Result<QueueRun, String>,
) -> Result<QueueRun, String> {
    let mut v = (0..runs)
        .map(|_| f())
        .collect::<Result<Vec<QueueRun>, String>>()?;
    v.sort_by(|a, b| a.mpps.total_cmp(&b.mpps));
    Ok(v[v.len() / 2].clone())
}

fn split(r: &QueueRun) -> String {
    let all = r.per_queue.iter().sum::<u64>().max(1) as f64;
    (r.per_queue.iter().enumerate())
        .map(|(q, &n)| format!("q{q} {n} ({:.0}%)", 100.0 * n as f64 / all))
        .collect::<Vec<_>>()
        .join(", ")
}

fn cpu_shares(r: &QueueRun) -> String {
    (r.cpus.iter().enumerate())
        .map(|(i, c)| {
            format!(
                "cpu{i} user {:.0}% sys {:.0}% softirq {:.0}% idle {:.0}%",
                100.0 * c[0],
                100.0 * c[1],
                100.0 * c[2],
                100.0 * c[3]
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Timestamp-counter cycles per nanosecond (`None` without one).
fn tsc_per_ns() -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        let t = std::time::Instant::now();
        // SAFETY: rdtsc has no preconditions on x86-64.
        let a = unsafe { core::arch::x86_64::_rdtsc() };
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: as above.
        let b = unsafe { core::arch::x86_64::_rdtsc() };
        Some(b.wrapping_sub(a) as f64 / t.elapsed().as_nanos() as f64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

type Rows = Vec<(usize, Result<QueueRun, String>)>;

/// Prints flat-out runs on 1 and 2 queues and their ratio; the 1-queue
/// rate.
fn show_flat(name: &str, rows: &Rows, ghz: Option<f64>) {
    for (q, r) in rows {
        match r {
            Ok(r) => {
                println!(
                    "{name}, {q} queue(s): {:.3} Mpps, received {} of {} sent, {}",
                    r.mpps,
                    r.received,
                    r.sent,
                    split(r)
                );
                println!(
                    "  while sending ({:.2} s): senders {:.2} CPU-s, datapath {:.2} CPU-s, others {:.2} CPU-s; {}",
                    r.seconds,
                    r.sender_cpu,
                    r.receiver_cpu,
                    r.others,
                    cpu_shares(r)
                );
                let n = r.received.max(1) as f64;
                println!(
                    "  per packet received: senders (with the kernel's work in their context) {:.0} ns, datapath busy {:.0} ns",
                    r.sender_cpu * 1e9 / n,
                    ghz.map_or(f64::NAN, |g| r.busy_cycles as f64 / g / n)
                );
            }
            Err(e) => println!("{name}, {q} queue(s): skipped: {e}"),
        }
    }
    if let [(_, Ok(one)), (_, Ok(two))] = &rows[..] {
        let x = two.mpps / one.mpps;
        println!(
            "{name}: 2 queues / 1 queue: {x:.2}x (goal at least 1.8x: {})",
            if x >= 1.8 { "met" } else { "not met" }
        );
    }
    // One queue keeps the work apart: the sender and the kernel's copy
    // on one CPU, the PMD thread on the other. Two queues share both CPUs
    // between all of it: at best 2 CPU-seconds / (sender + datapath time
    // per packet) packets a second, if nothing spun or waited.
    if let Some((_, Ok(one))) = rows.first()
        && let Some(g) = ghz
    {
        let n = one.received.max(1) as f64;
        let (s, d) = (one.sender_cpu * 1e9 / n, one.busy_cycles as f64 / g / n);
        let bound = 2e3 / (s + d);
        println!(
            "{name}: at best on 2 CPUs doing all of it: {bound:.2} Mpps = {:.2}x one queue",
            bound / one.mpps
        );
    }
}

/// `sluice datapath` with a program on one queue, then two, of a veth
/// with two queues: flat out (Mpps, the ratio, where the CPUs went), and
/// paced below what either handles (CPU per packet).
fn queue_scaling(ns: &Pair, frames: u64, runs: u64, rate: u64) {
    let obj = Path::new(SLUICE)
        .ancestors()
        .nth(2)
        .map(|t| t.join("bpf/xdp_count.o"))
        .filter(|p| p.exists());
    let Some(obj) = obj else {
        println!("\nqueues: skipped: target/bpf/xdp_count.o was not built");
        return;
    };
    setup_multiqueue(ns);
    println!(
        "\nsluice datapath --prog xdp_count.o (JIT, PASS counted) on a veth with 2 RX/2 TX queues,\n\
         one `sluice gen` per queue pinned to CPU i (veth picks the RX queue by the sending CPU);\n\
         {frames} frames flat out; Mpps = received / the slowest sender's time (median of {runs})"
    );
    let flat = |extra: &[&str]| -> Rows {
        [1, 2]
            .iter()
            .map(|&q| {
                let r = median_run(runs, || measure_queues(ns, &obj, q, extra, frames, None));
                (q, r)
            })
            .collect()
    };
    let ghz = tsc_per_ns();
    show_flat("PMD thread per queue (default)", &flat(&[]), ghz);
    show_flat("non-PMD (one thread in poll())", &flat(&["--no-pmd"]), ghz);

    // Paced: the senders hold `rate` in all, below what one queue
    // handles, so each configuration does the same work and its CPU per
    // packet can be compared. The datapath's PMD threads spin whatever
    // the load, so their CPU time says nothing per packet: their busy
    // cycles (polls that handled packets) do. A paced `sluice gen` sends
    // a twentieth of a second's worth at a time at full speed: rings of
    // 16,384 hold such a burst while a PMD thread waits for its CPU.
    let paced_frames = rate * 3;
    let big = ["--ring-size", "16384", "--frames", "32768"];
    println!(
        "\npaced: {rate} packets/s in all, {paced_frames} frames, {}; per packet received (median of {runs} by rate):",
        big.join(" ")
    );
    println!(
        "{:<8}{:>8}{:>10}{:>18}{:>18}{:>14}",
        "queues", "Mpps", "received", "sender+kernel ns", "datapath busy ns", "others CPU-s"
    );
    let mut per_packet = Vec::new();
    for q in [1, 2] {
        match median_run(runs, || {
            measure_queues(ns, &obj, q, &big, paced_frames, Some(rate))
        }) {
            Ok(r) => {
                let n = r.received.max(1) as f64;
                let sender = r.sender_cpu * 1e9 / n;
                let busy = ghz.map_or(f64::NAN, |g| r.busy_cycles as f64 / g / n);
                println!(
                    "{:<8}{:>8.3}{:>9.1}%{:>18.0}{:>18.0}{:>14.2}   {}",
                    q,
                    r.mpps,
                    100.0 * r.received as f64 / r.sent.max(1) as f64,
                    sender,
                    busy,
                    r.others,
                    split(&r)
                );
                per_packet.push((sender, busy));
            }
            Err(e) => println!("{q:<8}skipped: {e}"),
        }
    }
    if let [a, b] = &per_packet[..] {
        println!(
            "2 queues / 1 queue per packet: sender+kernel {:.2}x, datapath busy {:.2}x",
            b.0 / a.0,
            b.1 / a.1
        );
    }
}

fn main() {
    if !kernel::privileged() {
        println!("skipped: the AF_XDP benchmark needs root (namespaces, XDP, AF_XDP)");
        return;
    }
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let frames = env("SLUICE_XSK_FRAMES", 3_000_000);
    let runs = env("SLUICE_XSK_RUNS", 3).max(1);
    let rate = env("SLUICE_XSK_RATE", 200_000).max(1);
    let cases = std::env::var("SLUICE_XSK_CASES").unwrap_or("baseline,ablation,queues".into());
    let case = |name: &str| cases.split(',').any(|c| c.trim() == name);
    let dir = std::env::temp_dir().join(format!("sluice-xsk-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let baseline = build_baseline(&dir);
    let ns = setup();
    let base = |bench: &str| -> Result<f64, String> {
        let path = baseline.as_ref().map_err(Clone::clone)?;
        median(runs, || {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", &ns.b])
                .arg(path)
                .args(["slb_rx", bench, "native", "60"]);
            measure(&ns, c, handled(bench), frames)
        })
    };
    let ours = |bench: &str, extra: &[&str]| {
        median(runs, || {
            measure(&ns, sluice_xsk(&ns, bench, extra), handled(bench), frames)
        })
    };
    let show = |r: &Result<f64, String>| match r {
        Ok(v) => format!("{v:.3}"),
        Err(e) => format!("skipped: {e}"),
    };
    let ratio = |a: &Result<f64, String>, b: &Result<f64, String>| match (a, b) {
        (Ok(a), Ok(b)) => format!("{:.2}x", a / b),
        _ => "-".into(),
    };

    if case("baseline") {
        println!(
            "AF_XDP on veth, native XDP, copy mode, {frames} frames flat out; Mpps handled (median of {runs})"
        );
    }
    if case("baseline") {
        let base_rx = base("rxdrop");
        let sl_rx = ours("rxdrop", &[]);
        let base_fwd = base("l2fwd");
        let sl_fwd = ours("l2fwd", &[]);
        println!(
            "{:<34}{:>12}{:>12}{:>10}",
            "", "baseline", "sluice", "ratio"
        );
        println!(
            "{:<34}{:>12}{:>12}{:>10}",
            "rxdrop",
            show(&base_rx),
            show(&sl_rx),
            ratio(&sl_rx, &base_rx)
        );
        println!(
            "{:<34}{:>12}{:>12}{:>10}",
            "l2fwd",
            show(&base_fwd),
            show(&sl_fwd),
            ratio(&sl_fwd, &base_fwd)
        );
        println!("sluice l2fwd / sluice rxdrop: {}", ratio(&sl_fwd, &sl_rx));
    }

    if case("ablation") {
        println!("\nablation (sluice; one change from the default each):");
        let rows: &[(&str, &str, &[&str])] = &[
            (
                "rxdrop, PMD, stack pool, metadata array (default)",
                "rxdrop",
                &[],
            ),
            ("rxdrop, non-PMD (poll())", "rxdrop", &["--no-pmd"]),
            ("rxdrop, ring pool", "rxdrop", &["--pool", "ring"]),
            ("rxdrop, list pool", "rxdrop", &["--pool", "list"]),
            ("rxdrop, metadata inline", "rxdrop", &["--meta", "inline"]),
            (
                "rxdrop, shared-UMEM design (pool behind a mutex)",
                "rxdrop",
                &["--shared-umem"],
            ),
            ("l2fwd, batched kicks (default)", "l2fwd", &[]),
            ("l2fwd, kick every batch", "l2fwd", &["--kick-at", "1"]),
            ("l2fwd, non-PMD (poll())", "l2fwd", &["--no-pmd"]),
            ("l2fwd, metadata inline", "l2fwd", &["--meta", "inline"]),
            (
                "l2fwd, shared-UMEM design (pool behind a mutex)",
                "l2fwd",
                &["--shared-umem"],
            ),
        ];
        for (name, bench, extra) in rows {
            println!("{name:<52}{:>12}", show(&ours(bench, extra)));
        }
    }
    if case("queues") {
        queue_scaling(&ns, frames, runs, rate);
    }
    drop(ns);
    let _ = std::fs::remove_dir_all(&dir);
}
