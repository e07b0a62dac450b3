//! The link layer: Ethernet (with `-e` its addresses, ethertype and
//! length), 802.1Q tags, and ARP requests and replies.

use crate::cursor::{Out, bytes_at, u8_at, u16_at};
use crate::{PrintOptions, Printer, addr, ip};

pub(crate) const ETHERTYPE_IPV4: u16 = 0x0800;
pub(crate) const ETHERTYPE_ARP: u16 = 0x0806;
pub(crate) const ETHERTYPE_VLAN: u16 = 0x8100;
pub(crate) const ETHERTYPE_IPV6: u16 = 0x86dd;

fn ethertype_name(t: u16) -> &'static str {
    match t {
        ETHERTYPE_IPV4 => "IPv4",
        ETHERTYPE_ARP => "ARP",
        ETHERTYPE_VLAN => "802.1Q",
        ETHERTYPE_IPV6 => "IPv6",
        0x88a8 => "802.1Q-QinQ",
        0x9100 => "802.1Q-9100",
        0x8035 => "Reverse ARP",
        0x8847 => "MPLS unicast",
        0x88cc => "LLDP",
        _ => "Unknown",
    }
}

/// Prints an Ethernet frame; returns the link header's length (the dumps
/// start after it).
pub(crate) fn ether(
    p: &mut Out,
    pr: &mut Printer,
    f: &[u8],
    wire_len: u32,
    o: &PrintOptions,
) -> usize {
    p.proto = "ether";
    if f.len() < 14 {
        p.truncated();
        return f.len();
    }
    let mut ty = u16::from_be_bytes([f[12], f[13]]);
    if o.link {
        p.push(&format!(
            "{} > {}, ",
            addr::mac(&f[6..12]),
            addr::mac(&f[0..6])
        ));
        if ty <= 1500 {
            p.push(&format!("802.3, length {wire_len}: "));
        } else {
            p.push(&format!(
                "ethertype {} (0x{ty:04x}), length {wire_len}: ",
                ethertype_name(ty)
            ));
        }
    }
    let mut off = 14;
    let mut rest_len = wire_len.saturating_sub(14);
    while ty == ETHERTYPE_VLAN || ty == 0x88a8 || ty == 0x9100 {
        p.proto = "vlan";
        let (Ok(tag), Ok(inner)) = (u16_at(f, off), u16_at(f, off + 2)) else {
            p.truncated();
            p.ran_off = true;
            return f.len();
        };
        if o.link {
            let dei = if tag & 0x1000 != 0 { ", DEI" } else { "" };
            p.push(&format!("vlan {}, p {}{dei}, ", tag & 0xfff, tag >> 13));
        }
        off += 4;
        rest_len = rest_len.saturating_sub(4);
        ty = inner;
        if ty <= 1500 {
            p.push(&format!("LLC, length {rest_len}: "));
            return off;
        }
        if o.link {
            p.push(&format!("ethertype {} (0x{ty:04x}), ", ethertype_name(ty)));
        }
    }
    let payload = &f[off..];
    match ty {
        ETHERTYPE_IPV4 => ip::ipv4(p, pr, payload, rest_len, o, true),
        ETHERTYPE_IPV6 => ip::ipv6(p, pr, payload, rest_len, o),
        ETHERTYPE_ARP => arp(p, payload, rest_len, o),
        _ if o.link => {}
        _ if ty <= 1500 => p.push(&format!("802.3, length {wire_len}: ")),
        _ => p.push(&format!(
            "ethertype {} (0x{ty:04x}), length {wire_len}: ",
            ethertype_name(ty)
        )),
    }
    off
}

fn arp(p: &mut Out, b: &[u8], length: u32, o: &PrintOptions) {
    p.proto = "arp";
    if !o.link {
        p.push("ARP, ");
    }
    p.guard(|p| {
        let hrd = u16_at(b, 0)?;
        let pro = u16_at(b, 2)?;
        let hln = u8_at(b, 4)? as usize;
        let pln = u8_at(b, 5)? as usize;
        let op = u16_at(b, 6)?;
        if hrd != 1 || pro != ETHERTYPE_IPV4 || hln != 6 || pln != 4 {
            p.push(&format!(
                "hardware 0x{hrd:04x}, protocol 0x{pro:04x}, length {length}"
            ));
            return Ok(());
        }
        if o.verbose > 0 {
            p.push(&format!("Ethernet (len {hln}), IPv4 (len {pln}), "));
        }
        let sha = bytes_at(b, 8, 6)?;
        let spa = addr::ipv4(bytes_at(b, 14, 4)?);
        let tha = bytes_at(b, 18, 6)?;
        let tpa = addr::ipv4(bytes_at(b, 24, 4)?);
        match op {
            1 => {
                p.push(&format!("Request who-has {tpa}"));
                if tha.iter().any(|&x| x != 0) {
                    p.push(&format!(" ({})", addr::mac(tha)));
                }
                p.push(&format!(" tell {spa}"));
            }
            2 => p.push(&format!("Reply {spa} is-at {}", addr::mac(sha))),
            _ => p.push(&format!("Unknown ({op})")),
        }
        p.push(&format!(", length {length}"));
        Ok(())
    });
}
