//! Juniper link types (LINKTYPE_JUNIPER_*): a variable header in front of
//! the frame, read as tcpdump's print-juniper.c reads it. The header is
//! the magic `MGC`, a flags byte, with the extension flag a 2-byte length
//! and that many bytes of TLVs; with the no-L2 flag, 4 more bytes and an
//! IP packet. Otherwise the PIC type decides: Ethernet, PPP and Cisco
//! HDLC PICs carry those frames; the monitor, services and GGSN PICs an
//! 8-byte cookie and IP. The others (ATM, multilink, frame relay,
//! encryption services, ...) are not decoded.

use crate::ip_links::{Payload, chdlc, ppp};

const MAGIC: [u8; 3] = *b"MGC";
const FLAG_NO_L2: u8 = 0x02;
const FLAG_EXT: u8 = 0x80;
/// A cookie starting with this byte is a link-services cookie, 2 bytes
/// longer than the 8 the header has room for: tcpdump calls it invalid.
const LS_COOKIE_ID: u8 = 0x54;
const COOKIE_LEN: usize = 8;

pub(crate) const MLPPP: u32 = 130;
pub(crate) const MLFR: u32 = 131;
pub(crate) const ES: u32 = 132;
pub(crate) const GGSN: u32 = 133;
pub(crate) const MFR: u32 = 134;
pub(crate) const ATM2: u32 = 135;
pub(crate) const SERVICES: u32 = 136;
pub(crate) const ATM1: u32 = 137;
pub(crate) const MONITOR: u32 = 164;
pub(crate) const PPPOE: u32 = 167;
pub(crate) const PPPOE_ATM: u32 = 168;
pub(crate) const ETHER: u32 = 178;
pub(crate) const PPP: u32 = 179;
pub(crate) const FRELAY: u32 = 180;
pub(crate) const CHDLC: u32 = 181;
pub(crate) const VP: u32 = 183;
pub(crate) const ISM: u32 = 194;
pub(crate) const ST: u32 = 200;
pub(crate) const VS: u32 = 217;
pub(crate) const SRX_E2E: u32 = 218;
pub(crate) const FIBRECHANNEL: u32 = 219;
pub(crate) const ATM_CEMIC: u32 = 238;

/// Whether `linktype` is one of Juniper's.
pub(crate) fn is_juniper(linktype: u32) -> bool {
    matches!(
        linktype,
        MLPPP
            | MLFR
            | ES
            | GGSN
            | MFR
            | ATM2
            | SERVICES
            | ATM1
            | MONITOR
            | PPPOE
            | PPPOE_ATM
            | ETHER
            | PPP
            | FRELAY
            | CHDLC
            | VP
            | ISM
            | ST
            | VS
            | SRX_E2E
            | FIBRECHANNEL
            | ATM_CEMIC
    )
}

/// What a Juniper frame carries, where it could be decoded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Inner<'a> {
    /// An Ethernet frame as it is.
    Ethernet(&'a [u8]),
    /// A payload with its EtherType.
    Ether(Payload<'a>),
}

/// An IP packet, told by its version nibble.
fn ip_guess(data: &[u8]) -> Option<Payload<'_>> {
    match data.first()? >> 4 {
        4 => Some((0x0800, data)),
        6 => Some((0x86dd, data)),
        _ => None,
    }
}

/// Whether the extension TLVs (type, length, value) fit in their
/// space, as tcpdump requires: a zero type or length ends them.
fn extensions_fit(mut tlvs: &[u8]) -> Option<()> {
    while tlvs.len() > 2 {
        let (kind, len) = (tlvs[0], usize::from(tlvs[1]));
        if kind == 0 || len == 0 {
            break;
        }
        tlvs = tlvs[2..].get(len..)?;
    }
    Some(())
}

/// The frame inside a Juniper frame of link type `linktype`, or `None`
/// for a header that is not Juniper's, cut short, or a PIC type whose
/// frames are not decoded.
pub(crate) fn decode(linktype: u32, data: &[u8]) -> Option<Inner<'_>> {
    if data.get(..3)? != MAGIC {
        return None;
    }
    let flags = data[3];
    let mut header = 4;
    if flags & FLAG_EXT != 0 {
        let len = data.get(4..6)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        extensions_fit(data.get(6..6 + len)?)?;
        header += 2 + len;
    }
    let rest = data.get(header..)?;
    if flags & FLAG_NO_L2 != 0 {
        return ip_guess(rest.get(4..)?).map(Inner::Ether);
    }
    match linktype {
        ETHER => (rest.len() >= 14).then_some(Inner::Ethernet(rest)),
        PPP => ppp(rest).map(Inner::Ether),
        CHDLC => chdlc(rest).map(Inner::Ether),
        MONITOR | SERVICES | GGSN if *rest.first()? == LS_COOKIE_ID => None,
        MONITOR | SERVICES => ip_guess(rest.get(COOKIE_LEN..)?).map(Inner::Ether),
        GGSN => {
            // The cookie's third byte is the protocol: 2 IPv4, 6 IPv6.
            let ethertype = match *rest.get(2)? {
                2 => 0x0800,
                6 => 0x86dd,
                _ => return None,
            };
            Some(Inner::Ether((ethertype, rest.get(COOKIE_LEN..)?)))
        }
        _ => None,
    }
}
