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
    let frames: Vec<Vec<u8>> = capture::PcapSource::open(&file)
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

/// Packet sockets open in namespace `ns` (`/proc/net/packet`, a line each
/// after the header).
fn packet_sockets(ns: &str) -> usize {
    sh(&["ip", "netns", "exec", ns, "cat", "/proc/net/packet"])
        .lines()
        .count()
        .saturating_sub(1)
}

/// The frames of a capture file.
fn frames_of(path: &std::path::Path) -> Vec<Vec<u8>> {
    capture::PcapSource::open(path)
        .unwrap()
        .map(|f| f.unwrap().data)
        .collect()
}

#[test]
fn capture_sees_both_directions_as_tcpdump_does_and_q_picks_one() {
    if !kernel_available("sluice capture -Q (veth pair)") {
        return;
    }
    let p = Pair::new("capq");
    // Addresses for a ping from b to a (the pair has none by default).
    sh(&["ip", "-n", &p.a, "addr", "add", "10.9.0.1/24", "dev", VA]);
    sh(&["ip", "-n", &p.b, "addr", "add", "10.9.0.2/24", "dev", VB]);
    let dir = std::env::temp_dir().join(format!("sluice-capture-q-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |n: &str| dir.join(n).to_str().unwrap().to_string();
    let before = packet_sockets(&p.b);
    // Three captures of ours on b's end (both ways, in, out) and tcpdump's.
    let ours: Vec<_> = [("inout", None), ("in", Some("in")), ("out", Some("out"))]
        .into_iter()
        .map(|(name, q)| {
            let w = file(&format!("{name}.pcap"));
            let mut args = vec!["capture", "-i", VB, "-w", &w, "--json"];
            if let Some(q) = q {
                args.extend(["-Q", q]);
            }
            args.push("icmp");
            (name, spawn_sluice(&p.b, &args))
        })
        .collect();
    let tcpdump = std::process::Command::new("ip")
        .args(["netns", "exec", &p.b, "tcpdump", "-U", "-n", "-i", VB])
        // Every frame handed over at once: no ring block is held back at
        // the stop.
        .arg("--immediate-mode")
        .args(["-w", &file("tcpdump.pcap"), "icmp"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Every socket open and bound before anything is sent.
    let t0 = Instant::now();
    while packet_sockets(&p.b) < before + 4 {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "captures never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    // Five echo requests leave b's end, five replies arrive on it.
    sh(&[
        "ip", "netns", "exec", &p.b, "ping", "-c", "5", "-i", "0.2", "-W", "5", "10.9.0.1",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    let mut reports = Vec::new();
    for (name, child) in ours {
        // SAFETY: signalling our own child by its PID.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        reports.push((name, report(&child.wait_with_output().unwrap())));
    }
    let mut tcpdump = tcpdump;
    // SAFETY: our own child (`ip netns exec` execs tcpdump in place).
    unsafe { libc::kill(tcpdump.id() as i32, libc::SIGINT) };
    tcpdump.wait().unwrap();
    // ICMP type: 8 echo request (out of b), 0 echo reply (into b).
    let icmp_type = |f: &Vec<u8>| f[34];
    for (name, v) in &reports {
        let frames = frames_of(&dir.join(format!("{name}.pcap")));
        let drops = v["kernel_drops"].as_u64().unwrap();
        let types: Vec<u8> = frames.iter().map(icmp_type).collect();
        let want: &[u8] = match *name {
            "in" => &[0],
            "out" => &[8],
            _ => &[8, 0],
        };
        assert!(types.iter().all(|t| want.contains(t)), "{name}: {types:?}");
        assert_eq!(
            frames.len() as u64 + drops,
            5 * want.len() as u64,
            "{name}: {v}"
        );
        if *name == "inout" && drops == 0 {
            let theirs = frames_of(&dir.join("tcpdump.pcap"));
            assert_eq!(frames.len(), theirs.len(), "both ways: tcpdump's count");
            assert!(frames == theirs, "both ways: tcpdump's frames");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
