//! What the namespace tests share: a veth pair between two network
//! namespaces (created by the test, deleted on drop, also when it fails)
//! and running `sluice` and `ip`.
#![allow(dead_code)] // each test file uses part of it

use std::path::PathBuf;
use std::process::Command;

pub const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

pub fn kernel_available(what: &str) -> bool {
    kernel::available_for_test(what)
}

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
    pub a: String,
    pub b: String,
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
        let id = std::process::id();
        let pair = Pair {
            a: format!("slt{id}{tag}a"),
            b: format!("slt{id}{tag}b"),
            pins: PathBuf::from(format!("/sys/fs/bpf/sluice-test-{id}-{tag}")),
        };
        sh(&["ip", "netns", "add", &pair.a]);
        sh(&["ip", "netns", "add", &pair.b]);
        let q = queues.to_string();
        sh(&[
            "ip",
            "link",
            "add",
            VA,
            "netns",
            &pair.a,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            VB,
            "netns",
            &pair.b,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ]);
        // No IPv6 (router solicitations, DAD) and no addresses (ARP): only
        // the test's own frames cross the link.
        for ns in [&pair.a, &pair.b] {
            sh(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
            ]);
            sh(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.default.disable_ipv6=1",
            ]);
        }
        sh(&["ip", "-n", &pair.a, "link", "set", VA, "up"]);
        sh(&["ip", "-n", &pair.b, "link", "set", VB, "up"]);
        pair
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
        // Deleting a namespace deletes its veth end, which takes the peer,
        // the XDP programs and the qdiscs with it.
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        let _ = std::fs::remove_dir_all(&self.pins);
    }
}

pub fn object_path(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../target/bpf/{name}.o"))
        .display()
        .to_string()
}

/// Every capture of tcpdump's test suite (`../shared/pcaps/tcpdump`), sorted.
pub fn captures() -> Vec<std::path::PathBuf> {
    let dir =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pcaps/tcpdump");
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
        .collect();
    v.sort();
    v
}

/// A namespace of a test, deleted on drop.
pub struct Netns(pub String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

impl Pair {
    /// A third host C behind b: namespace C with `sl_c`, the peer of a new
    /// veth `sl_b2` in b, both up. Returns C and `sl_b2`'s index in b.
    pub fn third_host(&self, tag: &str) -> (Netns, u32) {
        let c = Netns(format!("slt{}{tag}c", std::process::id()));
        sh(&["ip", "netns", "add", &c.0]);
        sh(&[
            "ip", "link", "add", "sl_b2", "netns", &self.b, "type", "veth", "peer", "name", "sl_c",
            "netns", &c.0,
        ]);
        sh(&["ip", "-n", &self.b, "link", "set", "sl_b2", "up"]);
        sh(&["ip", "-n", &c.0, "link", "set", "sl_c", "up"]);
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

/// Whether this test runs as root. When not, the skip is loud, and a
/// failure under `SLUICE_REQUIRE_KERNEL=1` (CI).
pub fn root_available(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED {what}: needs root");
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: not root"
        );
    }
    root
}
