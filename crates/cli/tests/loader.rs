//! Objects as other loaders and older toolchains leave them: maps sized at
//! load time, map types a replay can or cannot use, section names libbpf
//! does not know (`--type`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testkit::Scratch;

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// A scratch directory `sluice-loader-NAME-PID`, removed when the test ends.
fn scratch(name: &str) -> Scratch {
    Scratch::new(&format!("loader-{name}"))
}

/// Builds C source into a BPF object in `dir`.
fn build_c(dir: &Scratch, name: &str, source: &str) -> PathBuf {
    let (src, out) = (dir.join(format!("{name}.c")), dir.join(format!("{name}.o")));
    std::fs::write(&src, format!("{PRELUDE}{source}")).unwrap();
    let st = Command::new("clang-19")
        .args(["-target", "bpf", "-O2", "-g", "-c"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("clang-19 (the set-up installs it)");
    assert!(st.success(), "clang-19 {name}");
    out
}

const PRELUDE: &str = r#"
typedef unsigned char __u8; typedef unsigned short __u16; typedef unsigned int __u32; typedef unsigned long long __u64;
#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
struct xdp_md { __u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex; };
struct __sk_buff { __u32 len, pkt_type, mark, queue_mapping, protocol, vlan_present, vlan_tci, vlan_proto, priority, ingress_ifindex, ifindex, tc_index, cb[5], hash, tc_classid, data, data_end; };
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *) 1;
char _license[] SEC("license") = "GPL";
"#;

fn run(args: &[&str], obj: &Path) -> Output {
    sluice()
        .arg(args[0])
        .arg(obj)
        .args(&args[1..])
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const UNSIZED: &str = r#"
struct { __uint(type, 1); __type(key, __u32); __type(value, __u64); } flows SEC(".maps");
struct { __uint(type, 2); __type(key, __u32); __type(value, __u64); } stats SEC(".maps");
struct { __uint(type, 2); __uint(max_entries, 4); __type(key, __u32); __type(value, __u64); } sized SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) {
    __u32 k = 0;
    __u64 *a = bpf_map_lookup_elem(&flows, &k), *b = bpf_map_lookup_elem(&stats, &k), *c = bpf_map_lookup_elem(&sized, &k);
    return (a ? 1 : 0) + (b ? 1 : 0) + (c ? 0 : 1);
}
"#;

#[test]
fn maps_sized_at_load_time_are_all_named_and_take_a_default() {
    let dir = scratch("unsized");
    let obj = build_c(&dir, "unsized", UNSIZED);
    for cmd in ["run", "verify"] {
        let args: &[&str] = if cmd == "run" {
            &["run", "--gen", "udp,count=1"]
        } else {
            &["verify", "--no-kernel"]
        };
        let out = run(args, &obj);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("maps flows, stats have max_entries 0")
                && err.contains("--map-size flows=N --map-size stats=N")
                && err.contains("--map-size-default N"),
            "{cmd}: both maps named at once: {err}"
        );
        let mut with = args.to_vec();
        with.extend(["--map-size-default", "16", "--map-size", "flows=8"]);
        ok(run(&with, &obj));
    }
    let json = ok(run(
        &[
            "run",
            "--gen",
            "udp,count=1",
            "--map-size-default",
            "16",
            "--map-size",
            "flows=8",
            "--json",
        ],
        &obj,
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let maps = v["maps"].as_array().unwrap();
    let size = |name: &str| {
        maps.iter().find(|m| m["name"] == name).unwrap()["max_entries"]
            .as_u64()
            .unwrap()
    };
    assert_eq!((size("flows"), size("stats"), size("sized")), (8, 16, 4));
}

/// iproute2's `from-netdev` (a tc program) and an `xdp_sock` section:
/// libbpf knows neither name.
const LEGACY_SECTIONS: &str = r#"
struct { __uint(type, 2); __uint(max_entries, 2); __type(key, __u32); __type(value, __u64); } seen SEC(".maps");
SEC("from-netdev") int from_netdev(struct __sk_buff *skb) {
    __u32 k = 0; __u64 *v = bpf_map_lookup_elem(&seen, &k);
    if (v) *v += skb->len;
    return skb->len > 100 ? 2 : 0;
}
SEC("xdp_sock") int sock_prog(struct xdp_md *ctx) {
    __u32 k = 1; __u64 *v = bpf_map_lookup_elem(&seen, &k);
    if (v) *v += 1;
    return 2;
}
"#;

#[test]
fn sections_libbpf_does_not_know_run_verify_and_diff_with_a_type() {
    let dir = scratch("types");
    let obj = build_c(&dir, "legacy", LEGACY_SECTIONS);
    let gen_small = ["--gen", "udp,count=3,size=64"];
    let gen_big = ["--gen", "udp,count=2,size=200"];

    // Without a type, from-netdev says how to give one.
    let out = run(
        &["run", "--prog", "from_netdev", gen_small[0], gen_small[1]],
        &obj,
    );
    assert!(
        !out.status.success() && stderr(&out).contains("give one with --type"),
        "{}",
        stderr(&out)
    );
    let text = ok(run(&["verify", "--no-kernel"], &obj));
    assert!(
        text.contains("from_netdev (from-netdev): UNSUPPORTED"),
        "{text}"
    );

    // With --type tc the tc program runs and verifies; the XDP one keeps
    // its type.
    let json = ok(run(
        &[
            "run",
            "--prog",
            "from_netdev",
            "--type",
            "tc",
            gen_big[0],
            gen_big[1],
            "--json",
        ],
        &obj,
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"]["SHOT"], 2, "{json}");
    let text = ok(run(&["verify", "--no-kernel", "--type", "tc"], &obj));
    assert!(
        text.contains("from_netdev (from-netdev): ACCEPT")
            && text.contains("sock_prog (xdp_sock): ACCEPT"),
        "{text}"
    );
    // Per program, with an attach type as bpftool names it.
    let text = ok(run(
        &[
            "verify",
            "--no-kernel",
            "--type",
            "from_netdev=tc",
            "--attach-type",
            "from_netdev=tcx_ingress",
        ],
        &obj,
    ));
    assert!(text.contains("from_netdev (from-netdev): ACCEPT"), "{text}");
    for (args, needle) in [
        (vec!["--type", "kprobe"], "not a program type sluice runs"),
        (vec!["--type", "nope=tc"], "no program `nope`"),
        (
            vec!["--type", "xdp", "--attach-type", "tcx_ingress"],
            "does not go with program type xdp",
        ),
        (
            vec!["--attach-type", "xdp_devmap"],
            "give the program type too",
        ),
    ] {
        let mut all = vec!["verify", "--no-kernel"];
        all.extend(args.iter());
        let out = run(&all, &obj);
        assert!(!out.status.success(), "{args:?}");
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }

    if !testkit::kernel_available("sluice diff of sections libbpf does not know") {
        return;
    }
    // The kernel side gets the same types: libbpf alone fails with
    // "missing BPF prog type".
    for (prog, typed, traffic) in [
        ("from_netdev", true, gen_big),
        ("from_netdev", true, gen_small),
        ("sock_prog", true, gen_small),
        ("sock_prog", false, gen_small),
    ] {
        let mut args = vec!["diff", "--prog", prog, traffic[0], traffic[1], "--json"];
        if typed {
            args.extend(["--type", "tc"]);
        }
        let json = ok(run(&args, &obj));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["divergences"], 0, "{args:?}: {json}");
        assert_eq!(v["compared"], v["packets"], "{args:?}: {json}");
        if typed {
            assert!(
                v["notes"].as_array().is_none_or(|n| n.is_empty()),
                "the whole object loads: {json}"
            );
        }
    }
}

#[test]
fn ring_buffers_declared_with_a_value_type_load_on_both_sides() {
    let dir = scratch("ringbuf");
    let obj = build_c(
        &dir,
        "rb",
        r#"
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *) 130;
struct event { __u64 a; __u32 b; };
struct { __uint(type, 27); __uint(max_entries, 5000); __type(value, struct event); } events SEC(".maps");
SEC("xdp") int prog(struct xdp_md *ctx) { struct event e = {1, 2}; return bpf_ringbuf_output(&events, &e, sizeof(e), 0) ? 1 : 2; }
"#,
    );
    let json = ok(run(&["run", "--gen", "udp,count=2", "--json"], &obj));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"]["PASS"], 2, "{json}");
    if !testkit::kernel_available("sluice diff of a ring buffer with a value type") {
        return;
    }
    let json = ok(run(&["diff", "--gen", "udp,count=2", "--json"], &obj));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["compared"].as_u64(), v["divergences"].as_u64()),
        (Some(2), Some(0)),
        "{json}"
    );
}

#[test]
fn maps_of_kernel_objects_load_and_refuse_entries_saying_why() {
    let dir = scratch("kmaps");
    let bytes = programs::compile::compile(
        "kmaps",
        r#"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
struct { __uint(type, BPF_MAP_TYPE_CGROUP_ARRAY); __uint(max_entries, 4); __type(key, __u32); __type(value, __u32); } cgroups SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_SK_STORAGE); __uint(map_flags, BPF_F_NO_PREALLOC); __type(key, int); __type(value, __u64); } sk_seen SEC(".maps");
SEC("tc") int classify(struct __sk_buff *skb) { return bpf_skb_under_cgroup(skb, &cgroups, 0) == 1; }
char _license[] SEC("license") = "GPL";
"#,
    );
    let obj = dir.join("kmaps.o");
    std::fs::write(&obj, bytes).unwrap();
    let json = ok(run(&["run", "--gen", "udp,count=2", "--json"], &obj));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"]["OK"], 2, "{json}");
    let out = run(
        &[
            "run",
            "--gen",
            "udp,count=2",
            "--map-update",
            "cgroups",
            "0",
            "3",
        ],
        &obj,
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--map-update cgroups: a cgroup_array map holds cgroups"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn numbered_tail_call_sections_take_a_type_too() {
    let dir = scratch("tail");
    let obj = build_c(
        &dir,
        "tail",
        r#"
#define __array(name, val) typeof(val) *name[]
static long (*bpf_tail_call)(void *ctx, void *map, __u32 index) = (void *) 12;
int tail(struct __sk_buff *skb);
struct { __uint(type, 3); __uint(max_entries, 4); __uint(key_size, 4); __array(values, int (void *)); } jumps SEC(".maps") = { .values = { [2] = (void *)&tail } };
SEC("2/0") int tail(struct __sk_buff *skb) { skb->mark = 7; return 2; }
SEC("from-netdev") int entry(struct __sk_buff *skb) { bpf_tail_call(skb, &jumps, 2); return 0; }
"#,
    );
    let json = ok(run(
        &[
            "run",
            "--prog",
            "entry",
            "--type",
            "tc",
            "--gen",
            "udp,count=2",
            "--json",
        ],
        &obj,
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"]["SHOT"], 2, "the tail call ran: {json}");
    if !testkit::kernel_available("sluice diff of a tail call into a numbered section") {
        return;
    }
    let json = ok(run(
        &[
            "diff",
            "--prog",
            "entry",
            "--type",
            "tc",
            "--gen",
            "udp,count=2",
            "--json",
        ],
        &obj,
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        (v["compared"].as_u64(), v["divergences"].as_u64()),
        (Some(2), Some(0)),
        "{json}"
    );
}
