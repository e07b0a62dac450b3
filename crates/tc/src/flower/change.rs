//! The kernel's side of adding a rule (`fl_set_key`): tc's attributes
//! into a key and its mask. As in the kernel, keys that the rule's
//! protocol makes meaningless are dropped without a word (`ip_tos` under
//! `protocol all`, ports under another `ip_proto`): what tc already
//! refused never gets here.

use crate::error::TcError;

use super::key::{ADDR_V4, ADDR_V6, FlowerKey, LSE_BOS, LSE_LABEL, LSE_TC, LSE_TTL};
use super::parse::{
    Attrs, ETH_P_ARP, ETH_P_IP, ETH_P_IPV6, ETH_P_MPLS_MC, ETH_P_MPLS_UC, ETH_P_RARP, eth_type_vlan,
};

/// A rule's key (as given, unmasked: what `show` prints) and its mask.
pub fn set_key(a: &Attrs, ifindex: u32) -> Result<(FlowerKey, FlowerKey), TcError> {
    let mut k = FlowerKey::default();
    let mut m = FlowerKey::default();
    if a.indev.is_some() {
        k.ifindex = ifindex;
        m.ifindex = u32::MAX;
    }
    if let Some((v, mm)) = a.dst_mac {
        (k.dst_mac, m.dst_mac) = (v, mm);
    }
    if let Some((v, mm)) = a.src_mac {
        (k.src_mac, m.src_mac) = (v, mm);
    }
    // `is_vlan_key`: a VLAN EtherType makes the VLAN keys; another one is
    // the protocol.
    if let Some(t) = a.eth_type {
        if eth_type_vlan(t) {
            k.vlan_tpid = t;
            m.vlan_tpid = 0xffff;
            if let Some(id) = a.vlan_id {
                (k.vlan_id, m.vlan_id) = (id & 0xfff, 0xfff);
            }
            if let Some(p) = a.vlan_prio {
                (k.vlan_prio, m.vlan_prio) = (p & 7, 7);
            }
            if let Some(vt) = a.vlan_eth_type {
                (k.vlan_eth_type, m.vlan_eth_type) = (vt, 0xffff);
                if eth_type_vlan(vt) {
                    k.cvlan_tpid = vt;
                    m.cvlan_tpid = 0xffff;
                    if let Some(id) = a.cvlan_id {
                        (k.cvlan_id, m.cvlan_id) = (id & 0xfff, 0xfff);
                    }
                    if let Some(p) = a.cvlan_prio {
                        (k.cvlan_prio, m.cvlan_prio) = (p & 7, 7);
                    }
                    if let Some(ct) = a.cvlan_eth_type {
                        (k.cvlan_eth_type, m.cvlan_eth_type) = (ct, 0xffff);
                        (k.n_proto, m.n_proto) = (ct, 0xffff);
                    }
                } else {
                    (k.n_proto, m.n_proto) = (vt, 0xffff);
                }
            }
        } else {
            (k.n_proto, m.n_proto) = (t, 0xffff);
        }
    }
    let ip = k.n_proto == ETH_P_IP || k.n_proto == ETH_P_IPV6;
    if ip {
        if let Some(p) = a.ip_proto {
            (k.ip_proto, m.ip_proto) = (p, 0xff);
        }
        if let Some((v, mm)) = a.ip_tos {
            (k.ip_tos, m.ip_tos) = (v, mm);
        }
        if let Some((v, mm)) = a.ip_ttl {
            (k.ip_ttl, m.ip_ttl) = (v, mm);
        }
    }
    if a.ipv4_src.is_some() || a.ipv4_dst.is_some() {
        (k.addr_type, m.addr_type) = (ADDR_V4, 0xff);
        if let Some((v, mm)) = a.ipv4_src {
            k.src_ip[..4].copy_from_slice(&v);
            m.src_ip[..4].copy_from_slice(&mm);
        }
        if let Some((v, mm)) = a.ipv4_dst {
            k.dst_ip[..4].copy_from_slice(&v);
            m.dst_ip[..4].copy_from_slice(&mm);
        }
    } else if a.ipv6_src.is_some() || a.ipv6_dst.is_some() {
        (k.addr_type, m.addr_type) = (ADDR_V6, 0xff);
        if let Some((v, mm)) = a.ipv6_src {
            (k.src_ip, m.src_ip) = (v, mm);
        }
        if let Some((v, mm)) = a.ipv6_dst {
            (k.dst_ip, m.dst_ip) = (v, mm);
        }
    }
    let l4 = matches!(k.ip_proto, 6 | 17 | 132);
    if l4 {
        if let Some((p, v, mm)) = a.dst_port.filter(|x| x.0 == k.ip_proto) {
            let _ = p;
            (k.dst_port, m.dst_port) = (v, mm);
        }
        if let Some((p, v, mm)) = a.src_port.filter(|x| x.0 == k.ip_proto) {
            let _ = p;
            (k.src_port, m.src_port) = (v, mm);
        }
        if k.ip_proto == 6
            && let Some((v, mm)) = a.tcp_flags
        {
            (k.tcp_flags, m.tcp_flags) = (v, mm);
        }
        // `fl_set_key_port_range`.
        if let Some((lo, hi)) = a.dst_range {
            if hi <= lo {
                return Err("Error: Invalid destination port range (min must be strictly smaller than max).".into());
            }
            (k.dst_port_min, k.dst_port_max) = (lo, hi);
            (m.dst_port_min, m.dst_port_max) = (0xffff, 0xffff);
        }
        if let Some((lo, hi)) = a.src_range {
            if hi <= lo {
                return Err(
                    "Error: Invalid source port range (min must be strictly smaller than max)."
                        .into(),
                );
            }
            (k.src_port_min, k.src_port_max) = (lo, hi);
            (m.src_port_min, m.src_port_max) = (0xffff, 0xffff);
        }
    } else if (k.n_proto == ETH_P_IP && k.ip_proto == 1)
        || (k.n_proto == ETH_P_IPV6 && k.ip_proto == 58)
    {
        let v6 = k.ip_proto == 58;
        if let Some((_, v, mm)) = a.icmp_type.filter(|x| x.0 == v6) {
            (k.icmp_type, m.icmp_type) = (v, mm);
        }
        if let Some((_, v, mm)) = a.icmp_code.filter(|x| x.0 == v6) {
            (k.icmp_code, m.icmp_code) = (v, mm);
        }
    } else if k.n_proto == ETH_P_MPLS_UC || k.n_proto == ETH_P_MPLS_MC {
        set_mpls(a, &mut k, &mut m)?;
    } else if k.n_proto == ETH_P_ARP || k.n_proto == ETH_P_RARP {
        if let Some((v, mm)) = a.arp_sip {
            (k.arp_sip, m.arp_sip) = (v, mm);
        }
        if let Some((v, mm)) = a.arp_tip {
            (k.arp_tip, m.arp_tip) = (v, mm);
        }
        if let Some((v, mm)) = a.arp_op {
            (k.arp_op, m.arp_op) = (v, mm);
        }
        if let Some((v, mm)) = a.arp_sha {
            (k.arp_sha, m.arp_sha) = (v, mm);
        }
        if let Some((v, mm)) = a.arp_tha {
            (k.arp_tha, m.arp_tha) = (v, mm);
        }
    }
    if let Some((f, mm)) = a.key_flags {
        (k.flags, m.flags) = (f, mm);
    }
    Ok((k, m))
}

/// `fl_set_key_mpls`: the old attributes set entry 0; `mpls lse` entries
/// set their depth's.
fn set_mpls(a: &Attrs, k: &mut FlowerKey, m: &mut FlowerKey) -> Result<(), TcError> {
    let mut lse =
        |i: usize, label: Option<u32>, tc: Option<u8>, bos: Option<u8>, ttl: Option<u8>| {
            let (mut v, mut mm) = (0u32, 0u32);
            if let Some(l) = label {
                v |= l << 12;
                mm |= LSE_LABEL;
            }
            if let Some(t) = tc {
                v |= u32::from(t) << 9;
                mm |= LSE_TC;
            }
            if let Some(b) = bos {
                v |= u32::from(b) << 8;
                mm |= LSE_BOS;
            }
            if let Some(t) = ttl {
                v |= u32::from(t);
                mm |= LSE_TTL;
            }
            (k.mpls[i], m.mpls[i]) = (v, mm);
            k.mpls_used |= 1 << i;
            m.mpls_used |= 1 << i;
        };
    if a.mpls_label.is_some() || a.mpls_tc.is_some() || a.mpls_bos.is_some() || a.mpls_ttl.is_some()
    {
        lse(0, a.mpls_label, a.mpls_tc, a.mpls_bos, a.mpls_ttl);
    }
    let mut seen = 0u8;
    for l in &a.mpls_lses {
        let i = usize::from(l.depth - 1);
        if seen & 1 << i != 0 {
            return Err(format!(
                "Error: MPLS label stack entry of depth {} given twice.",
                l.depth
            )
            .into());
        }
        seen |= 1 << i;
        lse(i, l.label, l.tc, l.bos, l.ttl);
    }
    Ok(())
}
