//! Objects as other loaders and older toolchains leave them: maps sized at
//! load time, map types a replay can or cannot use, section names libbpf
//! does not know (`--type`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sluice() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sluice"))
}

/// A scratch directory removed when the test ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("sluice-loader-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// Builds C source into a BPF object in `dir`.
fn build_c(dir: &Scratch, name: &str, source: &str) -> PathBuf {
    let (src, out) = (
        dir.0.join(format!("{name}.c")),
        dir.0.join(format!("{name}.o")),
    );
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
