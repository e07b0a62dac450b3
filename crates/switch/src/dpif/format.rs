//! Megaflows written as `ovs-appctl dpctl/dump-flows` writes datapath
//! flows: the fields under the mask by protocol, `/mask` where a field is
//! matched in part, then counts and actions.

use std::fmt::Write;

use super::megaflow::Megaflow;
use crate::flow::{FieldSlot, PackedKey, slot};
use crate::odp::DpAction;

fn mac(v: u128) -> String {
    let b = v.to_be_bytes();
    b[10..16]
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn ipv4(v: u128) -> String {
    std::net::Ipv4Addr::from(v as u32).to_string()
}

fn ipv6(v: u128) -> String {
    std::net::Ipv6Addr::from(v).to_string()
}

/// A field in a dump: its name, place and how its value is written.
type Shown<'a> = (&'a str, FieldSlot, fn(u128) -> String);

/// `name=value[/mask]` for each field the mask touches.
fn group(out: &mut Vec<String>, title: &str, key: &PackedKey, mask: &PackedKey, fields: &[Shown]) {
    let parts: Vec<String> = fields
        .iter()
        .filter_map(|(name, s, show)| {
            let m = s.get(mask);
            if m == 0 {
                return None;
            }
            let full = if s.bits == 128 {
                u128::MAX
            } else {
                (1u128 << s.bits) - 1
            };
            let v = s.get(key);
            Some(if m == full {
                format!("{name}={}", show(v))
            } else {
                format!("{name}={}/{}", show(v), show(m))
            })
        })
        .collect();
    if !parts.is_empty() {
        out.push(format!("{title}({})", parts.join(",")));
    }
}

/// The match part of a megaflow.
pub fn format_key(key: &PackedKey, mask: &PackedKey) -> String {
    let num = |v: u128| v.to_string();
    let hex = |v: u128| format!("{v:#x}");
    let mut out = vec![format!("in_port({})", slot::IN_PORT.get(key))];
    group(
        &mut out,
        "metadata",
        key,
        mask,
        &[("", slot::METADATA, hex)],
    );
    group(
        &mut out,
        "eth",
        key,
        mask,
        &[("src", slot::ETH_SRC, mac), ("dst", slot::ETH_DST, mac)],
    );
    group(&mut out, "vlan", key, mask, &[("tci", slot::VLAN_TCI, hex)]);
    group(
        &mut out,
        "eth_type",
        key,
        mask,
        &[("", slot::ETH_TYPE, hex)],
    );
    let et = slot::ETH_TYPE.get(key) as u16;
    let l3: &[Shown] = &[
        ("proto", slot::NW_PROTO, num),
        ("tos", slot::NW_TOS, hex),
        ("ttl", slot::NW_TTL, num),
        ("frag", slot::NW_FRAG, num),
    ];
    match et {
        crate::flow::ETH_TYPE_IPV4 => {
            let mut f = vec![
                ("src", slot::NW_SRC, ipv4 as fn(u128) -> String),
                ("dst", slot::NW_DST, ipv4),
            ];
            f.extend_from_slice(l3);
            group(&mut out, "ipv4", key, mask, &f);
        }
        crate::flow::ETH_TYPE_IPV6 => {
            let mut f = vec![
                ("src", slot::IPV6_SRC, ipv6 as fn(u128) -> String),
                ("dst", slot::IPV6_DST, ipv6),
                ("label", slot::IPV6_FLABEL, hex),
            ];
            f.extend_from_slice(l3);
            group(&mut out, "ipv6", key, mask, &f);
        }
        crate::flow::ETH_TYPE_ARP => group(
            &mut out,
            "arp",
            key,
            mask,
            &[
                ("sip", slot::NW_SRC, ipv4),
                ("tip", slot::NW_DST, ipv4),
                ("op", slot::ARP_OP, num),
                ("sha", slot::ARP_SHA, mac),
                ("tha", slot::ARP_THA, mac),
            ],
        ),
        _ => {}
    }
    let l4 = match slot::NW_PROTO.get(key) as u8 {
        crate::flow::IPPROTO_TCP => "tcp",
        crate::flow::IPPROTO_UDP => "udp",
        crate::flow::IPPROTO_SCTP => "sctp",
        crate::flow::IPPROTO_ICMP => "icmp",
        crate::flow::IPPROTO_ICMPV6 => "icmpv6",
        _ => "l4",
    };
    if l4.starts_with("icmp") {
        group(
            &mut out,
            l4,
            key,
            mask,
            &[
                ("type", slot::ICMP_TYPE, num),
                ("code", slot::ICMP_CODE, num),
            ],
        );
    } else {
        group(
            &mut out,
            l4,
            key,
            mask,
            &[("src", slot::TP_SRC, num), ("dst", slot::TP_DST, num)],
        );
    }
    group(
        &mut out,
        "tcp_flags",
        key,
        mask,
        &[("", slot::TCP_FLAGS, hex)],
    );
    out.join(",").replace("(=", "(")
}

/// Datapath actions, comma separated (`drop` for none).
pub fn format_actions(actions: &[DpAction]) -> String {
    if actions.is_empty() {
        return "drop".into();
    }
    let mut s = String::new();
    for (i, a) in actions.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = match a {
            DpAction::Output(openflow::port::LOCAL) => write!(s, "LOCAL"),
            DpAction::Output(p) => write!(s, "{p}"),
            DpAction::Controller(c) => write!(
                s,
                "userspace(controller,reason={},table={})",
                c.reason, c.table_id
            ),
            DpAction::Set(f, v) => write!(s, "set({}={v:#x})", f.name()),
            DpAction::SetTtl(t) => write!(s, "set(ttl={t})"),
            DpAction::PushVlan { tpid, tci } => {
                write!(s, "push_vlan(tpid={tpid:#06x},tci={tci:#06x})")
            }
            DpAction::PopVlan => write!(s, "pop_vlan"),
            DpAction::Clone(inner) => write!(s, "clone({})", format_actions(inner)),
        };
    }
    s
}

/// One megaflow as a dump-flows line, `used` relative to `now` (ns).
pub fn format_megaflow(m: &Megaflow, now: u64) -> String {
    let used = if m.packets == 0 {
        "never".to_string()
    } else {
        format!("{:.3}s", now.saturating_sub(m.used_ns) as f64 / 1e9)
    };
    // As dpctl/dump-flows marks flows in a lower datapath.
    let offloaded = if m.offloaded.is_some() {
        "offloaded:yes, dp:xdp, "
    } else {
        ""
    };
    format!(
        "{}, packets:{}, bytes:{}, used:{used}, {offloaded}actions:{}",
        format_key(&m.key, &m.mask),
        m.packets,
        m.bytes,
        format_actions(&m.actions)
    )
}
