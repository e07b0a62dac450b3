//! Runs datapath actions on a packet: rewrites headers in place (IPv4,
//! TCP, UDP and ICMP checksums updated incrementally, RFC 1624), pushes
//! and pops VLAN tags, and hands copies to ports and the controller.

use openflow::Field;

use crate::flow::{
    ETH_TYPE_IPV4, ETH_TYPE_IPV6, FrameLayout, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_TCP,
    IPPROTO_UDP,
};
use crate::odp::{DpAction, ToController};

/// Where executed packets go.
pub trait Output {
    /// The frame out of `port`.
    fn send(&mut self, port: u32, frame: &[u8]);
    /// The frame to the controller, as it arrived on `in_port`.
    fn to_controller(&mut self, frame: &[u8], in_port: u32, why: &ToController);
}

/// Runs `actions` on `frame` (whose layers `layout` gives) that arrived
/// on `in_port`.
pub fn execute(
    frame: &mut Vec<u8>,
    layout: FrameLayout,
    in_port: u32,
    actions: &[DpAction],
    out: &mut dyn Output,
) {
    let mut layout = layout;
    for a in actions {
        match a {
            DpAction::Output(p) => out.send(*p, frame),
            DpAction::Controller(why) => out.to_controller(frame, in_port, why),
            DpAction::Set(field, value) => set_field(frame, &layout, *field, *value),
            DpAction::SetTtl(ttl) => set_ttl(frame, &layout, *ttl),
            DpAction::PushVlan { tpid, tci } => push_vlan(frame, &mut layout, *tpid, *tci),
            DpAction::PopVlan => pop_vlan(frame, &mut layout),
            DpAction::Clone(inner) => {
                let mut copy = frame.clone();
                execute(&mut copy, layout, in_port, inner, out);
            }
        }
    }
}

fn push_vlan(frame: &mut Vec<u8>, layout: &mut FrameLayout, tpid: u16, tci: u16) {
    if frame.len() < 14 {
        return;
    }
    let mut tag = [0u8; 4];
    tag[..2].copy_from_slice(&tpid.to_be_bytes());
    tag[2..].copy_from_slice(&tci.to_be_bytes());
    frame.splice(12..12, tag);
    layout.vlan = true;
    layout.l3 = layout.l3.map(|o| o + 4);
    layout.l4 = layout.l4.map(|o| o + 4);
}

fn pop_vlan(frame: &mut Vec<u8>, layout: &mut FrameLayout) {
    if !layout.vlan || frame.len() < 18 {
        return;
    }
    frame.drain(12..16);
    // An inner tag, if any, becomes the outer one.
    let inner = u16::from_be_bytes([frame[12], frame[13]]);
    layout.vlan = inner == 0x8100 || inner == 0x88a8;
    layout.l3 = layout.l3.map(|o| o - 4);
    layout.l4 = layout.l4.map(|o| o - 4);
}

/// The ethertype after the outer tag (or the frame's).
fn eth_type(frame: &[u8], layout: &FrameLayout) -> u16 {
    let at = if layout.vlan { 16 } else { 12 };
    frame
        .get(at..at + 2)
        .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]))
}

/// The L4 protocol and where its checksum is, for a frame with an L4
/// header.
fn l4_checksum(frame: &[u8], layout: &FrameLayout) -> Option<(usize, bool)> {
    let l3 = layout.l3?;
    let l4 = layout.l4?;
    let proto = match eth_type(frame, layout) {
        ETH_TYPE_IPV4 => *frame.get(l3 + 9)?,
        // The extension headers were walked: the protocol is the L4's.
        ETH_TYPE_IPV6 => l4_proto_v6(frame, l3, l4)?,
        _ => return None,
    };
    match proto {
        IPPROTO_TCP => Some((l4 + 16, false)),
        IPPROTO_UDP => Some((l4 + 6, true)),
        IPPROTO_ICMP | IPPROTO_ICMPV6 => Some((l4 + 2, false)),
        _ => None,
    }
}

/// The protocol of the IPv6 header chain's last header, found by walking
/// it again (its place is `l4`).
fn l4_proto_v6(frame: &[u8], l3: usize, l4: usize) -> Option<u8> {
    let mut next = *frame.get(l3 + 6)?;
    let mut at = l3 + 40;
    while at < l4 {
        let nh = *frame.get(at)?;
        let size = match next {
            44 => 8,
            51 => (usize::from(*frame.get(at + 1)?) + 2) * 4,
            _ => (usize::from(*frame.get(at + 1)?) + 1) * 8,
        };
        next = nh;
        at += size;
    }
    Some(next)
}

/// Whether the L4 header is ICMP (for IPv4, or oddly inside IPv6): its
/// checksum has no pseudo-header.
fn is_icmpv4(frame: &[u8], layout: &FrameLayout) -> bool {
    let (Some(l3), Some(l4)) = (layout.l3, layout.l4) else {
        return false;
    };
    match eth_type(frame, layout) {
        ETH_TYPE_IPV4 => frame.get(l3 + 9) == Some(&IPPROTO_ICMP),
        ETH_TYPE_IPV6 => l4_proto_v6(frame, l3, l4) == Some(IPPROTO_ICMP),
        _ => false,
    }
}

/// Writes `new` at `at`, updating each checksum of `sums` (its place,
/// and whether 0 means "none" as in UDP) for the change. The change is
/// taken over 16-bit words aligned to `base`, the start of the header the
/// field is in (checksums sum words from there).
fn patch(frame: &mut [u8], base: usize, at: usize, new: &[u8], sums: &[(usize, bool)]) {
    let end = at + new.len();
    if end > frame.len() {
        return;
    }
    let start = base + ((at - base) & !1);
    let stop = (base + ((end - base + 1) & !1)).min(frame.len());
    let old: Vec<u8> = frame[start..stop].to_vec();
    frame[at..end].copy_from_slice(new);
    for &(place, zero_is_none) in sums {
        let Some(c) = frame.get(place..place + 2) else {
            continue;
        };
        let sum = u16::from_be_bytes([c[0], c[1]]);
        if zero_is_none && sum == 0 {
            continue;
        }
        let mut acc = u32::from(!sum);
        for (o, n) in old.chunks(2).zip(frame[start..stop].chunks(2)) {
            let word = |b: &[u8]| u16::from_be_bytes([b[0], *b.get(1).unwrap_or(&0)]);
            acc += u32::from(!word(o)) + u32::from(word(n));
        }
        while acc > 0xffff {
            acc = (acc & 0xffff) + (acc >> 16);
        }
        let mut sum = !(acc as u16);
        if zero_is_none && sum == 0 {
            sum = 0xffff;
        }
        frame[place..place + 2].copy_from_slice(&sum.to_be_bytes());
    }
}

fn set_field(frame: &mut [u8], layout: &FrameLayout, field: Field, value: u128) {
    use Field::*;
    let bytes = value.to_be_bytes();
    let last = |n: usize| &bytes[16 - n..];
    let l3 = layout.l3;
    let l4 = layout.l4;
    let l4_sum = l4_checksum(frame, layout);
    // The L4 checksums that cover the IP addresses (ICMPv4's does not).
    let pseudo_sum = l4_sum.filter(|_| !is_icmpv4(frame, layout));
    let ip_sum = l3.map(|o| (o + 10, false));
    match field {
        EthDst => patch(frame, 0, 0, last(6), &[]),
        EthSrc => patch(frame, 0, 6, last(6), &[]),
        VlanVid if layout.vlan && frame.len() >= 16 => {
            let tci = u16::from_be_bytes([frame[14], frame[15]]);
            let tci = (tci & 0xf000) | (value as u16 & 0x0fff);
            patch(frame, 0, 14, &tci.to_be_bytes(), &[]);
        }
        VlanPcp if layout.vlan && frame.len() >= 16 => {
            let tci = u16::from_be_bytes([frame[14], frame[15]]);
            let tci = (tci & 0x1fff) | ((value as u16 & 7) << 13);
            patch(frame, 0, 14, &tci.to_be_bytes(), &[]);
        }
        Ipv4Src | Ipv4Dst => {
            let Some(o) = l3 else { return };
            let at = o + if field == Ipv4Src { 12 } else { 16 };
            let mut sums: Vec<(usize, bool)> = ip_sum.into_iter().collect();
            sums.extend(pseudo_sum);
            patch(frame, o, at, last(4), &sums);
        }
        Ipv6Src | Ipv6Dst => {
            let Some(o) = l3 else { return };
            let at = o + if field == Ipv6Src { 8 } else { 24 };
            let sums: Vec<_> = pseudo_sum.into_iter().collect();
            patch(frame, o, at, last(16), &sums);
        }
        IpDscp | IpEcn => {
            let Some(o) = l3 else { return };
            let (bits, shift) = if field == IpDscp {
                (0xfc, 2)
            } else {
                (0x03, 0)
            };
            if eth_type(frame, layout) == ETH_TYPE_IPV4 {
                let Some(&tos) = frame.get(o + 1) else { return };
                let tos = (tos & !bits) | (((value as u8) << shift) & bits);
                patch(frame, o, o + 1, &[tos], &[(o + 10, false)]);
            } else if let Some(h) = frame.get(o..o + 2) {
                // The traffic class straddles the first two bytes.
                let w = u16::from_be_bytes([h[0], h[1]]);
                let tc = ((w >> 4) as u8 & !bits) | (((value as u8) << shift) & bits);
                let w = (w & 0xf00f) | (u16::from(tc) << 4);
                patch(frame, o, o, &w.to_be_bytes(), &[]);
            }
        }
        Ipv6Flabel => {
            let Some(o) = l3 else { return };
            let Some(h) = frame.get(o..o + 4) else { return };
            let w = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
            let w = (w & 0xfff0_0000) | (value as u32 & 0x000f_ffff);
            patch(frame, o, o, &w.to_be_bytes(), &[]);
        }
        TcpSrc | UdpSrc | SctpSrc | TcpDst | UdpDst | SctpDst => {
            let Some(o) = l4 else { return };
            let at = o + if matches!(field, TcpSrc | UdpSrc | SctpSrc) {
                0
            } else {
                2
            };
            let sums: Vec<_> = l4_sum.into_iter().collect();
            patch(frame, o, at, last(2), &sums);
            if matches!(field, SctpSrc | SctpDst) {
                sctp_checksum(frame, o);
            }
        }
        Icmpv4Type | Icmpv6Type | Icmpv4Code | Icmpv6Code => {
            let Some(o) = l4 else { return };
            let at = o + if matches!(field, Icmpv4Type | Icmpv6Type) {
                0
            } else {
                1
            };
            patch(frame, o, at, last(1), &[(o + 2, false)]);
        }
        ArpOp | ArpSha | ArpSpa | ArpTha | ArpTpa => {
            let Some(o) = l3 else { return };
            let (at, n) = match field {
                ArpOp => (6, 2),
                ArpSha => (8, 6),
                ArpSpa => (14, 4),
                ArpTha => (18, 6),
                _ => (24, 4),
            };
            patch(frame, o, o + at, last(n), &[]);
        }
        Ipv6NdTarget => {
            let Some(o) = l4 else { return };
            let sums: Vec<_> = l4_sum.into_iter().collect();
            patch(frame, o, o + 8, last(16), &sums);
        }
        // ND's link-layer address options and the rest: not rewritten.
        _ => {}
    }
}

fn set_ttl(frame: &mut [u8], layout: &FrameLayout, ttl: u8) {
    let Some(o) = layout.l3 else { return };
    match eth_type(frame, layout) {
        ETH_TYPE_IPV4 => patch(frame, o, o + 8, &[ttl], &[(o + 10, false)]),
        ETH_TYPE_IPV6 => patch(frame, o, o + 7, &[ttl], &[]),
        _ => {}
    }
}

/// SCTP's CRC32c over the whole packet from `l4` (when it is all there:
/// a capture cut short keeps its checksum).
fn sctp_checksum(frame: &mut [u8], l4: usize) {
    let Some(pkt) = frame.get_mut(l4..) else {
        return;
    };
    if pkt.len() < 12 {
        return;
    }
    pkt[8..12].fill(0);
    let mut crc = !0u32;
    for &b in pkt.iter() {
        crc ^= u32::from(b);
        for _ in 0..8 {
            // The Castagnoli polynomial, reflected.
            crc = (crc >> 1) ^ (0x82f6_3b78 & (crc & 1).wrapping_neg());
        }
    }
    pkt[8..12].copy_from_slice(&(!crc).to_le_bytes());
}

#[cfg(test)]
mod tests;
