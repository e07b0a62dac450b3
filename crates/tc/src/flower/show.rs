//! flower rules as `tc filter show` prints them and as `tc -j` gives them:
//! what the kernel dumps (`fl_dump_key`: a key only under a mask that is
//! not zero, the key as given, unmasked) printed as iproute2 6.1's
//! `flower_print_opt` prints it. The real kernel here has no flower, so
//! the text follows iproute2's source, not a live `tc`. Each entry is what
//! follows `filter ... pref N PROTO flower chain C ` up to (not
//! including) the newline tc ends the filter with.

use std::net::{Ipv4Addr, Ipv6Addr};

use serde_json::{Map, Value, json};

use super::FlowerRule;
use super::key::{
    ADDR_V4, ADDR_V6, FIRST_FRAG, FRAG, FlowerKey, LSE_BOS, LSE_LABEL, LSE_TC, LSE_TTL,
};
use super::parse::{ETH_P_ARP, ETH_P_IP, ETH_P_IPV6, ETH_P_RARP, SKIP_HW, SKIP_SW};
use crate::action::Actions;
use crate::handle::format_classid;
use crate::protocol::protocol_name;

/// Text and JSON built side by side, as iproute2's `print_*` do.
struct Out {
    text: String,
    keys: Map<String, Value>,
}

impl Out {
    /// `print_indent_name_value`: `\n  NAME VALUE`, a string in JSON.
    fn name_value(&mut self, name: &str, value: String) {
        self.text += &format!("\n  {name} {value}");
        self.keys.insert(name.into(), json!(value));
    }

    /// A number in JSON, `\n  NAME N` in text.
    fn uint(&mut self, name: &str, value: u32) {
        self.text += &format!("\n  {name} {value}");
        self.keys.insert(name.into(), json!(value));
    }

    /// `print_masked_u8`/`_be16`: `\n  NAME V[/0xMASK]`; JSON `NAME` and a
    /// hexadecimal string `NAME_mask`.
    fn masked(&mut self, name: &str, value: u32, mask: u32, full: u32) {
        self.text += &format!("\n  {name} {value}");
        self.keys.insert(name.into(), json!(value));
        if mask != full {
            self.text += &format!("/0x{mask:x}");
            self.keys
                .insert(format!("{name}_mask"), json!(format!("{mask:x}")));
        }
    }

    /// `flower_print_masked_u8`: `V[/MASK]` in decimal, a string in JSON.
    fn masked_u8(
        &mut self,
        name: &str,
        value: u8,
        mask: u8,
        names: fn(u8) -> Option<&'static str>,
    ) {
        let mut s = match names(value) {
            Some(n) if mask == 0xff => n.to_string(),
            _ => value.to_string(),
        };
        if mask != 0xff {
            s += &format!("/{mask}");
        }
        self.name_value(name, s);
    }
}

/// `__mask_bits`: a contiguous mask's length; `None` when it has a hole
/// or starts with a zero bit.
fn mask_bits(m: &[u8]) -> Option<usize> {
    let mut bits = 0;
    let mut hole = false;
    for &b in m {
        for j in (0..8).rev() {
            if b >> j & 1 == 1 {
                if hole {
                    return None;
                }
                bits += 1;
            } else if bits > 0 {
                hole = true;
            } else {
                return None;
            }
        }
    }
    Some(bits)
}

fn mac_text(a: &[u8; 6]) -> String {
    a.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// `flower_print_eth_addr`: `ADDR[/BITS|/MASK]`.
fn eth_addr(o: &mut Out, name: &str, a: &[u8; 6], m: &[u8; 6]) {
    if m == &[0; 6] {
        return;
    }
    let mut s = mac_text(a);
    match mask_bits(m) {
        None => s += &format!("/{}", mac_text(m)),
        Some(b) if b < 48 => s += &format!("/{b}"),
        Some(_) => {}
    }
    o.name_value(name, s);
}

/// `flower_print_ip_addr`: `ADDR[/BITS|/MASK]`.
fn ip_addr(o: &mut Out, name: &str, v6: bool, a: &[u8; 16], m: &[u8; 16]) {
    let len = if v6 { 16 } else { 4 };
    if m[..len].iter().all(|&b| b == 0) {
        return;
    }
    let fmt = |x: &[u8; 16]| {
        if v6 {
            Ipv6Addr::from(*x).to_string()
        } else {
            Ipv4Addr::new(x[0], x[1], x[2], x[3]).to_string()
        }
    };
    let mut s = fmt(a);
    match mask_bits(&m[..len]) {
        None => s += &format!("/{}", fmt(m)),
        Some(b) if b < len * 8 => s += &format!("/{b}"),
        Some(_) => {}
    }
    o.name_value(name, s);
}

fn ip4(o: &mut Out, name: &str, a: &[u8; 4], m: &[u8; 4]) {
    let (mut x, mut y) = ([0u8; 16], [0u8; 16]);
    x[..4].copy_from_slice(a);
    y[..4].copy_from_slice(m);
    ip_addr(o, name, false, &x, &y);
}

fn eth_type_name(t: u16) -> String {
    match t {
        ETH_P_IP => "ipv4".into(),
        ETH_P_IPV6 => "ipv6".into(),
        ETH_P_ARP => "arp".into(),
        ETH_P_RARP => "rarp".into(),
        t => format!("{t:04x}"),
    }
}

fn ip_proto_name(p: u8) -> String {
    match p {
        6 => "tcp".into(),
        17 => "udp".into(),
        132 => "sctp".into(),
        1 => "icmp".into(),
        58 => "icmpv6".into(),
        115 => "l2tp".into(),
        p => format!("{p:02x}"),
    }
}

fn arp_op_name(op: u8) -> Option<&'static str> {
    match op {
        1 => Some("request"),
        2 => Some("reply"),
        _ => None,
    }
}

/// The keys, in `flower_print_opt`'s order.
fn keys(o: &mut Out, k: &FlowerKey, m: &FlowerKey) {
    if m.vlan_id != 0 {
        o.uint("vlan_id", u32::from(k.vlan_id));
    }
    if m.vlan_prio != 0 {
        o.uint("vlan_prio", u32::from(k.vlan_prio));
    }
    // What `fl_dump_key` sends as VLAN_ETH_TYPE and CVLAN_ETH_TYPE.
    let vlan_ethtype = if m.cvlan_tpid != 0 {
        Some(k.cvlan_tpid)
    } else if m.n_proto != 0 && m.cvlan_eth_type == 0 && m.vlan_eth_type != 0 {
        Some(k.vlan_eth_type)
    } else {
        None
    };
    if let Some(t) = vlan_ethtype {
        o.name_value("vlan_ethtype", protocol_name(t));
    }
    if m.cvlan_id != 0 {
        o.uint("cvlan_id", u32::from(k.cvlan_id));
    }
    if m.cvlan_prio != 0 {
        o.uint("cvlan_prio", u32::from(k.cvlan_prio));
    }
    if m.n_proto != 0 && m.cvlan_eth_type != 0 {
        o.name_value("cvlan_ethtype", protocol_name(k.n_proto));
    }
    eth_addr(o, "dst_mac", &k.dst_mac, &m.dst_mac);
    eth_addr(o, "src_mac", &k.src_mac, &m.src_mac);
    let eth_type = if m.n_proto != 0 { k.n_proto } else { 0 };
    if m.n_proto != 0 {
        o.name_value("eth_type", eth_type_name(k.n_proto));
    }
    let ip = eth_type == ETH_P_IP || eth_type == ETH_P_IPV6;
    let ip_proto = if ip && m.ip_proto != 0 {
        o.name_value("ip_proto", ip_proto_name(k.ip_proto));
        k.ip_proto
    } else {
        0xff
    };
    if ip {
        if m.ip_tos != 0 {
            o.masked("ip_tos", u32::from(k.ip_tos), u32::from(m.ip_tos), 0xff);
        }
        if m.ip_ttl != 0 {
            o.masked("ip_ttl", u32::from(k.ip_ttl), u32::from(m.ip_ttl), 0xff);
        }
    }
    mpls(o, k, m);
    if k.addr_type == ADDR_V4 && eth_type == ETH_P_IP {
        ip_addr(o, "dst_ip", false, &k.dst_ip, &m.dst_ip);
        ip_addr(o, "src_ip", false, &k.src_ip, &m.src_ip);
    } else if k.addr_type == ADDR_V6 && eth_type == ETH_P_IPV6 {
        ip_addr(o, "dst_ip", true, &k.dst_ip, &m.dst_ip);
        ip_addr(o, "src_ip", true, &k.src_ip, &m.src_ip);
    }
    if matches!(ip_proto, 6 | 17 | 132) {
        if m.dst_port != 0 {
            o.masked(
                "dst_port",
                u32::from(k.dst_port),
                u32::from(m.dst_port),
                0xffff,
            );
        }
        if m.src_port != 0 {
            o.masked(
                "src_port",
                u32::from(k.src_port),
                u32::from(m.src_port),
                0xffff,
            );
        }
        for (name, lo, hi, on) in [
            (
                "dst_port",
                k.dst_port_min,
                k.dst_port_max,
                m.dst_port_min != 0,
            ),
            (
                "src_port",
                k.src_port_min,
                k.src_port_max,
                m.src_port_min != 0,
            ),
        ] {
            if on {
                o.text += &format!("\n  {name} {lo}-{hi}");
                o.keys.insert(name.into(), json!({"start": lo, "end": hi}));
            }
        }
        if ip_proto == 6 && m.tcp_flags != 0 {
            o.name_value(
                "tcp_flags",
                format!("0x{:x}/{:x}", k.tcp_flags, m.tcp_flags),
            );
        }
    }
    if (eth_type == ETH_P_IP && ip_proto == 1) || (eth_type == ETH_P_IPV6 && ip_proto == 58) {
        if m.icmp_type != 0 {
            o.masked_u8("icmp_type", k.icmp_type, m.icmp_type, |_| None);
        }
        if m.icmp_code != 0 {
            o.masked_u8("icmp_code", k.icmp_code, m.icmp_code, |_| None);
        }
    }
    if eth_type == ETH_P_ARP || eth_type == ETH_P_RARP {
        ip4(o, "arp_sip", &k.arp_sip, &m.arp_sip);
        ip4(o, "arp_tip", &k.arp_tip, &m.arp_tip);
        if m.arp_op != 0 {
            o.masked_u8("arp_op", k.arp_op, m.arp_op, arp_op_name);
        }
        eth_addr(o, "arp_sha", &k.arp_sha, &m.arp_sha);
        eth_addr(o, "arp_tha", &k.arp_tha, &m.arp_tha);
    }
    if m.flags != 0 {
        o.text += "\n  ip_flags ";
        let mut parts = Vec::new();
        let mut obj = Map::new();
        for (bit, name) in [(FRAG, "frag"), (FIRST_FRAG, "firstfrag")] {
            if m.flags & bit != 0 {
                let on = k.flags & bit != 0;
                parts.push(if on {
                    name.to_string()
                } else {
                    format!("no{name}")
                });
                obj.insert(name.into(), json!(on));
            }
        }
        o.text += &parts.join("/");
        o.keys.insert("ip_flags".into(), Value::Object(obj));
    }
}

/// `fl_dump_key_mpls` and tc's two ways of printing it.
fn mpls(o: &mut Out, k: &FlowerKey, m: &FlowerKey) {
    if m.mpls_used == 0 {
        return;
    }
    let l0 = m.mpls[0];
    if m.mpls_used & !1 != 0 || l0 == 0 {
        o.text += "\n  mpls";
        let mut list = Vec::new();
        for i in 0..super::key::MPLS_MAX {
            if m.mpls_used & 1 << i == 0 {
                continue;
            }
            let (v, mm) = (k.mpls[i], m.mpls[i]);
            let (label, tc, bos, ttl) = super::key::lse_fields(v);
            o.text += &format!("\n    lse depth {}", i + 1);
            let mut e = Map::new();
            e.insert("depth".into(), json!(i + 1));
            for (bit, name, val) in [
                (LSE_LABEL, "label", label),
                (LSE_TC, "tc", u32::from(tc)),
                (LSE_BOS, "bos", u32::from(bos)),
                (LSE_TTL, "ttl", u32::from(ttl)),
            ] {
                if mm & bit != 0 {
                    o.text += &format!(" {name} {val}");
                    e.insert(name.into(), json!(val));
                }
            }
            list.push(Value::Object(e));
        }
        o.keys.insert("mpls".into(), Value::Array(list));
        return;
    }
    let (label, tc, bos, ttl) = super::key::lse_fields(k.mpls[0]);
    if l0 & LSE_LABEL != 0 {
        o.uint("mpls_label", label);
    }
    if l0 & LSE_TC != 0 {
        o.name_value("mpls_tc", tc.to_string());
    }
    if l0 & LSE_BOS != 0 {
        o.name_value("mpls_bos", bos.to_string());
    }
    if l0 & LSE_TTL != 0 {
        o.name_value("mpls_ttl", ttl.to_string());
    }
}

/// The whole entry: text, and the `options` object.
fn render(r: &FlowerRule, actions: &Actions, stats: bool) -> (String, Value) {
    let mut o = Out {
        text: format!("handle 0x{:x} ", r.handle),
        keys: Map::new(),
    };
    let mut opts = Map::new();
    opts.insert("handle".into(), json!(r.handle));
    if r.classid != 0 {
        let min = r.classid & 0xffff;
        if (0xffe0..0xfff0).contains(&min) {
            o.text += &format!("hw_tc {} ", min - 0xffe0);
            opts.insert("hw_tc".into(), json!(min - 0xffe0));
        } else {
            o.text += &format!("classid {} ", format_classid(r.classid));
            opts.insert("classid".into(), json!(format_classid(r.classid)));
        }
    }
    if let Some(dev) = &r.indev {
        o.text += &format!("\n  indev {dev}");
        opts.insert("indev".into(), json!(dev));
    }
    keys(&mut o, &r.key, &r.mask);
    opts.insert("keys".into(), Value::Object(std::mem::take(&mut o.keys)));
    for (bit, name) in [(SKIP_HW, "skip_hw"), (SKIP_SW, "skip_sw")] {
        if r.flags & bit != 0 {
            o.text += &format!("\n  {name}");
            opts.insert(name.into(), json!(true));
        }
    }
    // Nothing is ever offloaded.
    o.text += "\n  not_in_hw";
    opts.insert("not_in_hw".into(), json!(true));
    let mut list = Vec::new();
    for (i, a) in r.actions.iter().enumerate() {
        if let Some(a) = actions.get(a) {
            o.text += &crate::action_show::action_text(i + 1, a, stats);
            list.push(crate::action_show::action_json(i + 1, a, stats));
        }
    }
    if !list.is_empty() {
        opts.insert("actions".into(), Value::Array(list));
    }
    (o.text, Value::Object(opts))
}

pub fn text(r: &FlowerRule, actions: &Actions, stats: bool) -> String {
    render(r, actions, stats).0
}

pub fn json(r: &FlowerRule, actions: &Actions, stats: bool) -> Value {
    render(r, actions, stats).1
}
