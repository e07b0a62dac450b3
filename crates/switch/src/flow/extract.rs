//! Flow-key extraction (Open vSwitch's miniflow_extract): one pass over a
//! frame's headers fills the key's fields and notes where each layer
//! starts, for actions that rewrite them. A header cut short ends the walk
//! there: the fields before it stay, the later ones read as zero, as in
//! OVS, so no frame is an error.

use super::key::{PackedKey, WORDS, slot};

/// `nw_frag` bits: the packet is a fragment; it is not the first one.
pub const FRAG_ANY: u64 = 1;
pub const FRAG_LATER: u64 = 2;

/// The ethertype Open vSwitch gives 802.3 frames (a length, not a type).
pub const ETH_TYPE_NONE: u16 = 0x05ff;

pub const ETH_TYPE_IPV4: u16 = 0x0800;
pub const ETH_TYPE_ARP: u16 = 0x0806;
pub const ETH_TYPE_IPV6: u16 = 0x86dd;
pub const ETH_TYPE_VLAN: u16 = 0x8100;
pub const ETH_TYPE_QINQ: u16 = 0x88a8;

pub const IPPROTO_ICMP: u8 = 1;
pub const IPPROTO_TCP: u8 = 6;
pub const IPPROTO_UDP: u8 = 17;
pub const IPPROTO_ICMPV6: u8 = 58;
pub const IPPROTO_SCTP: u8 = 132;

/// Where a frame's layers start (byte offsets), for actions that rewrite
/// headers.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct FrameLayout {
    /// The outer 802.1Q tag's TPID, when there is one (at byte 12).
    pub vlan: bool,
    /// The network header, when the ethertype is IPv4, IPv6 or ARP and
    /// its fixed part is there.
    pub l3: Option<usize>,
    /// The transport header (TCP, UDP, SCTP, ICMP), when complete enough
    /// to hold the fields the key has.
    pub l4: Option<usize>,
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

fn mac(b: &[u8], at: usize) -> Option<u128> {
    let s: &[u8; 6] = b.get(at..at + 6)?.try_into().ok()?;
    let [a, b, c, d, e, f] = *s;
    Some(u128::from(u64::from_be_bytes([0, 0, a, b, c, d, e, f])))
}

fn be128(b: &[u8], at: usize) -> Option<u128> {
    let s: &[u8; 16] = b.get(at..at + 16)?.try_into().ok()?;
    Some(u128::from_be_bytes(*s))
}

/// The key of `frame` arriving on `in_port`, and where its layers are.
pub fn extract(frame: &[u8], in_port: u32) -> (PackedKey, FrameLayout) {
    let mut key = [0u64; WORDS];
    let mut layout = FrameLayout::default();
    slot::IN_PORT.set(&mut key, u128::from(in_port));
    let (Some(dst), Some(src), Some(mut eth_type)) =
        (mac(frame, 0), mac(frame, 6), be16(frame, 12))
    else {
        return (key, layout);
    };
    slot::ETH_DST.set(&mut key, dst);
    slot::ETH_SRC.set(&mut key, src);
    let mut l3 = 14;
    if eth_type == ETH_TYPE_VLAN || eth_type == ETH_TYPE_QINQ {
        let (Some(tci), Some(inner)) = (be16(frame, 14), be16(frame, 16)) else {
            // A tag cut short: no type (OVS leaves dl_type zero).
            slot::ETH_TYPE.set(&mut key, 0);
            return (key, layout);
        };
        slot::VLAN_TCI.set(&mut key, u128::from(tci | 0x1000));
        layout.vlan = true;
        eth_type = inner;
        l3 = 18;
    }
    if eth_type < 0x0600 {
        eth_type = ETH_TYPE_NONE;
    }
    slot::ETH_TYPE.set(&mut key, u128::from(eth_type));
    match eth_type {
        ETH_TYPE_IPV4 => ipv4(frame, l3, &mut key, &mut layout),
        ETH_TYPE_IPV6 => ipv6(frame, l3, &mut key, &mut layout),
        ETH_TYPE_ARP => arp(frame, l3, &mut key, &mut layout),
        _ => {}
    }
    (key, layout)
}

fn ipv4(f: &[u8], at: usize, key: &mut PackedKey, layout: &mut FrameLayout) {
    let Some(h) = f.get(at..at + 20) else { return };
    let ihl = usize::from(h[0] & 0x0f) * 4;
    if h[0] >> 4 != 4 || ihl < 20 || f.len() < at + ihl {
        return;
    }
    layout.l3 = Some(at);
    slot::NW_TOS.set(key, u128::from(h[1]));
    slot::NW_TTL.set(key, u128::from(h[8]));
    slot::NW_PROTO.set(key, u128::from(h[9]));
    slot::NW_SRC.set(
        key,
        u128::from(u32::from_be_bytes([h[12], h[13], h[14], h[15]])),
    );
    slot::NW_DST.set(
        key,
        u128::from(u32::from_be_bytes([h[16], h[17], h[18], h[19]])),
    );
    let frag = u16::from_be_bytes([h[6], h[7]]);
    let (more, offset) = (frag & 0x2000 != 0, frag & 0x1fff);
    if more || offset != 0 {
        let later = if offset != 0 { FRAG_LATER } else { 0 };
        slot::NW_FRAG.set(key, u128::from(FRAG_ANY | later));
        if offset != 0 {
            return;
        }
    }
    l4(f, at + ihl, h[9], key, layout);
}

fn ipv6(f: &[u8], at: usize, key: &mut PackedKey, layout: &mut FrameLayout) {
    let Some(h) = f.get(at..at + 40) else { return };
    if h[0] >> 4 != 6 {
        return;
    }
    layout.l3 = Some(at);
    let vtcfl = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    slot::NW_TOS.set(key, u128::from((vtcfl >> 20) & 0xff));
    slot::IPV6_FLABEL.set(key, u128::from(vtcfl & 0x000f_ffff));
    slot::NW_TTL.set(key, u128::from(h[7]));
    slot::IPV6_SRC.set(key, be128(h, 8).unwrap_or(0));
    slot::IPV6_DST.set(key, be128(h, 24).unwrap_or(0));
    let mut next = h[6];
    let mut off = at + 40;
    // Extension headers: hop-by-hop, routing, destination options, AH and
    // fragment, a bounded number of them.
    for _ in 0..8 {
        match next {
            0 | 43 | 60 | 51 => {
                let (Some(&nh), Some(&len)) = (f.get(off), f.get(off + 1)) else {
                    return;
                };
                let size = if next == 51 {
                    (usize::from(len) + 2) * 4
                } else {
                    (usize::from(len) + 1) * 8
                };
                next = nh;
                off += size;
            }
            44 => {
                let (Some(&nh), Some(fo)) = (f.get(off), be16(f, off + 2)) else {
                    return;
                };
                let offset = fo >> 3;
                let later = if offset != 0 { FRAG_LATER } else { 0 };
                slot::NW_FRAG.set(key, u128::from(FRAG_ANY | later));
                next = nh;
                off += 8;
                if offset != 0 {
                    slot::NW_PROTO.set(key, u128::from(next));
                    return;
                }
            }
            _ => break,
        }
    }
    slot::NW_PROTO.set(key, u128::from(next));
    l4(f, off, next, key, layout);
}

fn l4(f: &[u8], at: usize, proto: u8, key: &mut PackedKey, layout: &mut FrameLayout) {
    match proto {
        IPPROTO_TCP => {
            let (Some(sp), Some(dp), Some(flags)) =
                (be16(f, at), be16(f, at + 2), be16(f, at + 12))
            else {
                return;
            };
            if f.len() < at + 20 {
                return;
            }
            slot::TP_SRC.set(key, u128::from(sp));
            slot::TP_DST.set(key, u128::from(dp));
            slot::TCP_FLAGS.set(key, u128::from(flags & 0x0fff));
            layout.l4 = Some(at);
        }
        IPPROTO_UDP | IPPROTO_SCTP => {
            let need = if proto == IPPROTO_UDP { 8 } else { 12 };
            if f.len() < at + need {
                return;
            }
            slot::TP_SRC.set(key, u128::from(be16(f, at).unwrap_or(0)));
            slot::TP_DST.set(key, u128::from(be16(f, at + 2).unwrap_or(0)));
            layout.l4 = Some(at);
        }
        IPPROTO_ICMP => {
            let Some(h) = f.get(at..at + 4) else { return };
            slot::ICMP_TYPE.set(key, u128::from(h[0]));
            slot::ICMP_CODE.set(key, u128::from(h[1]));
            layout.l4 = Some(at);
        }
        IPPROTO_ICMPV6 => {
            let Some(h) = f.get(at..at + 4) else { return };
            slot::ICMP_TYPE.set(key, u128::from(h[0]));
            slot::ICMP_CODE.set(key, u128::from(h[1]));
            layout.l4 = Some(at);
            if h[1] == 0 && (h[0] == 135 || h[0] == 136) {
                neighbor_discovery(f, at, h[0], key);
            }
        }
        _ => {}
    }
}

/// A neighbor solicitation (135) or advertisement (136): the target and
/// the link-layer address option that goes with it.
fn neighbor_discovery(f: &[u8], at: usize, icmp_type: u8, key: &mut PackedKey) {
    let Some(target) = be128(f, at + 8) else {
        return;
    };
    let (mut sll, mut tll) = (0, 0);
    let mut opt = at + 24;
    while let (Some(&kind), Some(&len)) = (f.get(opt), f.get(opt + 1)) {
        let size = usize::from(len) * 8;
        if size == 0 || f.len() < opt + size {
            // A malformed option: OVS ignores the addresses.
            return slot::ND_TARGET.set(key, target);
        }
        if size == 8 {
            let addr = mac(f, opt + 2).unwrap_or(0);
            if kind == 1 && icmp_type == 135 && sll == 0 {
                sll = addr;
            } else if kind == 2 && icmp_type == 136 && tll == 0 {
                tll = addr;
            }
        }
        opt += size;
    }
    slot::ND_TARGET.set(key, target);
    slot::ARP_SHA.set(key, sll);
    slot::ARP_THA.set(key, tll);
}

fn arp(f: &[u8], at: usize, key: &mut PackedKey, layout: &mut FrameLayout) {
    let Some(h) = f.get(at..at + 28) else { return };
    // Ethernet/IPv4 ARP only, as OVS.
    if h[0..2] != [0, 1] || h[2..4] != [8, 0] || h[4] != 6 || h[5] != 4 {
        return;
    }
    layout.l3 = Some(at);
    let op = u16::from_be_bytes([h[6], h[7]]);
    if op <= 0xff {
        slot::ARP_OP.set(key, u128::from(op));
    }
    slot::ARP_SHA.set(key, mac(h, 8).unwrap_or(0));
    slot::NW_SRC.set(key, u128::from(be32(h, 14).unwrap_or(0)));
    slot::ARP_THA.set(key, mac(h, 18).unwrap_or(0));
    slot::NW_DST.set(key, u128::from(be32(h, 24).unwrap_or(0)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp_frame(vlan: Option<u16>) -> Vec<u8> {
        let mut f = vec![0u8; 6];
        f.extend_from_slice(&[0xaa; 6]);
        if let Some(tci) = vlan {
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&tci.to_be_bytes());
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[1] = 0xb8;
        ip[8] = 64;
        ip[9] = 6;
        ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
        ip[16..20].copy_from_slice(&[10, 0, 0, 2]);
        f.extend_from_slice(&ip);
        let mut tcp = [0u8; 20];
        tcp[0..2].copy_from_slice(&1234u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&80u16.to_be_bytes());
        tcp[12] = 0x50;
        tcp[13] = 0x12;
        f.extend_from_slice(&tcp);
        f
    }

    #[test]
    fn a_tcp_frame_fills_every_layer() {
        let (k, l) = extract(&tcp_frame(None), 3);
        assert_eq!(slot::IN_PORT.get(&k), 3);
        assert_eq!(slot::ETH_SRC.get(&k), 0xaaaa_aaaa_aaaa);
        assert_eq!(slot::ETH_TYPE.get(&k), 0x0800);
        assert_eq!(slot::VLAN_TCI.get(&k), 0);
        assert_eq!(slot::IP_DSCP.get(&k), 0xb8 >> 2);
        assert_eq!(slot::NW_TTL.get(&k), 64);
        assert_eq!(slot::NW_SRC.get(&k), 0x0a00_0001);
        assert_eq!(slot::TP_DST.get(&k), 80);
        assert_eq!(slot::TCP_FLAGS.get(&k), 0x012);
        assert_eq!(l.l3, Some(14));
        assert_eq!(l.l4, Some(34));
    }

    #[test]
    fn a_vlan_tag_sets_the_present_bit_and_moves_the_layers() {
        let (k, l) = extract(&tcp_frame(Some(0xa00a)), 1);
        assert_eq!(slot::VLAN_VID.get(&k), 0x100a);
        assert_eq!(slot::VLAN_PCP.get(&k), 5);
        assert_eq!(slot::ETH_TYPE.get(&k), 0x0800);
        assert!(l.vlan);
        assert_eq!(l.l4, Some(38));
    }

    #[test]
    fn a_frame_cut_anywhere_keeps_the_fields_before_the_cut() {
        let full = tcp_frame(None);
        for n in 0..full.len() {
            let (k, _) = extract(&full[..n], 1);
            if n >= 54 {
                assert_eq!(slot::TP_DST.get(&k), 80);
            } else {
                assert_eq!(slot::TP_DST.get(&k), 0, "cut at {n}");
            }
            if n >= 34 {
                assert_eq!(slot::NW_DST.get(&k), 0x0a00_0002);
            }
        }
    }

    #[test]
    fn later_fragments_have_no_ports() {
        let mut f = tcp_frame(None);
        f[14 + 6] = 0x00;
        f[14 + 7] = 0x10;
        let (k, l) = extract(&f, 1);
        assert_eq!(slot::NW_FRAG.get(&k), u128::from(FRAG_ANY | FRAG_LATER));
        assert_eq!(slot::TP_DST.get(&k), 0);
        assert_eq!(l.l4, None);
    }
}
