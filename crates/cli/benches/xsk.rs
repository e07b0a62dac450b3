//! The AF_XDP datapath beside a libxdp baseline (xdpsock's rxdrop and
//! l2fwd, `crates/datapath/baseline/xsk_baseline.c`, built here with cc),
//! and the Open vSwitch AF_XDP paper's ablation, in two network namespaces
//! joined by a veth pair that this benchmark creates and deletes. `sluice
//! gen` sends flat out from one end (XDP live frames); the receiver at the
//! other end runs in native XDP, copy mode. Rate = frames the receiver
//! handled / the sender's time; each figure is the median of
//! `SLUICE_XSK_RUNS` runs (default 3).
//!
//! `cargo bench -p sluice --bench xsk` (root; `SLUICE_XSK_FRAMES`, default
//! 3,000,000 frames per run).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

struct Namespaces {
    a: String,
    b: String,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

fn sh(args: &[&str]) {
    let ok = Command::new(args[0])
        .args(&args[1..])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{args:?} failed");
}

fn setup() -> Namespaces {
    let id = std::process::id();
    let ns = Namespaces {
        a: format!("slb{id}a"),
        b: format!("slb{id}b"),
    };
    sh(&["ip", "netns", "add", &ns.a]);
    sh(&["ip", "netns", "add", &ns.b]);
    sh(&[
        "ip", "link", "add", "slb_tx", "netns", &ns.a, "type", "veth", "peer", "name", "slb_rx",
        "netns", &ns.b,
    ]);
    for (n, dev) in [(&ns.a, "slb_tx"), (&ns.b, "slb_rx")] {
        sh(&[
            "ip",
            "netns",
            "exec",
            n,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
        sh(&["ip", "-n", n, "link", "set", dev, "up"]);
    }
    ns
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

/// Waits (up to 10 s) until the receiving end has an XDP program
/// attached, or has none.
fn wait_xdp(ns: &str, attached: bool) -> bool {
    for _ in 0..200 {
        let out = Command::new("ip")
            .args(["-n", ns, "link", "show", "slb_rx"])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).contains("xdp") == attached {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// Starts `receiver`, sends `frames` flat out, stops the receiver; frames
/// it handled (`field` of its JSON) per second of sending.
fn measure(
    ns: &Namespaces,
    mut receiver: Command,
    field: &str,
    frames: u64,
) -> Result<f64, String> {
    let mut child: Child = receiver
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    if !wait_xdp(&ns.b, true) {
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
    wait_xdp(&ns.b, false);
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

fn sluice_xsk(ns: &Namespaces, bench: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(SLUICE);
    c.args(["--netns", &ns.b, "xsk", bench, "--dev", "slb_rx", "--json"])
        .args(extra);
    c
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

    println!(
        "AF_XDP on veth, native XDP, copy mode, {frames} frames flat out; Mpps handled (median of {runs})"
    );
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
    drop(ns);
    let _ = std::fs::remove_dir_all(&dir);
}
