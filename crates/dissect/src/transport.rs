//! TCP and UDP: ports, TCP flags, relative sequence numbers (tcpdump's
//! per-conversation bases), window, options, lengths and the `-v`
//! checksums. Payloads are not decoded.

use crate::checksum::{IpAddrs, fold, should_be, sum16};
use crate::cursor::{Out, R, u8_at, u16_at, u32_at};
use crate::{PrintOptions, Printer, SeqBase};

const FIN: u8 = 0x01;
const SYN: u8 = 0x02;
const RST: u8 = 0x04;
const ACK: u8 = 0x10;
const URG: u8 = 0x20;

fn flags_str(f: u8) -> String {
    let names = [
        (FIN, 'F'),
        (SYN, 'S'),
        (RST, 'R'),
        (0x08, 'P'),
        (ACK, '.'),
        (URG, 'U'),
        (0x40, 'E'),
        (0x80, 'W'),
    ];
    let s: String = names
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, c)| *c)
        .collect();
    if s.is_empty() { "none".into() } else { s }
}

/// The transport checksum over pseudo-header and segment: 0 if correct.
fn transport_sum(ips: &IpAddrs, proto: u8, seg: &[u8]) -> u16 {
    fold(ips.pseudo_sum(proto, seg.len() as u32) + sum16(seg))
}

pub(crate) fn tcp(
    p: &mut Out,
    pr: &mut Printer,
    b: &[u8],
    length: u32,
    ips: &IpAddrs,
    o: &PrintOptions,
    fragmented: bool,
) {
    p.proto = "tcp";
    let (src, dst) = (ips.src_str(), ips.dst_str());
    let (Ok(sport), Ok(dport)) = (u16_at(b, 0), u16_at(b, 2)) else {
        p.push(&format!("{src} > {dst}:"));
        p.truncated();
        return;
    };
    p.push(&format!("{src}.{sport} > {dst}.{dport}: "));
    if b.len() < 20 {
        p.truncated();
        return;
    }
    p.guard(|p| tcp_body(p, pr, b, length, ips, (sport, dport), o, fragmented));
}

#[allow(clippy::too_many_arguments)]
fn tcp_body(
    p: &mut Out,
    pr: &mut Printer,
    b: &[u8],
    length: u32,
    ips: &IpAddrs,
    (sport, dport): (u16, u16),
    o: &PrintOptions,
    fragmented: bool,
) -> R<()> {
    let hlen = u32::from(u8_at(b, 12)? >> 4) * 4;
    if hlen < 20 {
        p.push(&format!(
            "tcp {length} [bad hdr length {hlen} - too short, < 20]"
        ));
        return Ok(());
    }
    let mut seq = u32_at(b, 4)?;
    let mut ack = u32_at(b, 8)?;
    let flags = u8_at(b, 13)?;
    let win = u16_at(b, 14)?;
    let urp = u16_at(b, 18)?;
    p.push(&format!("Flags [{}]", flags_str(flags)));
    // tcpdump's conversation key: the side with the lower port first.
    let rev = sport > dport || (sport == dport && ips.src > ips.dst);
    let (mut thseq, mut thack) = (0, 0);
    if flags & ACK != 0 {
        let mut key = Vec::with_capacity(36);
        let (a, b2, pa, pb) = if rev {
            (ips.dst, ips.src, dport, sport)
        } else {
            (ips.src, ips.dst, sport, dport)
        };
        key.extend_from_slice(a);
        key.extend_from_slice(b2);
        key.extend_from_slice(&pa.to_be_bytes());
        key.extend_from_slice(&pb.to_be_bytes());
        let base = match pr.tcp_seqs.get(&key) {
            Some(base) if flags & SYN == 0 => {
                if rev {
                    seq = seq.wrapping_sub(base.ack);
                    ack = ack.wrapping_sub(base.seq);
                } else {
                    seq = seq.wrapping_sub(base.seq);
                    ack = ack.wrapping_sub(base.ack);
                }
                *base
            }
            _ => {
                let base = if rev {
                    SeqBase {
                        ack: seq,
                        seq: ack.wrapping_sub(1),
                    }
                } else {
                    SeqBase {
                        seq,
                        ack: ack.wrapping_sub(1),
                    }
                };
                pr.tcp_seqs.insert(key, base);
                base
            }
        };
        (thseq, thack) = (base.seq, base.ack);
    }
    if hlen > length {
        p.push(&format!(" [bad hdr length {hlen} - too long, > {length}]"));
        return Ok(());
    }
    if o.verbose > 0
        && !fragmented
        && let Some(seg) = b.get(..length as usize)
    {
        let field = u16_at(b, 16)?;
        let sum = transport_sum(ips, 6, seg);
        p.push(&format!(", cksum 0x{field:04x}"));
        if sum != 0 {
            p.push(&format!(" (incorrect -> 0x{:04x})", should_be(field, sum)));
        } else {
            p.push(" (correct)");
        }
    }
    let data_len = length - hlen;
    if o.verbose > 1 || data_len > 0 || flags & (SYN | FIN | RST) != 0 {
        p.push(&format!(", seq {seq}"));
        if data_len > 0 {
            p.push(&format!(":{}", seq.wrapping_add(data_len)));
        }
    }
    if flags & ACK != 0 {
        p.push(&format!(", ack {ack}"));
    }
    p.push(&format!(", win {win}"));
    if flags & URG != 0 {
        p.push(&format!(", urg {urp}"));
    }
    if hlen > 20 {
        let opts = b.get(20..).unwrap_or(&[]);
        if !options(p, opts, hlen as usize - 20, rev, thseq, thack)? {
            return Ok(());
        }
    }
    p.push(&format!(", length {data_len}"));
    Ok(())
}

fn option_name(opt: u8) -> String {
    match opt {
        0 => "eol".into(),
        1 => "nop".into(),
        2 => "mss".into(),
        3 => "wscale".into(),
        4 => "sackOK".into(),
        5 => "sack".into(),
        6 => "echo".into(),
        7 => "echoreply".into(),
        8 => "TS".into(),
        11 => "cc".into(),
        12 => "ccnew".into(),
        13 => String::new(),
        19 => "md5".into(),
        20 => "scps".into(),
        28 => "uto".into(),
        29 => "tcp-ao".into(),
        30 => "mptcp".into(),
        34 => "tfo".into(),
        254 => "exp".into(),
        _ => format!("unknown-{opt}"),
    }
}

/// Why the options list ended early (tcpdump's `bad` and `trunc`
/// labels): the line ends there, without `, length`.
enum OptEnd {
    /// An option longer than the header: `[bad opt]`.
    Bad,
    /// An option's data not captured: ` [|tcp]`.
    Trunc,
}

/// `, options [...]`; false when the list ended early and so does the
/// line. Reads of an option's kind and length end the packet as any
/// read does (`Err`).
fn options(p: &mut Out, b: &[u8], hlen: usize, rev: bool, thseq: u32, thack: u32) -> R<bool> {
    p.push(", options [");
    let mut started = false;
    match option_list(p, b, hlen, (rev, thseq, thack), &mut started)? {
        Ok(()) => {
            p.push("]");
            Ok(true)
        }
        Err(OptEnd::Bad) => {
            p.push("[bad opt]");
            if started {
                p.push("]");
            }
            Ok(false)
        }
        Err(OptEnd::Trunc) => {
            p.truncated();
            if started {
                p.push(">");
            }
            Ok(false)
        }
    }
}

fn option_list(
    p: &mut Out,
    b: &[u8],
    mut hlen: usize,
    (rev, thseq, thack): (bool, u32, u32),
    started: &mut bool,
) -> R<Result<(), OptEnd>> {
    let mut cp = 0;
    while hlen > 0 {
        if *started {
            p.push(",");
        }
        let opt = u8_at(b, cp)?;
        cp += 1;
        let len = if opt <= 1 {
            1
        } else {
            let l = usize::from(u8_at(b, cp)?);
            cp += 1;
            if l < 2 || l > hlen {
                return Ok(Err(OptEnd::Bad));
            }
            hlen -= 1;
            l
        };
        hlen -= 1;
        p.push(&option_name(opt));
        // tcpdump's LENCHECK: `need` bytes of data within the header and
        // captured.
        let check = |need: usize| -> Result<(), OptEnd> {
            if need > hlen {
                Err(OptEnd::Bad)
            } else if cp + need > b.len() {
                Err(OptEnd::Trunc)
            } else {
                Ok(())
            }
        };
        let datalen = match opt {
            0 | 1 | 4 => 0,
            2 => {
                if let Err(e) = check(2) {
                    return Ok(Err(e));
                }
                p.push(&format!(" {}", u16_at(b, cp)?));
                2
            }
            3 => {
                if let Err(e) = check(1) {
                    return Ok(Err(e));
                }
                p.push(&format!(" {}", u8_at(b, cp)?));
                1
            }
            5 => {
                let d = len - 2;
                if d % 8 != 0 {
                    p.push(" invalid sack");
                } else {
                    p.push(&format!(" {} ", d / 8));
                    let base = if rev { thseq } else { thack };
                    for i in (0..d).step_by(8) {
                        if let Err(e) = check(i + 4) {
                            return Ok(Err(e));
                        }
                        let s = u32_at(b, cp + i)?.wrapping_sub(base);
                        if let Err(e) = check(i + 8) {
                            return Ok(Err(e));
                        }
                        let e = u32_at(b, cp + i + 4)?.wrapping_sub(base);
                        p.push(&format!("{{{s}:{e}}}"));
                    }
                }
                d
            }
            6 | 7 | 11 | 12 | 13 => {
                if let Err(e) = check(4) {
                    return Ok(Err(e));
                }
                p.push(&format!(" {}", u32_at(b, cp)?));
                4
            }
            8 => {
                if let Err(e) = check(8) {
                    return Ok(Err(e));
                }
                p.push(&format!(
                    " val {} ecr {}",
                    u32_at(b, cp)?,
                    u32_at(b, cp + 4)?
                ));
                8
            }
            254 => {
                let d = len - 2;
                if let Err(e) = check(d) {
                    return Ok(Err(e));
                }
                if d < 2 {
                    return Ok(Err(OptEnd::Bad));
                }
                p.push(&format!("-{:04x}", u16_at(b, cp)?));
                d
            }
            _ => {
                let d = len - 2;
                if d > 0 {
                    p.push(" 0x");
                }
                for i in 0..d {
                    if let Err(e) = check(i + 1) {
                        return Ok(Err(e));
                    }
                    p.push(&format!("{:02x}", u8_at(b, cp + i)?));
                }
                d
            }
        };
        cp += datalen;
        hlen -= datalen.min(hlen);
        let expected = datalen + if opt <= 1 { 1 } else { 2 };
        if expected != len {
            p.push(&format!("[len {len}]"));
        }
        *started = true;
        if opt == 0 {
            break;
        }
    }
    Ok(Ok(()))
}

pub(crate) fn udp(
    p: &mut Out,
    b: &[u8],
    length: u32,
    ips: &IpAddrs,
    o: &PrintOptions,
    fragmented: bool,
) {
    p.proto = "udp";
    let (src, dst) = (ips.src_str(), ips.dst_str());
    let (Ok(sport), Ok(dport)) = (u16_at(b, 0), u16_at(b, 2)) else {
        p.push(&format!("{src} > {dst}:"));
        p.truncated();
        return;
    };
    let addrs = format!("{src}.{sport} > {dst}.{dport}: ");
    if length < 8 {
        p.push(&format!("{addrs}truncated-udp {length}"));
        return;
    }
    let Ok(ulen) = u16_at(b, 4) else {
        p.push(&addrs);
        p.truncated();
        return;
    };
    let ulen = u32::from(ulen);
    if ulen < 8 {
        p.push(&format!("{addrs}truncated-udplength {ulen}"));
        return;
    }
    let ulen = ulen - 8;
    p.push(&addrs);
    if ulen > length - 8 {
        p.push(&format!("UDP, bad length {ulen} > {}", length - 8));
        return;
    }
    let length = ulen;
    if o.verbose > 0
        && !fragmented
        && let Ok(field) = u16_at(b, 6)
    {
        let v4_checked = !ips.v6 && o.verbose > 1;
        if v4_checked && field == 0 {
            p.push("[no cksum] ");
        } else if (v4_checked || ips.v6) && b.len() >= 8 + length as usize {
            let sum = transport_sum(ips, 17, &b[..8 + length as usize]);
            if sum != 0 {
                p.push(&format!(
                    "[bad udp cksum 0x{field:04x} -> 0x{:04x}!] ",
                    should_be(field, sum)
                ));
            } else {
                p.push("[udp sum ok] ");
            }
        }
    }
    p.push(&format!("UDP, length {ulen}"));
}
