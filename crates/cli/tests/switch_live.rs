//! `sluice switch` on live interfaces: two hosts, each in a network
//! namespace of its own, reach each other through the switch running in a
//! third one, over AF_XDP and over AF_PACKET ports; with flows from a file,
//! and with a real OpenFlow controller (os-ken's L2 learning switch, from
//! PyPI, installed by `./dev.sh setup`) deciding them.

mod common;
mod datapath_support;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Netns, SLUICE, kernel_available, sh};
use datapath_support::{dev_stat, queue_sum, xmit_refused};
use serde_json::Value;

/// h1 (e0, 10.9.0.1) -- (s1) sw (s2) -- (e0, 10.9.0.2) h2, deleted on drop.
struct Hosts {
    h1: Netns,
    h2: Netns,
    sw: Netns,
    /// The switch's control socket.
    ctl: PathBuf,
}

impl Hosts {
    fn new(tag: &str) -> Hosts {
        let id = std::process::id();
        let n = |x: &str| Netns::new(&format!("s{tag}{x}"));
        let t = Hosts {
            h1: n("h1"),
            h2: n("h2"),
            sw: n("sw"),
            ctl: std::env::temp_dir().join(format!("sluice-switch-{id}-{tag}.ctl")),
        };
        for (h, s, addr) in [(&t.h1, "s1", "10.9.0.1/24"), (&t.h2, "s2", "10.9.0.2/24")] {
            h.veth_to("e0", &t.sw, s, None);
            sh(&["ip", "-n", h, "addr", "add", addr, "dev", "e0"]);
            // The hosts compute their own checksums: a veth leaves them to
            // the receiver (CHECKSUM_PARTIAL), and a frame that leaves the
            // kernel for a user-space switch would arrive with a partial
            // one (Open vSwitch's AF_XDP ports ask the same).
            sh(&["ip", "netns", "exec", h, "ethtool", "-K", "e0", "tx", "off"]);
        }
        t
    }

    /// `sluice --netns SW switch ARGS... --json` in the background.
    fn switch(&self, args: &[&str]) -> Child {
        Command::new(SLUICE)
            .args(["--netns", &self.sw, "switch"])
            .args(args)
            .arg("--ctl")
            .arg(&self.ctl)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Waits until the switch's ports are open: an XDP program on both
    /// (AF_XDP) or its banner (both kinds), then a moment for the sockets.
    fn wait_ready(&self, afxdp: bool) {
        let t0 = Instant::now();
        if afxdp {
            for s in ["s1", "s2"] {
                while !sh(&["ip", "-n", &self.sw, "link", "show", s]).contains("xdp") {
                    assert!(t0.elapsed() < Duration::from_secs(5), "{s} never had XDP");
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    /// `sluice switch QUERY --json` to the running switch.
    fn query(&self, query: &str) -> Value {
        let out = common::sluice(&[
            "switch",
            query,
            "--ctl",
            self.ctl.to_str().unwrap(),
            "--json",
        ]);
        serde_json::from_str(&out).unwrap()
    }

    /// Waits (30 s at most) until the switch's OpenFlow table has a flow
    /// containing `needle` (a controller's flow installed), asking the
    /// control socket.
    fn wait_for_flow(&self, needle: &str) {
        use std::io::{Read, Write};
        let t0 = Instant::now();
        loop {
            let mut text = String::new();
            if let Ok(mut s) = std::os::unix::net::UnixStream::connect(&self.ctl) {
                let _ = s.write_all(b"dump-of-flows\n");
                let _ = s.read_to_string(&mut text);
            }
            if text.contains(needle) {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "no flow with {needle} after 30 s: {text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Pings h2 from h1 until 3 replies came (10 s at most).
    fn ping(&self) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.h1, "ping", "-c", "3", "-i", "0.2"])
            .args(["-w", "10", "10.9.0.2"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "ping: {text}");
        text
    }

    /// Sends `bytes` over TCP from h1 to h2; what h2 received.
    fn tcp_transfer(&self, bytes: usize) -> usize {
        let server = Command::new("ip")
            .args(["netns", "exec", &self.h2, "timeout", "20", "python3", "-c"])
            .arg(
                "import socket\n\
                 s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n\
                 s.bind(('10.9.0.2', 5001)); s.listen(1)\n\
                 c, _ = s.accept(); n = 0\n\
                 while True:\n    b = c.recv(65536)\n    if not b: break\n    n += len(b)\n\
                 print(n)\n",
            )
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        sh(&[
            "ip",
            "netns",
            "exec",
            &self.h1,
            "timeout",
            "20",
            "python3",
            "-c",
            &format!(
                "import socket\n\
                 c = socket.create_connection(('10.9.0.2', 5001), timeout=10)\n\
                 c.sendall(bytes(range(256)) * {}); c.close()\n",
                bytes / 256
            ),
        ]);
        let out = server.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
    }
}

/// Stops the switch with SIGINT; its JSON summary.
fn stop(child: Child) -> Value {
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"))
}

fn flows_file(tag: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("sluice-switch-{}-{tag}.flows", std::process::id()));
    std::fs::write(
        &path,
        "# a patch panel\nin_port=1,actions=output:2\nin_port=2,actions=output:1\n",
    )
    .unwrap();
    path
}

/// With no `--of`, a live switch takes OpenFlow clients on a socket file
/// beside its control socket, mode 0600: `ovs-ofctl` as root gets in
/// (the patch panel's two flows), uid 65534 does not.
fn default_management_socket_is_roots_only(mgmt: &std::path::Path) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::symlink_metadata(mgmt).expect("the default OpenFlow socket");
    assert!(m.file_type().is_socket(), "{mgmt:?}");
    assert_eq!((m.mode() & 0o777, m.uid()), (0o600, 0), "{mgmt:?}");
    let (bins, packages) = (
        ["ovs-ofctl", "setpriv"],
        ["openvswitch-common", "util-linux"],
    );
    if !testkit::tools_for_test("the default OpenFlow socket's clients", &bins, &packages) {
        return;
    }
    let target = format!("unix:{}", mgmt.display());
    let ofctl = |prefix: &[&str], cmd: &str, arg: Option<&str>| {
        let mut c = Command::new(if prefix.is_empty() {
            "ovs-ofctl"
        } else {
            prefix[0]
        });
        if !prefix.is_empty() {
            c.args(&prefix[1..]).arg("ovs-ofctl");
        }
        c.args(["-O", "OpenFlow13", "--timeout=20", cmd, &target]);
        c.args(arg);
        c.output().unwrap()
    };
    let out = ofctl(&[], "dump-flows", None);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(text.matches("actions=output:").count(), 2, "{text}");
    let nobody = [
        "setpriv",
        "--reuid",
        "65534",
        "--regid",
        "65534",
        "--clear-groups",
    ];
    let out = ofctl(&nobody, "add-flow", Some("priority=65535,actions=drop"));
    assert!(
        !out.status.success(),
        "uid 65534 programmed the switch: {out:?}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{out:?}"
    );
}

fn forwards_between_hosts(kind: &str, tag: &str) {
    let t = Hosts::new(tag);
    let flows = flows_file(tag);
    let (p1, p2) = (format!("{kind}:s1"), format!("{kind}:s2"));
    let child = t.switch(&[
        "--port",
        &p1,
        "--port",
        &p2,
        "--flows",
        flows.to_str().unwrap(),
    ]);
    t.wait_ready(kind == "afxdp");
    t.ping();
    // The running switch answers on its control socket.
    let stats = t.query("stats");
    let pmds = stats["pmds"].as_array().unwrap();
    // AF_XDP: one polling thread for both ports (as Open vSwitch's one PMD
    // thread); AF_PACKET: a thread per port.
    let threads = if kind == "afxdp" { 1 } else { 2 };
    assert_eq!(pmds.len(), threads, "{stats:#}");
    let seen: u64 = pmds.iter().map(|p| p["packets"].as_u64().unwrap()).sum();
    assert!(seen >= 8, "{stats:#}");
    assert!(
        stats["ports"][0]["rx_packets"].as_u64().unwrap() >= 4,
        "{stats:#}"
    );
    let dump = t.query("dump-flows");
    let lines: Vec<&str> = dump["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["flow"].as_str().unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{dump:#}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("in_port(1)") && l.ends_with("actions:2")),
        "{lines:?}"
    );
    assert_eq!(dump["late_pmds"].as_array().unwrap().len(), 0, "{dump:#}");
    let mgmt = t.ctl.with_extension("mgmt");
    default_management_socket_is_roots_only(&mgmt);
    let s = stop(child);
    assert!(!t.ctl.exists(), "the control socket is removed at the end");
    assert!(!mgmt.exists(), "the OpenFlow socket is removed at the end");
    let _ = std::fs::remove_file(&flows);
    // An ARP exchange and three echoes each way at least.
    let ports = s["ports"].as_array().unwrap();
    for p in ports {
        assert!(p["rx_packets"].as_u64().unwrap() >= 4, "{s:#}");
        assert!(p["tx_packets"].as_u64().unwrap() >= 4, "{s:#}");
    }
    // What came in on one port left by the other.
    assert_eq!(ports[0]["rx_packets"], ports[1]["tx_packets"], "{s:#}");
    assert_eq!(ports[1]["rx_packets"], ports[0]["tx_packets"], "{s:#}");
    // A megaflow per direction; after the first packet, the caches.
    assert_eq!(s["upcalls"], 2, "{s:#}");
    assert_eq!(s["megaflows"], 2, "{s:#}");
    let hits = s["emc_hits"].as_u64().unwrap() + s["megaflow_hits"].as_u64().unwrap();
    assert_eq!(hits + 2, s["packets"].as_u64().unwrap(), "{s:#}");
    // The OpenFlow entries have the datapath's counts.
    let flows: Vec<&str> = s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let n = ports[0]["rx_packets"].as_u64().unwrap();
    assert!(
        flows
            .iter()
            .any(|f| f.contains(&format!("n_packets={n},")) && f.contains("in_port=1")),
        "{flows:?}"
    );
    assert_eq!(s["pmds"].as_array().unwrap().len(), threads, "{s:#}");
}

#[test]
fn hosts_reach_each_other_through_the_switch_on_af_xdp_ports() {
    if !kernel_available("switch on AF_XDP ports") {
        return;
    }
    forwards_between_hosts("afxdp", "x");
}

#[test]
fn hosts_reach_each_other_through_the_switch_on_af_packet_ports() {
    if !kernel_available("switch on AF_PACKET ports") {
        return;
    }
    forwards_between_hosts("afpacket", "p");
}

/// os-ken's manager and the L2 learning switch app, as `./dev.sh setup`
/// installs them; None (a loud skip) when they are not there.
fn osken() -> Option<(PathBuf, PathBuf)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/thirdparty/osken");
    let (manager, app) = (
        root.join("bin/osken-manager"),
        root.join("apps/simple_switch_13.py"),
    );
    if manager.exists() && app.exists() {
        return Some((manager, app));
    }
    eprintln!(
        "SKIPPED os-ken test: {} is not there (./dev.sh setup installs it)",
        manager.display()
    );
    assert!(
        std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
        "SLUICE_REQUIRE_KERNEL=1 but os-ken is not installed"
    );
    None
}

/// The controller, killed on drop.
struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn os_ken_simple_switch_13_connects_two_hosts_through_the_switch() {
    if !kernel_available("switch with the os-ken controller") {
        return;
    }
    let Some((manager, app)) = osken() else {
        return;
    };
    let t = Hosts::new("k");
    let log = std::env::temp_dir().join(format!("sluice-osken-{}.log", std::process::id()));
    let controller = Controller(
        Command::new("ip")
            .args(["netns", "exec", &t.sw])
            .arg(&manager)
            .args([
                "--ofp-listen-host",
                "127.0.0.1",
                "--ofp-tcp-listen-port",
                "6653",
            ])
            .arg(&app)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let child = t.switch(&["--port", "s1", "--port", "s2", "--of", "tcp:127.0.0.1:6653"]);
    t.wait_ready(true);
    // os-ken takes a while to start: its table-miss flow says it is there.
    t.wait_for_flow("actions=CONTROLLER:65535");
    t.ping();
    let received = t.tcp_transfer(1 << 20);
    let s = stop(child);
    drop(controller);
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert_eq!(received, 1 << 20, "{s:#}");
    // The app learnt both hosts from packet-ins (datapath id 0x51 = 81)...
    assert!(log_text.contains("packet in 81"), "{log_text}");
    // ...and installed its table-miss entry and a flow per direction.
    let flows: Vec<&str> = s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        flows
            .iter()
            .any(|f| f.contains("priority=0 actions=CONTROLLER:65535")),
        "{flows:?}"
    );
    for port in ["in_port=1,", "in_port=2,"] {
        assert!(
            flows
                .iter()
                .any(|f| f.contains("priority=1,") && f.contains(port)),
            "{flows:?}"
        );
    }
    // The transfer went through the caches, not the controller.
    let packets = s["packets"].as_u64().unwrap();
    let hits = s["emc_hits"].as_u64().unwrap() + s["megaflow_hits"].as_u64().unwrap();
    assert!(packets > 700, "{s:#}");
    assert!(hits * 10 > packets * 9, "{s:#}");
}

/// A counter of h's e0 from sysfs.
fn counter(ns: &str, name: &str) -> u64 {
    sh(&[
        "ip",
        "netns",
        "exec",
        ns,
        "cat",
        &format!("/sys/class/net/e0/statistics/{name}"),
    ])
    .trim()
    .parse()
    .unwrap()
}

/// 20000 frames of 16 UDP flows from h1 through a patch panel (with the
/// XDP fast path or without); the switch's summary and the frames the
/// kernel dropped on the way (a busy machine drops some: a ring fills
/// while its reader waits for a CPU), which the counts account for.
fn generated_through_the_switch(t: &Hosts, tag: &str, offload: bool) -> (Value, u64) {
    let flows = flows_file(tag);
    let mut args = vec!["--port", "s1", "--port", "s2", "--flows"];
    args.push(flows.to_str().unwrap());
    if offload {
        args.extend(["--offload", "xdp"]);
    }
    let child = t.switch(&args);
    t.wait_ready(true);
    let before = counter(&t.h2, "rx_packets");
    common::sluice(&[
        "--netns",
        &t.h1,
        "gen",
        "--dev",
        "e0",
        "udp,flows=16,count=20000,rate=40000",
    ]);
    std::thread::sleep(Duration::from_millis(1500));
    let arrived = counter(&t.h2, "rx_packets") - before;
    let s = stop(child);
    let _ = std::fs::remove_file(&flows);
    // Live frames s1's XDP ring refused, and frames its XDP program could
    // not redirect (the AF_XDP socket's ring full); frames s2 could not
    // hand to h2 (its ring full).
    let dropped_in = xmit_refused(&t.h1, "e0") + queue_sum(&t.sw, "s1", "rx_queue_", "_drops");
    let dropped_out = dev_stat(&t.sw, "s2", "tx_dropped");
    if dropped_in + dropped_out > 0 {
        eprintln!(
            "{tag}: frames dropped by the kernel: {dropped_in} into s1, {dropped_out} out of s2"
        );
    }
    // What came in on port 1 is what the flow counted and what left by 2.
    let ports = s["ports"].as_array().unwrap();
    let rx = ports[0]["rx_packets"].as_u64().unwrap();
    // (With the fast path, a miss the program counted may still be
    // dropped on its way to the socket: counted in both.)
    assert!(
        rx < 20_010 && rx + dropped_in >= 20_000,
        "{dropped_in} dropped into s1: {s:#}"
    );
    assert!(
        arrived + dropped_out >= rx,
        "h2 got {arrived}, {dropped_out} dropped out of s2: {s:#}"
    );
    assert_eq!(ports[1]["tx_packets"].as_u64(), Some(rx), "{s:#}");
    let in1 = s["flows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .find(|f| f.contains("in_port=1"))
        .unwrap()
        .to_string();
    assert!(in1.contains(&format!("n_packets={rx},")), "{in1}: {s:#}");
    (s, dropped_in + dropped_out)
}

#[test]
fn the_xdp_fast_path_forwards_cached_flows_in_the_kernel_with_the_same_totals() {
    if !kernel_available("switch with the XDP fast path") {
        return;
    }
    let t = Hosts::new("o");
    // Frames redirected into a veth need NAPI at its other end: GRO on
    // (or an XDP program there).
    for h in [&t.h1, &t.h2] {
        sh(&["ip", "netns", "exec", h, "ethtool", "-K", "e0", "gro", "on"]);
    }
    let (user, user_drops) = generated_through_the_switch(&t, "ou", false);
    assert!(
        user["packets"].as_u64().unwrap() + user_drops >= 20_000,
        "{user:#}"
    );
    assert_eq!(user["offload"], Value::Null);
    let (fast, fast_drops) = generated_through_the_switch(&t, "ox", true);
    // Past the first frames (those that came while the first one was
    // upcalled), none reached user space.
    let off = &fast["offload"];
    let (hits, misses) = (
        off["hits"].as_u64().unwrap(),
        off["misses"].as_u64().unwrap(),
    );
    let rx = fast["ports"][0]["rx_packets"].as_u64().unwrap();
    assert_eq!(hits + misses, rx, "{fast:#}");
    assert!(hits + fast_drops >= 18_000, "{fast:#}");
    assert_eq!(
        fast["packets"].as_u64().unwrap(),
        misses,
        "user space saw the misses only: {fast:#}"
    );
    assert_eq!(fast["offload_hits"].as_u64(), Some(hits), "{fast:#}");
    assert_eq!(fast["megaflows_offloaded"], 1, "{fast:#}");
    assert!(
        fast["datapath_flows"][0]
            .as_str()
            .unwrap()
            .contains("offloaded:yes, dp:xdp"),
        "{fast:#}"
    );
    // The same totals both ways (when the kernel dropped nothing).
    if user_drops + fast_drops == 0 {
        assert_eq!(user["ports"], fast["ports"], "{user:#}\n{fast:#}");
    }
}
