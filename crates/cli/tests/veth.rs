//! The kernel backend on real interfaces: two network namespaces joined by
//! a veth pair (created here, deleted at the end, also when a test fails),
//! example programs attached with `sluice attach` in native and skb mode
//! and on tc, traffic sent with `sluice gen`, and the counters in the pinned
//! maps checked against what the VM predicts for the same traffic.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use runtime::{Hook, Image, LoadOptions, PacketMeta};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn kernel_available(what: &str) -> bool {
    kernel::available_for_test(what)
}

fn sh(cmd: &[&str]) -> String {
    let out = Command::new(cmd[0]).args(&cmd[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sluice(args: &[&str]) -> String {
    let out = Command::new(SLUICE).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "sluice {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Two namespaces, `a` sending from `va`, `b` receiving on `vb`; all of it
/// (and the pin directory) goes away on drop.
struct Pair {
    a: String,
    b: String,
    pins: PathBuf,
}

const VA: &str = "sl_tx";
const VB: &str = "sl_rx";

impl Pair {
    fn new(tag: &str) -> Pair {
        Pair::with_queues(tag, 1)
    }

    /// A pair whose veth ends have `queues` RX and TX queues each.
    fn with_queues(tag: &str, queues: u32) -> Pair {
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

    fn pin(&self, name: &str) -> String {
        self.pins.join(name).display().to_string()
    }

    /// `sluice --netns B attach ...`
    fn attach(&self, object: &str, extra: &[&str], pin: &str) -> String {
        let obj = object_path(object);
        let mut args = vec![
            "--netns", &self.b, "attach", &obj, "--dev", VB, "--pin", pin,
        ];
        args.extend(extra);
        sluice(&args)
    }

    fn send(&self, spec: &str, method: &str) {
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

fn object_path(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../target/bpf/{name}.o"))
        .display()
        .to_string()
}

/// Per-key totals of a pinned map (per-CPU values summed), as u64 fields.
fn kernel_counts(path: &str) -> BTreeMap<Vec<u8>, Vec<u64>> {
    let m = kernel::PinnedMap::open(std::path::Path::new(path)).unwrap();
    let vs = m.info.value_size as usize;
    m.info
        .entries()
        .unwrap()
        .into_iter()
        .map(|(k, v)| {
            let mut sum = vec![0u64; vs / 8];
            for cpu in v.chunks(vs.next_multiple_of(8)) {
                for (i, s) in sum.iter_mut().enumerate() {
                    *s += u64::from_le_bytes(cpu[i * 8..i * 8 + 8].try_into().unwrap());
                }
            }
            (k, sum)
        })
        .filter(|(_, v)| v.iter().any(|&x| x != 0))
        .collect()
}

/// The VM's prediction: the same traffic through the same program.
fn vm_counts(
    object: &str,
    updates: &[(&str, Vec<u8>, Vec<u8>)],
    specs: &[&str],
    map: &str,
) -> BTreeMap<Vec<u8>, Vec<u64>> {
    let bytes = programs::object(object).unwrap();
    let image = Image::load(obj::Object::parse(bytes).unwrap(), &LoadOptions::default()).unwrap();
    let mut hook = Hook::new(image, 0, 0).unwrap();
    for (m, k, v) in updates {
        let i = hook.object().map_index(m).unwrap();
        hook.maps_mut()[i].user_update(k, v, 0).unwrap();
    }
    for spec in specs {
        for (ts, frame) in packet::GenSpec::parse(spec).unwrap().packets() {
            let meta = PacketMeta {
                ifindex: 2,
                timestamp_ns: ts,
                ..PacketMeta::default()
            };
            hook.run(&frame, &meta).unwrap();
        }
    }
    let i = hook.object().map_index(map).unwrap();
    let m = &hook.maps()[i];
    let vs = m.spec().value_size as usize;
    m.entries()
        .into_iter()
        .map(|(k, v)| {
            let sum = (0..vs / 8)
                .map(|i| u64::from_le_bytes(v[i * 8..i * 8 + 8].try_into().unwrap()))
                .collect();
            (k, sum)
        })
        .filter(|(_, v): &(Vec<u8>, Vec<u64>)| v.iter().any(|&x| x != 0))
        .collect()
}

#[test]
fn native_xdp_counts_live_frames_as_the_vm_predicts() {
    if !kernel_available("veth test (native XDP, live frames)") {
        return;
    }
    let p = Pair::new("n");
    let pin = p.pin("count");
    let out = p.attach("xdp_count", &["--mode", "native"], &pin);
    assert!(out.contains("XDP native mode"), "{out}");
    let status = sluice(&["--netns", &p.b, "status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(v[0]["hook"], "native", "{status}");
    assert_eq!(v[0]["program"], "xdp_count_prog");

    let specs = [
        "udp,flows=16,size=100,count=20000",
        "tcp,v6,flows=4,size=90,count=3000",
    ];
    for s in specs {
        p.send(s, "live");
    }
    let kernel = kernel_counts(&format!("{pin}/proto_stats"));
    let vm = vm_counts("xdp_count", &[], &specs, "proto_stats");
    assert_eq!(kernel, vm);
    assert_eq!(
        kernel.get(17u32.to_le_bytes().as_slice()),
        Some(&vec![20000, 2_000_000])
    );

    sluice(&["--netns", &p.b, "detach", "--dev", VB, "--pin", &pin]);
    assert!(
        !std::path::Path::new(&pin).exists(),
        "detach removes the pins"
    );
    let status = sluice(&["--netns", &p.b, "status", "--json"]);
    assert_eq!(status.trim(), "[]");
}

#[test]
fn skb_mode_ddos_filter_drops_as_the_vm_predicts() {
    if !kernel_available("veth test (skb-mode XDP, packet socket)") {
        return;
    }
    let p = Pair::new("s");
    let pin = p.pin("ddos");
    let out = p.attach("xdp_ddos", &["--mode", "skb"], &pin);
    assert!(out.contains("XDP skb mode"), "{out}");
    // Configure it through the pinned maps, while it runs.
    sluice(&[
        "map",
        "update",
        "--pinned",
        &format!("{pin}/blocklist_v4"),
        "10.66.0.0/16",
        "0",
    ]);
    sluice(&[
        "map",
        "update",
        "--pinned",
        &format!("{pin}/protected_ports"),
        "53",
        "1",
    ]);
    // Ten packets per source: below the burst, so the real clock and the
    // capture clock both let them through.
    let specs = [
        "udp,flows=200,count=2000,src=10.1.0.0/16,dport=80",
        "udp,flows=20,count=400,src=10.66.0.0/16,dport=80",
        "udp,flows=50,count=500,src=10.2.0.0/16,dport=53",
    ];
    for s in specs {
        p.send(s, "packet");
    }
    let mut blocked = vec![16u8, 0, 0, 0];
    blocked.extend([10, 66, 0, 0]);
    let updates = [
        ("blocklist_v4", blocked, vec![0; 8]),
        ("protected_ports", vec![53, 0], vec![1]),
    ];
    let kernel = kernel_counts(&format!("{pin}/drop_stats"));
    let vm = vm_counts("xdp_ddos", &updates, &specs, "drop_stats");
    assert_eq!(kernel, vm);
    // 0: passed, 1: blocked, 2: protected port.
    assert_eq!(kernel.get(1u32.to_le_bytes().as_slice()), Some(&vec![400]));
    assert_eq!(kernel.get(2u32.to_le_bytes().as_slice()), Some(&vec![500]));
    sluice(&["--netns", &p.b, "detach", "--dev", VB, "--pin", &pin]);
}

#[test]
fn tc_classifier_counts_as_the_vm_predicts_and_detaches_cleanly() {
    if !kernel_available("veth test (tc ingress)") {
        return;
    }
    let p = Pair::new("t");
    let pin = p.pin("tc");
    let out = p.attach("tc_classify", &["--tc", "ingress", "--json"], &pin);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["hook"], "tc ingress", "{out}");
    assert_eq!(v["program"], "tc_classify_prog");
    let specs = [
        "udp,flows=8,count=3000,dport=53",
        "tcp,flows=4,count=1000,dport=23",
    ];
    for s in specs {
        p.send(s, "packet");
    }
    let kernel = kernel_counts(&format!("{pin}/class_stats"));
    let vm = vm_counts("tc_classify", &[], &specs, "class_stats");
    assert_eq!(kernel, vm);
    assert_eq!(kernel.values().map(|v| v[0]).sum::<u64>(), 4000);
    sluice(&[
        "--netns", &p.b, "detach", "--dev", VB, "--tc", "ingress", "--qdisc", "--pin", &pin,
    ]);
    let qdiscs = sh(&[
        "ip", "netns", "exec", &p.b, "tc", "qdisc", "show", "dev", VB,
    ]);
    assert!(!qdiscs.contains("clsact"), "{qdiscs}");
}

#[test]
fn common_failures_are_explained() {
    if !kernel_available("veth test (errors)") {
        return;
    }
    let p = Pair::new("e");
    let fail = |args: &[&str]| {
        let out = Command::new(SLUICE).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let obj = object_path("xdp_drop");
    let e = fail(&["--netns", &p.b, "attach", &obj, "--dev", "nosuchdev0"]);
    assert!(e.contains("no such device `nosuchdev0`"), "{e}");
    let pin = p.pin("drop");
    p.attach("xdp_drop", &[], &pin);
    let pin2 = p.pin("drop2");
    let e = fail(&["--netns", &p.b, "attach", &obj, "--dev", VB, "--pin", &pin2]);
    assert!(e.contains("already has XDP program"), "{e}");
    assert!(
        !std::path::Path::new(&pin2).exists(),
        "a refused attach leaves no pins"
    );
    // Loopback has no native XDP.
    let e = fail(&[
        "--netns",
        &p.b,
        "attach",
        &obj,
        "--dev",
        "lo",
        "--pin",
        &p.pin("lo"),
    ]);
    assert!(e.contains("--mode skb"), "{e}");
    // A program the kernel verifier rejects: its log is quoted.
    let dir = std::env::temp_dir().join(format!("sluice-veth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("bad.c");
    std::fs::write(
        &src,
        "#include <linux/bpf.h>\n__attribute__((section(\"tc\"), used)) int bad(struct __sk_buff *s)\n\
         { return s->family; }\nchar _license[] __attribute__((section(\"license\"), used)) = \"GPL\";\n",
    )
    .unwrap();
    let bad = dir.join("bad.o");
    let arch = format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    let clang = if Command::new("clang-19").arg("--version").output().is_ok() {
        "clang-19"
    } else {
        "clang"
    };
    sh(&[
        clang,
        "-target",
        "bpf",
        "-O2",
        &arch,
        "-c",
        src.to_str().unwrap(),
        "-o",
        bad.to_str().unwrap(),
    ]);
    let e = fail(&["load", bad.to_str().unwrap(), "--pin", &p.pin("bad")]);
    assert!(e.contains("kernel verifier rejected"), "{e}");
    assert!(e.contains("invalid bpf_context access"), "{e}");
    assert!(!p.pins.join("bad").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    let e = fail(&["--netns", "sluice-no-such-ns", "status"]);
    assert!(e.contains("network namespace"), "{e}");
    let e = fail(&[
        "--netns",
        &p.a,
        "gen",
        "--dev",
        VA,
        "udp,count=10",
        "--method",
        "live",
        "--bogus",
    ]);
    assert!(e.contains("--bogus"), "{e}");
}

#[test]
fn teardown_leaves_no_namespace_link_or_pin_behind() {
    if !kernel_available("veth test (teardown)") {
        return;
    }
    let (a, b, pins) = {
        let p = Pair::new("d");
        p.attach("xdp_pass", &[], &p.pin("pass"));
        assert!(p.pins.join("pass").exists());
        (p.a.clone(), p.b.clone(), p.pins.clone())
    };
    let namespaces = sh(&["ip", "netns", "list"]);
    assert!(
        !namespaces.contains(&a) && !namespaces.contains(&b),
        "{namespaces}"
    );
    assert!(!pins.exists());
    let links = sh(&["ip", "link", "show"]);
    assert!(!links.contains(VA) && !links.contains(VB), "{links}");
}

#[test]
fn sluice_load_pins_programs_and_maps() {
    if !kernel_available("sluice load") {
        return;
    }
    let dir = format!("/sys/fs/bpf/sluice-test-{}-load", std::process::id());
    let out = sluice(&[
        "load",
        &object_path("xdp_ddos"),
        "--pin",
        &dir,
        "--set",
        "burst=7",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let cleanup = || std::fs::remove_dir_all(&dir);
    assert_eq!(v["programs"][0]["name"], "xdp_ddos_prog", "{out}");
    assert!(std::path::Path::new(&format!("{dir}/xdp_ddos_prog")).exists());
    // --set reached the kernel's .rodata: burst follows rate_pps there.
    let rodata =
        kernel::PinnedMap::open(std::path::Path::new(&format!("{dir}/maps/xdp_ddos_rodata")))
            .unwrap();
    let value = rodata.info.lookup(&0u32.to_le_bytes()).unwrap().unwrap();
    assert!(
        value.windows(8).any(|w| w == 7u64.to_le_bytes()),
        "{value:?}"
    );
    let again = Command::new(SLUICE)
        .args(["load", &object_path("xdp_ddos"), "--pin", &dir])
        .output()
        .unwrap();
    assert!(
        !again.status.success(),
        "loading over existing pins is refused"
    );
    cleanup().unwrap();
}

/// `sluice --netns NS xsk ...` started in the background, its stdout kept.
fn spawn_xsk(ns: &str, args: &[&str]) -> std::process::Child {
    Command::new(SLUICE)
        .args(["--netns", ns, "xsk"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
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

fn xsk_summary(child: std::process::Child) -> serde_json::Value {
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sluice xsk: {}",
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
    let fwd = xsk_summary(fwd);
    let rx = xsk_summary(rx);
    assert_eq!(fwd["bind"], "copy", "veth has no zero-copy: {fwd}");
    assert_eq!(fwd["rx_packets"], 3000, "{fwd}");
    assert_eq!(fwd["rx_bytes"], 300_000, "{fwd}");
    assert_eq!(fwd["tx_packets"], 3000, "{fwd}");
    assert_eq!(rx["rx_packets"], 3000, "{rx}");
    assert_eq!(rx["dropped"], 3000, "{rx}");
    assert_eq!(rx["rx_bytes"], 300_000, "{rx}");
    for s in [&fwd, &rx] {
        assert_eq!(s["frames_unaccounted"], 0, "no frame leaked: {s}");
        assert_eq!(s["kernel"]["rx_ring_full"], 0, "{s}");
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
    let s = xsk_summary(child);
    assert_eq!(s["rx_packets"], 500, "{s}");
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

/// A namespace of a test, deleted on drop.
struct Netns(String);

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

#[test]
fn a_program_on_the_datapath_routes_between_two_ports() {
    if !kernel_available("veth test (AF_XDP datapath with a program)") {
        return;
    }
    // A (sl_tx) -- (sl_rx) B (sl_b2) -- (sl_c) C: B's datapath runs the
    // router example on both of its ports, C counts what arrives.
    let p = Pair::new("r");
    let c = Netns(format!("slt{}rc", std::process::id()));
    sh(&["ip", "netns", "add", &c.0]);
    sh(&[
        "ip", "link", "add", "sl_b2", "netns", &p.b, "type", "veth", "peer", "name", "sl_c",
        "netns", &c.0,
    ]);
    sh(&["ip", "-n", &p.b, "link", "set", "sl_b2", "up"]);
    sh(&["ip", "-n", &c.0, "link", "set", "sl_c", "up"]);
    let link = sh(&["ip", "-n", &p.b, "-o", "link", "show", "sl_b2"]);
    let out_if: u32 = link.split(':').next().unwrap().trim().parse().unwrap();
    let nexthop = format!("hex:{:02x}0000000200000000aa0200000000bb", out_if);
    let receiver = spawn_xsk(
        &c.0,
        &["rxdrop", "--dev", "sl_c", "--duration", "6", "--json"],
    );
    let router = Command::new(SLUICE)
        .args(["--netns", &p.b, "datapath", "--port", VB, "--port", "sl_b2"])
        .args(["--prog", &object_path("xdp_router")])
        .args([
            "--map-update",
            "tx_ports",
            &out_if.to_string(),
            &out_if.to_string(),
        ])
        .args(["--map-update", "routes_v4", "10.255.0.0/16", &nexthop])
        .args(["--duration", "6", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_attached(&c.0);
    wait_attached(&p.b);
    p.send("udp,count=2000,rate=20000", "live");
    let router = xsk_summary(router);
    let received = xsk_summary(receiver);
    let ports = router["ports"].as_array().unwrap();
    assert_eq!(ports[0]["rx_packets"], 2000, "{router}");
    assert_eq!(ports[0]["verdicts"]["redirect"], 2000, "{router}");
    assert_eq!(ports[1]["tx_packets"], 2000, "{router}");
    assert_eq!(ports[1]["lost"], 0, "{router}");
    assert_eq!(router["frames_unaccounted"], 0, "{router}");
    assert_eq!(received["rx_packets"], 2000, "{received}");
    assert_eq!(received["rx_bytes"], 2000 * 64, "{received}");
    for ns in [&p.b, &c.0] {
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
    let program = Command::new(SLUICE)
        .args(["--netns", &p.b, "datapath", "--port", VB])
        .args([
            "--prog",
            &object_path("xdp_parse_tx"),
            "--engine",
            "interp",
            "--no-pmd",
        ])
        .args(["--duration", "6", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let rx = spawn_xsk(&p.a, &["rxdrop", "--dev", VA, "--duration", "6", "--json"]);
    wait_attached(&p.b);
    wait_attached(&p.a);
    p.send("udp,size=80,count=1500,rate=20000", "live");
    let program = xsk_summary(program);
    let rx = xsk_summary(rx);
    let port = &program["ports"][0];
    assert_eq!(port["verdicts"]["tx"], 1500, "{program}");
    assert_eq!(port["tx_packets"], 1500, "{program}");
    assert_eq!(program["frames_unaccounted"], 0, "{program}");
    assert_eq!(rx["rx_packets"], 1500, "{rx}");
    assert_eq!(rx["rx_bytes"], 1500 * 80, "{rx}");
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
    let s = xsk_summary(child);
    assert_eq!(s["queues"], serde_json::json!([0, 1]), "{s}");
    assert_eq!(s["frames"], 4096, "one UMEM: {s}");
    assert_eq!(s["rx_packets"], 2000, "{s}");
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
    let tx = xsk_summary(tx);
    let rx = xsk_summary(rx);
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
