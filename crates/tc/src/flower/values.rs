//! Values as iproute2 reads them: `strtoul` numbers in tc's bases, MAC
//! addresses with a prefix length or mask, IPv4/IPv6 prefixes (`get_prefix`,
//! an IPv4 mask must be contiguous), `VALUE[/MASK]` bytes.

use std::net::Ipv6Addr;

use crate::error::TcError;

pub(super) use crate::argv::{matches, strtoul as num};

/// A value and its mask.
pub type Masked<T> = (T, T);

pub(super) fn get_u8(s: &str, base: u32) -> Option<u8> {
    num(s, base).and_then(|v| u8::try_from(v).ok())
}

pub(super) fn get_u16(s: &str, base: u32) -> Option<u16> {
    num(s, base).and_then(|v| u16::try_from(v).ok())
}

pub(super) fn get_u32(s: &str, base: u32) -> Option<u32> {
    num(s, base).and_then(|v| u32::try_from(v).ok())
}

/// `ll_addr_a2n` for a MAC address: six hexadecimal bytes joined by `:`.
pub(super) fn mac(s: &str) -> Option<[u8; 6]> {
    let parts: Vec<&str> = s.split(':').collect();
    if parts.len() != 6 {
        return None;
    }
    let mut out = [0u8; 6];
    for (o, p) in out.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 2 {
            return None;
        }
        *o = u8::from_str_radix(p, 16).ok()?;
    }
    Some(out)
}

/// `flower_parse_eth_addr`: `MAC`, `MAC/BITS` or `MAC/MASK`.
pub(super) fn masked_mac(s: &str) -> Result<Masked<[u8; 6]>, TcError> {
    let bad = || TcError::Syntax(format!("\"{s}\" is invalid lladdr"));
    let (a, m) = match s.split_once('/') {
        Some((a, m)) => (a, Some(m)),
        None => (s, None),
    };
    let addr = mac(a).ok_or_else(bad)?;
    let mask = match m {
        None => [0xff; 6],
        Some(m) => match num(m, 10) {
            Some(bits) if bits <= 48 => {
                let v: u64 = if bits == 0 {
                    0
                } else {
                    0xffff_ffff_ffff_u64 << (48 - bits) & 0xffff_ffff_ffff
                };
                let b = v.to_be_bytes();
                [b[2], b[3], b[4], b[5], b[6], b[7]]
            }
            Some(_) => return Err(bad()),
            None => mac(m).ok_or_else(bad)?,
        },
    };
    Ok((addr, mask))
}

/// iproute2's `get_addr_ipv4`: one to four decimal parts (missing ones 0).
pub(super) fn ipv4(s: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (o, p) in out.iter_mut().zip(parts) {
        if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse().ok()?;
    }
    Some(out)
}

/// A prefix's bit count into a mask of `len` bytes.
pub(super) fn prefix_mask<const N: usize>(bits: u32) -> [u8; N] {
    let mut m = [0u8; N];
    for (i, b) in m.iter_mut().enumerate() {
        let lo = (i as u32) * 8;
        *b = if bits >= lo + 8 {
            0xff
        } else if bits > lo {
            0xff << (8 - (bits - lo))
        } else {
            0
        };
    }
    m
}

/// The length of a contiguous mask, if it is one.
pub(super) fn mask_bits(m: &[u8]) -> Option<u32> {
    let mut bits = 0;
    let mut hole = false;
    for &b in m {
        for j in (0..8).rev() {
            if b >> j & 1 == 1 {
                if hole {
                    return None;
                }
                bits += 1;
            } else {
                hole = true;
            }
        }
    }
    Some(bits)
}

/// `get_prefix` for IPv4: `A.B.C.D[/LEN|/MASK]`.
pub(super) fn prefix4(s: &str) -> Result<Masked<[u8; 4]>, TcError> {
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let addr = ipv4(a).ok_or_else(|| format!("\"{a}\" is not an IPv4 address"))?;
    let bits = match l {
        None => 32,
        Some(l) => match num(l, 0) {
            Some(b) if b <= 32 => b as u32,
            Some(_) => return Err(format!("\"{l}\": a prefix length of at most 32").into()),
            None => ipv4(l)
                .and_then(|m| mask_bits(&m))
                .ok_or_else(|| format!("\"{l}\" is not a prefix length nor a contiguous mask"))?,
        },
    };
    Ok((addr, prefix_mask(bits)))
}

/// `get_prefix` for IPv6: `ADDR[/LEN]`.
pub(super) fn prefix6(s: &str) -> Result<Masked<[u8; 16]>, TcError> {
    let (a, l) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (s, None),
    };
    let addr: Ipv6Addr = a
        .parse()
        .map_err(|_| format!("\"{a}\" is not an IPv6 address"))?;
    let bits = match l {
        None => 128,
        Some(l) => match num(l, 0) {
            Some(b) if b <= 128 => b as u32,
            _ => return Err(format!("\"{l}\": a prefix length of at most 128").into()),
        },
    };
    Ok((addr.octets(), prefix_mask(bits)))
}

pub(super) fn arp_op_name(s: &str) -> Option<u8> {
    match s {
        "request" => Some(1),
        "reply" => Some(2),
        _ => None,
    }
}

/// `flower_parse_u8`: `VALUE[/MASK]`, decimal, the value maybe by name.
pub(super) fn masked_u8(s: &str, name: Option<fn(&str) -> Option<u8>>) -> Option<Masked<u8>> {
    let (v, m) = match s.split_once('/') {
        Some((v, m)) => (v, Some(m)),
        None => (s, None),
    };
    let v = name.and_then(|f| f(v)).or_else(|| get_u8(v, 10))?;
    let m = match m {
        Some(m) => get_u8(m, 10)?,
        None => 0xff,
    };
    Some((v, m))
}
