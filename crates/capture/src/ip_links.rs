//! Link types with no Ethernet header that carry IP: PPP, Cisco HDLC,
//! Solaris IPNET and ARCNET. What each frame carries is found as tcpdump
//! finds it (print-ppp.c, print-chdlc.c, print-ipnet.c, print-arcnet.c);
//! a frame carrying IPv4, IPv6 or MPLS gives that payload and the
//! EtherType Ethernet would carry it under, anything else (LCP, SLARP,
//! IS-IS, ARCNET ARP, fragments, ...) gives `None`.

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const ETHERTYPE_MPLS: u16 = 0x8847;
const ETHERTYPE_MPLS_MULTI: u16 = 0x8848;

/// A payload with the EtherType that says what it is.
pub(crate) type Payload<'a> = (u16, &'a [u8]);

/// A PPP protocol number as the EtherType of the same protocol.
fn ppp_ethertype(proto: u16) -> Option<u16> {
    match proto {
        0x0021 => Some(ETHERTYPE_IPV4),
        0x0057 => Some(ETHERTYPE_IPV6),
        0x0281 => Some(ETHERTYPE_MPLS),
        0x0283 => Some(ETHERTYPE_MPLS_MULTI),
        _ => None,
    }
}

/// An EtherType of the IP family (IPv4, IPv6, MPLS), as Cisco HDLC
/// gives it.
fn ip_family(ethertype: u16) -> Option<u16> {
    matches!(
        ethertype,
        ETHERTYPE_IPV4 | ETHERTYPE_IPV6 | ETHERTYPE_MPLS | ETHERTYPE_MPLS_MULTI
    )
    .then_some(ethertype)
}

/// LINKTYPE_PPP (9): an optional `ff 03` address and control, then the
/// protocol, one byte when odd (RFC 1661 protocol-field compression),
/// else two.
pub(crate) fn ppp(data: &[u8]) -> Option<Payload<'_>> {
    let data = match data {
        [0xff, 0x03, rest @ ..] => rest,
        _ => data,
    };
    let (proto, payload) = match data {
        [p, rest @ ..] if p % 2 == 1 => (u16::from(*p), rest),
        [hi, lo, rest @ ..] => (u16::from_be_bytes([*hi, *lo]), rest),
        _ => return None,
    };
    Some((ppp_ethertype(proto)?, payload))
}

/// LINKTYPE_PPP_HDLC (50): PPP behind `ff 03`, or Cisco HDLC (its
/// address byte 0x0f or 0x8f), as tcpdump's `ppp_hdlc_if_print` tells
/// them apart.
pub(crate) fn ppp_hdlc(data: &[u8]) -> Option<Payload<'_>> {
    match data.first()? {
        0xff => match data {
            [0xff, 0x03, hi, lo, rest @ ..] => {
                Some((ppp_ethertype(u16::from_be_bytes([*hi, *lo]))?, rest))
            }
            _ => None,
        },
        0x0f | 0x8f => chdlc(data),
        _ => None,
    }
}

/// LINKTYPE_C_HDLC (104): address, control, then an EtherType.
pub(crate) fn chdlc(data: &[u8]) -> Option<Payload<'_>> {
    match data {
        [_, _, hi, lo, rest @ ..] => Some((ip_family(u16::from_be_bytes([*hi, *lo]))?, rest)),
        _ => None,
    }
}

/// LINKTYPE_IPNET (226): a 24-byte header whose second byte is the
/// address family (2: IPv4, 26: IPv6).
pub(crate) fn ipnet(data: &[u8]) -> Option<Payload<'_>> {
    const HEADER: usize = 24;
    let ethertype = match data.get(1)? {
        2 => ETHERTYPE_IPV4,
        26 => ETHERTYPE_IPV6,
        _ => return None,
    };
    Some((ethertype, data.get(HEADER..)?))
}

/// ARCNET system codes (RFC 1051 old-style and RFC 1201).
const ARCTYPE_IP_OLD: u8 = 240;
const ARCTYPE_ARP_OLD: u8 = 241;
const ARCTYPE_DIAGNOSE: u8 = 0x80;
const ARCTYPE_IP: u8 = 212;
const ARCTYPE_INET6: u8 = 0xc4;

fn arcnet_ethertype(arc_type: u8) -> Option<u16> {
    match arc_type {
        ARCTYPE_IP_OLD | ARCTYPE_IP => Some(ETHERTYPE_IPV4),
        ARCTYPE_INET6 => Some(ETHERTYPE_IPV6),
        _ => None,
    }
}

/// Whether the system code has no RFC 1201 split-flag and sequence
/// fields after it (RFC 1051 codes and diagnostics).
fn arcnet_short(arc_type: u8) -> bool {
    matches!(
        arc_type,
        ARCTYPE_IP_OLD | ARCTYPE_ARP_OLD | ARCTYPE_DIAGNOSE
    )
}

/// LINKTYPE_ARCNET_BSD (7): source, destination, system code; RFC 1201
/// codes add a split flag and a sequence number (6 bytes), or in an
/// exception frame (flag 0xff) 10 bytes. Fragments other than the first
/// (an even, non-zero split flag) carry no header of their own; a first
/// fragment is given as its bytes go.
pub(crate) fn arcnet_bsd(data: &[u8]) -> Option<Payload<'_>> {
    let arc_type = *data.get(2)?;
    let ethertype = arcnet_ethertype(arc_type)?;
    let (flag, header) = if arcnet_short(arc_type) {
        (0, 3)
    } else {
        match *data.get(3)? {
            0xff => (*data.get(7)?, 10),
            flag => (flag, 6),
        }
    };
    if flag != 0 && flag & 1 == 0 {
        return None;
    }
    Some((ethertype, data.get(header..)?))
}

/// LINKTYPE_ARCNET_LINUX (129): source, destination, a 2-byte offset and
/// the system code; RFC 1201 codes add a split flag (6 bytes). Linux
/// gives reassembled packets.
pub(crate) fn arcnet_linux(data: &[u8]) -> Option<Payload<'_>> {
    let arc_type = *data.get(4)?;
    let ethertype = arcnet_ethertype(arc_type)?;
    let header = if arcnet_short(arc_type) { 5 } else { 6 };
    Some((ethertype, data.get(header..)?))
}
