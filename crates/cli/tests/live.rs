//! `sluice run --iface` on a veth pair between two network namespaces of
//! the test's own (deleted at the end, also when it fails): frames sent
//! from one end are read live on the other, run through example programs
//! from target/bpf, written to files and sent on out of an interface
//! (`--send-*`). Needs root: without it the test skips loudly, and fails
//! under `SLUICE_REQUIRE_KERNEL=1`.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

mod common;

use common::*;

/// Waits for `child` up to `within`, sending a burst of 20 frames from
/// namespace `a` every 200 ms meanwhile (a live run reads only what
/// arrives once its socket is open); then SIGINT if it still runs.
fn feed_until_done(p: &Pair, child: Child, within: Duration) -> Output {
    let start = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() && start.elapsed() < within {
        sluice(&[
            "--netns",
            &p.a,
            "gen",
            "--dev",
            VA,
            "udp,flows=4,size=80,count=20",
            "--method",
            "packet",
        ]);
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(child)
}

/// SIGINT to `child` if it still runs; its output.
fn stop(child: Child) -> Output {
    // SAFETY: signalling our own child by its PID; harmless if it ended.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().unwrap()
}

fn report(out: &Output) -> serde_json::Value {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"))
}

fn frames_in(path: &std::path::Path) -> Vec<Vec<u8>> {
    capture::PcapSource::open(path)
        .unwrap()
        .map(|f| f.unwrap().data)
        .collect()
}

#[test]
fn run_reads_an_interface_live_counts_its_verdicts_and_sends_packets_on() {
    if !kernel_available("sluice run --iface (veth pair)") {
        return;
    }
    let p = Pair::new("live");
    let dir = std::env::temp_dir().join(format!("sluice-live-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _cleanup = Cleanup(dir.clone());

    // xdp_drop drops every frame read: exactly the limit.
    let child = spawn_sluice(
        &p.b,
        &[
            "run",
            &object_path("xdp_drop"),
            "--iface",
            VB,
            "--limit",
            "50",
            "--json",
        ],
    );
    let v = report(&feed_until_done(&p, child, Duration::from_secs(20)));
    assert_eq!(v["packets"], 50, "{v}");
    assert_eq!(v["verdicts"]["DROP"], 50, "{v}");
    assert_eq!(v["source"], format!("interface {VB} (live)"), "{v}");
    assert!(v.get("stopped").is_none(), "ended by --limit: {v}");
    let note = v["source_note"].as_str().unwrap();
    assert!(note.contains("dropped by the kernel"), "{v}");

    // xdp_pass: the passed frames go to a file and back out of vb, where a
    // second live run in the other namespace reads them (and not what it
    // sends itself).
    let back = dir.join("back.pcap");
    let listener = spawn_sluice(
        &p.a,
        &[
            "run",
            &object_path("xdp_pass"),
            "--iface",
            VA,
            "--limit",
            "30",
            "--out-pass",
            back.to_str().unwrap(),
            "--json",
        ],
    );
    let passed = dir.join("pass.pcap");
    let forwarder = spawn_sluice(
        &p.b,
        &[
            "run",
            &object_path("xdp_pass"),
            "--iface",
            VB,
            "--limit",
            "30",
            "--threads",
            "2",
            "--out-pass",
            passed.to_str().unwrap(),
            "--send-pass",
            VB,
            "--json",
        ],
    );
    // Both sockets open before the first frame: the listener must see only
    // frames that came back.
    std::thread::sleep(Duration::from_millis(300));
    let v = report(&feed_until_done(&p, forwarder, Duration::from_secs(20)));
    assert_eq!(v["verdicts"]["PASS"], 30, "{v}");
    assert_eq!(v["sent"][0]["route"], "pass", "{v}");
    assert_eq!(v["sent"][0]["interface"], VB, "{v}");
    assert_eq!(v["sent"][0]["sent"], 30, "{v}");
    let listened = {
        let start = Instant::now();
        let mut child = listener;
        while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        report(&stop(child))
    };
    assert_eq!(listened["packets"], 30, "{listened}");
    assert!(listened.get("stopped").is_none(), "{listened}");
    let mut written = frames_in(&passed);
    let mut returned = frames_in(&back);
    assert_eq!(written.len(), 30);
    // Two workers keep each flow's order, not the order across flows.
    written.sort();
    returned.sort();
    assert_eq!(written, returned, "what was written is what was sent");

    // With nothing arriving, SIGINT ends a live run at once, cleanly.
    let idle = spawn_sluice(
        &p.b,
        &["run", &object_path("xdp_pass"), "--iface", VB, "--json"],
    );
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let out = stop(idle);
    assert!(start.elapsed() < Duration::from_secs(2));
    let v = report(&out);
    assert_eq!(v["stopped"], true, "{v}");
    assert_eq!(v["packets"], 0, "{v}");

    let e = std::process::Command::new(SLUICE)
        .args(["--netns", &p.b, "run", &object_path("xdp_pass")])
        .args(["--iface", "nosuchif0"])
        .output()
        .unwrap();
    assert!(!e.status.success());
    let e = String::from_utf8_lossy(&e.stderr);
    assert!(e.contains("interface `nosuchif0`: No such device"), "{e}");
}

/// Removes a directory when the test ends.
struct Cleanup(std::path::PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
