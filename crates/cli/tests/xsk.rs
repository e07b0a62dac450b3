//! The AF_XDP datapath on real interfaces (root): `sluice xsk` and
//! `sluice datapath` between network namespaces joined by veth pairs,
//! with counts and bytes checked at the receiving end, frames accounted
//! for at shutdown, and nothing left attached. Every frame sent is
//! received or in one of the kernel's drop counters (the veth's refused
//! XDP frames, a veth's `tx_dropped`, the AF_XDP socket's XDP_STATISTICS):
//! a busy machine drops some.

mod common;
mod datapath_support;

use std::process::Command;

use common::*;
use datapath_support::*;

/// A counter of sluice's JSON.
fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// `sluice --netns NS xsk ARGS...` started in the background.
fn spawn_xsk(ns: &str, args: &[&str]) -> std::process::Child {
    spawn_sluice(ns, &[&["xsk"], args].concat())
}

/// Waits until `ns` shows an XDP program (the datapath's redirect) on a
/// link.
fn wait_attached(ns: &str) {
    for _ in 0..200 {
        let status = sluice(&["--netns", ns, "status", "--json"]);
        if status.trim() != "[]" {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no XDP program appeared in {ns}");
}

fn summary(child: std::process::Child) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sluice: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_af_xdp_datapath_drops_and_reflects_every_frame() {
    if !kernel_available("veth test (AF_XDP datapath)") {
        return;
    }
    let p = Pair::new("x");
    // B reflects (l2fwd, metadata inline) what A sends; A's own datapath
    // receives it back (list pool, metadata in an array).
    let fwd = spawn_xsk(
        &p.b,
        &[
            "l2fwd",
            "--dev",
            VB,
            "--meta",
            "inline",
            "--duration",
            "6",
            "--json",
        ],
    );
    let rx = spawn_xsk(
        &p.a,
        &[
            "rxdrop",
            "--dev",
            VA,
            "--pool",
            "list",
            "--duration",
            "6",
            "--json",
        ],
    );
    wait_attached(&p.b);
    wait_attached(&p.a);
    p.send("udp,size=100,count=3000,rate=20000", "live");
    let fwd = summary(fwd);
    let rx = summary(rx);
    assert_eq!(fwd["bind"], "copy", "veth has no zero-copy: {fwd}");
    let got = n(&fwd["rx_packets"]);
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        ("B socket drops", socket_drops(&fwd["kernel"])),
    ];
    assert_accounted("A to B", 3000, got, &drops, &fwd.to_string());
    assert_eq!(n(&fwd["rx_bytes"]), got * 100, "{fwd}");
    assert_eq!(n(&fwd["tx_packets"]), got, "{fwd}");
    let back = n(&rx["rx_packets"]);
    let drops = [
        ("B tx_dropped", dev_stat(&p.b, VB, "tx_dropped")),
        ("A socket drops", socket_drops(&rx["kernel"])),
    ];
    assert_accounted("B back to A", got, back, &drops, &rx.to_string());
    assert_eq!(n(&rx["dropped"]), back, "{rx}");
    assert_eq!(n(&rx["rx_bytes"]), back * 100, "{rx}");
    for s in [&fwd, &rx] {
        assert_eq!(s["frames_unaccounted"], 0, "no frame leaked: {s}");
    }
    for ns in [&p.a, &p.b] {
        let status = sluice(&["--netns", ns, "status", "--json"]);
        assert_eq!(status.trim(), "[]", "the redirect program is gone");
    }
}

#[test]
fn the_af_xdp_datapath_stops_cleanly_on_sigint() {
    if !kernel_available("veth test (AF_XDP datapath, SIGINT)") {
        return;
    }
    let p = Pair::new("i");
    let child = spawn_xsk(&p.b, &["rxdrop", "--dev", VB, "--no-pmd", "--json"]);
    wait_attached(&p.b);
    p.send("udp,count=500,rate=20000", "live");
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling our own child by its PID.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let s = summary(child);
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        ("socket drops", socket_drops(&s["kernel"])),
    ];
    assert_accounted("A to B", 500, n(&s["rx_packets"]), &drops, &s.to_string());
    assert_eq!(s["frames_unaccounted"], 0, "{s}");
    let status = sluice(&["--netns", &p.b, "status", "--json"]);
    assert_eq!(status.trim(), "[]", "the redirect program is gone");
}

#[test]
fn af_xdp_misuse_is_explained() {
    if !kernel_available("veth test (AF_XDP errors)") {
        return;
    }
    let p = Pair::new("m");
    let fail = |args: &[&str]| {
        let out = Command::new(SLUICE)
            .args(["--netns", &p.b, "xsk", "rxdrop", "--duration", "1"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = fail(&["--dev", "nosuchdev0"]);
    assert!(e.contains("no interface \"nosuchdev0\""), "{e}");
    let e = fail(&["--dev", VB, "--queue", "5"]);
    assert!(e.contains("queue 5 is out of range"), "{e}");
    let e = fail(&["--dev", VB, "--bind", "zero-copy"]);
    assert!(e.contains("zero-copy AF_XDP is not supported"), "{e}");
    let e = fail(&["--dev", VB, "--ring-size", "1000"]);
    assert!(e.contains("must be a power of two"), "{e}");
    let e = fail(&["--dev", VB, "--frame-size", "3000"]);
    assert!(e.contains("frame size 3000"), "{e}");
    // A datapath program must be an XDP program.
    let out = Command::new(SLUICE)
        .args(["--netns", &p.b, "datapath", "--port", VB, "--duration", "1"])
        .args(["--prog", &object_path("tc_classify")])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("is not an XDP program"), "{e}");
    // Nothing stays attached after a refusal.
    let status = sluice(&["--netns", &p.b, "status", "--json"]);
    assert_eq!(status.trim(), "[]");
    // Without privileges (as nobody, on loopback in this namespace).
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
        ])
        .args([SLUICE, "xsk", "rxdrop", "--dev", "lo", "--duration", "1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("permission denied"), "{e}");
}

#[test]
fn a_program_on_the_datapath_routes_between_two_ports() {
    if !kernel_available("veth test (AF_XDP datapath with a program)") {
        return;
    }
    // A (sl_tx) -- (sl_rx) B (sl_b2) -- (sl_c) C: B's datapath runs the
    // router example on both of its ports, C counts what arrives.
    let p = Pair::new("r");
    let (c, out_if) = p.third_host("r");
    let receiver = spawn_xsk(
        &c,
        &["rxdrop", "--dev", "sl_c", "--duration", "6", "--json"],
    );
    let router = p.spawn_router(out_if, &["--duration", "6", "--json"]);
    wait_attached(&c);
    wait_attached(&p.b);
    p.send("udp,count=2000,rate=20000", "live");
    let router = summary(router);
    let received = summary(receiver);
    let ports = router["ports"].as_array().unwrap();
    let got = n(&ports[0]["rx_packets"]);
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        ("sl_rx socket drops", socket_drops(&ports[0]["kernel"])),
    ];
    assert_accounted("A to B", 2000, got, &drops, &router.to_string());
    assert_eq!(n(&ports[0]["verdicts"]["redirect"]), got, "{router}");
    assert_eq!(n(&ports[1]["tx_packets"]), got, "{router}");
    assert_eq!(ports[1]["lost"], 0, "{router}");
    // Per queue (one each here): what the port's queue 0 received and
    // sent.
    assert_eq!(ports[0]["queues"][0]["queue"], 0, "{router}");
    assert_eq!(n(&ports[0]["queues"][0]["rx_packets"]), got, "{router}");
    assert_eq!(n(&ports[1]["queues"][0]["tx_packets"]), got, "{router}");
    assert_eq!(router["frames_unaccounted"], 0, "{router}");
    let at_c = n(&received["rx_packets"]);
    let drops = [
        ("sl_b2 tx_dropped", dev_stat(&p.b, "sl_b2", "tx_dropped")),
        ("C socket drops", socket_drops(&received["kernel"])),
    ];
    assert_accounted("B to C", got, at_c, &drops, &received.to_string());
    assert_eq!(n(&received["rx_bytes"]), at_c * 64, "{received}");
    for ns in [&p.b, &c] {
        let status = sluice(&["--netns", ns, "status", "--json"]);
        assert_eq!(status.trim(), "[]", "the redirect programs are gone");
    }
}

#[test]
fn a_program_on_the_datapath_sends_back_what_it_tx_es() {
    if !kernel_available("veth test (AF_XDP datapath, XDP_TX)") {
        return;
    }
    let p = Pair::new("t");
    let tx_obj = object_path("xdp_parse_tx");
    let program = spawn_sluice(
        &p.b,
        &[
            "datapath",
            "--port",
            VB,
            "--prog",
            &tx_obj,
            "--engine",
            "interp",
            "--no-pmd",
            "--duration",
            "6",
            "--json",
        ],
    );
    let rx = spawn_xsk(&p.a, &["rxdrop", "--dev", VA, "--duration", "6", "--json"]);
    wait_attached(&p.b);
    wait_attached(&p.a);
    p.send("udp,size=80,count=1500,rate=20000", "live");
    let program = summary(program);
    let rx = summary(rx);
    let port = &program["ports"][0];
    let got = n(&port["rx_packets"]);
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        ("B socket drops", socket_drops(&port["kernel"])),
    ];
    assert_accounted("A to B", 1500, got, &drops, &program.to_string());
    assert_eq!(n(&port["verdicts"]["tx"]), got, "{program}");
    assert_eq!(n(&port["tx_packets"]), got, "{program}");
    assert_eq!(program["frames_unaccounted"], 0, "{program}");
    let back = n(&rx["rx_packets"]);
    let drops = [
        ("B tx_dropped", dev_stat(&p.b, VB, "tx_dropped")),
        ("A socket drops", socket_drops(&rx["kernel"])),
    ];
    assert_accounted("B back to A", got, back, &drops, &rx.to_string());
    assert_eq!(n(&rx["rx_bytes"]), back * 80, "{rx}");
}

#[test]
fn two_queues_can_share_one_umem() {
    if !kernel_available("veth test (AF_XDP shared UMEM)") {
        return;
    }
    let p = Pair::with_queues("s", 2);
    let child = spawn_xsk(
        &p.b,
        &[
            "rxdrop",
            "--dev",
            VB,
            "--queue",
            "0",
            "--queue",
            "1",
            "--shared-umem",
            "--no-pmd",
            "--duration",
            "5",
            "--json",
        ],
    );
    wait_attached(&p.b);
    p.send("udp,count=2000,rate=10000", "live");
    let s = summary(child);
    assert_eq!(s["queues"], serde_json::json!([0, 1]), "{s}");
    assert_eq!(s["frames"], 4096, "one UMEM: {s}");
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        ("socket drops", socket_drops(&s["kernel"])),
    ];
    assert_accounted("A to B", 2000, n(&s["rx_packets"]), &drops, &s.to_string());
    assert_eq!(s["frames_unaccounted"], 0, "{s}");
}

#[test]
fn txonly_sends_the_generated_frame() {
    if !kernel_available("veth test (AF_XDP txonly)") {
        return;
    }
    let p = Pair::new("o");
    let rx = spawn_xsk(&p.a, &["rxdrop", "--dev", VA, "--duration", "4", "--json"]);
    wait_attached(&p.a);
    let tx = spawn_xsk(
        &p.b,
        &[
            "txonly",
            "--dev",
            VB,
            "--packet",
            "udp,size=90",
            "--duration",
            "2",
            "--json",
        ],
    );
    let tx = summary(tx);
    let rx = summary(rx);
    let sent = tx["tx_packets"].as_u64().unwrap();
    let got = rx["rx_packets"].as_u64().unwrap();
    assert!(sent > 1000, "{tx}");
    assert!(got > 0 && got <= sent, "sent {sent}, received {got}: {rx}");
    assert_eq!(
        rx["rx_bytes"].as_u64().unwrap(),
        got * 90,
        "every frame is the template"
    );
    assert_eq!(tx["frames_unaccounted"], 0, "{tx}");
}

#[test]
fn a_tc_configuration_on_the_datapath_mirrors_and_redirects_between_ports() {
    if !kernel_available("veth test (AF_XDP datapath with a tc configuration)") {
        return;
    }
    // A (sl_tx) -- (sl_rx) B (sl_b2) -- (sl_c) C: B's datapath runs tc
    // lines on its ports: UDP arriving at sl_rx is mirrored and then
    // redirected out of sl_b2, so C gets every frame twice.
    let p = Pair::new("c");
    let (c, _) = p.third_host("c");
    let dir = std::env::temp_dir().join(format!("sluice-dp-tc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("tc.conf");
    std::fs::write(
        &conf,
        "qdisc add dev sl_rx clsact\n\
         filter add dev sl_rx ingress prio 1 protocol ip u32 match ip protocol 17 0xff \
         action mirred egress mirror dev sl_b2 pipe action mirred egress redirect dev sl_b2\n",
    )
    .unwrap();
    let receiver = spawn_xsk(
        &c,
        &["rxdrop", "--dev", "sl_c", "--duration", "6", "--json"],
    );
    let datapath = spawn_sluice(
        &p.b,
        &[
            "datapath",
            "--port",
            VB,
            "--port",
            "sl_b2",
            "--tc",
            conf.to_str().unwrap(),
            "--duration",
            "6",
            "--json",
        ],
    );
    wait_attached(&c);
    wait_attached(&p.b);
    p.send("udp,count=2000,rate=20000", "live");
    let datapath = summary(datapath);
    let received = summary(receiver);
    let ports = datapath["ports"].as_array().unwrap();
    let got = n(&ports[0]["rx_packets"]);
    let drops = [
        ("veth xdp_xmit_errors", xmit_refused(&p.a, VA)),
        ("sl_rx socket drops", socket_drops(&ports[0]["kernel"])),
    ];
    assert_accounted("A to B", 2000, got, &drops, &datapath.to_string());
    // Mirred's redirect takes the frame (tc's stolen) and sends it as a
    // copy, like the mirror before it.
    assert_eq!(n(&ports[0]["verdicts"]["stolen"]), got, "{datapath}");
    assert_eq!(n(&ports[0]["verdicts"]["mirror"]), 2 * got, "{datapath}");
    assert_eq!(ports[0]["verdicts"]["aborted"], 0, "{datapath}");
    assert_eq!(n(&ports[1]["tx_packets"]), 2 * got, "{datapath}");
    let drops = [
        ("sl_b2 tx_dropped", dev_stat(&p.b, "sl_b2", "tx_dropped")),
        ("C socket drops", socket_drops(&received["kernel"])),
    ];
    let at_c = n(&received["rx_packets"]);
    assert_accounted("B to C", 2 * got, at_c, &drops, &received.to_string());
    // The configuration's own counters: both actions saw every frame.
    let filters = &datapath["filters"]["sl_rx ingress"];
    let text = filters.to_string();
    let count = format!("\"packets\":{got}");
    assert_eq!(text.matches(&count).count(), 2, "{filters:#}");
    let _ = std::fs::remove_dir_all(&dir);
}
