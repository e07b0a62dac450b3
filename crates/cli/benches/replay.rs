//! A whole replay, process and all: `sluice run xdp_count.o --pcap F` on a
//! capture of 2M 64-byte UDP packets in the page cache, on one thread and
//! on every core, beside `tcpdump -n -r F 'udp port 53' -w /dev/null` on
//! the same file in the same run; and `sluice filter -r F -w /dev/null
//! EXPR` (its classic interpreter, and `--engine jit`, the classic JIT)
//! beside tcpdump for a simple expression, a complex one and one that
//! reads `len`. Prints the median of 5 runs of each: seconds, packets per
//! second, peak resident memory, and the ratios the per-packet issue
//! (45) states its goals in; beside the threads' ratio, the machine's own
//! scaling (one one-thread replay per core, all at once), which bounds it.
//!
//! `cargo bench -p sluice --bench replay` (`SLUICE_BENCH_PACKETS`, default
//! 2,000,000).

use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Runs a command to its end: wall seconds and peak resident KiB (the
/// child's own, from `wait4`).
// The child is reaped by `wait4`, which also gives its resource usage.
#[allow(clippy::zombie_processes)]
fn measure(cmd: &mut Command) -> (f64, u64) {
    let start = Instant::now();
    let child = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("the command starts");
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for wait4 to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, with valid pointers to our locals.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(pid, child.id() as i32, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{cmd:?} failed"
    );
    (seconds, usage.ru_maxrss as u64)
}

/// Runs several commands at once: wall seconds until the last ends.
fn measure_together(cmds: Vec<Command>) -> f64 {
    let start = Instant::now();
    let children: Vec<_> = cmds
        .into_iter()
        .map(|mut c| {
            c.stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("the command starts")
        })
        .collect();
    for mut child in children {
        assert!(child.wait().expect("wait").success(), "a command failed");
    }
    start.elapsed().as_secs_f64()
}

fn median(mut runs: Vec<(f64, u64)>) -> (f64, u64) {
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    runs[runs.len() / 2]
}

fn runs(mut make: impl FnMut() -> Command) -> (f64, u64) {
    median((0..5).map(|_| measure(&mut make())).collect())
}

/// Seconds and peak KiB of a command.
type Run = (f64, u64);

/// An expression, `sluice filter`'s runs (by engine), tcpdump's.
type FilterRuns<'a> = (&'a str, Vec<(&'a str, Run)>, Option<Run>);

/// An expression cut for a table row.
fn short(expr: &str) -> String {
    match expr.char_indices().nth(14) {
        Some((i, _)) => format!("{}...", &expr[..i]),
        None => expr.to_string(),
    }
}

fn main() {
    let packets: u64 = std::env::var("SLUICE_BENCH_PACKETS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000_000);
    let dir = std::env::temp_dir().join(format!("sluice-bench-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let obj = dir.join("xdp_count.o");
    std::fs::write(&obj, programs::object("xdp_count").expect("the example")).expect("object");
    let pcap = dir.join("big.pcap");
    let mut sink = capture::PcapSink::create(&pcap).expect("the capture");
    let spec = format!("udp,flows=1000,size=64,count={packets},dport=53");
    for (ts, p) in packet::GenSpec::parse(&spec).expect("spec").packets() {
        sink.write(&p, ts).expect("writing the capture");
    }
    sink.finish().expect("the capture");
    // Into the page cache, a chunk at a time: a child's peak memory counts
    // its parent's at the moment it was spawned, so this process stays small.
    let mut f = std::fs::File::open(&pcap).expect("the capture");
    std::io::copy(&mut f, &mut std::io::sink()).expect("reading the capture");

    let sluice = |threads: &str| {
        let (obj, pcap) = (obj.clone(), pcap.clone());
        let threads = threads.to_string();
        move || {
            let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
            c.arg("run")
                .arg(&obj)
                .arg("--pcap")
                .arg(&pcap)
                .args(["--threads", &threads]);
            c
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let one = runs(sluice("1"));
    let all = runs(sluice(&cores.to_string()));
    // The machine's own scaling, the baseline for the threads' ratio: one
    // one-thread replay per core at once (nothing shared but the machine:
    // its memory bandwidth, its caches, the host's other guests).
    let mut together: Vec<f64> = (0..5)
        .map(|_| measure_together((0..cores).map(|_| sluice("1")()).collect()))
        .collect();
    together.sort_by(f64::total_cmp);
    let together = together[together.len() / 2];
    let tcpdump = Path::new("/usr/bin/tcpdump").exists().then(|| {
        runs(|| {
            let mut c = Command::new("/usr/bin/tcpdump");
            c.args(["-n", "-r"])
                .arg(&pcap)
                .args(["udp port 53", "-w", "/dev/null"]);
            c
        })
    });
    // `sluice filter` against tcpdump on the same expressions.
    let complex = "(tcp or udp) and not port 22 and (ip[8] > 32 or len > 100) and not ip6";
    let filters: Vec<FilterRuns> = ["udp port 53", complex, "len > 100 and udp"]
        .into_iter()
        .map(|expr| {
            let ours = ["interp", "jit"]
                .into_iter()
                .map(|engine| {
                    let run = runs(|| {
                        let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
                        c.args(["filter", "--engine", engine, "-r"])
                            .arg(&pcap)
                            .args(["-w", "/dev/null", expr]);
                        c
                    });
                    (engine, run)
                })
                .collect();
            let theirs = Path::new("/usr/bin/tcpdump").exists().then(|| {
                runs(|| {
                    let mut c = Command::new("/usr/bin/tcpdump");
                    c.args(["-n", "-r"])
                        .arg(&pcap)
                        .args([expr, "-w", "/dev/null"]);
                    c
                })
            });
            (expr, ours, theirs)
        })
        .collect();
    let mpps = |s: f64| packets as f64 / s / 1e6;
    println!("{packets} packets of 64 bytes, median of 5 runs");
    println!(
        "{:<48} {:>9} {:>9} {:>11}",
        "", "seconds", "Mpps", "peak KiB"
    );
    let row = |name: &str, (s, kib): (f64, u64)| {
        println!("{name:<48} {s:>9.3} {:>9.2} {kib:>11}", mpps(s));
    };
    row("sluice run, 1 thread", one);
    row(&format!("sluice run, {cores} threads"), all);
    if let Some(t) = tcpdump {
        row("tcpdump -r 'udp port 53'", t);
        println!(
            "sluice (1 thread) / tcpdump speed: {:.2}x (goal >= 3)",
            t.0 / one.0
        );
        println!(
            "sluice peak memory / tcpdump's: {:.2}x (goal < 2, maps aside)",
            one.1 as f64 / t.1 as f64
        );
    } else {
        println!("tcpdump: not installed (./dev.sh setup installs it)");
    }
    println!(
        "{:<48} {together:>9.3} {:>9.2}",
        format!("{cores} one-thread replays at once"),
        mpps(together / cores as f64)
    );
    let machine = cores as f64 * one.0 / together;
    println!(
        "{cores} threads / 1 thread speed: {:.2}x (goal >= 1.8 on 2 cores); the machine's own \
         ({cores} one-thread replays at once): {machine:.2}x",
        one.0 / all.0
    );
    for (expr, ours, theirs) in &filters {
        for (engine, run) in ours {
            row(
                &format!("sluice filter --engine {engine} '{}'", short(expr)),
                *run,
            );
        }
        if let Some(t) = theirs {
            row(&format!("tcpdump '{}'", short(expr)), *t);
            for (engine, run) in ours {
                println!(
                    "sluice filter --engine {engine} / tcpdump speed: {:.2}x (goal >= 4)",
                    t.0 / run.0
                );
            }
        }
        if let [(_, interp), (_, jit)] = ours[..] {
            println!(
                "sluice filter --engine jit / --engine interp speed: {:.2}x (goal > 1)",
                interp.0 / jit.0
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
