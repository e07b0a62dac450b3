//! IPv4 and IPv6: the `IP`/`IP6` word, the `-v` header in parentheses,
//! truncation notes, and the hand-over to TCP, UDP, ICMP and ICMPv6.

use crate::checksum::{IpAddrs, fold, should_be, sum16};
use crate::cursor::{Out, Truncated, bytes_at, u8_at, u16_at};
use crate::{PrintOptions, Printer, icmp, ipopt, transport};

pub(crate) fn proto_name(p: u8) -> &'static str {
    match p {
        1 => "ICMP",
        2 => "IGMP",
        4 => "IPIP",
        6 => "TCP",
        17 => "UDP",
        41 => "IPv6",
        47 => "GRE",
        50 => "ESP",
        51 => "AH",
        58 => "ICMPv6",
        89 => "OSPF",
        103 => "PIM",
        112 => "VRRP",
        132 => "SCTP",
        _ => "unknown",
    }
}

/// Prints an IPv4 packet; `length` is the bytes the link layer says follow.
pub(crate) fn ipv4(
    p: &mut Out,
    pr: &mut Printer,
    b: &[u8],
    length: u32,
    o: &PrintOptions,
    word: bool,
) {
    p.proto = "ip";
    if !o.link && word {
        p.push("IP ");
    }
    if b.len() < 20 {
        p.truncated();
        return;
    }
    p.guard(|p| {
        let vhl = u8_at(b, 0)?;
        let hlen = usize::from(vhl & 0xf) * 4;
        if vhl >> 4 != 4 {
            p.push(&format!("IP{} ", vhl >> 4));
            return Ok(());
        }
        if hlen < 20 {
            p.push(&format!("[hlen {hlen} < 20]"));
            return Ok(());
        }
        let len = u32::from(u16_at(b, 2)?);
        if len < hlen as u32 {
            p.push(&format!("[total length {len} < header length {hlen}]"));
            return Ok(());
        }
        if length < len {
            p.push(&format!("truncated-ip - {} bytes missing! ", len - length));
        }
        let tos = u8_at(b, 1)?;
        let id = u16_at(b, 4)?;
        let off = u16_at(b, 6)?;
        let ttl = u8_at(b, 8)?;
        let proto = u8_at(b, 9)?;
        let src = bytes_at(b, 12, 4)?;
        let dst = bytes_at(b, 16, 4)?;
        let mut cut = false;
        if o.verbose > 0 {
            p.push(&format!("(tos 0x{tos:x}"));
            match tos & 3 {
                1 => p.push(",ECT(1)"),
                2 => p.push(",ECT(0)"),
                3 => p.push(",CE"),
                _ => {}
            }
            if ttl >= 1 {
                p.push(&format!(", ttl {ttl}"));
            }
            let mut flags = Vec::new();
            if off & 0x2000 != 0 {
                flags.push("+");
            }
            if off & 0x4000 != 0 {
                flags.push("DF");
            }
            if off & 0x8000 != 0 {
                flags.push("rsvd");
            }
            let flags = if flags.is_empty() {
                "none".to_string()
            } else {
                flags.join(", ")
            };
            p.push(&format!(
                ", id {id}, offset {}, flags [{flags}], proto {} ({proto}), length {len}",
                (off & 0x1fff) * 8,
                proto_name(proto)
            ));
            if hlen > 20 {
                p.push(", options (");
                let mut text = String::new();
                let captured = &b[20..hlen.min(b.len())];
                cut = ipopt::print(&mut text, captured, hlen - 20).is_err();
                p.push(&text);
                if cut {
                    p.push(" [truncated-option]");
                }
                p.push(")");
            }
            if let Ok(h) = bytes_at(b, 0, hlen) {
                let sum = fold(sum16(h));
                if sum != 0 {
                    let field = u16_at(b, 10)?;
                    p.push(&format!(
                        ", bad cksum {field:x} (->{:x})!",
                        should_be(field, sum)
                    ));
                }
            }
            p.push(")\n    ");
            if cut {
                let ips = IpAddrs {
                    src,
                    dst,
                    v6: false,
                };
                p.push(&format!("{} > {}: ", ips.src_str(), ips.dst_str()));
                p.truncated();
                return Ok(());
            }
        }
        // Bytes past the IP length are link padding, not payload.
        let end = (len as usize).min(b.len());
        let payload = b.get(hlen..end).unwrap_or(&[]);
        let plen = len - hlen as u32;
        let ips = IpAddrs {
            src,
            dst,
            v6: false,
        };
        let fragmented = off & 0x3fff != 0;
        if off & 0x1fff != 0 {
            p.push(&format!(
                "{} > {}: ip-proto-{proto}",
                ips.src_str(),
                ips.dst_str()
            ));
            return Ok(());
        }
        if b.len() < hlen {
            if proto != 6 && proto != 17 {
                p.push(&format!("{} > {}: ", ips.src_str(), ips.dst_str()));
            }
            p.push(&format!(
                " [remaining caplen({}) < header length({hlen})]",
                b.len()
            ));
            return Err(Truncated);
        }
        next(p, pr, proto, payload, plen, &ips, o, fragmented);
        Ok(())
    });
}

/// Hands a payload to the printer of its protocol.
#[allow(clippy::too_many_arguments)]
fn next(
    p: &mut Out,
    pr: &mut Printer,
    proto: u8,
    payload: &[u8],
    plen: u32,
    ips: &IpAddrs,
    o: &PrintOptions,
    fragmented: bool,
) {
    if proto != 6 && proto != 17 {
        p.push(&format!("{} > {}: ", ips.src_str(), ips.dst_str()));
    }
    match proto {
        6 => transport::tcp(p, pr, payload, plen, ips, o, fragmented),
        17 => transport::udp(p, payload, plen, ips, o, fragmented),
        1 if !ips.v6 => {
            if let Some(q) = icmp::icmp(p, payload, plen, o, fragmented) {
                ipv4(p, pr, q.bytes, q.length, o, true);
            }
        }
        58 => icmp::icmp6(p, payload, plen, ips, o, fragmented),
        _ => p.push(&format!(" ip-proto-{proto} {plen}")),
    }
}

/// Prints an IPv6 packet.
pub(crate) fn ipv6(p: &mut Out, pr: &mut Printer, b: &[u8], length: u32, o: &PrintOptions) {
    p.proto = "ip6";
    if !o.link {
        p.push("IP6 ");
    }
    if b.len() < 40 {
        p.truncated();
        return;
    }
    p.guard(|p| {
        let v = u8_at(b, 0)? >> 4;
        if v != 6 {
            p.push(&format!("version error: {v} != 6"));
            return Ok(());
        }
        let flow = u32::from_be_bytes(bytes_at(b, 0, 4)?.try_into().unwrap_or([0; 4]));
        let plen = u32::from(u16_at(b, 4)?);
        let mut nh = u8_at(b, 6)?;
        let hlim = u8_at(b, 7)?;
        let src = bytes_at(b, 8, 16)?;
        let dst = bytes_at(b, 24, 16)?;
        if plen + 40 > length {
            p.push(&format!(
                "truncated-ip6 - {} bytes missing!",
                plen + 40 - length
            ));
        }
        if o.verbose > 0 {
            p.push("(");
            if flow & 0x0ff0_0000 != 0 {
                p.push(&format!("class 0x{:02x}, ", (flow & 0x0ff0_0000) >> 20));
            }
            if flow & 0x000f_ffff != 0 {
                p.push(&format!("flowlabel 0x{:05x}, ", flow & 0x000f_ffff));
            }
            p.push(&format!(
                "hlim {hlim}, next-header {} ({nh}) payload length: {plen}) ",
                proto_name(nh)
            ));
        }
        let ips = IpAddrs { src, dst, v6: true };
        let end = (40 + plen as usize).min(b.len());
        let mut off = 40;
        let mut left = plen;
        if nh == 0 {
            // Hop-by-hop options: named, then skipped.
            p.push(&format!("{} > {}: HBH ", ips.src_str(), ips.dst_str()));
            let next_hdr = u8_at(b, off)?;
            let hl = (usize::from(u8_at(b, off + 1)?) + 1) * 8;
            off += hl;
            left = left.saturating_sub(hl as u32);
            nh = next_hdr;
            if nh == 6 || nh == 17 {
                // The transport prints its addresses itself.
            } else {
                let payload = b.get(off..end).unwrap_or(&[]);
                match nh {
                    58 => icmp::icmp6(p, payload, left, &ips, o, false),
                    _ => p.push(&format!("ip-proto-{nh} {left}")),
                }
                return Ok(());
            }
        }
        let payload = b.get(off..end.max(off)).unwrap_or(&[]);
        next(p, pr, nh, payload, left, &ips, o, false);
        Ok(())
    });
}
