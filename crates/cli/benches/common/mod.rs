//! What the root benchmarks share: two network namespaces joined by a veth
//! pair, created for the run and deleted however it ends.
#![allow(dead_code)] // each benchmark uses part of it

use std::process::Command;

/// The namespaces `a` (the sender's end) and `b` (the receiver's).
pub struct Namespaces {
    pub a: String,
    pub b: String,
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

/// Runs a command; panics naming it when it fails.
pub fn sh(args: &[&str]) {
    let ok = Command::new(args[0])
        .args(&args[1..])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{args:?} failed");
}

/// Namespaces `<prefix><pid>a` and `...b` with veth `tx` in the first and
/// its peer `rx` in the second, both up, IPv6 off (no stray packets).
pub fn veth_pair(prefix: &str, tx: &str, rx: &str) -> Namespaces {
    let id = std::process::id();
    let ns = Namespaces {
        a: format!("{prefix}{id}a"),
        b: format!("{prefix}{id}b"),
    };
    sh(&["ip", "netns", "add", &ns.a]);
    sh(&["ip", "netns", "add", &ns.b]);
    sh(&[
        "ip", "link", "add", tx, "netns", &ns.a, "type", "veth", "peer", "name", rx, "netns", &ns.b,
    ]);
    for (n, dev) in [(&ns.a, tx), (&ns.b, rx)] {
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

/// Waits (10 s at most) until `dev` in `ns` has an XDP program attached,
/// or has none.
pub fn wait_xdp(ns: &str, dev: &str, attached: bool) -> bool {
    for _ in 0..200 {
        let out = Command::new("ip")
            .args(["-n", ns, "link", "show", dev])
            .output()
            .unwrap();
        if String::from_utf8_lossy(&out.stdout).contains("xdp") == attached {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}
