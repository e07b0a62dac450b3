//! Loading the examples into hooks.

#![allow(dead_code)]

use runtime::*;

pub mod esp;

pub fn hook(name: &str) -> Hook {
    hook_with(name, &LoadOptions::default())
}

pub fn hook_with(name: &str, opts: &LoadOptions) -> Hook {
    let object =
        obj::Object::parse(programs::object(name).unwrap_or_else(|| panic!("no program {name}")))
            .unwrap();
    let image = Image::load(object, opts).unwrap();
    let prog = image.find_program(None).unwrap();
    Hook::new(image, prog, 0).unwrap()
}

pub fn map<'h>(hook: &'h Hook, name: &str) -> &'h maps::Map {
    let i = hook
        .object()
        .map_index(name)
        .unwrap_or_else(|| panic!("no map {name}"));
    &hook.maps()[i]
}

pub fn meta(ts_ns: u64) -> PacketMeta {
    PacketMeta {
        ifindex: 1,
        rx_queue: 0,
        timestamp_ns: ts_ns,
        egress_ifindex: 0,
        dev_addr: [0; 6],
        dev_broadcast: [0; 6],
    }
}

/// The sum of a per-CPU u64 counter over all CPUs.
pub fn percpu_u64(m: &maps::Map, key: u32) -> u64 {
    m.user_lookup(&key.to_le_bytes())
        .unwrap()
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .sum()
}

/// Whether an IPv4 header's checksum is right.
pub fn ipv4_checksum_ok(hdr: &[u8]) -> bool {
    let mut sum = 0u32;
    for w in hdr.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

#[allow(unused_imports)] // not every test binary compiles C
pub use programs::compile::{compile, compile_with};

/// Whether a test may use the kernel (it needs root). When it cannot, the
/// skip is loud, and a failure under `SLUICE_REQUIRE_KERNEL=1` (CI).
pub fn kernel_available(what: &str) -> bool {
    unsafe extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED {what}: needs root");
        assert!(
            std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() != Ok("1"),
            "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: not root"
        );
    }
    root
}

/// An example with the kernel's header structs marked
/// `preserve_access_index`, as programs built on vmlinux.h have them: each
/// access to a context or header field becomes a CO-RE relocation.
pub fn core_variant(name: &str) -> String {
    let headers = [
        "bpf", "if_ether", "in", "ip", "ipv6", "tcp", "udp", "pkt_cls",
    ]
    .map(|h| format!("#include <linux/{h}.h>\n"))
    .concat();
    let path = programs::source_dir().join(format!("{name}.c"));
    format!(
        "#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)\n\
         {headers}#pragma clang attribute pop\n#include \"{}\"\n",
        path.display()
    )
}

/// Every frame of every capture in ../shared/pcaps/tcpdump, in file order.
pub fn capture_frames() -> Vec<io::Frame> {
    programs::captures()
        .iter()
        .flat_map(|p| {
            io::PcapSource::open(p)
                .unwrap()
                .map(|f| f.unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}
