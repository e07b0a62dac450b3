//! `sluice capture` on a veth pair between two network namespaces of the
//! test's own (deleted at the end, also when it fails): the kernel runs the
//! tcpdump expression on the socket, so only matching frames are written;
//! `-c` and `--duration` end it. Needs root: without it the test skips
//! loudly, and fails under `SLUICE_REQUIRE_KERNEL=1`.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

mod common;

use common::*;

/// Sends UDP to port 53 and TCP to port 80 from namespace `a` every 200 ms
/// until `child` ends (or `within` passed: then SIGINT).
fn feed_until_done(p: &Pair, mut child: Child, within: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < within {
        for spec in [
            "udp,flows=2,size=80,count=5,dport=53",
            "tcp,flows=2,size=80,count=5,dport=80",
        ] {
            sluice(&[
                "--netns", &p.a, "gen", "--dev", VA, spec, "--method", "packet",
            ]);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    // SAFETY: signalling our own child by its PID; harmless if it ended.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    child.wait_with_output().unwrap()
}

fn report(out: &Output) -> serde_json::Value {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"))
}

#[test]
fn capture_writes_only_what_the_kernel_filter_accepts() {
    if !kernel_available("sluice capture (veth pair)") {
        return;
    }
    let p = Pair::new("cap");
    let file = std::env::temp_dir().join(format!("sluice-capture-{}.pcap", std::process::id()));
    let child = spawn_sluice(
        &p.b,
        &[
            "capture",
            "-i",
            VB,
            "-c",
            "12",
            "-w",
            file.to_str().unwrap(),
            "--json",
            "udp",
            "port",
            "53",
        ],
    );
    let v = report(&feed_until_done(&p, child, Duration::from_secs(20)));
    assert_eq!(v["captured"], 12, "{v}");
    assert_eq!(v["expression"], "udp port 53");
    assert!(v["kernel_drops"].is_u64());
    let frames: Vec<Vec<u8>> = io::PcapSource::open(&file)
        .unwrap()
        .map(|f| f.unwrap().data)
        .collect();
    let _ = std::fs::remove_file(&file);
    assert_eq!(frames.len(), 12);
    let dns = cbpf::compile_expr("udp port 53", cbpf::ETHERNET, 65535).unwrap();
    for f in &frames {
        assert_ne!(
            cbpf::run(&dns, f, &cbpf::Meta::default()).unwrap().ret,
            0,
            "a frame the filter refuses was written"
        );
    }

    // --duration ends a capture that sees nothing; a bad expression fails
    // before anything is opened.
    let quiet = spawn_sluice(
        &p.b,
        &["capture", "-i", VB, "--duration", "0.5", "--json", "icmp"],
    );
    let start = Instant::now();
    let out = quiet.wait_with_output().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(report(&out)["captured"], 0);
    let bad = spawn_sluice(&p.b, &["capture", "-i", VB, "udp", "port"])
        .wait_with_output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("syntax error"));
}
