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

/// Every frame of every capture of tcpdump's suite (testkit's list), in
/// file order.
pub fn capture_frames() -> Vec<capture::Frame> {
    testkit::captures()
        .iter()
        .flat_map(|p| {
            capture::PcapSource::open(p)
                .unwrap()
                .map(|f| f.unwrap())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A next hop of [`fwd_routes`]: (ifindex, source MAC, destination MAC).
pub type FwdHop = (u32, [u8; 6], [u8; 6]);

pub const FWD_DEFAULT_HOP: FwdHop = (0, [2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 1, 2]);
pub const FWD_TEN_HOP: FwdHop = (7, [2, 0, 0, 0, 7, 1], [2, 0, 0, 0, 7, 2]);

/// Two routes for fwd_radix, fwd_lctrie and fwd_lpm_trie, their maps
/// written by hand (crates/lpm makes them from tables; docs/lpm.md):
/// 0.0.0.0/0 to next hop 1 (ifindex 0: XDP_TX) and 10.0.0.0/8 to next hop
/// 2 (ifindex 7: a redirect). Other programs are left alone.
pub fn fwd_routes(h: &Hook) {
    let index = |name: &str| h.object().map_index(name);
    let put = |name: &str, key: u32, words: &[u32]| {
        let v: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        h.maps()[index(name).unwrap()]
            .user_update(&key.to_le_bytes(), &v, 0)
            .unwrap();
    };
    let hop = |key: u32, (ifindex, smac, dmac): FwdHop| {
        let v = [&ifindex.to_le_bytes()[..], &smac, &dmac].concat();
        h.maps()[index("nexthops").unwrap()]
            .user_update(&key.to_le_bytes(), &v, 0)
            .unwrap();
    };
    if index("radix_nodes").is_some() {
        // The root: 0/0, next hop 1, child 0 -> node 1: 10/8, next hop 2.
        put("radix_nodes", 0, &[0, 0, 0, 1, 1, 0]);
        put("radix_nodes", 1, &[0x0a00_0000, 0xff00_0000, 8, 2, 0, 0]);
    }
    if index("lc_nodes").is_some() {
        // One leaf (base 0: 10/8) whose prefix chain holds 0/0.
        put("lc_nodes", 0, &[0]);
        put("lc_base", 0, &[0x0a00_0000, 0xff00_0000, 2, 1]);
        put("lc_pre", 1, &[0, 0, 1, 0]);
    }
    if let Some(i) = index("lpm_routes") {
        // struct bpf_lpm_trie_key: prefix length, then the address in
        // network order; the value the next hop.
        for (len, addr, nexthop) in [(0u32, [0u8; 4], 1u32), (8, [10, 0, 0, 0], 2)] {
            let key = [&len.to_le_bytes()[..], &addr].concat();
            h.maps()[i]
                .user_update(&key, &nexthop.to_le_bytes(), 0)
                .unwrap();
        }
    }
    if index("nexthops").is_some() {
        hop(1, FWD_DEFAULT_HOP);
        hop(2, FWD_TEN_HOP);
    }
}

/// What the forwarding programs do to a frame with [`fwd_routes`]:
/// `None` to pass it unchanged, `Some(None)` to drop it (a bad IPv4
/// header, RFC 1812 5.2.2), `Some(Some(hop))` to send it to that hop with
/// the TTL one less: an independent model of the checks.
pub fn fwd_expected(frame: &[u8]) -> Option<Option<FwdHop>> {
    let mut off = 12;
    let mut proto = u16::from_be_bytes(frame.get(12..14)?.try_into().unwrap());
    for _ in 0..2 {
        if proto != 0x8100 && proto != 0x88a8 {
            break;
        }
        proto = u16::from_be_bytes(frame.get(off + 4..off + 6)?.try_into().unwrap());
        off += 4;
    }
    if proto != 0x0800 {
        return None;
    }
    let ip = &frame[off + 2..];
    if ip.len() < 20 || ip[0] >> 4 != 4 || ip[0] & 0xf < 5 {
        return Some(None);
    }
    let hlen = usize::from(ip[0] & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if total < hlen || total > ip.len() || !ipv4_checksum_ok(&ip[..hlen]) {
        return Some(None);
    }
    if ip[8] <= 1 {
        return None;
    }
    Some(Some(if ip[16] == 10 {
        FWD_TEN_HOP
    } else {
        FWD_DEFAULT_HOP
    }))
}

pub const FIB: &str = "link eth1 index 3 address 02:00:00:00:03:03\nlink eth2 index 4 address 02:00:00:00:04:04 mtu 9000\n\
neigh 192.168.3.1 dev eth1 lladdr 02:00:00:00:33:33\nneigh 2001:db8:4::1 dev eth2 lladdr 02:00:00:00:44:44\n\
10.10.0.0/16 via 192.168.3.1 dev eth1\nblackhole 10.66.0.0/16\n2001:db8:100::/48 via 2001:db8:4::1 dev eth2\n";

/// `xdp_router` with a FIB (two links, neighbours, routes) and devmap
/// entries for its interfaces.
pub fn router() -> Hook {
    let mut h = hook("xdp_router");
    h.env_mut().fib = runtime::fib::Fib::parse(FIB).unwrap();
    for ifindex in [3u32, 4, 7] {
        map(&h, "tx_ports")
            .user_update(&ifindex.to_le_bytes(), &ifindex.to_le_bytes(), 0)
            .unwrap();
    }
    h
}
