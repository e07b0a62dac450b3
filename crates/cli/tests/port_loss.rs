//! `sluice datapath` when a port's interface is deleted under traffic
//! (root; namespaces and veth pairs made and deleted by the test): one
//! line naming the port, the other ports carry on (or, with none left,
//! the datapath stops by itself), every received frame in one verdict,
//! and at the end nothing of ours is left: no XDP program attached or
//! loaded, no AF_XDP socket, nothing pinned. docs/datapath.md.

mod common;
mod datapath_support;

use std::time::Duration;

use common::*;
use datapath_support::*;

/// The lines of `stderr` that tell of a port gone.
fn gone_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(" is gone: "))
        .collect()
}

#[test]
fn deleting_a_port_under_traffic_leaves_the_others_running() {
    if !kernel_available("veth test (AF_XDP datapath, a port deleted under traffic)") {
        return;
    }
    // A (sl_tx) -- (sl_rx) B (sl_b2) -- (sl_c) C: B's datapath routes what
    // A sends out of sl_b2 to C, where `sluice xsk rxdrop` receives it.
    let p = Pair::new("d");
    let (c, out_if) = p.third_host("d");
    let pinned_before = bpffs_entries();
    let mut receiver = spawn_sluice(&c, &["xsk", "rxdrop", "--dev", "sl_c", "--json"]);
    let mut datapath = p.spawn_router(out_if, &["--json"]);
    wait_xdp_on(&mut receiver, &c, &["sl_c"]);
    let ids = wait_xdp_on(&mut datapath, &p.b, &[VB, "sl_b2"]);
    assert_eq!(xdp_sockets(&p.b), 2, "one socket per port");
    let (rss_before, _) = memory_kib(datapath.id()).unwrap();
    // 3 s of traffic; sl_b2 (and with it its peer sl_c) goes after 1 s.
    let sender = spawn_sluice(
        &p.a,
        &["gen", "--dev", VA, "udp,count=60000,rate=20000", "--json"],
    );
    std::thread::sleep(Duration::from_secs(1));
    sh(&["ip", "-n", &p.b, "link", "del", "sl_b2"]);
    let (code, sent, err) = finish(sender, Duration::from_secs(30));
    assert_eq!(code, Some(0), "the sender: {err}");
    let sent: serde_json::Value = serde_json::from_str(&sent).unwrap();
    assert_eq!(sent["packets"], 60000, "{sent}");

    // C's receiver lost its only interface: it stopped by itself, saying
    // why, with exit status 1.
    let (code, _, err) = finish(receiver, Duration::from_secs(5));
    assert_eq!(code, Some(1), "{err}");
    let lines = gone_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("port sl_c (ifindex ") && lines[0].contains("no port left"),
        "{err}"
    );

    // B's datapath goes on with sl_rx: another burst, all received there.
    let mut datapath = datapath;
    std::thread::sleep(Duration::from_millis(300));
    assert!(datapath.try_wait().unwrap().is_none(), "the datapath ended");
    assert_eq!(xdp_attached(&p.b), vec![(VB.to_string(), ids[0])]);
    // The lost port's socket is closed at once, and its UMEM (4096 frames
    // of 4 KiB, populated) unmapped.
    assert_eq!(xdp_sockets(&p.b), 1, "the lost port's socket is closed");
    let (rss_after, _) = memory_kib(datapath.id()).unwrap();
    assert!(
        rss_after + 12 * 1024 < rss_before,
        "RSS {rss_before} KiB before the loss, {rss_after} KiB after"
    );
    p.send("udp,count=2000,rate=20000", "live");
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&datapath);
    let (code, out, err) = finish(datapath, Duration::from_secs(10));
    assert_eq!(code, Some(0), "stopped as asked, one port left: {err}");
    let lines = gone_lines(&err);
    assert_eq!(lines.len(), 1, "one line for the lost port: {err}");
    let line = lines[0];
    assert!(
        line.starts_with(&format!(
            "sluice datapath: port sl_b2 (ifindex {out_if}) is gone: the interface was deleted"
        )) && line.ends_with("carrying on with sl_rx"),
        "{line}"
    );
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ports = s["ports"].as_array().unwrap();
    let (rx, b2) = (&ports[0], &ports[1]);
    assert_eq!(rx["gone"], serde_json::Value::Null, "{s}");
    assert!(b2["gone"].as_str().unwrap().contains("deleted"), "{s}");
    // Every frame A sent was received, or dropped by the kernel on the
    // way (on a busy machine the veth's XDP ring or the socket's RX ring
    // fills while a reader waits for a CPU: counted, never silent), and
    // routed; those for the lost port are counted as lost, on the way in
    // (after it went) or as sent frames it still held.
    let n = |v: &serde_json::Value| v.as_u64().unwrap();
    let received = n(&rx["rx_packets"]);
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        (
            "socket rx_dropped + rx_ring_full",
            socket_drops(&rx["kernel"]),
        ),
    ];
    assert_accounted("A to sl_rx", 62000, received, &drops, &s.to_string());
    let dropped: u64 = drops.iter().map(|(_, d)| d).sum();
    assert_one_verdict_each(rx);
    assert_one_verdict_each(b2);
    assert_eq!(n(&rx["verdicts"]["redirect"]), received, "{s}");
    assert_eq!(
        n(&b2["tx_packets"]) + n(&rx["lost"]) + n(&b2["lost"]),
        received,
        "each redirected frame sent or lost: {s}"
    );
    assert!(n(&b2["tx_packets"]) >= 1000, "sent before the loss: {s}");
    assert!(
        n(&rx["lost"]) + dropped >= 2000,
        "lost after the loss (or dropped by the kernel): {s}"
    );
    assert_eq!(s["frames_unaccounted"], 0, "{s}");

    // Nothing of ours left: no XDP program on sl_rx (ip and bpftool), the
    // programs unloaded, no socket, nothing pinned.
    let link = sh(&["ip", "-n", &p.b, "link", "show", VB]);
    assert!(!link.contains("xdp"), "{link}");
    assert_eq!(xdp_attached(&p.b), vec![]);
    for id in ids {
        assert!(!prog_exists(id), "program {id} is still loaded");
    }
    assert_eq!(xdp_sockets(&p.b), 0);
    assert_eq!(xdp_sockets(&c), 0);
    let pinned = new_bpffs_entries(&pinned_before, &bpffs_entries());
    assert!(pinned.is_empty(), "pinned: {pinned:?}");
}

#[test]
fn losing_every_port_stops_the_datapath_cleanly() {
    if !kernel_available("veth test (AF_XDP datapath, its only port deleted)") {
        return;
    }
    let p = Pair::new("e");
    let mut datapath = spawn_sluice(
        &p.b,
        &[
            "datapath",
            "--port",
            VB,
            "--prog",
            &object_path("xdp_drop"),
            "--no-pmd",
            "--json",
        ],
    );
    let ids = wait_xdp_on(&mut datapath, &p.b, &[VB]);
    let sender = spawn_sluice(
        &p.a,
        &["gen", "--dev", VA, "udp,count=40000,rate=20000", "--json"],
    );
    std::thread::sleep(Duration::from_millis(700));
    sh(&["ip", "-n", &p.b, "link", "del", VB]);
    let t0 = std::time::Instant::now();
    let (code, out, err) = finish(datapath, Duration::from_secs(5));
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "it took {:?}",
        t0.elapsed()
    );
    // The sender's interface went with the pair.
    let _ = finish(sender, Duration::from_secs(10));
    assert_eq!(code, Some(1), "stopped by itself: {err}");
    let lines = gone_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].starts_with("sluice datapath: port sl_rx (ifindex ")
            && lines[0].ends_with("no port left, stopping"),
        "{err}"
    );
    // The summary is printed all the same.
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    let port = &s["ports"][0];
    assert!(port["gone"].as_str().unwrap().contains("deleted"), "{s}");
    assert!(port["rx_packets"].as_u64().unwrap() > 1000, "{s}");
    assert_one_verdict_each(port);
    assert_eq!(port["verdicts"]["drop"], port["rx_packets"], "{s}");
    for id in ids {
        assert!(!prog_exists(id), "program {id} is still loaded");
    }
    assert_eq!(xdp_sockets(&p.b), 0);
}

#[test]
fn a_port_set_down_and_up_again_is_not_lost() {
    if !kernel_available("veth test (AF_XDP datapath, a port set down and up)") {
        return;
    }
    // Down is not gone: the sockets stay bound and the program attached,
    // and frames flow again once the link is up.
    let p = Pair::new("u");
    let mut datapath = spawn_sluice(
        &p.b,
        &[
            "datapath",
            "--port",
            VB,
            "--prog",
            &object_path("xdp_parse_tx"),
            "--json",
        ],
    );
    let ids = wait_xdp_on(&mut datapath, &p.b, &[VB]);
    p.send("udp,count=3000,rate=20000", "live");
    sh(&["ip", "-n", &p.b, "link", "set", VB, "down"]);
    std::thread::sleep(Duration::from_millis(500));
    sh(&["ip", "-n", &p.b, "link", "set", VB, "up"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(xdp_attached(&p.b), vec![(VB.to_string(), ids[0])]);
    p.send("udp,count=3000,rate=20000", "live");
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&datapath);
    let (code, out, err) = finish(datapath, Duration::from_secs(10));
    assert_eq!(code, Some(0), "{err}");
    assert!(gone_lines(&err).is_empty(), "{err}");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    let port = &s["ports"][0];
    assert_eq!(port["gone"], serde_json::Value::Null, "{s}");
    let received = port["rx_packets"].as_u64().unwrap();
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        (
            "socket rx_dropped + rx_ring_full",
            socket_drops(&port["kernel"]),
        ),
    ];
    assert_accounted("A to sl_rx", 6000, received, &drops, &s.to_string());
    assert_eq!(port["verdicts"]["tx"], received, "{s}");
    assert_eq!(port["tx_packets"], received, "{s}");
    assert_one_verdict_each(port);
    assert_eq!(s["frames_unaccounted"], 0, "{s}");
}

#[test]
fn a_monitor_on_the_datapath_stops_when_its_interface_goes() {
    if !kernel_available("veth test (monitor on AF_XDP, its interface deleted)") {
        return;
    }
    // `sluice monitor --datapath afxdp` waits in poll(), which says
    // nothing of an unbound socket: it must look at the interface.
    let p = Pair::new("n");
    let mut monitor = spawn_sluice(
        &p.b,
        &[
            "monitor",
            "flows",
            "--dev",
            VB,
            "--datapath",
            "afxdp",
            "--json",
        ],
    );
    let ids = wait_xdp_on(&mut monitor, &p.b, &[VB]);
    p.send("udp,flows=10,count=1000,rate=20000", "live");
    // Time for the monitor to read what arrived (a busy machine may keep
    // it waiting for a CPU); what the veth refused is read before the
    // pair goes.
    std::thread::sleep(Duration::from_millis(1000));
    let refused = xmit_refused(&p.a, VA);
    sh(&["ip", "-n", &p.b, "link", "del", VB]);
    let t0 = std::time::Instant::now();
    let (_, out, err) = finish(monitor, Duration::from_secs(5));
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "it took {:?}",
        t0.elapsed()
    );
    let lines = gone_lines(&err);
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("sl_rx (ifindex ") && lines[0].contains("the interface was deleted"),
        "{err}"
    );
    // The flows seen before are reported, and why the input ended.
    let last = out.lines().last().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(last).unwrap();
    let summary = &v["summary"];
    // The source's note on stderr: "... received, N dropped by the kernel".
    let socket_dropped: u64 = err
        .split(" dropped by the kernel")
        .next()
        .and_then(|h| h.rsplit(", ").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no kernel drops in the note: {err}"));
    let drops = [
        ("veth xdp_xmit_errors", refused),
        ("socket rx_dropped + rx_ring_full", socket_dropped),
    ];
    let packets = summary["packets"].as_u64().unwrap();
    assert_accounted("A to the monitor", 1000, packets, &drops, &out);
    // Ten flows of 100 frames each: a flow is seen unless all of its
    // frames were dropped.
    let flows = summary["flows"].as_u64().unwrap();
    assert!(flows <= 10 && flows * 100 >= packets, "{out}");
    if drops.iter().all(|(_, d)| *d == 0) {
        assert_eq!(flows, 10, "{out}");
    }
    let why = summary["source_error"].as_str().unwrap_or_default();
    assert!(why.contains("is gone"), "{out}");
    for id in ids {
        assert!(!prog_exists(id), "program {id} is still loaded");
    }
    assert_eq!(xdp_sockets(&p.b), 0);
}
