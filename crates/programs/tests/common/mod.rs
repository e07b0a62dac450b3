//! Loading the examples into hooks.

#![allow(dead_code)]

use runtime::*;

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

pub fn map<'h>(hook: &'h mut Hook, name: &str) -> &'h mut maps::Map {
    let i = hook
        .object()
        .map_index(name)
        .unwrap_or_else(|| panic!("no map {name}"));
    &mut hook.maps_mut()[i]
}

pub fn meta(ts_ns: u64) -> PacketMeta {
    PacketMeta {
        ifindex: 1,
        rx_queue: 0,
        timestamp_ns: ts_ns,
        egress_ifindex: 0,
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
