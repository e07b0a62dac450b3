//! The words after `flower` in `tc filter add ... flower ...`, read as
//! iproute2 6.1's `flower_parse_opt` reads them (keywords matched by
//! prefix in its order, values in its bases, its checks of the filter's
//! protocol and `ip_proto`); what comes out is the netlink request tc
//! would send ([`Attrs`]). Errors read as tc's (`Illegal "dst_port"`,
//! `What is "x"?`) with the reason. Keys whose data a packet here cannot
//! carry (conntrack, tunnel metadata) are refused by name.

use super::key::MPLS_MAX;
use super::values::{
    Masked, arp_op_name, get_u8, get_u16, get_u32, masked_mac, masked_u8, matches, num, prefix4,
    prefix6,
};
use crate::action::{ActionRef, Actions};
use crate::action_parse::parse_actions;
use crate::error::TcError;
use crate::protocol::{ETH_P_ALL, parse_protocol};

/// `TCA_CLS_FLAGS_SKIP_HW` / `_SKIP_SW` / `_VERBOSE`.
pub const SKIP_HW: u32 = 1;
pub const SKIP_SW: u32 = 2;
pub const VERBOSE: u32 = 1 << 4;

pub(crate) const ETH_P_IP: u16 = 0x0800;
pub(crate) const ETH_P_IPV6: u16 = 0x86dd;
pub(crate) const ETH_P_ARP: u16 = 0x0806;
pub(crate) const ETH_P_RARP: u16 = 0x8035;
pub(crate) const ETH_P_MPLS_UC: u16 = 0x8847;
pub(crate) const ETH_P_MPLS_MC: u16 = 0x8848;

pub(crate) fn eth_type_vlan(t: u16) -> bool {
    t == 0x8100 || t == 0x88a8
}

/// One `mpls lse ...` entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lse {
    pub depth: u8,
    pub label: Option<u32>,
    pub tc: Option<u8>,
    pub bos: Option<u8>,
    pub ttl: Option<u8>,
}

/// What tc sends the kernel for one rule (its `TCA_FLOWER_*` attributes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attrs {
    /// The request's handle (0: the kernel picks).
    pub handle: u32,
    pub classid: Option<u32>,
    pub flags: u32,
    pub indev: Option<String>,
    /// `TCA_FLOWER_KEY_ETH_TYPE`: the filter's protocol unless `all`.
    pub eth_type: Option<u16>,
    pub vlan_id: Option<u16>,
    pub vlan_prio: Option<u8>,
    pub vlan_eth_type: Option<u16>,
    pub cvlan_id: Option<u16>,
    pub cvlan_prio: Option<u8>,
    pub cvlan_eth_type: Option<u16>,
    pub dst_mac: Option<Masked<[u8; 6]>>,
    pub src_mac: Option<Masked<[u8; 6]>>,
    pub ip_proto: Option<u8>,
    pub ip_tos: Option<Masked<u8>>,
    pub ip_ttl: Option<Masked<u8>>,
    pub mpls_label: Option<u32>,
    pub mpls_tc: Option<u8>,
    pub mpls_bos: Option<u8>,
    pub mpls_ttl: Option<u8>,
    pub mpls_lses: Vec<Lse>,
    pub ipv4_src: Option<Masked<[u8; 4]>>,
    pub ipv4_dst: Option<Masked<[u8; 4]>>,
    pub ipv6_src: Option<Masked<[u8; 16]>>,
    pub ipv6_dst: Option<Masked<[u8; 16]>>,
    /// Ports: the `ip_proto` whose attribute tc chose, value and mask.
    pub dst_port: Option<(u8, u16, u16)>,
    pub src_port: Option<(u8, u16, u16)>,
    /// Port ranges (min, max).
    pub dst_range: Option<(u16, u16)>,
    pub src_range: Option<(u16, u16)>,
    pub tcp_flags: Option<Masked<u16>>,
    /// ICMP type and code: whether the ICMPv6 attributes, value, mask.
    pub icmp_type: Option<(bool, u8, u8)>,
    pub icmp_code: Option<(bool, u8, u8)>,
    pub arp_sip: Option<Masked<[u8; 4]>>,
    pub arp_tip: Option<Masked<[u8; 4]>>,
    pub arp_op: Option<Masked<u8>>,
    pub arp_sha: Option<Masked<[u8; 6]>>,
    pub arp_tha: Option<Masked<[u8; 6]>>,
    /// `TCA_FLOWER_KEY_FLAGS` (`ip_flags`): flags and mask.
    pub key_flags: Option<Masked<u32>>,
    pub actions: Vec<ActionRef>,
}

/// Reads the words, left to right.
struct Words<'a, 'b> {
    w: &'b [&'a str],
    at: usize,
}

impl<'a> Words<'a, '_> {
    /// `NEXT_ARG`: the value after a keyword.
    fn value(&mut self) -> Result<&'a str, TcError> {
        self.at += 1;
        self.w
            .get(self.at)
            .copied()
            .ok_or_else(crate::argv::incomplete)
    }
}

/// The keywords in the order `flower_parse_opt` tries them; `true`: the
/// word must be exact (tc uses `strcmp`), else a prefix will do.
const KEYWORDS: &[(&str, bool)] = &[
    ("classid", false),
    ("flowid", false),
    ("hw_tc", false),
    ("ip_flags", false),
    ("verbose", false),
    ("skip_hw", false),
    ("skip_sw", false),
    ("ct_state", false),
    ("ct_zone", false),
    ("ct_mark", false),
    ("ct_label", false),
    ("indev", false),
    ("num_of_vlans", true),
    ("vlan_id", false),
    ("vlan_prio", false),
    ("vlan_ethtype", false),
    ("cvlan_id", false),
    ("cvlan_prio", false),
    ("cvlan_ethtype", false),
    ("mpls", false),
    ("mpls_label", false),
    ("mpls_tc", false),
    ("mpls_bos", false),
    ("mpls_ttl", false),
    ("dst_mac", false),
    ("src_mac", false),
    ("ip_proto", false),
    ("ip_tos", false),
    ("ip_ttl", false),
    ("dst_ip", false),
    ("src_ip", false),
    ("dst_port", false),
    ("src_port", false),
    ("tcp_flags", false),
    ("type", false),
    ("code", false),
    ("l2tpv3_sid", true),
    ("arp_tip", false),
    ("arp_sip", false),
    ("arp_op", false),
    ("arp_tha", false),
    ("arp_sha", false),
    ("pppoe_sid", true),
    ("ppp_proto", true),
    ("enc_dst_ip", false),
    ("enc_src_ip", false),
    ("enc_key_id", false),
    ("enc_dst_port", false),
    ("enc_tos", false),
    ("enc_ttl", false),
    ("geneve_opts", false),
    ("vxlan_opts", false),
    ("erspan_opts", false),
    ("gtp_opts", true),
    ("action", false),
];

/// The keyword a word stands for.
fn keyword(word: &str) -> Option<&'static str> {
    KEYWORDS
        .iter()
        .find(|(k, exact)| if *exact { word == *k } else { matches(word, k) })
        .map(|(k, _)| *k)
}

/// Parses a rule: `handle` as after `handle`, `protocol` the filter's,
/// `args` the words after `flower`. Actions go into `table`; on an error
/// they are released again.
pub fn parse(
    handle: Option<&str>,
    protocol: u16,
    args: &[&str],
    table: &mut Actions,
) -> Result<Attrs, TcError> {
    let mut a = Attrs::default();
    let r = parse_into(&mut a, handle, protocol, args, table);
    if r.is_err() {
        table.release(&a.actions);
    }
    r.map(|()| a)
}

fn parse_into(
    a: &mut Attrs,
    handle: Option<&str>,
    protocol: u16,
    args: &[&str],
    table: &mut Actions,
) -> Result<(), TcError> {
    if let Some(h) = handle {
        a.handle = get_u32(h, 0).ok_or("Illegal \"handle\"")?;
    }
    let tc_proto = protocol;
    let mut eth_type = tc_proto;
    let mut vlan_ethtype = 0u16;
    let mut ip_proto = 0xffu8;
    let (mut mpls_old, mut mpls_new) = (false, false);
    let (mut mtf, mut mtf_mask) = (0u32, 0u32);
    let mut w = Words { w: args, at: 0 };
    while let Some(&word) = args.get(w.at) {
        let Some(kw) = keyword(word) else {
            return Err(format!("What is \"{word}\"?").into());
        };
        let illegal = |why: String| TcError::Syntax(format!("Illegal \"{kw}\": {why}"));
        match kw {
            "classid" | "flowid" => {
                let v = w.value()?;
                a.classid = Some(
                    crate::handle::parse_classid(v)
                        .map_err(|e| format!("Illegal \"classid\": {e}"))?,
                );
            }
            "hw_tc" => {
                let v = w.value()?;
                let tc = num(v, 0).ok_or("Illegal TC index")?;
                if tc >= 16 {
                    return Err("TC index exceeds max range".into());
                }
                // TC_H_MAKE(TC_H_MAJ(parent), TC_H_MIN_PRIORITY + tc): the
                // clsact parent's major is ffff.
                a.classid = Some(0xffff_0000 | (0xffe0 + tc as u32));
            }
            "ip_flags" => {
                let v = w.value()?;
                for tok in v.split('/').filter(|t| !t.is_empty()) {
                    let (no, name) = match tok.strip_prefix("no") {
                        Some(rest) => (true, rest),
                        None => (false, tok),
                    };
                    let flag = match name {
                        "frag" => 1,
                        "firstfrag" => 2,
                        _ => {
                            return Err(illegal(format!(
                                "\"{tok}\": frag, nofrag, firstfrag or nofirstfrag"
                            )));
                        }
                    };
                    if no {
                        mtf &= !flag;
                    } else {
                        mtf |= flag;
                    }
                    mtf_mask |= flag;
                }
            }
            "verbose" => a.flags |= VERBOSE,
            "skip_hw" => a.flags |= SKIP_HW,
            "skip_sw" => a.flags |= SKIP_SW,
            "ct_state" | "ct_zone" | "ct_mark" | "ct_label" => {
                w.value()?;
                return Err(format!("{kw}: sluice has no connection tracking").into());
            }
            "indev" => {
                let v = w.value()?;
                if v.is_empty() || v.len() >= 16 || v.contains(['/', ' ']) {
                    return Err(format!(
                        "Error: argument \"{v}\" is wrong: \"indev\" not a valid ifname"
                    )
                    .into());
                }
                a.indev = Some(v.to_string());
            }
            "num_of_vlans" => {
                w.value()?;
                return Err("num_of_vlans: not modelled by sluice yet".into());
            }
            "vlan_id" | "cvlan_id" => {
                let v = w.value()?;
                let inner = kw == "cvlan_id";
                if !eth_type_vlan(if inner { vlan_ethtype } else { tc_proto }) {
                    return Err(if inner {
                        "Can't set \"cvlan_id\" if inner vlan ethertype isn't 802.1Q or 802.1AD and num_of_vlans is less than 2".into()
                    } else {
                        "Can't set \"vlan_id\" if ethertype isn't 802.1Q or 802.1AD and num_of_vlans is 0".into()
                    });
                }
                let vid = get_u16(v, 10)
                    .filter(|v| v & !0xfff == 0)
                    .ok_or_else(|| illegal(format!("\"{v}\": 0 to 4095")))?;
                if inner {
                    a.cvlan_id = Some(vid);
                } else {
                    a.vlan_id = Some(vid);
                }
            }
            "vlan_prio" | "cvlan_prio" => {
                let v = w.value()?;
                let inner = kw == "cvlan_prio";
                if !eth_type_vlan(if inner { vlan_ethtype } else { tc_proto }) {
                    return Err(if inner {
                        "Can't set \"cvlan_prio\" if inner vlan ethertype isn't 802.1Q or 802.1AD and num_of_vlans is less than 2".into()
                    } else {
                        "Can't set \"vlan_prio\" if ethertype isn't 802.1Q or 802.1AD and num_of_vlans is 0".into()
                    });
                }
                let p = get_u8(v, 10)
                    .filter(|p| p & !7 == 0)
                    .ok_or_else(|| illegal(format!("\"{v}\": 0 to 7")))?;
                if inner {
                    a.cvlan_prio = Some(p);
                } else {
                    a.vlan_prio = Some(p);
                }
            }
            "vlan_ethtype" | "cvlan_ethtype" => {
                let v = w.value()?;
                let inner = kw == "cvlan_ethtype";
                if !eth_type_vlan(if inner { vlan_ethtype } else { eth_type }) {
                    return Err(format!(
                        "Can't set \"{kw}\" if ethertype isn't 802.1Q or 802.1AD and num_of_vlans {}",
                        if inner { "less than 2" } else { "is 0" }
                    ).into());
                }
                let t = parse_protocol(v).map_err(|_| {
                    format!("Error: argument \"{v}\" is wrong: invalid vlan_ethtype")
                })?;
                if inner {
                    a.cvlan_eth_type = Some(t);
                    eth_type = t;
                } else {
                    a.vlan_eth_type = Some(t);
                    vlan_ethtype = t;
                    eth_type = t;
                }
            }
            "mpls" => {
                if eth_type != ETH_P_MPLS_UC && eth_type != ETH_P_MPLS_MC {
                    return Err("Can't set \"mpls\" if ethertype isn't MPLS".into());
                }
                if mpls_old {
                    return Err("Can't set \"mpls\" if \"mpls_label\", \"mpls_tc\", \"mpls_bos\" or \"mpls_ttl\" is set".into());
                }
                mpls_new = true;
                w.at += 1;
                while args.get(w.at).is_some_and(|x| matches(x, "lse")) {
                    w.at += 1;
                    a.mpls_lses.push(parse_lse(&mut w)?);
                }
                continue;
            }
            "mpls_label" | "mpls_tc" | "mpls_bos" | "mpls_ttl" => {
                let v = w.value()?;
                if eth_type != ETH_P_MPLS_UC && eth_type != ETH_P_MPLS_MC {
                    return Err(format!("Can't set \"{kw}\" if ethertype isn't MPLS").into());
                }
                if mpls_new {
                    return Err(format!("Can't set \"{kw}\" if \"mpls\" is set").into());
                }
                mpls_old = true;
                let (max, what) = match kw {
                    "mpls_label" => (0xfffff, "0 to 1048575"),
                    "mpls_tc" => (7, "0 to 7"),
                    "mpls_bos" => (1, "0 or 1"),
                    _ => (0xff, "0 to 255"),
                };
                let n = get_u32(v, 10)
                    .filter(|&n| n <= max)
                    .ok_or_else(|| illegal(format!("\"{v}\": {what}")))?;
                match kw {
                    "mpls_label" => a.mpls_label = Some(n),
                    "mpls_tc" => a.mpls_tc = Some(n as u8),
                    "mpls_bos" => a.mpls_bos = Some(n as u8),
                    _ => a.mpls_ttl = Some(n as u8),
                }
            }
            "dst_mac" | "src_mac" | "arp_tha" | "arp_sha" => {
                let v = w.value()?;
                let m = masked_mac(v).map_err(|e| illegal(e.to_string()))?;
                match kw {
                    "dst_mac" => a.dst_mac = Some(m),
                    "src_mac" => a.src_mac = Some(m),
                    "arp_tha" => a.arp_tha = Some(m),
                    _ => a.arp_sha = Some(m),
                }
            }
            "ip_proto" => {
                let v = w.value()?;
                let wrong = || {
                    TcError::Syntax(format!(
                        "Illegal \"eth_type\" for ip proto\nIllegal \"ip_proto\": \"{v}\" needs protocol ip or ipv6 (icmp: ip, icmpv6: ipv6)"
                    ))
                };
                if eth_type != ETH_P_IP && eth_type != ETH_P_IPV6 {
                    return Err(wrong());
                }
                let p = if matches(v, "tcp") {
                    6
                } else if matches(v, "udp") {
                    17
                } else if matches(v, "sctp") {
                    132
                } else if matches(v, "icmp") {
                    if eth_type != ETH_P_IP {
                        return Err(wrong());
                    }
                    1
                } else if matches(v, "icmpv6") {
                    if eth_type != ETH_P_IPV6 {
                        return Err(wrong());
                    }
                    58
                } else {
                    get_u8(v, 16).ok_or_else(|| {
                        illegal(format!(
                            "\"{v}\": tcp, udp, sctp, icmp, icmpv6 or a hexadecimal number"
                        ))
                    })?
                };
                a.ip_proto = Some(p);
                ip_proto = p;
            }
            "ip_tos" | "ip_ttl" => {
                let v = w.value()?;
                let (val, m) = match v.split_once('/') {
                    Some((x, m)) => (x, Some(m)),
                    None => (v, None),
                };
                let x = get_u8(val, 10)
                    .or_else(|| get_u8(val, 16))
                    .ok_or_else(|| illegal(format!("\"{v}\": VALUE[/MASK], 8 bits")))?;
                let m = match m {
                    Some(m) => get_u8(m, 16)
                        .ok_or_else(|| illegal(format!("mask \"{m}\": 8-bit hexadecimal")))?,
                    None => 0xff,
                };
                if kw == "ip_tos" {
                    a.ip_tos = Some((x, m));
                } else {
                    a.ip_ttl = Some((x, m));
                }
            }
            "dst_ip" | "src_ip" => {
                let v = w.value()?;
                let dst = kw == "dst_ip";
                match eth_type {
                    ETH_P_IP => {
                        let p = prefix4(v).map_err(|e| illegal(e.to_string()))?;
                        if dst {
                            a.ipv4_dst = Some(p);
                        } else {
                            a.ipv4_src = Some(p);
                        }
                    }
                    ETH_P_IPV6 => {
                        let p = prefix6(v).map_err(|e| illegal(e.to_string()))?;
                        if dst {
                            a.ipv6_dst = Some(p);
                        } else {
                            a.ipv6_src = Some(p);
                        }
                    }
                    _ => return Err(illegal("it needs protocol ip or ipv6".into())),
                }
            }
            "dst_port" | "src_port" => {
                let v = w.value()?;
                let dst = kw == "dst_port";
                parse_port(a, v, ip_proto, dst).map_err(|e| illegal(e.to_string()))?;
            }
            "tcp_flags" => {
                let v = w.value()?;
                let (f, m) = match v.split_once('/') {
                    Some((f, m)) => (f, Some(m)),
                    None => (v, None),
                };
                let twelve = |s: &str| get_u16(s, 16).filter(|x| x & !0xfff == 0);
                let f = twelve(f)
                    .ok_or_else(|| illegal(format!("\"{v}\": FLAGS[/MASK], 12-bit hexadecimal")))?;
                let m = match m {
                    Some(m) => twelve(m).ok_or_else(|| {
                        illegal(format!("\"{v}\": FLAGS[/MASK], 12-bit hexadecimal"))
                    })?,
                    None => 0xfff,
                };
                a.tcp_flags = Some((f, m));
            }
            "type" | "code" => {
                let v = w.value()?;
                let name = if kw == "type" {
                    "Illegal \"icmp type\""
                } else {
                    "Illegal \"icmp code\""
                };
                let v6 = match (eth_type, ip_proto) {
                    (ETH_P_IP, 1) => false,
                    (ETH_P_IPV6, 58) => true,
                    _ => {
                        return Err(format!(
                            "{name}: it needs ip_proto icmp (protocol ip) or icmpv6 (protocol ipv6)"
                        )
                        .into());
                    }
                };
                let (x, m) = masked_u8(v, None)
                    .ok_or_else(|| format!("{name}: \"{v}\": VALUE[/MASK], 8 bits, decimal"))?;
                if kw == "type" {
                    a.icmp_type = Some((v6, x, m));
                } else {
                    a.icmp_code = Some((v6, x, m));
                }
            }
            "arp_tip" | "arp_sip" | "arp_op" => {
                let v = w.value()?;
                if eth_type != ETH_P_ARP && eth_type != ETH_P_RARP {
                    return Err(illegal("it needs protocol arp or rarp".into()));
                }
                match kw {
                    "arp_op" => {
                        let op = masked_u8(v, Some(arp_op_name))
                            .filter(|(op, _)| *op <= 2)
                            .ok_or_else(|| {
                                illegal(format!("\"{v}\": request, reply or 0 to 2[/MASK]"))
                            })?;
                        a.arp_op = Some(op);
                    }
                    _ => {
                        let p = prefix4(v).map_err(|e| illegal(e.to_string()))?;
                        if kw == "arp_tip" {
                            a.arp_tip = Some(p);
                        } else {
                            a.arp_sip = Some(p);
                        }
                    }
                }
            }
            "l2tpv3_sid" | "pppoe_sid" | "ppp_proto" => {
                w.value()?;
                return Err(format!("{kw}: not modelled by sluice yet").into());
            }
            "enc_dst_ip" | "enc_src_ip" | "enc_key_id" | "enc_dst_port" | "enc_tos" | "enc_ttl"
            | "geneve_opts" | "vxlan_opts" | "erspan_opts" | "gtp_opts" => {
                w.value()?;
                return Err(format!(
                    "{kw}: sluice has no tunnel metadata (a packet here carries no tunnel key)"
                )
                .into());
            }
            "action" => {
                let (refs, used) = parse_actions(&args[w.at..], table)
                    .map_err(|e| format!("Illegal \"action\": {e}"))?;
                if used == 0 {
                    // An abbreviation ("act"): tc takes it for an action kind.
                    return Err(format!("bad action type {word}").into());
                }
                a.actions.extend(refs);
                w.at += used;
                continue;
            }
            other => unreachable!("keyword {other} has no case"),
        }
        w.at += 1;
    }
    if mtf_mask != 0 {
        a.key_flags = Some((mtf, mtf_mask));
    }
    if tc_proto != ETH_P_ALL {
        a.eth_type = Some(tc_proto);
    }
    Ok(())
}

/// `flower_parse_port`: `PORT`, `MIN-MAX` or `PORT/MASK`.
fn parse_port(a: &mut Attrs, v: &str, ip_proto: u8, dst: bool) -> Result<(), TcError> {
    let l4 = matches!(ip_proto, 6 | 17 | 132);
    let need = || TcError::from("it needs ip_proto tcp, udp or sctp");
    let range = match v.split_once('-') {
        Some((lo, hi)) => get_u16(lo, 10).zip(get_u16(hi, 10)),
        None => get_u16(v, 10).map(|p| (p, 0)),
    };
    match range {
        Some((min, max)) if min != 0 && max != 0 => {
            if max <= min {
                return Err("max value should be greater than min value".into());
            }
            if !l4 {
                return Err(need());
            }
            if dst {
                a.dst_range = Some((min, max));
            } else {
                a.src_range = Some((min, max));
            }
        }
        Some((p, 0)) if p != 0 => {
            if !l4 {
                return Err(need());
            }
            let x = Some((ip_proto, p, 0xffff));
            if dst {
                a.dst_port = x;
            } else {
                a.src_port = x;
            }
        }
        None if v.contains('/') => {
            if !l4 {
                return Err(need());
            }
            let (p, m) = v.split_once('/').expect("checked");
            let p = get_u16(p, 0).ok_or_else(|| format!("\"{v}\": PORT/MASK, 16 bits each"))?;
            let m = get_u16(m, 0).ok_or_else(|| format!("\"{v}\": PORT/MASK, 16 bits each"))?;
            let x = Some((ip_proto, p, m));
            if dst {
                a.dst_port = x;
            } else {
                a.src_port = x;
            }
        }
        _ => {
            return Err(format!("\"{v}\": a port from 1, MIN-MAX or PORT/MASK").into());
        }
    }
    Ok(())
}

/// One `lse depth N [label L] [tc T] [bos B] [ttl T]` (after `lse`).
fn parse_lse(w: &mut Words<'_, '_>) -> Result<Lse, TcError> {
    let mut l = Lse::default();
    while let Some(&word) = w.w.get(w.at) {
        let field = ["depth", "label", "tc", "bos", "ttl"]
            .into_iter()
            .find(|f| matches(word, f));
        let Some(field) = field else { break };
        let v = w.value()?;
        let bad = || TcError::Syntax(format!("Illegal \"{field}\""));
        match field {
            "depth" => l.depth = get_u8(v, 10).filter(|&d| d >= 1).ok_or_else(bad)?,
            "label" => l.label = Some(get_u32(v, 10).filter(|&x| x <= 0xfffff).ok_or_else(bad)?),
            "tc" => l.tc = Some(get_u8(v, 10).filter(|&x| x <= 7).ok_or_else(bad)?),
            "bos" => l.bos = Some(get_u8(v, 10).filter(|&x| x <= 1).ok_or_else(bad)?),
            _ => l.ttl = Some(get_u8(v, 10).ok_or_else(bad)?),
        }
        w.at += 1;
    }
    if l.depth == 0 {
        return Err("mpls lse: \"depth\" is required".into());
    }
    if usize::from(l.depth) > MPLS_MAX {
        return Err(format!(
            "Error: Invalid MPLS depth {} (sluice and the kernel hold {MPLS_MAX} entries).",
            l.depth
        )
        .into());
    }
    Ok(l)
}

/// A rule's handle as tc reads it (`get_u32`, base 0).
pub fn parse_handle(h: &str) -> Option<u32> {
    get_u32(h, 0)
}
