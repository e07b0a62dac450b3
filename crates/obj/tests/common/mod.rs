//! Builds test objects with clang.

use std::path::PathBuf;
use std::process::Command;

pub fn clang() -> &'static str {
    ["clang-19", "clang"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("clang is required (the README's set-up installs clang-19)")
}

/// Compiles C source to a BPF object with `flags`; returns its bytes.
pub fn build(name: &str, source: &str, flags: &[&str]) -> Vec<u8> {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sluice-obj-{}-{n}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("prog.c");
    std::fs::write(&src, source).unwrap();
    let out: PathBuf = dir.join("prog.o");
    let status = Command::new(clang())
        .args(["-target", "bpf", "-g", "-c"])
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "clang failed for {name}");
    let bytes = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    bytes
}

/// Definitions a libbpf program would take from bpf_helpers.h, kept tiny.
pub const PRELUDE: &str = r#"
typedef unsigned char __u8; typedef unsigned short __u16; typedef unsigned int __u32; typedef unsigned long long __u64;
#define SEC(n) __attribute__((section(n), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __array(name, val) typeof(val) *name[]
struct xdp_md { __u32 data, data_end, data_meta, ingress_ifindex, rx_queue_index, egress_ifindex; };
static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *) 1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *) 2;
static long (*bpf_tail_call)(void *ctx, void *map, __u32 index) = (void *) 12;
char _license[] SEC("license") = "GPL";
"#;
