//! What the root benchmarks share besides testkit's namespaces: running
//! a command, waiting for an XDP program.
#![allow(dead_code)] // each benchmark uses part of it

use std::process::Command;

/// Runs a command; panics naming it when it fails.
pub fn sh(args: &[&str]) {
    let ok = Command::new(args[0])
        .args(&args[1..])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{args:?} failed");
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
