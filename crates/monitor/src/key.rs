//! What a frame tells flow accounting. The rule: Ethernet, up to two VLAN
//! tags (802.1Q, 802.1ad), then IPv4 or IPv6 (IPv6's hop-by-hop, routing,
//! destination-options and fragment headers walked, at most eight); the
//! flow is (source, destination, protocol, ports) of the outermost IP
//! header; ports from TCP, UDP, SCTP and UDP-Lite headers, for ICMP and
//! ICMPv6 the source port 0 and the destination port `type * 256 + code`
//! (NetFlow's convention); a fragment after the first has no ports. The
//! bytes are the IP header's length (total length, or the payload length
//! plus 40; what the capture holds where the field is 0, as for BIG TCP
//! and jumbograms), as IPFIX's octet counts are. An IPv4 header longer
//! than its datagram is no datagram to account; a transport header cut
//! short in the capture gives no ports.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// A flow's key: one direction of a conversation.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct FlowKey {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub protocol: u8,
    pub src_port: u16,
    pub dst_port: u16,
}

/// What a frame tells flow accounting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observed {
    pub key: FlowKey,
    /// The IP datagram's length, from its header.
    pub bytes: u32,
    /// TCP's flags (FIN 0x01 ... CWR 0x80); 0 for other protocols.
    pub tcp_flags: u8,
}

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;
const ETH_VLAN: u16 = 0x8100;
const ETH_QINQ: u16 = 0x88a8;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

/// The flow facts of an Ethernet frame; `None` for a frame that carries
/// no IP datagram this reads (or too short to tell).
pub fn observe(frame: &[u8]) -> Option<Observed> {
    let mut at = 12;
    let mut ethertype = be16(frame, at)?;
    for _ in 0..2 {
        if ethertype != ETH_VLAN && ethertype != ETH_QINQ {
            break;
        }
        at += 4;
        ethertype = be16(frame, at)?;
    }
    let ip = frame.get(at + 2..)?;
    match ethertype {
        ETH_IPV4 => ipv4(ip),
        ETH_IPV6 => ipv6(ip),
        _ => None,
    }
}

fn ipv4(ip: &[u8]) -> Option<Observed> {
    let first = *ip.first()?;
    if first >> 4 != 4 {
        return None;
    }
    let ihl = usize::from(first & 0xf) * 4;
    // A header shorter than 20 bytes, or longer than its datagram: not a
    // datagram to account. (Options cut short in the capture leave the
    // transport out, as any header cut short does.)
    if ihl < 20 {
        return None;
    }
    let hdr = ip.get(..20)?;
    let bytes = match u32::from(be16(hdr, 2)?) {
        // A length too big for the field (BIG TCP, TSO): what is there.
        0 => ip.len() as u32,
        n if (n as usize) < ihl => return None,
        n => n,
    };
    let later_fragment = be16(hdr, 6)? & 0x1fff != 0;
    let protocol = hdr[9];
    let src = Ipv4Addr::new(hdr[12], hdr[13], hdr[14], hdr[15]);
    let dst = Ipv4Addr::new(hdr[16], hdr[17], hdr[18], hdr[19]);
    let l4 = if later_fragment { None } else { ip.get(ihl..) };
    Some(transport(src.into(), dst.into(), protocol, bytes, l4))
}

fn ipv6(ip: &[u8]) -> Option<Observed> {
    let hdr = ip.get(..40)?;
    if hdr[0] >> 4 != 6 {
        return None;
    }
    let bytes = match u32::from(be16(hdr, 4)?) {
        // A jumbogram (or BIG TCP): what is there.
        0 => ip.len() as u32,
        n => n + 40,
    };
    let addr = |at: usize| -> Ipv6Addr {
        let b: [u8; 16] = hdr[at..at + 16].try_into().expect("16 bytes");
        b.into()
    };
    let (src, dst) = (addr(8), addr(24));
    let mut next = hdr[6];
    let mut at = 40;
    let mut later_fragment = false;
    for _ in 0..8 {
        match next {
            // Hop-by-hop, routing, destination options: (len + 1) * 8.
            0 | 43 | 60 => {
                let h = ip.get(at..at + 2)?;
                next = h[0];
                at += (usize::from(h[1]) + 1) * 8;
            }
            // Fragment: 8 bytes, the offset in the top 13 bits of 2..4.
            44 => {
                let h = ip.get(at..at + 8)?;
                next = h[0];
                later_fragment = be16(h, 2)? >> 3 != 0;
                at += 8;
            }
            _ => break,
        }
    }
    let l4 = if later_fragment { None } else { ip.get(at..) };
    Some(transport(src.into(), dst.into(), next, bytes, l4))
}

/// The key's ports (and TCP's flags) from the transport header at `l4`.
fn transport(src: IpAddr, dst: IpAddr, protocol: u8, bytes: u32, l4: Option<&[u8]>) -> Observed {
    let (mut src_port, mut dst_port, mut tcp_flags) = (0, 0, 0);
    if let Some(l4) = l4 {
        match protocol {
            6 | 17 | 132 | 136 => {
                if let (Some(s), Some(d)) = (be16(l4, 0), be16(l4, 2)) {
                    (src_port, dst_port) = (s, d);
                }
                if protocol == 6 {
                    tcp_flags = l4.get(13).copied().unwrap_or(0);
                }
            }
            1 | 58 => {
                if let [t, c, ..] = *l4 {
                    dst_port = u16::from(t) << 8 | u16::from(c);
                }
            }
            _ => {}
        }
    }
    Observed {
        key: FlowKey {
            src,
            dst,
            protocol,
            src_port,
            dst_port,
        },
        bytes,
        tcp_flags,
    }
}
