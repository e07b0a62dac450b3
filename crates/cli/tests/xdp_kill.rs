//! A killed datapath or switch leaves no XDP program behind (root; the
//! namespaces and veth pairs are made and deleted by the test): their
//! programs are attached through bpf links of the process, which the
//! kernel removes when the process dies, SIGKILL included, so the next
//! start on the same ports works. A program of sluice's own left attached
//! the old way (netlink, held by nothing) is taken over; anything else
//! attached there is still refused. docs/datapath.md, docs/reliability.md.

mod common;
mod datapath_support;

use std::process::Child;
use std::time::{Duration, Instant};

use common::*;
use datapath_support::*;

/// SIGKILL to our own child, by its PID; waits for it.
fn kill_hard(mut child: Child) {
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL),
        "{status:?}"
    );
}

/// Waits (5 s at most) until `ns` has no XDP program on any interface.
fn wait_no_xdp(ns: &str) {
    let t0 = Instant::now();
    loop {
        let attached = xdp_attached(ns);
        if attached.is_empty() {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "XDP programs left in {ns} after the kill: {attached:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn datapath_args(prog: &str) -> Vec<&str> {
    vec![
        "datapath", "--port", VB, "--prog", prog, "--no-pmd", "--json",
    ]
}

/// Runs `child` a moment, stops it with SIGINT: it must end well; its
/// stdout and stderr.
fn stops_cleanly(child: Child, what: &str) -> (String, String) {
    std::thread::sleep(Duration::from_millis(300));
    interrupt(&child);
    let (code, out, err) = finish(child, Duration::from_secs(15));
    assert_eq!(code, Some(0), "{what}: {err}");
    (out, err)
}

#[test]
fn a_killed_datapath_leaves_no_xdp_program_and_starts_again() {
    if !kernel_available("veth test (SIGKILL of the AF_XDP datapath)") {
        return;
    }
    let p = Pair::new("k");
    let drop_prog = object_path("xdp_drop");
    let mut first = spawn_sluice(&p.b, &datapath_args(&drop_prog));
    let ids = wait_xdp_on(&mut first, &p.b, &[VB]);
    // While it runs, the port is its own: a second datapath is refused
    // (its socket cannot bind the queue), and so is `sluice attach`,
    // naming the bpf link that holds the program.
    let out = std::process::Command::new(SLUICE)
        .args(["--netns", &p.b])
        .args(datapath_args(&drop_prog))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second datapath started: {err}");
    let pin = p.pin("over");
    let out = std::process::Command::new(SLUICE)
        .args([
            "--netns",
            &p.b,
            "attach",
            &object_path("xdp_pass"),
            "--dev",
            VB,
        ])
        .args(["--pin", &pin])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "attached over the datapath: {err}");
    assert!(
        err.contains(&format!("already has XDP program id {}", ids[0]))
            && err.contains("held by bpf link id"),
        "{err}"
    );
    assert_eq!(xdp_attached(&p.b), vec![(VB.to_string(), ids[0])]);
    // `sluice detach` cannot take it away either, and says why.
    let out = std::process::Command::new(SLUICE)
        .args(["--netns", &p.b, "detach", "--dev", VB])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "detach succeeded: {err}");
    assert!(err.contains("held by bpf link id"), "{err}");

    kill_hard(first);
    wait_no_xdp(&p.b);
    let link = sh(&["ip", "-n", &p.b, "link", "show", VB]);
    assert!(!link.contains("xdp"), "{link}");
    assert!(!prog_exists(ids[0]), "program {} is still loaded", ids[0]);

    // The next start on the same port works, and so does its traffic.
    let mut again = spawn_sluice(&p.b, &datapath_args(&drop_prog));
    wait_xdp_on(&mut again, &p.b, &[VB]);
    p.send("udp,count=500,rate=20000", "live");
    let (out, _) = stops_cleanly(again, "the restarted datapath");
    let s: serde_json::Value = serde_json::from_str(&out).unwrap();
    let port = &s["ports"][0];
    let k = &port["kernel"];
    let n = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    assert_eq!(
        n(&port["rx_packets"]) + n(&k["rx_dropped"]) + n(&k["rx_ring_full"]),
        500,
        "{s}"
    );
    wait_no_xdp(&p.b);
}

#[test]
fn a_killed_switch_leaves_no_xdp_program_on_any_port() {
    if !kernel_available("veth test (SIGKILL of the switch with the XDP fast path)") {
        return;
    }
    let p = Pair::new("w");
    let (_c, _) = p.third_host("w");
    let ctl = std::env::temp_dir().join(format!("sluice-xdp-kill-{}.ctl", std::process::id()));
    let ctl = ctl.to_str().unwrap().to_string();
    let args = [
        "switch",
        "--port",
        VB,
        "--port",
        "sl_b2",
        "--offload",
        "xdp",
        "--ctl",
        &ctl,
        "--json",
    ];
    let mut first = spawn_sluice(&p.b, &args);
    let ids = wait_xdp_on(&mut first, &p.b, &[VB, "sl_b2"]);
    let name = sh(&["bpftool", "prog", "show", "id", &ids[0].to_string()]);
    assert!(name.contains("sluice_switch"), "{name}");
    kill_hard(first);
    wait_no_xdp(&p.b);
    assert!(!prog_exists(ids[0]), "program {} is still loaded", ids[0]);
    let _ = std::fs::remove_file(&ctl);

    let mut again = spawn_sluice(&p.b, &args);
    wait_xdp_on(&mut again, &p.b, &[VB, "sl_b2"]);
    stops_cleanly(again, "the restarted switch");
    wait_no_xdp(&p.b);
    let _ = std::fs::remove_file(&ctl);
}

#[test]
fn a_stale_program_of_sluice_is_taken_over_and_a_foreign_one_is_not() {
    if !kernel_available("veth test (stale XDP programs at datapath start)") {
        return;
    }
    let p = Pair::new("t");
    // What a killed sluice of before bpf links left: its redirect program
    // attached through netlink, held by nothing but the interface (the
    // pins that loaded it here are removed at once).
    let pin = p.pin("stale");
    p.attach("xsk", &["--mode", "native"], &pin);
    std::fs::remove_dir_all(&pin).unwrap();
    let stale = xdp_attached(&p.b);
    assert_eq!(stale.len(), 1, "{stale:?}");
    let stale_id = stale[0].1;

    let drop_prog = object_path("xdp_drop");
    let mut datapath = spawn_sluice(&p.b, &datapath_args(&drop_prog));
    let t0 = Instant::now();
    while xdp_attached(&p.b).iter().any(|(_, id)| *id == stale_id) {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the stale program is still there"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ids = wait_xdp_on(&mut datapath, &p.b, &[VB]);
    assert_ne!(ids[0], stale_id);
    let (out, err) = stops_cleanly(datapath, "the datapath taking over");
    assert!(out.contains("\"ports\""), "{out}");
    assert!(
        err.contains(&format!(
            "replaced the stale XDP program id {stale_id} (sluice_xsk, native mode) on {VB}"
        )),
        "{err}"
    );
    assert!(!prog_exists(stale_id), "the stale program is still loaded");
    wait_no_xdp(&p.b);

    // A program that is not sluice's own stays, and the start is refused.
    let pin = p.pin("foreign");
    p.attach("xdp_pass", &["--mode", "native"], &pin);
    let foreign = xdp_attached(&p.b);
    let out = std::process::Command::new(SLUICE)
        .args(["--netns", &p.b])
        .args(datapath_args(&drop_prog))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "started over a foreign program");
    assert!(
        err.contains("already has XDP program") && err.contains("detach it first"),
        "{err}"
    );
    assert_eq!(
        xdp_attached(&p.b),
        foreign,
        "the foreign program was touched"
    );
}

#[test]
fn a_killed_monitor_leaves_no_xdp_program_either() {
    if !kernel_available("veth test (SIGKILL of monitor flows in the kernel)") {
        return;
    }
    // `monitor flows --dev` runs its program in the kernel, attached for
    // the run only: through a bpf link too.
    let p = Pair::new("m");
    let args = ["monitor", "flows", "--dev", VB, "--mode", "skb", "--json"];
    let mut first = spawn_sluice(&p.b, &args);
    let ids = wait_xdp_on(&mut first, &p.b, &[VB]);
    kill_hard(first);
    wait_no_xdp(&p.b);
    assert!(!prog_exists(ids[0]), "program {} is still loaded", ids[0]);
    let mut again = spawn_sluice(&p.b, &args);
    wait_xdp_on(&mut again, &p.b, &[VB]);
    stops_cleanly(again, "the restarted monitor");
    wait_no_xdp(&p.b);
}
