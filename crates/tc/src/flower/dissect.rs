//! The packet's flow key, as the kernel's flow dissector
//! (`net/core/flow_dissector.c`) fills it for flower (`fl_classify` asks
//! with `FLOW_DISSECTOR_F_STOP_BEFORE_ENCAP`): the interface, the MAC
//! addresses, the outer VLAN tag the skb carries aside and a tag left in
//! the frame (further tags are skipped), then by EtherType: IPv4 (header
//! length, addresses, tos, ttl, fragments), IPv6 (addresses, traffic
//! class, hop limit, hop-by-hop/routing/destination options and fragment
//! headers), ARP and RARP (Ethernet/IPv4 only), MPLS (up to 7 entries);
//! then, for an unfragmented packet, the ports (TCP, UDP, UDP-Lite, DCCP,
//! SCTP; AH's SPI half), the TCP flags and the ICMP type and code. A
//! header cut short stops the dissection where it is, as in the kernel;
//! what was read stays. IP-in-IP stops at the outer header.

use super::key::{ADDR_V4, ADDR_V6, FIRST_FRAG, FRAG, FlowerKey, MPLS_MAX};
use crate::skb::Skb;

const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86dd;
const ETH_P_ARP: u16 = 0x0806;
const ETH_P_RARP: u16 = 0x8035;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88a8;
const ETH_P_MPLS_UC: u16 = 0x8847;
const ETH_P_MPLS_MC: u16 = 0x8848;

/// The kernel's `MAX_FLOW_DISSECT_HDRS`: IPv6 extension headers read.
const MAX_HDRS: u32 = 15;

/// The flow key of `skb` (every field flower can match; a rule's mask
/// picks those it uses).
pub fn dissect(skb: &Skb) -> FlowerKey {
    let mut k = FlowerKey {
        ifindex: skb.ifindex,
        ..FlowerKey::default()
    };
    let d = &skb.data;
    let at = |off: usize, n: usize| d.get(off..off.checked_add(n)?);
    let be16 = |off: usize| at(off, 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    if let Some(m) = at(0, 12) {
        k.dst_mac.copy_from_slice(&m[..6]);
        k.src_mac.copy_from_slice(&m[6..]);
    }
    let mut proto = skb.protocol;
    let mut nhoff = skb.network;
    let mut tags = 0;
    if let Some((tpid, tci)) = skb.vlan {
        k.vlan_tpid = tpid;
        k.vlan_id = tci & 0xfff;
        k.vlan_prio = (tci >> 13) as u8;
        k.vlan_eth_type = proto;
        tags = 1;
    }
    // Tags left in the frame: the first fills the next free VLAN key, the
    // rest are stepped over.
    while matches!(proto, ETH_P_8021Q | ETH_P_8021AD) {
        let (Some(tci), Some(inner)) = (be16(nhoff), be16(nhoff + 2)) else {
            k.n_proto = proto;
            return k;
        };
        let tpid = proto;
        proto = inner;
        nhoff += 4;
        match tags {
            0 => {
                (k.vlan_tpid, k.vlan_id, k.vlan_prio) = (tpid, tci & 0xfff, (tci >> 13) as u8);
                k.vlan_eth_type = proto;
            }
            1 => {
                (k.cvlan_tpid, k.cvlan_id, k.cvlan_prio) = (tpid, tci & 0xfff, (tci >> 13) as u8);
                k.cvlan_eth_type = proto;
            }
            _ => {}
        }
        tags += 1;
    }
    k.n_proto = proto;
    let (ip_proto, l4) = match proto {
        ETH_P_IP => match ipv4(d, nhoff, &mut k) {
            Some(x) => x,
            None => return k,
        },
        ETH_P_IPV6 => match ipv6(d, nhoff, &mut k) {
            Some(x) => x,
            None => return k,
        },
        ETH_P_ARP | ETH_P_RARP => {
            arp(d, nhoff, &mut k);
            return k;
        }
        ETH_P_MPLS_UC | ETH_P_MPLS_MC => {
            mpls(d, nhoff, &mut k);
            return k;
        }
        _ => return k,
    };
    k.ip_proto = ip_proto;
    let Some(thoff) = l4 else {
        return k;
    };
    // Ports (`proto_ports_offset`).
    let ports_at = match ip_proto {
        6 | 17 | 33 | 132 | 136 => Some(thoff),
        51 => Some(thoff + 4),
        _ => None,
    };
    if let Some(p) = ports_at.and_then(|p| at(p, 4)) {
        k.src_port = u16::from_be_bytes([p[0], p[1]]);
        k.dst_port = u16::from_be_bytes([p[2], p[3]]);
    }
    match ip_proto {
        6 => {
            // `__skb_flow_dissect_tcp`: a header of at least 20 bytes.
            if let Some(th) = at(thoff, 20)
                && th[12] >> 4 >= 5
            {
                k.tcp_flags = u16::from_be_bytes([th[12], th[13]]) & 0x0fff;
            }
        }
        1 | 58 => {
            if let Some(ih) = at(thoff, 2) {
                (k.icmp_type, k.icmp_code) = (ih[0], ih[1]);
            }
        }
        _ => {}
    }
    k
}

/// IPv4: the protocol and, unless fragmented, where the transport header
/// starts. `None`: the header is cut short or bad (the dissection ends).
fn ipv4(d: &[u8], nhoff: usize, k: &mut FlowerKey) -> Option<(u8, Option<usize>)> {
    let h = d.get(nhoff..nhoff + 20)?;
    let ihl = usize::from(h[0] & 0xf);
    if ihl < 5 {
        return None;
    }
    k.ip_proto = h[9];
    k.src_ip[..4].copy_from_slice(&h[12..16]);
    k.dst_ip[..4].copy_from_slice(&h[16..20]);
    k.addr_type = ADDR_V4;
    k.ip_tos = h[1];
    k.ip_ttl = h[8];
    let frag = u16::from_be_bytes([h[6], h[7]]);
    if frag & 0x3fff != 0 {
        k.flags |= FRAG;
        if frag & 0x1fff == 0 {
            k.flags |= FIRST_FRAG;
        }
        // Without FLOW_DISSECTOR_F_PARSE_1ST_FRAG no transport header is
        // read from any fragment.
        return Some((h[9], None));
    }
    Some((h[9], Some(nhoff + ihl * 4)))
}

/// IPv6 with its extension headers.
fn ipv6(d: &[u8], nhoff: usize, k: &mut FlowerKey) -> Option<(u8, Option<usize>)> {
    let h = d.get(nhoff..nhoff + 40)?;
    let vtc = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    k.ip_tos = (vtc >> 20) as u8;
    k.ip_ttl = h[7];
    k.src_ip.copy_from_slice(&h[8..24]);
    k.dst_ip.copy_from_slice(&h[24..40]);
    k.addr_type = ADDR_V6;
    let mut next = h[6];
    let mut off = nhoff + 40;
    for _ in 0..MAX_HDRS {
        match next {
            // Hop-by-hop, routing, destination options.
            0 | 43 | 60 => {
                k.ip_proto = next;
                let e = d.get(off..off + 2)?;
                next = e[0];
                off += (usize::from(e[1]) + 1) * 8;
            }
            44 => {
                k.ip_proto = next;
                let f = d.get(off..off + 8)?;
                k.flags |= FRAG;
                next = f[0];
                if u16::from_be_bytes([f[2], f[3]]) & 0xfff8 == 0 {
                    k.flags |= FIRST_FRAG;
                }
                return Some((next, None));
            }
            _ => return Some((next, Some(off))),
        }
    }
    Some((next, Some(off)))
}

/// ARP for Ethernet and IPv4 only (`__skb_flow_dissect_arp`).
fn arp(d: &[u8], nhoff: usize, k: &mut FlowerKey) {
    let Some(a) = d.get(nhoff..nhoff + 28) else {
        return;
    };
    let hrd = u16::from_be_bytes([a[0], a[1]]);
    let pro = u16::from_be_bytes([a[2], a[3]]);
    if hrd != 1 || pro != ETH_P_IP || a[4] != 6 || a[5] != 4 {
        return;
    }
    k.arp_op = a[7];
    k.arp_sha.copy_from_slice(&a[8..14]);
    k.arp_sip.copy_from_slice(&a[14..18]);
    k.arp_tha.copy_from_slice(&a[18..24]);
    k.arp_tip.copy_from_slice(&a[24..28]);
}

/// The label stack, to the bottom of stack or `MPLS_MAX` entries.
fn mpls(d: &[u8], nhoff: usize, k: &mut FlowerKey) {
    let mut off = nhoff;
    for i in 0..MPLS_MAX {
        let Some(e) = d.get(off..off + 4) else {
            return;
        };
        let lse = u32::from_be_bytes([e[0], e[1], e[2], e[3]]);
        k.mpls[i] = lse;
        k.mpls_used |= 1 << i;
        if lse & super::key::LSE_BOS != 0 {
            return;
        }
        off += 4;
    }
}
