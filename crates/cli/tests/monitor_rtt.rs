//! `sluice monitor rtt`: JSON lines and pping's lines on generated
//! conversations with known RTTs (the RTT values themselves are checked
//! against tshark in the monitor crate's tests), the table, the engines
//! alike, bad input refused by name, and live on a veth pair between two
//! namespaces of the test's own: real TCP connections through it, each
//! handshake measured once, nothing left attached.

mod common;

use std::process::Command;

use common::SLUICE;
use serde_json::Value;

const CONV: &str = "tcp-conv,flows=3,rtt=2..6,count=60";

fn json_lines(args: &[&str]) -> Vec<Value> {
    common::sluice(args)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn json_lines_give_every_sample_the_flows_and_a_summary() {
    let mut by_engine = Vec::new();
    for engine in ["table", "ebpf"] {
        let lines = json_lines(&[
            "monitor", "rtt", "--json", "--gen", CONV, "--engine", engine,
        ]);
        let samples: Vec<&Value> = lines.iter().filter(|v| v.get("rtt_ns").is_some()).collect();
        let flows: Vec<&Value> = lines.iter().filter_map(|v| v.get("flow")).collect();
        let summary = &lines.last().unwrap()["summary"];
        assert_eq!(
            samples.len(),
            60,
            "every packet but the 3 SYNs echoes, plus 3 handshakes"
        );
        assert_eq!(summary["handshake_samples"], 3);
        assert_eq!(summary["timestamp_samples"], 57);
        assert_eq!(summary["packets"], 60);
        assert_eq!(summary["ts_table_full"], 0);
        // The server's echoes of flow 0 (RTT 2 ms, rounded to 3 ns).
        let server0: Vec<u64> = samples
            .iter()
            .filter(|s| s["dst"] == "10.0.0.1" && s["method"] == "timestamp")
            .map(|s| s["rtt_ns"].as_u64().unwrap())
            .collect();
        assert!(
            !server0.is_empty() && server0.iter().all(|&r| r == 2_000_001),
            "{server0:?}"
        );
        // Per flow and method: 3 handshakes, 6 timestamp directions.
        assert_eq!(flows.len(), 9);
        for f in &flows {
            let n = f["samples"].as_u64().unwrap();
            let hist: u64 = f["histogram"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h.as_u64().unwrap())
                .sum();
            assert_eq!(hist, n, "{f}");
            assert_eq!(f["min_ns"], f["max_ns"], "one delay per direction: {f}");
        }
        by_engine.push(lines);
    }
    assert_eq!(
        by_engine[0], by_engine[1],
        "the eBPF program gives the reference's lines"
    );
}

#[test]
fn the_xpf_engine_prints_what_the_table_prints() {
    // IPv4 and IPv6 conversations, the table and JSON lines (--pping runs
    // pping's own rules, not the engines': refused with them, below).
    let v6 = "tcp-conv,v6,flows=4,rtt=1..3,count=200,think=50";
    for args in [
        vec!["--gen", CONV],
        vec!["--gen", CONV, "--json"],
        vec!["--gen", CONV, "--gen", v6, "--json"],
    ] {
        let run = |engine: &[&str]| {
            let out = Command::new(SLUICE)
                .env("TZ", "UTC")
                .args(["monitor", "rtt"])
                .args(&args)
                .args(engine)
                .output()
                .unwrap();
            assert!(out.status.success(), "{args:?} {engine:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        let want = run(&["--engine", "table"]);
        assert!(want.lines().count() >= 2, "{args:?}: {want}");
        for engine in ["interp", "vm", "jit"] {
            let got = run(&["--engine", "xpf", "--xpf-engine", engine]);
            assert_eq!(got, want, "{args:?} on xPF {engine}");
        }
    }
    // Tables larger than one block of xPF memory holds are refused by name.
    let out = Command::new(SLUICE)
        .args(["monitor", "rtt", "--gen", CONV, "--engine", "xpf"])
        .args(["--ts-table", "65536"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a TSval table of 65536"), "{err}");
    assert!(err.contains("1 to 4096"), "{err}");
    let out = Command::new(SLUICE)
        .args([
            "monitor", "rtt", "--gen", CONV, "--pping", "--engine", "xpf",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("pping's own rules"), "{err}");
}

#[test]
fn pping_lines_are_time_rtt_min_flow() {
    let out = Command::new(SLUICE)
        .env("TZ", "UTC")
        .args(["monitor", "rtt", "--pping", "--gen", CONV])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    // pping records no TSval of a flow before it has seen the reverse
    // flow: the 3 SYNs' TSvals are not, so the SYN/ACKs give no sample
    // (sluice's meter takes 57).
    assert_eq!(lines.len(), 54, "{text}");
    // The first: the client of flow 0 echoes the SYN/ACK's TSval after
    // its think time (the generator starts at 1 s past the epoch). pping
    // prints the packet's second (`%T`), and its delay as it computes it
    // in doubles: 100 us comes out as 99.99999... us, so "%.1lf".
    assert_eq!(
        lines[0],
        "00:00:01 100.0us 100.0us 10.0.0.1:1024+10.255.0.1:80"
    );
    assert_eq!(
        lines[1],
        "00:00:01 2.00ms 2.00ms 10.255.0.1:80+10.0.0.1:1024"
    );
    for l in &lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(f.len(), 4, "{l}");
        assert!(f[0].len() == 8 && f[0].as_bytes()[5] == b':', "{l}");
        assert!(f[1].ends_with("ms") || f[1].ends_with("us"), "{l}");
        assert!(f[3].contains('+'), "{l}");
    }
    assert!(
        // pping prints three digits after a space (" %.0f").
        text.contains(" 100us 100.0us 10.0.0.1:1024+10.255.0.1:80\n"),
        "{text}"
    );
    // Live in the kernel, pping's rules cannot run: refused by name.
    let out = Command::new(SLUICE)
        .args(["monitor", "rtt", "--pping", "--dev", "lo"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--datapath afpacket or afxdp"), "{err}");
}

#[test]
fn the_table_lists_flows_and_bad_input_is_refused() {
    let out = common::sluice(&["monitor", "rtt", "--gen", CONV]);
    assert!(
        out.starts_with("60 packets, 60 TCP: 3 handshake and 57 timestamp RTTs in 9 flows"),
        "{out}"
    );
    assert!(out.contains("handshake"), "{out}");
    for (args, why) in [
        (vec!["--gen", "tcp-conv,rtt=0.2"], "RTTs in milliseconds"),
        (vec!["--gen", CONV, "--ts-table", "0"], "--ts-table 0"),
        (vec!["--gen", CONV, "--max-age", "0"], "--max-age 0"),
        (vec!["--pcap", "/nonexistent.pcap"], "nonexistent"),
        (
            vec!["--gen", CONV, "--json", "--pping"],
            "cannot be used with",
        ),
    ] {
        let out = Command::new(SLUICE)
            .args(["monitor", "rtt"])
            .args(&args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{args:?}: {err}");
    }
}

#[test]
fn live_rtt_on_a_veth_measures_each_handshake_and_leaves_nothing_attached() {
    if !common::kernel_available("sluice monitor rtt --dev (veth pair)") {
        return;
    }
    live_handshakes("rtt", &["--mode", "skb"], "xdp");
}

#[test]
fn live_rtt_through_af_packet_with_the_xpf_engine_measures_each_handshake() {
    if !common::kernel_available("sluice monitor rtt --dev --datapath afpacket (veth pair)") {
        return;
    }
    live_handshakes("rtp", &["--datapath", "afpacket", "--engine", "xpf"], "");
}

/// Three TCP connections from a to b while `sluice monitor rtt --dev`
/// with `args` watches b's end; `attached`: what `ip link` shows while
/// it runs.
fn live_handshakes(tag: &str, args: &[&str], attached: &str) {
    let p = common::Pair::new(tag);
    // Addresses on the pair: connections from a (client) to b (server).
    common::sh(&[
        "ip",
        "-n",
        &p.a,
        "addr",
        "add",
        "10.77.0.1/24",
        "dev",
        common::VA,
    ]);
    common::sh(&[
        "ip",
        "-n",
        &p.b,
        "addr",
        "add",
        "10.77.0.2/24",
        "dev",
        common::VB,
    ]);
    common::sh(&["ip", "-n", &p.b, "link", "set", "lo", "up"]);
    let server = Command::new("ip")
        .args(["netns", "exec", &p.b, "python3", "-c"])
        .arg(
            "import socket\n\
             s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
             s.bind(('10.77.0.2', 7777)); s.listen(8)\n\
             for _ in range(3):\n    c, _ = s.accept(); c.recv(10); c.close()\n",
        )
        .spawn()
        .unwrap();
    // No --duration: on a busy machine the three clients (a Python each)
    // may take longer than any fixed run; the monitor is stopped with
    // SIGINT once they are done.
    let mut all = vec!["monitor", "rtt", "--dev", common::VB, "--json"];
    all.extend_from_slice(args);
    let child = common::spawn_sluice(&p.b, &all);
    // (AF_PACKET: nothing to see; the wait gives the socket time to open.)
    p.wait_for(attached);
    for _ in 0..3 {
        common::sh(&[
            "ip",
            "netns",
            "exec",
            &p.a,
            "python3",
            "-c",
            "import socket; c = socket.create_connection(('10.77.0.2', 7777), timeout=2); c.send(b'hi'); c.close()",
        ]);
    }
    // A moment for the last frames to be read, then SIGINT, by PID.
    std::thread::sleep(std::time::Duration::from_millis(500));
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let mut server = server;
    let _ = server.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // XDP sees what arrives at b: the clients' side, so the handshakes
    // (SYN and ACK) but no echoes of b's TSvals.
    let handshakes: Vec<&Value> = lines
        .iter()
        .filter(|v| v["method"] == "handshake")
        .collect();
    assert_eq!(handshakes.len(), 3, "{lines:?}");
    for h in &handshakes {
        assert_eq!(h["src"], "10.77.0.1");
        assert_eq!(h["dst_port"], 7777);
        let rtt = h["rtt_ns"].as_u64().unwrap();
        assert!(rtt > 0 && rtt < 1_000_000_000, "{h}");
    }
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["handshake_samples"], 3, "{summary}");
    assert_eq!(summary["lost"], 0);
    assert!(!common::sh(&["ip", "-n", &p.b, "link", "show", common::VB]).contains("xdp"));
}

#[test]
fn a_capture_out_of_time_order_is_told() {
    let dir = std::env::temp_dir().join(format!("sluice-rtt-order-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (sorted, reversed) = (dir.join("sorted.pcap"), dir.join("reversed.pcap"));
    common::sluice(&[
        "run",
        &common::object_path("xdp_pass"),
        "--gen",
        CONV,
        "--out-pass",
        sorted.to_str().unwrap(),
    ]);
    let frames: Vec<_> = capture::PcapSource::open(&sorted)
        .unwrap()
        .map(|f| f.unwrap())
        .collect();
    let mut out = capture::PcapSink::create(&reversed).unwrap();
    for f in frames.iter().rev() {
        out.write(&f.data, f.timestamp_ns).unwrap();
    }
    out.finish().unwrap();
    let rtt = |path: &std::path::Path| {
        Command::new(SLUICE)
            .args(["monitor", "rtt", "--json", "--pcap"])
            .arg(path)
            .output()
            .unwrap()
    };
    let (good, bad) = (rtt(&sorted), rtt(&reversed));
    assert!(good.status.success() && bad.status.success());
    let warned = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stderr).contains("the input is not in time order")
    };
    assert!(!warned(&good), "{}", String::from_utf8_lossy(&good.stderr));
    let err = String::from_utf8_lossy(&bad.stderr);
    let n = frames.len() - 1;
    assert!(
        err.contains(&format!(
            "{n} packets come earlier than a packet before them (the first: packet 2)"
        )),
        "{err}"
    );
    let last = String::from_utf8_lossy(&bad.stdout)
        .lines()
        .last()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .unwrap();
    assert_eq!(last["summary"]["out_of_order"], n as u64);
    // Flow accounting says so too.
    let flows = Command::new(SLUICE)
        .args(["monitor", "flows", "--json", "--pcap"])
        .arg(&reversed)
        .output()
        .unwrap();
    assert!(flows.status.success());
    let _ = std::fs::remove_dir_all(&dir);
    let err = String::from_utf8_lossy(&flows.stderr);
    assert!(err.contains("the input is not in time order"), "{err}");
}
