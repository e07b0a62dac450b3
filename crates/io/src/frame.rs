//! A frame as a source delivers it: Ethernet where the capture allows.

/// How a captured frame became the bytes a program sees.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum LinkKind {
    /// Captured on Ethernet.
    Ethernet,
    /// Raw IP, loopback or Linux-cooked capture: an Ethernet header was
    /// made up (EtherType from the capture, fixed MAC addresses).
    Converted,
    /// A link type without an Ethernet form (802.11, PPP, ...): the bytes
    /// as captured.
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
        // Linux cooked v1: protocol at 14..16, 16-byte header.
        113 if data.len() >= 16 => {
            let proto = u16::from_be_bytes([data[14], data[15]]);
            push_ethernet(proto, &data[16..], out);
            LinkKind::Converted
        }
        // Linux cooked v2: protocol at 0..2, 20-byte header.
        276 if data.len() >= 20 => {
            let proto = u16::from_be_bytes([data[0], data[1]]);
            push_ethernet(proto, &data[20..], out);
            LinkKind::Converted
        }
        other => {
            out.extend_from_slice(data);
            LinkKind::Foreign(other)
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
