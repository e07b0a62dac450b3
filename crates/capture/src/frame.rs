//! A frame as a source delivers it: Ethernet where the capture allows.

use crate::ip_links::{self, Payload};
use crate::juniper::{self, Inner};
use crate::wifi::Dot11;

/// How a captured frame became the bytes a program sees.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum LinkKind {
    /// Captured on Ethernet.
    Ethernet,
    /// Raw IP, loopback or Linux-cooked capture, or IP (IPv4, IPv6, MPLS)
    /// over PPP, Cisco HDLC, IPNET, ARCNET or behind a Juniper header: an
    /// Ethernet header was made up (EtherType from the capture, fixed MAC
    /// addresses); an Ethernet frame behind a Juniper header; or an
    /// 802.11 data frame carrying LLC/SNAP, made the Ethernet frame an
    /// access point would bridge (addresses from the 802.11 header).
    Converted,
    /// A frame without an Ethernet form: a link type with none (CAN,
    /// USB, ...), or one that has none of its link type (802.11
    /// management, control or encrypted frames, Linux-cooked netlink,
    /// PPP LCP, Cisco SLARP, IS-IS over HDLC, ARCNET ARP, Juniper ATM
    /// PICs): the bytes as captured, with the capture's LINKTYPE_* number.
    Foreign(u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub data: Vec<u8>,
    /// Length on the wire (may exceed `data` in truncated captures).
    pub orig_len: u32,
    pub timestamp_ns: u64,
    pub link: LinkKind,
}

pub const FAKE_SRC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
pub const FAKE_DST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// Metadata of a frame appended to a caller's buffer by
/// [`PcapSource::read_into`](crate::PcapSource::read_into).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct FrameInfo {
    /// Bytes appended to the buffer (after conversion to Ethernet).
    pub len: u32,
    /// Length on the wire, as the capture records it (may exceed the
    /// captured bytes in truncated captures).
    pub orig_len: u32,
    pub timestamp_ns: u64,
    pub link: LinkKind,
}

fn push_ethernet(ethertype: u16, payload: &[u8], out: &mut Vec<u8>) {
    out.reserve(14 + payload.len());
    out.extend_from_slice(&FAKE_DST);
    out.extend_from_slice(&FAKE_SRC);
    out.extend_from_slice(&ethertype.to_be_bytes());
    out.extend_from_slice(payload);
}

fn ip_ethertype(payload: &[u8]) -> u16 {
    match payload.first().map(|b| b >> 4) {
        Some(6) => 0x86dd,
        _ => 0x0800,
    }
}

/// A Linux-cooked frame's payload as Ethernet: an EtherType protocol gets
/// an Ethernet II header; 802.2 LLC (`ETH_P_802_2`) and Novell raw 802.3
/// (`ETH_P_802_3`) an 802.3 header with the length; netlink (ARPHRD 824)
/// and the other pseudo-protocols below 0x0600 (CAN, 802.11 raw, ...) have
/// no Ethernet form.
fn cooked(
    linktype: u32,
    hatype: u16,
    proto: u16,
    data: &[u8],
    header: usize,
    out: &mut Vec<u8>,
) -> LinkKind {
    const ARPHRD_NETLINK: u16 = 824;
    let payload = &data[header..];
    let ethertype = match proto {
        _ if hatype == ARPHRD_NETLINK => None,
        0x0600.. => Some(proto),
        0x0001 | 0x0004 if payload.len() <= 1500 => Some(payload.len() as u16),
        _ => None,
    };
    match ethertype {
        Some(t) => {
            push_ethernet(t, payload, out);
            LinkKind::Converted
        }
        None => {
            out.extend_from_slice(data);
            LinkKind::Foreign(linktype)
        }
    }
}

/// Appends the frame as Ethernet, for link type `linktype` (LINKTYPE_*
/// numbers), to `out`; allocates only if `out` must grow.
#[inline]
pub fn to_ethernet_into(linktype: u32, data: &[u8], out: &mut Vec<u8>) -> LinkKind {
    match linktype {
        1 => {
            out.extend_from_slice(data);
            LinkKind::Ethernet
        }
        // Raw IP (DLT_RAW on some systems, LINKTYPE_RAW, IPV4, IPV6).
        12 | 14 | 101 | 228 | 229 => {
            push_ethernet(ip_ethertype(data), data, out);
            LinkKind::Converted
        }
        // BSD loopback: a 4-byte address family (host or network order).
        0 | 108 if data.len() >= 4 => {
            let payload = &data[4..];
            push_ethernet(ip_ethertype(payload), payload, out);
            LinkKind::Converted
        }
        // Linux cooked v1: ARPHRD type at 2..4, protocol at 14..16,
        // 16-byte header.
        113 if data.len() >= 16 => {
            let hatype = u16::from_be_bytes([data[2], data[3]]);
            let proto = u16::from_be_bytes([data[14], data[15]]);
            cooked(linktype, hatype, proto, data, 16, out)
        }
        // Linux cooked v2: protocol at 0..2, ARPHRD type at 8..10,
        // 20-byte header.
        276 if data.len() >= 20 => {
            let hatype = u16::from_be_bytes([data[8], data[9]]);
            let proto = u16::from_be_bytes([data[0], data[1]]);
            cooked(linktype, hatype, proto, data, 20, out)
        }
        // 802.11, bare or behind a Prism, radiotap or AVS header.
        105 | 119 | 127 | 163 => {
            let dot11 = match linktype {
                105 => Some(Dot11::plain(data)),
                119 => Dot11::prism(data),
                127 => Dot11::radiotap(data),
                _ => Dot11::avs(data),
            };
            if dot11.is_some_and(|d| d.to_ethernet_into(out)) {
                LinkKind::Converted
            } else {
                out.extend_from_slice(data);
                LinkKind::Foreign(linktype)
            }
        }
        9 => carried(linktype, ip_links::ppp(data), data, out),
        50 => carried(linktype, ip_links::ppp_hdlc(data), data, out),
        104 => carried(linktype, ip_links::chdlc(data), data, out),
        226 => carried(linktype, ip_links::ipnet(data), data, out),
        7 => carried(linktype, ip_links::arcnet_bsd(data), data, out),
        129 => carried(linktype, ip_links::arcnet_linux(data), data, out),
        _ if juniper::is_juniper(linktype) => match juniper::decode(linktype, data) {
            Some(Inner::Ethernet(frame)) => {
                out.extend_from_slice(frame);
                LinkKind::Converted
            }
            Some(Inner::Ether(payload)) => carried(linktype, Some(payload), data, out),
            None => carried(linktype, None, data, out),
        },
        other => {
            out.extend_from_slice(data);
            LinkKind::Foreign(other)
        }
    }
}

/// A payload some link type carried, behind a made-up Ethernet header; or
/// without one, the frame as captured.
fn carried(
    linktype: u32,
    payload: Option<Payload<'_>>,
    data: &[u8],
    out: &mut Vec<u8>,
) -> LinkKind {
    match payload {
        Some((ethertype, payload)) => {
            push_ethernet(ethertype, payload, out);
            LinkKind::Converted
        }
        None => {
            out.extend_from_slice(data);
            LinkKind::Foreign(linktype)
        }
    }
}

/// The frame as Ethernet, for link type `linktype` (LINKTYPE_* numbers),
/// in a new `Vec`; see [`to_ethernet_into`].
pub fn to_ethernet(linktype: u32, data: &[u8]) -> (Vec<u8>, LinkKind) {
    let mut v = Vec::with_capacity(14 + data.len());
    let kind = to_ethernet_into(linktype, data, &mut v);
    (v, kind)
}

/// A record as captured, where it lies in the reader's buffer: not yet
/// converted to Ethernet ([`RawFrame::to_ethernet_into`]).
#[derive(Clone, Copy, Debug)]
pub struct RawFrame<'a> {
    pub data: &'a [u8],
    /// The LINKTYPE_* number of the record's interface.
    pub linktype: u32,
    /// Length on the wire (may exceed the captured bytes).
    pub orig_len: u32,
    pub timestamp_ns: u64,
}

impl RawFrame<'_> {
    /// Appends the bytes, as Ethernet where the link type allows (see
    /// [`to_ethernet_into`]), to `out`; what they are.
    #[inline]
    pub fn to_ethernet_into(&self, out: &mut Vec<u8>) -> crate::LinkKind {
        if self.linktype == 1 {
            out.extend_from_slice(self.data);
            crate::LinkKind::Ethernet
        } else {
            to_ethernet_into(self.linktype, self.data, out)
        }
    }

    /// Whether the bytes are Ethernet as captured (no conversion).
    pub fn is_ethernet(&self) -> bool {
        self.linktype == 1
    }
}
