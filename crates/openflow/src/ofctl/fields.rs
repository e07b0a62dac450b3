//! Match fields: names (OVS's and OXM's), value shapes and widths,
//! prerequisites, and the builder that turns `name=value` items into a
//! [`Match`] in canonical order.

use super::OfctlError;
use super::lexer::{self, Token};
use crate::types::{Field, Match, Oxm, VID_PRESENT, any_reg, port};
use std::collections::BTreeMap;

/// Resolves port names that are not OpenFlow's reserved ones.
pub(crate) type Ports<'a> = &'a dyn Fn(&str) -> Option<u32>;

/// How a field's value is written.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Int,
    Mac,
    Ipv4,
    Ipv6,
    Port,
    TcpFlags,
}

/// A field's width in bits (the specification's), its kind, and whether
/// a mask may be written (`Field::maskable`, which the codec checks too).
pub(crate) fn shape(f: Field) -> (u32, Kind, bool) {
    use Field::*;
    use Kind::*;
    let kind = match f {
        InPort | InPhyPort => Port,
        EthDst | EthSrc | ArpSha | ArpTha | Ipv6NdSll | Ipv6NdTll => Mac,
        Ipv4Src | Ipv4Dst | ArpSpa | ArpTpa => Ipv4,
        Ipv6Src | Ipv6Dst | Ipv6NdTarget => Ipv6,
        Field::TcpFlags => Kind::TcpFlags,
        _ => Int,
    };
    let maskable = f.maskable();
    (f.width_bits(), kind, maskable)
}

/// The name `ovs-ofctl` prints for a field (in `set_field:V->NAME`).
pub(crate) fn name(f: Field) -> &'static str {
    use Field::*;
    match f {
        InPort => "in_port",
        InPhyPort => "in_phy_port",
        Metadata => "metadata",
        EthDst => "eth_dst",
        EthSrc => "eth_src",
        EthType => "eth_type",
        VlanVid => "vlan_vid",
        VlanPcp => "vlan_pcp",
        IpDscp => "ip_dscp",
        IpEcn => "nw_ecn",
        IpProto => "nw_proto",
        Ipv4Src => "ip_src",
        Ipv4Dst => "ip_dst",
        TcpSrc => "tcp_src",
        TcpDst => "tcp_dst",
        UdpSrc => "udp_src",
        UdpDst => "udp_dst",
        SctpSrc => "sctp_src",
        SctpDst => "sctp_dst",
        Icmpv4Type => "icmp_type",
        Icmpv4Code => "icmp_code",
        ArpOp => "arp_op",
        ArpSpa => "arp_spa",
        ArpTpa => "arp_tpa",
        ArpSha => "arp_sha",
        ArpTha => "arp_tha",
        Ipv6Src => "ipv6_src",
        Ipv6Dst => "ipv6_dst",
        Ipv6Flabel => "ipv6_label",
        Icmpv6Type => "icmpv6_type",
        Icmpv6Code => "icmpv6_code",
        Ipv6NdTarget => "nd_target",
        Ipv6NdSll => "nd_sll",
        Ipv6NdTll => "nd_tll",
        MplsLabel => "mpls_label",
        MplsTc => "mpls_tc",
        MplsBos => "mpls_bos",
        PbbIsid => "pbb_isid",
        TunnelId => "tun_id",
        Ipv6Exthdr => "ipv6_exthdr",
        TcpFlags => "tcp_flags",
        any_reg!() => f.name(),
    }
}

/// A field by any of its names, OVS's or OXM's (`dl_src`, `eth_src`).
pub(crate) fn by_name(n: &str) -> Option<Field> {
    use Field::*;
    Some(match n {
        "in_port" => InPort,
        "in_phy_port" => InPhyPort,
        "metadata" => Metadata,
        "eth_dst" | "dl_dst" => EthDst,
        "eth_src" | "dl_src" => EthSrc,
        "eth_type" | "dl_type" => EthType,
        "vlan_vid" => VlanVid,
        "vlan_pcp" | "dl_vlan_pcp" => VlanPcp,
        "ip_dscp" => IpDscp,
        "ip_ecn" | "nw_ecn" => IpEcn,
        "ip_proto" | "nw_proto" => IpProto,
        "ipv4_src" | "ip_src" | "nw_src" => Ipv4Src,
        "ipv4_dst" | "ip_dst" | "nw_dst" => Ipv4Dst,
        "tcp_src" => TcpSrc,
        "tcp_dst" => TcpDst,
        "udp_src" => UdpSrc,
        "udp_dst" => UdpDst,
        "sctp_src" => SctpSrc,
        "sctp_dst" => SctpDst,
        "icmpv4_type" | "icmp_type" => Icmpv4Type,
        "icmpv4_code" | "icmp_code" => Icmpv4Code,
        "arp_op" => ArpOp,
        "arp_spa" => ArpSpa,
        "arp_tpa" => ArpTpa,
        "arp_sha" => ArpSha,
        "arp_tha" => ArpTha,
        "ipv6_src" => Ipv6Src,
        "ipv6_dst" => Ipv6Dst,
        "ipv6_flabel" | "ipv6_label" => Ipv6Flabel,
        "icmpv6_type" => Icmpv6Type,
        "icmpv6_code" => Icmpv6Code,
        "ipv6_nd_target" | "nd_target" => Ipv6NdTarget,
        "ipv6_nd_sll" | "nd_sll" => Ipv6NdSll,
        "ipv6_nd_tll" | "nd_tll" => Ipv6NdTll,
        "mpls_label" => MplsLabel,
        "mpls_tc" => MplsTc,
        "mpls_bos" => MplsBos,
        "pbb_isid" => PbbIsid,
        "tunnel_id" | "tun_id" => TunnelId,
        "ipv6_exthdr" => Ipv6Exthdr,
        "tcp_flags" => TcpFlags,
        _ => return reg_by_name(n),
    })
}

/// `reg0`..`reg15`.
fn reg_by_name(n: &str) -> Option<Field> {
    let k = n.strip_prefix("reg")?;
    if k.len() > 1 && k.starts_with('0') {
        return None;
    }
    Field::reg(k.parse().ok()?)
}

const RESERVED_PORTS: [(&str, u32); 9] = [
    ("IN_PORT", port::IN_PORT),
    ("TABLE", port::TABLE),
    ("NORMAL", port::NORMAL),
    ("FLOOD", port::FLOOD),
    ("ALL", port::ALL),
    ("CONTROLLER", port::CONTROLLER),
    ("LOCAL", port::LOCAL),
    ("ANY", port::ANY),
    ("NONE", port::ANY),
];

/// A port: a reserved name (any case), a number (OpenFlow 1.0's reserved
/// numbers 0xff00-0xffff mean the 32-bit ones), or a name `ports` knows.
pub(crate) fn parse_port(s: &str, ports: Ports) -> Option<u32> {
    if let Some(&(_, p)) = RESERVED_PORTS
        .iter()
        .find(|(n, _)| s.eq_ignore_ascii_case(n))
    {
        return Some(p);
    }
    match lexer::number_bits(s, 32) {
        Some(n) if (0xff00..=0xffff).contains(&n) => Some(n as u32 | 0xffff_0000),
        Some(n) => Some(n as u32),
        None => ports(s),
    }
}

/// A port as `ovs-ofctl` prints it: reserved ports by name.
pub(crate) fn port_text(p: u32) -> String {
    match RESERVED_PORTS.iter().find(|&&(_, v)| v == p) {
        Some((n, _)) => (*n).to_string(),
        None => p.to_string(),
    }
}

/// TCP flag names, bit 0 first; ovs-ofctl names the three reserved bits
/// by their value.
pub(crate) const TCP_FLAGS: [&str; 12] = [
    "fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "ns", "[200]", "[400]", "[800]",
];

fn tcp_flag(name: &str) -> Option<u128> {
    TCP_FLAGS.iter().position(|&n| n == name).map(|i| 1 << i)
}

/// `+syn-ack` (flags that must be set or clear), `syn|ack` (exactly these
/// set) or a number with an optional mask.
fn tcp_flags(text: &str) -> Option<(u128, Option<u128>)> {
    if text.starts_with(['+', '-']) {
        let (mut value, mut mask) = (0, 0);
        let mut rest = text;
        while let Some(sign) = rest.chars().next() {
            rest = &rest[1..];
            let end = rest.find(['+', '-']).unwrap_or(rest.len());
            let bit = tcp_flag(&rest[..end])?;
            if mask & bit != 0 {
                return None;
            }
            mask |= bit;
            if sign == '+' {
                value |= bit;
            }
            rest = &rest[end..];
        }
        return Some((value, Some(mask)));
    }
    if text.contains('|') || tcp_flag(text).is_some() {
        let mut value = 0;
        for n in text.split('|') {
            value |= tcp_flag(n)?;
        }
        return Some((value, None));
    }
    let (v, m) = match text.split_once('/') {
        Some((v, m)) => (v, Some(lexer::number_bits(m, 12)?)),
        None => (text, None),
    };
    Some((lexer::number_bits(v, 12)?, m))
}

fn bad(field: &str, value: &str, expected: impl Into<String>) -> OfctlError {
    OfctlError::BadValue {
        field: field.to_string(),
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// One value of field `f` without a mask.
pub(crate) fn parse_value(name: &str, f: Field, s: &str, ports: Ports) -> Result<u128, OfctlError> {
    let (bits, kind, _) = shape(f);
    let (v, expected) = match kind {
        Kind::Int | Kind::TcpFlags => (lexer::number_bits(s, bits), format!("a {bits}-bit number")),
        Kind::Mac => (lexer::mac(s), "an Ethernet address".into()),
        Kind::Ipv4 => (lexer::ipv4(s), "an IPv4 address".into()),
        Kind::Ipv6 => (lexer::ipv6(s), "an IPv6 address".into()),
        Kind::Port => (
            parse_port(s, ports).map(u128::from),
            "a port number or name".into(),
        ),
    };
    v.ok_or_else(|| bad(name, s, expected))
}

/// `value[/mask]` for field `f`; an address's mask may be a prefix length.
pub(crate) fn parse_masked(
    name: &str,
    f: Field,
    text: &str,
    ports: Ports,
) -> Result<(u128, Option<u128>), OfctlError> {
    let (bits, kind, maskable) = shape(f);
    if kind == Kind::TcpFlags {
        return tcp_flags(text).ok_or_else(|| {
            bad(
                name,
                text,
                "TCP flags (+syn-ack, syn|ack or a 12-bit value[/mask])",
            )
        });
    }
    let Some((v, m)) = text.split_once('/') else {
        return Ok((parse_value(name, f, text, ports)?, None));
    };
    if !maskable {
        return Err(bad(
            name,
            text,
            "a value without a mask (the field takes none)",
        ));
    }
    let value = parse_value(name, f, v, ports)?;
    let mask = match kind {
        Kind::Ipv4 | Kind::Ipv6 => lexer::prefix_mask(m, bits),
        _ => None,
    };
    let mask = match mask {
        Some(m) => m,
        None => {
            parse_value(name, f, m, ports).map_err(|_| bad(name, m, "a mask or prefix length"))?
        }
    };
    Ok((value, Some(mask)))
}

/// Items whose OXM field depends on the protocol, settled at the end.
#[derive(Copy, Clone, Debug)]
enum Generic {
    TpSrc,
    TpDst,
    IcmpType,
    IcmpCode,
    NwSrc,
    NwDst,
    NwProto,
}

/// Protocol shorthands: name, eth_type, ip_proto.
const SHORTHANDS: [(&str, u16, Option<u8>); 14] = [
    ("ip", 0x0800, None),
    ("ipv6", 0x86dd, None),
    ("icmp", 0x0800, Some(1)),
    ("icmp6", 0x86dd, Some(58)),
    ("igmp", 0x0800, Some(2)),
    ("tcp", 0x0800, Some(6)),
    ("tcp6", 0x86dd, Some(6)),
    ("udp", 0x0800, Some(17)),
    ("udp6", 0x86dd, Some(17)),
    ("sctp", 0x0800, Some(132)),
    ("sctp6", 0x86dd, Some(132)),
    ("arp", 0x0806, None),
    ("mpls", 0x8847, None),
    ("mplsm", 0x8848, None),
];

/// The shorthand `ovs-ofctl` prints for an eth_type and ip_proto, and
/// whether it says the protocol too.
pub(crate) fn shorthand(eth_type: u16, proto: Option<u8>) -> Option<(&'static str, bool)> {
    SHORTHANDS
        .iter()
        .find(|&&(_, e, p)| e == eth_type && p.is_some() && p == proto)
        .map(|&(n, _, _)| (n, true))
        .or_else(|| {
            SHORTHANDS
                .iter()
                .find(|&&(_, e, p)| e == eth_type && p.is_none())
                .map(|&(n, _, _)| (n, false))
        })
}

/// Builds a [`Match`] from match items in any order.
pub(crate) struct MatchBuilder<'a> {
    fields: BTreeMap<Field, Oxm>,
    pending: Vec<(Generic, &'a str, u128, Option<u128>)>,
    ports: Ports<'a>,
}

impl<'a> MatchBuilder<'a> {
    pub fn new(ports: Ports<'a>) -> Self {
        MatchBuilder {
            fields: BTreeMap::new(),
            pending: Vec::new(),
            ports,
        }
    }

    fn set(&mut self, field: Field, value: u128, mask: Option<u128>) {
        self.fields.insert(field, Oxm { field, value, mask });
    }

    /// Takes one match item (a shorthand or `field=value`).
    pub fn item(&mut self, tok: &Token<'a>) -> Result<(), OfctlError> {
        let (key, value) = (tok.key, tok.value);
        if tok.paren {
            return Err(OfctlError::UnknownField(key.to_string()));
        }
        if key == "rarp" {
            return Err(OfctlError::Syntax(
                "rarp: not supported: OpenFlow 1.3 has no RARP fields (use dl_type=0x8035)".into(),
            ));
        }
        if let Some(&(_, eth, proto)) = SHORTHANDS.iter().find(|s| s.0 == key) {
            if !value.is_empty() {
                return Err(bad(key, value, "empty (a shorthand takes no value)"));
            }
            self.set(Field::EthType, eth.into(), None);
            if let Some(p) = proto {
                self.set(Field::IpProto, p.into(), None);
            }
            return Ok(());
        }
        let generic = match key {
            "tp_src" => Some((Generic::TpSrc, Field::TcpSrc)),
            "tp_dst" => Some((Generic::TpDst, Field::TcpDst)),
            "icmp_type" => Some((Generic::IcmpType, Field::Icmpv4Type)),
            "icmp_code" => Some((Generic::IcmpCode, Field::Icmpv4Code)),
            "nw_src" | "ip_src" => Some((Generic::NwSrc, Field::Ipv4Src)),
            "nw_dst" | "ip_dst" => Some((Generic::NwDst, Field::Ipv4Dst)),
            "nw_proto" => Some((Generic::NwProto, Field::IpProto)),
            _ => None,
        };
        if let Some((g, like)) = generic {
            let (v, m) = parse_masked(key, like, value, self.ports)?;
            self.pending.push((g, key, v, m));
            return Ok(());
        }
        match key {
            "dl_vlan" => {
                let v = lexer::number_bits(value, 16)
                    .filter(|&v| v < 4096 || v == 0xffff)
                    .ok_or_else(|| bad(key, value, "a VLAN id (0 to 4095, or 0xffff for none)"))?;
                let vid = if v == 0xffff {
                    0
                } else {
                    v | u128::from(VID_PRESENT)
                };
                self.set(Field::VlanVid, vid, None);
            }
            "dl_vlan_pcp" | "vlan_pcp" => {
                let v = parse_value(key, Field::VlanPcp, value, self.ports)?;
                self.set(Field::VlanPcp, v, None);
                // A priority implies a tag; OpenFlow 1.3 asks for it.
                if !self.fields.contains_key(&Field::VlanVid) {
                    let present = u128::from(VID_PRESENT);
                    self.set(Field::VlanVid, present, Some(present));
                }
            }
            "vlan_tci" => self.vlan_tci(value)?,
            "nw_tos" => {
                let v = lexer::number_bits(value, 8)
                    .ok_or_else(|| bad(key, value, "an 8-bit number"))?;
                // The ECN bits are ignored, as ovs-ofctl does.
                self.set(Field::IpDscp, v >> 2, None);
            }
            _ => {
                let f = by_name(key).ok_or_else(|| OfctlError::UnknownField(key.to_string()))?;
                let (v, m) = parse_masked(key, f, value, self.ports)?;
                self.set(f, v, m);
            }
        }
        Ok(())
    }

    /// `vlan_tci=V[/M]` as vlan_vid and vlan_pcp, where OXM can say it.
    fn vlan_tci(&mut self, text: &str) -> Result<(), OfctlError> {
        const CFI: u128 = VID_PRESENT as u128;
        // Read as any 16-bit maskable number (a TCP port's shape).
        let (v, m) = parse_masked("vlan_tci", Field::TcpSrc, text, self.ports)?;
        let m = m.unwrap_or(0xffff);
        let v = v & m;
        let cant = |why: &str| {
            OfctlError::Syntax(format!(
                "vlan_tci: {text} cannot be matched in OpenFlow 1.3 ({why})"
            ))
        };
        let no_vlan = m & CFI != 0 && v & CFI == 0;
        let (vid_mask, pcp_mask) = (m & 0x1fff, m >> 13);
        if vid_mask != 0 {
            self.set(Field::VlanVid, v & 0x1fff, Some(vid_mask));
        }
        if pcp_mask != 0 {
            if no_vlan {
                if v >> 13 != 0 {
                    return Err(cant("a priority without a VLAN"));
                }
            } else if m & CFI == 0 {
                return Err(cant(
                    "a priority needs the VLAN present bit 0x1000 in the mask",
                ));
            } else if pcp_mask != 7 {
                return Err(cant("the priority takes no mask"));
            } else {
                self.set(Field::VlanPcp, v >> 13, None);
            }
        }
        Ok(())
    }

    /// Settles the protocol-dependent items, normalises masks (value
    /// bits outside the mask cleared, full masks dropped, empty masks
    /// drop the field) and checks every field's prerequisites.
    pub fn finish(mut self) -> Result<Match, OfctlError> {
        let exact = |fields: &BTreeMap<Field, Oxm>, f| {
            fields.get(&f).filter(|o| o.mask.is_none()).map(|o| o.value)
        };
        let eth = exact(&self.fields, Field::EthType);
        let arp = eth == Some(0x0806);
        let pending = std::mem::take(&mut self.pending);
        // nw_proto first: it decides what tp_src means.
        let (first, later): (Vec<_>, Vec<_>) = pending
            .into_iter()
            .partition(|p| matches!(p.0, Generic::NwSrc | Generic::NwDst | Generic::NwProto));
        for (g, _, v, m) in first {
            let f = match (g, arp) {
                (Generic::NwSrc, false) => Field::Ipv4Src,
                (Generic::NwSrc, true) => Field::ArpSpa,
                (Generic::NwDst, false) => Field::Ipv4Dst,
                (Generic::NwDst, true) => Field::ArpTpa,
                (_, false) => Field::IpProto,
                (_, true) => Field::ArpOp,
            };
            self.set(f, v, m);
        }
        let proto = exact(&self.fields, Field::IpProto);
        for (g, name, v, m) in later {
            let f = match (g, eth, proto) {
                (Generic::TpSrc, _, Some(6)) => Field::TcpSrc,
                (Generic::TpDst, _, Some(6)) => Field::TcpDst,
                (Generic::TpSrc, _, Some(17)) => Field::UdpSrc,
                (Generic::TpDst, _, Some(17)) => Field::UdpDst,
                (Generic::TpSrc, _, Some(132)) => Field::SctpSrc,
                (Generic::TpDst, _, Some(132)) => Field::SctpDst,
                (Generic::IcmpType, Some(0x86dd), _) => Field::Icmpv6Type,
                (Generic::IcmpCode, Some(0x86dd), _) => Field::Icmpv6Code,
                (Generic::IcmpType, _, Some(1)) => Field::Icmpv4Type,
                (Generic::IcmpCode, _, Some(1)) => Field::Icmpv4Code,
                (Generic::TpSrc | Generic::TpDst, _, _) => {
                    return Err(prerequisite(name, "tcp, udp or sctp (or their ip6 forms)"));
                }
                _ => return Err(prerequisite(name, "icmp or icmp6")),
            };
            self.set(f, v, m);
        }
        let fields: Vec<Oxm> = self.fields.into_values().filter_map(normalise).collect();
        for o in &fields {
            check_prereq(o.field, &fields)?;
        }
        Ok(Match { fields })
    }
}

fn prerequisite(field: &str, needs: &str) -> OfctlError {
    OfctlError::Prerequisite {
        field: field.to_string(),
        needs: needs.to_string(),
    }
}

/// Clears value bits outside the mask; a full mask becomes none and an
/// empty one drops the field.
pub(crate) fn normalise(mut o: Oxm) -> Option<Oxm> {
    let all = lexer::ones(shape(o.field).0);
    o.value &= all;
    if let Some(m) = o.mask {
        let m = m & all;
        o.value &= m;
        o.mask = match m {
            0 => return None,
            m if m == all => None,
            m => Some(m),
        };
    }
    Some(o)
}

/// Whether the fields of a match give `f` its prerequisites (OpenFlow 1.3
/// section 7.2.3.6, as OVS checks them).
pub(crate) fn check_prereq(f: Field, fields: &[Oxm]) -> Result<(), OfctlError> {
    use Field::*;
    let get = |g: Field| fields.iter().find(|o| o.field == g);
    let exact = |g: Field| get(g).filter(|o| o.mask.is_none()).map(|o| o.value);
    let eth = exact(EthType);
    let (ip4, ip6) = (eth == Some(0x0800), eth == Some(0x86dd));
    let proto = exact(IpProto).filter(|_| ip4 || ip6);
    let icmp6_type = exact(Icmpv6Type).filter(|_| ip6 && proto == Some(58));
    let (ok, needs) = match f {
        VlanPcp => (
            get(VlanVid)
                .is_some_and(|o| o.value & 0x1000 != 0 && o.mask.is_none_or(|m| m & 0x1000 != 0)),
            "a VLAN (dl_vlan, or vlan_vid with the present bit 0x1000)",
        ),
        IpDscp | IpEcn | IpProto => (ip4 || ip6, "ip or ipv6"),
        Ipv4Src | Ipv4Dst => (ip4, "ip"),
        TcpSrc | TcpDst | TcpFlags => (proto == Some(6), "tcp or tcp6"),
        UdpSrc | UdpDst => (proto == Some(17), "udp or udp6"),
        SctpSrc | SctpDst => (proto == Some(132), "sctp or sctp6"),
        Icmpv4Type | Icmpv4Code => (ip4 && proto == Some(1), "icmp"),
        ArpOp | ArpSpa | ArpTpa | ArpSha | ArpTha => (eth == Some(0x0806), "arp"),
        Ipv6Src | Ipv6Dst | Ipv6Flabel | Ipv6Exthdr => (ip6, "ipv6"),
        Icmpv6Type | Icmpv6Code => (ip6 && proto == Some(58), "icmp6"),
        Ipv6NdTarget => (
            matches!(icmp6_type, Some(135 | 136)),
            "icmp6 with icmp_type=135 or 136",
        ),
        Ipv6NdSll => (icmp6_type == Some(135), "icmp6 with icmp_type=135"),
        Ipv6NdTll => (icmp6_type == Some(136), "icmp6 with icmp_type=136"),
        MplsLabel | MplsTc | MplsBos => (matches!(eth, Some(0x8847 | 0x8848)), "mpls or mplsm"),
        PbbIsid => (eth == Some(0x88e7), "dl_type=0x88e7"),
        InPort
        | InPhyPort
        | Metadata
        | EthDst
        | EthSrc
        | EthType
        | VlanVid
        | TunnelId
        | any_reg!() => (true, ""),
    };
    if ok {
        Ok(())
    } else {
        Err(prerequisite(name(f), needs))
    }
}
