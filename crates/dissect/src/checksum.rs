//! The Internet checksum (RFC 1071) and the addresses of an IP packet
//! that its pseudo-header sums: what the `-v` checks of IPv4, TCP, UDP
//! and ICMP share.

use crate::addr;

/// The two addresses of an IP packet, for printers above it.
pub(crate) struct IpAddrs<'a> {
    pub(crate) src: &'a [u8],
    pub(crate) dst: &'a [u8],
    pub(crate) v6: bool,
}

impl IpAddrs<'_> {
    pub(crate) fn src_str(&self) -> String {
        if self.v6 {
            addr::ipv6(self.src)
        } else {
            addr::ipv4(self.src)
        }
    }
    pub(crate) fn dst_str(&self) -> String {
        if self.v6 {
            addr::ipv6(self.dst)
        } else {
            addr::ipv4(self.dst)
        }
    }
    /// The ones' complement sum of the pseudo-header for `proto`.
    pub(crate) fn pseudo_sum(&self, proto: u8, len: u32) -> u32 {
        let mut sum = sum16(self.src) + sum16(self.dst) + u32::from(proto);
        sum += len >> 16;
        sum += len & 0xffff;
        sum
    }
}

/// Sum of big-endian 16-bit words (odd tail padded with zero).
pub(crate) fn sum16(b: &[u8]) -> u32 {
    b.chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum()
}

/// Folds a sum to 16 bits and complements it: zero when a checksum over
/// data that includes its checksum field is correct.
pub(crate) fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The checksum value that would have made the sum correct (tcpdump's
/// `in_cksum_shouldbe`).
pub(crate) fn should_be(field: u16, sum: u16) -> u16 {
    let mut s = u32::from(!field) + u32::from(!sum);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}
