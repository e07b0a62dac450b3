//! What the CLI tests share: running `sluice` and `ip`, and what sluice
//! does on testkit's veth pair between two network namespaces (created
//! by the test, deleted on drop, also when it fails): attach, send, a
//! third host, the router example.
#![allow(dead_code)] // each test file uses part of it
#![allow(unused_imports)] // each test file uses part of testkit's too

use std::path::PathBuf;
use std::process::Command;

pub use testkit::{Netns, captures, kernel_available, object_path, root_available};

pub const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Runs `cmd` to success; its stdout.
fn output_of(mut cmd: Command, what: &str) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn sh(cmd: &[&str]) -> String {
    let mut c = Command::new(cmd[0]);
    c.args(&cmd[1..]);
    output_of(c, &format!("{cmd:?}"))
}

pub fn sluice(args: &[&str]) -> String {
    let mut c = Command::new(SLUICE);
    c.args(args);
    output_of(c, &format!("sluice {args:?}"))
}

/// `sluice --netns NS ARGS...` started in the background, its output kept.
pub fn spawn_sluice(ns: &str, args: &[&str]) -> std::process::Child {
    Command::new(SLUICE)
        .args(["--netns", ns])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Two namespaces, `a` sending from `va`, `b` receiving on `vb`; all of it
/// (and the pin directory) goes away on drop.
pub struct Pair {
    pub a: Netns,
    pub b: Netns,
    pub pins: PathBuf,
}

pub const VA: &str = "sl_tx";
pub const VB: &str = "sl_rx";

impl Pair {
    /// Waits (3 s at most) until `ip link show` of b's end shows
    /// `needle` (`xdp`: a program attached), then a moment more for a
    /// socket to open.
    pub fn wait_for(&self, needle: &str) {
        let t0 = std::time::Instant::now();
        while !sh(&["ip", "-n", &self.b, "link", "show", VB]).contains(needle) {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(3),
                "{VB} never showed {needle}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }

    pub fn new(tag: &str) -> Pair {
        Pair::with_queues(tag, 1)
    }

    /// A pair whose veth ends have `queues` RX and TX queues each.
    pub fn with_queues(tag: &str, queues: u32) -> Pair {
        let testkit::Pair { a, b } = testkit::Pair::with_queues(&format!("t{tag}"), VA, VB, queues);
        let id = std::process::id();
        Pair {
            a,
            b,
            pins: PathBuf::from(format!("/sys/fs/bpf/sluice-test-{id}-{tag}")),
        }
    }

    pub fn pin(&self, name: &str) -> String {
        self.pins.join(name).display().to_string()
    }

    /// `sluice --netns B attach ...`
    pub fn attach(&self, object: &str, extra: &[&str], pin: &str) -> String {
        let obj = object_path(object);
        let mut args = vec![
            "--netns", &self.b, "attach", &obj, "--dev", VB, "--pin", pin,
        ];
        args.extend(extra);
        sluice(&args)
    }

    pub fn send(&self, spec: &str, method: &str) {
        let out = sluice(&[
            "--netns", &self.a, "gen", "--dev", VA, spec, "--method", method, "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["method"],
            if method == "live" {
                "xdp-live-frames"
            } else {
                "af-packet"
            }
        );
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        // The namespaces go next (their fields): deleting one deletes its
        // veth end, which takes the peer, the XDP programs and the qdiscs
        // with it.
        let _ = std::fs::remove_dir_all(&self.pins);
    }
}

impl Pair {
    /// A third host C behind b: namespace C with `sl_c`, the peer of a new
    /// veth `sl_b2` in b, both up. Returns C and `sl_b2`'s index in b.
    pub fn third_host(&self, tag: &str) -> (Netns, u32) {
        let c = Netns::new(&format!("t{tag}c"));
        self.b.veth_to("sl_b2", &c, "sl_c", None);
        let link = sh(&["ip", "-n", &self.b, "-o", "link", "show", "sl_b2"]);
        let index = link.split(':').next().unwrap().trim().parse().unwrap();
        (c, index)
    }

    /// `sluice datapath` in b running the router example on `sl_rx` and
    /// `sl_b2` (index `out_if`, from [`third_host`](Pair::third_host)):
    /// 10.255.0.0/16 goes out of `sl_b2` to C; `extra` arguments follow.
    pub fn spawn_router(&self, out_if: u32, extra: &[&str]) -> std::process::Child {
        let nexthop = format!("hex:{out_if:02x}0000000200000000aa0200000000bb");
        let (router, out) = (object_path("xdp_router"), out_if.to_string());
        let mut args = vec![
            "datapath",
            "--port",
            VB,
            "--port",
            "sl_b2",
            "--prog",
            &router,
            "--map-update",
            "tx_ports",
            &out,
            &out,
            "--map-update",
            "routes_v4",
            "10.255.0.0/16",
            &nexthop,
        ];
        args.extend(extra);
        spawn_sluice(&self.b, &args)
    }
}
