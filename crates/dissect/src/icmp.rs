//! ICMP (echo, unreachable, time exceeded) and ICMPv6 (echo, router and
//! neighbour solicitation and advertisement), with the `-v` checksum. An
//! ICMP error quotes the datagram that caused it: this module hands it back
//! ([`Quoted`]) and the IP printer prints it, so the recursion (IP in ICMP
//! in IP) lives in `ip.rs` alone.

use crate::checksum::{IpAddrs, fold, should_be, sum16};
use crate::cursor::{Out, R, bytes_at, u8_at, u16_at};
use crate::{PrintOptions, addr};

/// The datagram an ICMP error quotes (its bytes and the length its IPv4
/// header gives), for the IP printer to print on the next line (`-v`).
pub(crate) struct Quoted<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) length: u32,
}

/// Prints an ICMP message; with `-v`, an error's quoted datagram is
/// returned for the caller to print after it.
pub(crate) fn icmp<'a>(
    p: &mut Out,
    b: &'a [u8],
    length: u32,
    o: &PrintOptions,
    fragmented: bool,
) -> Option<Quoted<'a>> {
    p.proto = "icmp";
    let mut quoted = None;
    p.guard(|p| {
        let ty = u8_at(b, 0)?;
        let code = u8_at(b, 1)?;
        p.push("ICMP ");
        match ty {
            0 | 8 => {
                let id = u16_at(b, 4)?;
                let seq = u16_at(b, 6)?;
                let what = if ty == 8 { "request" } else { "reply" };
                p.push(&format!("echo {what}, id {id}, seq {seq}"));
            }
            3 => unreachable(p, b, code)?,
            11 => match code {
                0 => p.push("time exceeded in-transit"),
                1 => p.push("ip reassembly time exceeded"),
                _ => p.push(&format!("time exceeded-#{code}")),
            },
            _ => p.push(&format!("type-#{ty}")),
        }
        p.push(&format!(", length {length}"));
        if o.verbose > 0
            && !fragmented
            && let Some(msg) = b.get(..length as usize)
        {
            let sum = fold(sum16(msg));
            if sum != 0 {
                let field = u16_at(b, 2)?;
                p.push(&format!(
                    " (wrong icmp cksum {field:x} (->{:x})!)",
                    should_be(field, sum)
                ));
            }
        }
        if o.verbose > 0 && matches!(ty, 3 | 4 | 5 | 11 | 12) {
            // Errors quote the datagram that caused them: -v prints it.
            let inner = b.get(8..).unwrap_or(&[]);
            let inner_len = u32::from(u16_at(inner, 2)?);
            p.push("\n\t");
            quoted = Some(Quoted {
                bytes: inner,
                length: inner_len,
            });
        }
        Ok(())
    });
    quoted
}

fn unreachable(p: &mut Out, b: &[u8], code: u8) -> R<()> {
    let inner = 8;
    let dst = addr::ipv4(bytes_at(b, inner + 16, 4)?);
    let text = match code {
        0 => format!("net {dst} unreachable"),
        1 => format!("host {dst} unreachable"),
        2 => format!("{dst} protocol {} unreachable", u8_at(b, inner + 9)?),
        3 => {
            let hlen = usize::from(u8_at(b, inner)? & 0xf) * 4;
            let proto = u8_at(b, inner + 9)?;
            let dport = u16_at(b, inner + hlen + 2)?;
            match proto {
                6 => format!("{dst} tcp port {dport} unreachable"),
                17 => format!("{dst} udp port {dport} unreachable"),
                _ => format!("{dst} protocol {proto} port {dport} unreachable"),
            }
        }
        4 => {
            let mtu = u16_at(b, 6)?;
            if mtu != 0 {
                format!("{dst} unreachable - need to frag (mtu {mtu})")
            } else {
                format!("{dst} unreachable - need to frag")
            }
        }
        5 => format!("{dst} unreachable - source route failed"),
        6 => format!("net {dst} unreachable - unknown"),
        7 => format!("host {dst} unreachable - unknown"),
        8 => format!("{dst} unreachable - source host isolated"),
        9 => format!("net {dst} unreachable - admin prohibited"),
        10 => format!("host {dst} unreachable - admin prohibited"),
        11 => format!("net {dst} unreachable - tos prohibited"),
        12 => format!("host {dst} unreachable - tos prohibited"),
        13 => format!("host {dst} unreachable - admin prohibited filter"),
        14 => format!("host {dst} unreachable - host precedence violation"),
        15 => format!("host {dst} unreachable - precedence cutoff"),
        _ => format!("#{code} {dst} unreachable"),
    };
    p.push(&text);
    Ok(())
}

pub(crate) fn icmp6(
    p: &mut Out,
    b: &[u8],
    length: u32,
    ips: &IpAddrs,
    o: &PrintOptions,
    fragmented: bool,
) {
    p.proto = "icmp6";
    p.guard(|p| {
        if length == 0 {
            p.push("ICMP6, length 0 (invalid)");
            return Ok(());
        }
        let ty = u8_at(b, 0)?;
        if o.verbose > 0
            && !fragmented
            && let Some(msg) = b.get(..length as usize)
        {
            let sum = fold(ips.pseudo_sum(58, length) + sum16(msg));
            let field = u16_at(b, 2)?;
            if sum != 0 {
                p.push(&format!(
                    "[bad icmp6 cksum 0x{field:04x} -> 0x{:04x}!] ",
                    should_be(field, sum)
                ));
            } else {
                p.push("[icmp6 sum ok] ");
            }
        }
        p.push("ICMP6, ");
        let nd = matches!(ty, 133..=137);
        p.push(&icmp6_name(ty));
        if o.verbose > 0 && nd {
            p.push(&format!(", length {length}"));
        }
        match ty {
            128 | 129 => p.push(&format!(", id {}, seq {}", u16_at(b, 4)?, u16_at(b, 6)?)),
            135 => p.push(&format!(", who has {}", addr::ipv6(bytes_at(b, 8, 16)?))),
            136 => p.push(&format!(", tgt is {}", addr::ipv6(bytes_at(b, 8, 16)?))),
            _ => {}
        }
        // With -v tcpdump prints the length early, and only for ND.
        if o.verbose == 0 {
            p.push(&format!(", length {length}"));
        }
        Ok(())
    });
}

fn icmp6_name(ty: u8) -> String {
    match ty {
        128 => "echo request".into(),
        129 => "echo reply".into(),
        133 => "router solicitation".into(),
        134 => "router advertisement".into(),
        135 => "neighbor solicitation".into(),
        136 => "neighbor advertisement".into(),
        137 => "redirect".into(),
        _ => format!("unknown icmp6 type ({ty})"),
    }
}
