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

fn with_ethernet(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(14 + payload.len());
    v.extend_from_slice(&FAKE_DST);
    v.extend_from_slice(&FAKE_SRC);
    v.extend_from_slice(&ethertype.to_be_bytes());
    v.extend_from_slice(payload);
    v
}

fn ip_ethertype(payload: &[u8]) -> u16 {
    match payload.first().map(|b| b >> 4) {
        Some(6) => 0x86dd,
        _ => 0x0800,
    }
}

/// The frame as Ethernet, for link type `linktype` (LINKTYPE_* numbers).
pub fn to_ethernet(linktype: u32, data: &[u8]) -> (Vec<u8>, LinkKind) {
    match linktype {
        1 => (data.to_vec(), LinkKind::Ethernet),
        // Raw IP (DLT_RAW on some systems, LINKTYPE_RAW, IPV4, IPV6).
        12 | 14 | 101 | 228 | 229 => (with_ethernet(ip_ethertype(data), data), LinkKind::Converted),
        // BSD loopback: a 4-byte address family (host or network order).
        0 | 108 if data.len() >= 4 => {
            let payload = &data[4..];
            (
                with_ethernet(ip_ethertype(payload), payload),
                LinkKind::Converted,
            )
        }
        // Linux cooked v1: protocol at 14..16, 16-byte header.
        113 if data.len() >= 16 => {
            let proto = u16::from_be_bytes([data[14], data[15]]);
            (with_ethernet(proto, &data[16..]), LinkKind::Converted)
        }
        // Linux cooked v2: protocol at 0..2, 20-byte header.
        276 if data.len() >= 20 => {
            let proto = u16::from_be_bytes([data[0], data[1]]);
            (with_ethernet(proto, &data[20..]), LinkKind::Converted)
        }
        other => (data.to_vec(), LinkKind::Foreign(other)),
    }
}
