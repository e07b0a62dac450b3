//! The kernel backend on real interfaces: two network namespaces joined by
//! a veth pair (created here, deleted at the end, also when a test fails),
//! example programs attached with `sluice attach` in native and skb mode
//! and on tc, traffic sent with `sluice gen`, and the counters in the pinned
//! maps checked against what the VM predicts for the same traffic.

use std::collections::BTreeMap;
use std::process::Command;

use runtime::{Hook, Image, LoadOptions, PacketMeta};

mod common;
mod datapath_support;

use common::*;
use datapath_support::xmit_refused;

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
        hook.maps()[i].user_update(k, v, 0).unwrap();
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
    // Live frames B's XDP ring had no room for (a busy machine: B's NAPI
    // waits for a CPU) never reach the program: with any, each count is
    // at most the VM's, and the packets add up with the refused ones.
    let refused = xmit_refused(&p.a, VA);
    if refused == 0 {
        assert_eq!(kernel, vm);
        assert_eq!(
            kernel.get(17u32.to_le_bytes().as_slice()),
            Some(&vec![20000, 2_000_000])
        );
    } else {
        eprintln!("{refused} of 23000 live frames dropped by the kernel (B's XDP ring full)");
        let packets = |m: &BTreeMap<Vec<u8>, Vec<u64>>| m.values().map(|v| v[0]).sum::<u64>();
        assert_eq!(
            packets(&kernel) + refused,
            packets(&vm),
            "kernel {kernel:?}, VM {vm:?}, {refused} refused"
        );
        for (k, v) in &kernel {
            let want = vm
                .get(k)
                .unwrap_or_else(|| panic!("key {k:?} not in the VM's"));
            assert!(
                v.iter().zip(want).all(|(a, b)| a <= b),
                "{k:?}: kernel {v:?} over the VM's {want:?}"
            );
        }
    }

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
        (p.a.to_string(), p.b.to_string(), p.pins.clone())
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
