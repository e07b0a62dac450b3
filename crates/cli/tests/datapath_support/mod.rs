//! What the datapath's fault and soak tests share: what the kernel says
//! about a namespace (XDP programs attached, AF_XDP sockets open; a veth's
//! counters are testkit's) and about a process (its memory).
#![allow(dead_code)] // each test file uses part of it
#![allow(unused_imports)] // each test file uses part of testkit's too

use std::process::{Child, Command};
use std::time::{Duration, Instant};

pub use testkit::netns::{dev_stat, in_ns, queue_sum, veth_stats, xmit_refused};

/// The XDP programs `bpftool net` shows in `ns`: (device, program id).
pub fn xdp_attached(ns: &str) -> Vec<(String, u64)> {
    let out = in_ns(ns, &["bpftool", "-j", "net", "show"]);
    assert!(out.status.success(), "bpftool net in {ns}: {out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut found = Vec::new();
    for entry in v.as_array().into_iter().flatten() {
        for x in entry["xdp"].as_array().into_iter().flatten() {
            found.push((
                x["devname"].as_str().unwrap_or("?").to_string(),
                x["id"].as_u64().unwrap_or(0),
            ));
        }
    }
    found
}

/// Waits (20 s at most: a debug `sluice` loading and verifying its
/// program on a busy machine takes seconds) until `ns` has an XDP program
/// on each of `devs`, attached by `child`; their ids. A child that ends
/// first fails the test with what it printed.
pub fn wait_xdp_on(child: &mut Child, ns: &str, devs: &[&str]) -> Vec<u64> {
    let t0 = Instant::now();
    loop {
        let attached = xdp_attached(ns);
        let ids: Vec<u64> = devs
            .iter()
            .filter_map(|d| attached.iter().find(|(n, _)| n == d).map(|(_, id)| *id))
            .collect();
        if ids.len() == devs.len() {
            // A moment more for the sockets to be registered.
            std::thread::sleep(Duration::from_millis(300));
            return ids;
        }
        if let Some(status) = child.try_wait().unwrap() {
            use std::io::Read;
            let (mut out, mut err) = (String::new(), String::new());
            if let Some(o) = child.stdout.as_mut() {
                let _ = o.read_to_string(&mut out);
            }
            if let Some(e) = child.stderr.as_mut() {
                let _ = e.read_to_string(&mut err);
            }
            panic!("ended ({status}) before attaching to {devs:?} in {ns}:\n{err}{out}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no XDP program on {devs:?} in {ns} after 20 s: {attached:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the kernel still has BPF program `id` (it frees a program
/// shortly after its last reference goes: waits up to 2 s for that).
pub fn prog_exists(id: u64) -> bool {
    let t0 = Instant::now();
    loop {
        let out = Command::new("bpftool")
            .args(["prog", "show", "id", &id.to_string()])
            .output()
            .unwrap();
        if !out.status.success() {
            return false;
        }
        if t0.elapsed() > Duration::from_secs(2) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// AF_XDP sockets open in `ns` (the XDP line of its /proc/net/protocols,
/// counted per namespace).
pub fn xdp_sockets(ns: &str) -> u64 {
    let out = in_ns(ns, &["cat", "/proc/net/protocols"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("XDP"))
        .unwrap_or_else(|| panic!("no XDP line in /proc/net/protocols of {ns}: {text}"));
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

/// The entries of the BPF file system's top directory.
pub fn bpffs_entries() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/sys/fs/bpf")
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Entries that appeared in the BPF file system between two listings,
/// leaving out the pin directories of other test processes
/// (`sluice-test-PID-...`, which run beside this one).
pub fn new_bpffs_entries(before: &[String], after: &[String]) -> Vec<String> {
    after
        .iter()
        .filter(|e| !before.contains(e) && !e.starts_with("sluice-test-"))
        .cloned()
        .collect()
}

/// `VmRSS` and `VmHWM` of process `pid` in KiB.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Sends SIGINT to our own child.
pub fn interrupt(child: &Child) {
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

/// Waits for `child` (at most `limit`; killed, by its PID, if it does not
/// end): its exit code, stdout, stderr.
pub fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: killed; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every received frame in exactly one verdict: a port's `rx_packets`
/// against the sum of its verdicts.
pub fn assert_one_verdict_each(port: &serde_json::Value) {
    let v = &port["verdicts"];
    let n = |k: &str| {
        v[k].as_u64()
            .unwrap_or_else(|| panic!("no verdict {k}: {port}"))
    };
    let sum = n("drop") + n("pass") + n("tx") + n("redirect") + n("aborted") + n("stolen");
    assert_eq!(
        port["rx_packets"].as_u64().unwrap(),
        sum,
        "rx is not the sum of the verdicts: {port}"
    );
}

/// Frames an AF_XDP socket's kernel side dropped (sluice's JSON `kernel`
/// object, XDP_STATISTICS): no free frame in the FILL ring (`rx_dropped`)
/// or the RX ring full (`rx_ring_full`).
pub fn socket_drops(kernel: &serde_json::Value) -> u64 {
    let n = |k: &str| {
        kernel[k]
            .as_u64()
            .unwrap_or_else(|| panic!("no kernel counter {k}: {kernel}"))
    };
    n("rx_dropped") + n("rx_ring_full")
}

/// Every frame sent is received or in one of the kernel's drop counters
/// (a busy machine drops some: a ring fills while its reader waits for a
/// CPU): `sent == received + sum of drops`, each drop counter named in
/// the message, with `detail` (the summaries).
pub fn assert_accounted(what: &str, sent: u64, received: u64, drops: &[(&str, u64)], detail: &str) {
    let dropped: u64 = drops.iter().map(|(_, n)| n).sum();
    let named: Vec<String> = drops.iter().map(|(k, n)| format!("{k} {n}")).collect();
    assert_eq!(
        sent,
        received + dropped,
        "{what}: sent {sent}, received {received}, kernel drops: {}; {detail}",
        named.join(", ")
    );
    if dropped > 0 {
        eprintln!(
            "{what}: {dropped} of {sent} frames dropped by the kernel ({})",
            named.join(", ")
        );
    }
}
