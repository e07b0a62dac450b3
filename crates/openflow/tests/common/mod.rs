//! Shared by the tests that run Open vSwitch's `ovs-ofctl`.
#![allow(dead_code)]

use std::io::Read;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Whether every program in `bins` is on PATH; if not, try to install
/// `packages` through apt-get. Skips loudly when they are still missing,
/// and fails instead under `SLUICE_REQUIRE_KERNEL=1`, as the kernel tests
/// do.
pub fn tools_for_test(what: &str, bins: &[&str], packages: &[&str]) -> bool {
    let have = |b: &&str| {
        Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {b}"))
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    };
    if !bins.iter().all(have) {
        let _ = Command::new("apt-get")
            .args(["-o", "DPkg::Lock::Timeout=300", "install", "-y", "-q"])
            .arg("--no-install-recommends")
            .args(packages)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status();
    }
    let missing: Vec<&str> = bins.iter().filter(|b| !have(b)).copied().collect();
    if missing.is_empty() {
        return true;
    }
    eprintln!(
        "SKIPPED {what}: {} not installed (apt-get install {})",
        missing.join(", "),
        packages.join(" ")
    );
    assert!(
        std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: {} missing",
        missing.join(", ")
    );
    false
}

/// Whether the test runs as root; skips loudly when not, and fails
/// instead under `SLUICE_REQUIRE_KERNEL=1`.
pub fn root_or_skip(what: &str) -> bool {
    // The effective uid: the second field of `Uid:` in /proc/self/status.
    let euid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Uid:"))?.to_string();
            line.split_whitespace().nth(2)?.parse::<u32>().ok()
        });
    if euid == Some(0) {
        return true;
    }
    eprintln!("SKIPPED {what}: needs root");
    assert!(
        std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "SLUICE_REQUIRE_KERNEL=1 but {what} needs root"
    );
    false
}

/// `ovs-ofctl` is there (or the test is skipped).
pub fn have_ovs_ofctl(what: &str) -> bool {
    tools_for_test(what, &["ovs-ofctl"], &["openvswitch-common"])
}

/// Runs `cmd`, killing it after `limit`: a test never hangs on a tool.
pub fn run_with_timeout(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the tool");
    // Drain the pipes in threads so that a chatty tool cannot block.
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the tool") {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let s = child.wait().expect("reap the tool");
            panic!("{cmd:?} took more than {limit:?}; killed ({s})");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    }
}

/// `ovs-ofctl ofp-print` of `bytes`: its text (the test fails when the
/// tool does).
pub fn ofp_print(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let out = run_with_timeout(
        Command::new("ovs-ofctl").args(["ofp-print", &hex]),
        Duration::from_secs(20),
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "ovs-ofctl ofp-print {hex} failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}
