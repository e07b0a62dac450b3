//! Loading the forwarding programs into hooks with a table's maps, frames
//! to a destination, and what a run decided.

#![allow(dead_code)]

use std::collections::HashMap;

use lpm::{MapEntries, NextHopId, RouteTable};
use runtime::*;

pub fn hook(name: &str) -> Hook {
    let bytes = programs::object(name).unwrap_or_else(|| panic!("no program {name}"));
    let image = Image::load(obj::Object::parse(bytes).unwrap(), &LoadOptions::default()).unwrap();
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

/// A hook of `name` with `entries` in its maps.
pub fn loaded(name: &str, entries: &MapEntries) -> Hook {
    let h = hook(name);
    for (m, k, v) in entries {
        map(&h, m).user_update(k, v, 0).unwrap();
    }
    h
}

/// The ingress interface of every run.
pub const INGRESS: u32 = 1;

pub fn meta() -> PacketMeta {
    PacketMeta {
        ifindex: INGRESS,
        rx_queue: 0,
        timestamp_ns: 0,
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

/// The IPv4 header checksum over `hdr` (checksum field included: 0 when
/// right).
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut sum = 0u32;
    for w in hdr.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Offset of the IPv4 header in the frames built here.
pub const IP: usize = 14;

/// A UDP frame to `dst` with a valid header checksum.
pub fn frame_to(template: &mut [u8], dst: u32) {
    template[IP + 16..IP + 20].copy_from_slice(&dst.to_be_bytes());
    template[IP + 10..IP + 12].fill(0);
    let c = ipv4_checksum(&template[IP..IP + 20]);
    template[IP + 10..IP + 12].copy_from_slice(&c.to_be_bytes());
}

pub fn template() -> Vec<u8> {
    packet::Builder::udp("192.0.2.1", "0.0.0.0", 1000, 53)
        .payload(&[0; 18])
        .build()
}

/// What a forwarding run decided: the next hop (by its destination MAC,
/// unique per next hop in the tables here), or none (passed unchanged).
pub struct Decoder {
    by_dmac: HashMap<[u8; 6], NextHopId>,
    ifindex: Vec<u32>,
}

impl Decoder {
    pub fn new(t: &RouteTable) -> Decoder {
        let by_dmac: HashMap<_, _> = t
            .nexthops()
            .iter()
            .enumerate()
            .map(|(i, h)| (h.dmac, i as NextHopId + 1))
            .collect();
        assert_eq!(
            by_dmac.len(),
            t.nexthops().len(),
            "next hop MACs not unique"
        );
        Decoder {
            by_dmac,
            ifindex: t.nexthops().iter().map(|h| h.ifindex).collect(),
        }
    }

    /// The next hop `out` went to, checking the verdict fits it.
    pub fn decode(&self, input: &[u8], out: &Outcome<'_>) -> Result<Option<NextHopId>, String> {
        match out.verdict {
            Verdict::Xdp(XdpAction::Pass) => {
                if out.packet != input {
                    return Err("passed changed".into());
                }
                Ok(None)
            }
            Verdict::Xdp(a @ (XdpAction::Tx | XdpAction::Redirect)) => {
                let dmac: [u8; 6] = out.packet[..6].try_into().unwrap();
                let id = *self
                    .by_dmac
                    .get(&dmac)
                    .ok_or_else(|| format!("unknown destination MAC {dmac:02x?}"))?;
                let ifindex = self.ifindex[id as usize - 1];
                let want_tx = ifindex == 0 || ifindex == INGRESS;
                let ok = match (a, &out.redirect) {
                    (XdpAction::Tx, _) => want_tx,
                    (_, Some(r)) => {
                        !want_tx
                            && r.target
                                == RedirectTarget::Device {
                                    ifindex,
                                    ingress: false,
                                }
                    }
                    _ => false,
                };
                if !ok {
                    return Err(format!("{a:?} {:?} for ifindex {ifindex}", out.redirect));
                }
                Ok(Some(id))
            }
            v => Err(format!("verdict {v:?}")),
        }
    }
}
