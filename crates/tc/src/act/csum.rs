//! `csum`: the kernel's `act_csum.c`, recomputing checksums in the frame:
//! the IPv4 header's (`ip4h`), and ICMP, IGMP, TCP and UDP over IPv4 and
//! IPv6 (ICMPv6, with the pseudo header). A packet whose headers do not
//! fit (shorter than its IP length says) is dropped. UDP over IPv4 with
//! no checksum keeps none; a fragment after the first has only its IPv4
//! header done. Default control: `pass`.

use serde_json::{Value, json};

use super::{ActionHead, ActionStats, control_at, control_json, csum_add, csum_fold};
use crate::control::Control;
use crate::error::TcError;
use crate::skb::Skb;

pub const IP4H: u8 = 1;
pub const ICMP: u8 = 2;
pub const IGMP: u8 = 4;
pub const TCP: u8 = 8;
pub const UDP: u8 = 16;

/// Which checksums (a set of the flags above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Csum {
    pub flags: u8,
}

fn be16(d: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([d[at], d[at + 1]])
}

/// The checksum at `at + off_check` of the bytes `at..end`, with `pseudo`
/// (a partial sum) added; `udp` turns a 0 into 0xffff.
fn fill(d: &mut [u8], at: usize, end: usize, off_check: usize, pseudo: u32, udp: bool) {
    d[at + off_check..at + off_check + 2].fill(0);
    let mut c = csum_fold(csum_add(pseudo, &d[at..end]));
    if udp && c == 0 {
        c = 0xffff;
    }
    d[at + off_check..at + off_check + 2].copy_from_slice(&c.to_be_bytes());
}

impl Csum {
    /// `tcf_csum_act`.
    pub fn act(&self, skb: &mut Skb, control: Control, stats: &mut ActionStats) -> Control {
        // Tags the kernel would pull past (the outer one is already off).
        let (mut n, mut proto) = (skb.network, skb.protocol);
        while matches!(proto, 0x8100 | 0x88a8) && skb.data.len() >= n + 4 {
            proto = be16(&skb.data, n + 2);
            n += 4;
        }
        let ok = match proto {
            0x0800 => self.ipv4(&mut skb.data, n),
            0x86dd => self.ipv6(&mut skb.data, n),
            _ => true,
        };
        if ok {
            control
        } else {
            stats.drops += 1;
            Control::SHOT
        }
    }

    fn ipv4(&self, d: &mut [u8], n: usize) -> bool {
        if d.len() < n + 20 {
            return false;
        }
        let ihl = usize::from(d[n] & 0xf) * 4;
        let ipl = usize::from(be16(d, n + 2));
        let proto = if be16(d, n + 6) & 0x1fff != 0 {
            0
        } else {
            d[n + 9]
        };
        // `tcf_csum_skb_nextlayer`: the whole IP length there, and room
        // for the header.
        let fits = |jhl: usize| n + ipl <= d.len() && ipl >= ihl + jhl;
        let pseudo =
            |d: &[u8], len: usize| csum_add(0, &d[n + 12..n + 20]) + u32::from(proto) + len as u32;
        let (at, end) = (n + ihl, n + ipl);
        match proto {
            1 | 2 if self.flags & if proto == 1 { ICMP } else { IGMP } != 0 => {
                if !fits(if proto == 1 { 4 } else { 8 }) {
                    return false;
                }
                fill(d, at, end, 2, 0, false);
            }
            6 if self.flags & TCP != 0 => {
                if !fits(20) {
                    return false;
                }
                let p = pseudo(d, ipl - ihl);
                fill(d, at, end, 16, p, false);
            }
            17 if self.flags & UDP != 0 => {
                if !fits(8) {
                    return false;
                }
                let ul = usize::from(be16(d, at + 4));
                if be16(d, at + 6) != 0 {
                    d[at + 6..at + 8].fill(0);
                    if ul == ipl - ihl && ul >= 8 {
                        let p = pseudo(d, ul);
                        fill(d, at, at + ul, 6, p, true);
                    }
                }
            }
            _ => {}
        }
        if self.flags & IP4H != 0 {
            if ihl < 20 || d.len() < n + ihl {
                return false;
            }
            fill(d, n, n + ihl, 10, 0, false);
        }
        true
    }

    fn ipv6(&self, d: &mut [u8], n: usize) -> bool {
        if d.len() < n + 40 {
            return false;
        }
        let ipl = usize::from(be16(d, n + 4)) + 40;
        let mut next = d[n + 6];
        let mut hl = 40;
        loop {
            match next {
                // Hop-by-hop, routing, destination options: step over.
                0 | 43 | 60 => {
                    if d.len() < n + hl + 2 {
                        return false;
                    }
                    let xl = (usize::from(d[n + hl + 1]) + 1) * 8;
                    if d.len() < n + hl + xl {
                        return false;
                    }
                    next = d[n + hl];
                    hl += xl;
                }
                58 | 6 | 17 => {
                    let (flag, jhl, check) = match next {
                        58 => (ICMP, 4, 2),
                        6 => (TCP, 20, 16),
                        _ => (UDP, 8, 6),
                    };
                    if self.flags & flag == 0 {
                        return true;
                    }
                    if n + ipl > d.len() || ipl < hl + jhl {
                        return false;
                    }
                    let (at, mut end) = (n + hl, n + ipl);
                    let mut len = ipl - hl;
                    if next == 17 {
                        let ul = usize::from(be16(d, at + 4));
                        d[at + 6..at + 8].fill(0);
                        if ul != len {
                            return true;
                        }
                        (len, end) = (ul, at + ul);
                    }
                    let pseudo = csum_add(0, &d[n + 8..n + 40])
                        + (len as u32 >> 16)
                        + (len as u32 & 0xffff)
                        + u32::from(next);
                    fill(d, at, end, check, pseudo, next == 17);
                    return true;
                }
                // Fragments and anything else: left alone.
                _ => return true,
            }
            if d.len() < n + hl + 1 {
                return true;
            }
        }
    }
}

/// `csum TARGET [and|or|+ TARGET]...` (`words[0]` is `csum`).
pub fn parse(words: &[&str]) -> Result<(Csum, Control, usize), TcError> {
    let mut flags = 0;
    let mut i = 1;
    while let Some(&w) = words.get(i) {
        flags |= match w {
            "iph" | "ip4h" | "ipv4h" => IP4H,
            "icmp" => ICMP,
            "igmp" => IGMP,
            "tcp" => TCP,
            "udp" => UDP,
            "udplite" | "sctp" => {
                return Err(format!(
                    "csum {w}: sluice does not compute {w} checksums (ip4h, icmp, igmp, tcp \
                     and udp are done)"
                )
                .into());
            }
            "and" | "or" | "+" => 0,
            _ => break,
        };
        i += 1;
    }
    if flags == 0 {
        return Err(match words.get(i) {
            Some(w) => TcError::Syntax(format!("Illegal csum construct ({w})")),
            None => "Illegal csum construct, empty <UPDATE> list".into(),
        });
    }
    let (control, i) = control_at(words, i, Control::OK);
    Ok((Csum { flags }, control, i))
}

fn names(c: &Csum) -> String {
    let all = [
        (IP4H, "iph"),
        (ICMP, "icmp"),
        (IGMP, "igmp"),
        (TCP, "tcp"),
        (UDP, "udp"),
    ];
    let v: Vec<&str> = all
        .iter()
        .filter(|(f, _)| c.flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "?empty".into()
    } else {
        v.join(", ")
    }
}

/// The text after `action order N: ` (`print_csum`).
pub fn text(a: ActionHead, c: &Csum) -> String {
    format!(
        "csum ({}) action {}\n\tindex {} ref {} bind {}",
        names(c),
        a.control.name(),
        a.index,
        a.refs,
        a.binds
    )
}

/// Its `tc -j` fields.
pub fn json(a: ActionHead, c: &Csum, o: &mut Value) {
    o["csum"] = json!(names(c));
    o["control_action"] = control_json(a.control);
    o["index"] = json!(a.index);
    o["ref"] = json!(a.refs);
    o["bind"] = json!(a.binds);
}
