//! `pedit`: the kernel's `act_pedit.c`, a list of 32-bit keys, each
//! `word = (word & mask) ^ val` (set) or `(word & mask) ^ ((word + val) &
//! ~mask)` (add: the kernel adds the words as the CPU reads them, here a
//! little-endian one's, so a carry runs toward the next byte in memory)
//! at an offset from a header: the network header, or with `ex` the
//! Ethernet, IPv4, IPv6, TCP or UDP header (the transport header found
//! from the IP header's length, as the kernel does since 6.4). `at A
//! offmask M shift S` adds `(byte at A & M) >> S` to the offset. A key
//! that falls outside the packet counts an overlimit and ends the keys.
//! Checksums are left as they are: that is `csum`'s work. The parser is
//! iproute2's `m_pedit.c` with `p_eth.c`, `p_ip.c`, `p_ip6.c`,
//! `p_tcp.c`, `p_udp.c`. Default control: `pass`.

use serde_json::{Value, json};

use super::{ActionHead, ActionStats, control_at, control_json, next};
use crate::control::Control;
use crate::error::TcError;
use crate::skb::Skb;

/// The kernel's limit of keys (`MAX_OFFS` in iproute2).
const MAX_KEYS: usize = 128;

/// The header a key's offset counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Htype {
    Network,
    Eth,
    Ip4,
    Ip6,
    Tcp,
    Udp,
}

impl Htype {
    fn name(self) -> &'static str {
        match self {
            Htype::Network => "network",
            Htype::Eth => "eth",
            Htype::Ip4 => "ipv4",
            Htype::Ip6 => "ipv6",
            Htype::Tcp => "tcp",
            Htype::Udp => "udp",
        }
    }
}

/// One key (`struct tc_pedit_key` and its `ex` header type and command);
/// `val` and `mask` are the big-endian words as tc prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Key {
    pub off: i32,
    pub val: u32,
    pub mask: u32,
    pub at: u32,
    pub offmask: u32,
    pub shift: u32,
    pub htype: Htype,
    pub add: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pedit {
    /// `pedit ex`: header types and `add` allowed.
    pub extended: bool,
    pub keys: Vec<Key>,
}

/// Where the transport header starts (`pedit_l4_skb_offset`).
fn l4_offset(skb: &Skb, want: u8) -> Option<usize> {
    let n = skb.network;
    match skb.protocol {
        0x0800 => skb.bytes(0, 20).map(|h| n + usize::from(h[0] & 0xf) * 4),
        0x86dd => {
            let mut next = skb.bytes(0, 40)?[6];
            let mut hl = 40usize;
            loop {
                if next == want {
                    return Some(n + hl);
                }
                match next {
                    0 | 43 | 60 | 51 => {
                        let x = skb.bytes(hl as i64, 2)?;
                        next = x[0];
                        hl += if next == 51 {
                            (usize::from(x[1]) + 2) * 4
                        } else {
                            (usize::from(x[1]) + 1) * 8
                        };
                    }
                    _ => return None,
                }
            }
        }
        _ => None,
    }
}

impl Pedit {
    /// `tcf_pedit_act`.
    pub fn act(&self, skb: &mut Skb, control: Control, stats: &mut ActionStats) -> Control {
        for k in &self.keys {
            let hoff = match k.htype {
                Htype::Network | Htype::Ip4 | Htype::Ip6 => Some(skb.network),
                Htype::Eth => Some(0),
                Htype::Tcp => l4_offset(skb, 6),
                Htype::Udp => l4_offset(skb, 17),
            };
            let Some(hoff) = hoff.map(|h| h as i64) else {
                stats.overlimits += 1;
                break;
            };
            let mut off = i64::from(k.off);
            if k.offmask != 0 {
                match usize::try_from(hoff + i64::from(k.at))
                    .ok()
                    .and_then(|p| skb.data.get(p))
                {
                    Some(&b) => off += i64::from((u32::from(b) & k.offmask) >> k.shift),
                    None => {
                        stats.overlimits += 1;
                        break;
                    }
                }
            }
            let pos = usize::try_from(hoff + off).ok();
            let Some(pos) = pos.filter(|p| off % 4 == 0 && p + 4 <= skb.data.len()) else {
                stats.overlimits += 1;
                break;
            };
            let w = &mut skb.data[pos..pos + 4];
            let cur = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            let (val, mask) = (
                u32::from_le_bytes(k.val.to_be_bytes()),
                u32::from_le_bytes(k.mask.to_be_bytes()),
            );
            let v = if k.add {
                cur.wrapping_add(val) & !mask
            } else {
                val
            };
            w.copy_from_slice(&((cur & mask) ^ v).to_le_bytes());
        }
        // As in the kernel, the skb's protocol and header offsets stay.
        control
    }
}

/// What a value word is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ty {
    U32,
    Ipv4,
    Ipv6,
    Mac,
}

/// A key being built (`struct m_pedit_key`).
#[derive(Clone, Copy)]
struct TKey {
    off: i32,
    at: u32,
    offmask: u32,
    shift: u32,
    htype: Htype,
    add: bool,
}

struct Sel {
    extended: bool,
    keys: Vec<Key>,
}

impl Sel {
    /// `pack_key`.
    fn pack(&mut self, t: &TKey, val: u32, mask: u32) -> Result<(), TcError> {
        if self.keys.len() >= MAX_KEYS {
            return Err(format!("pedit: at most {MAX_KEYS} keys").into());
        }
        if t.off % 4 != 0 {
            return Err("offsets MUST be in 32 bit boundaries".into());
        }
        if !self.extended && (t.htype != Htype::Network || t.add) {
            return Err("Munge parameters not supported. Use 'pedit ex munge ...'.".into());
        }
        self.keys.push(Key {
            off: t.off,
            val,
            mask,
            at: t.at,
            offmask: t.offmask,
            shift: t.shift,
            htype: t.htype,
            add: t.add,
        });
        Ok(())
    }

    fn pack32(&mut self, retain: u32, t: &TKey, v: u32, m: u32) -> Result<(), TcError> {
        if t.off % 4 != 0 {
            return Err("pack_key32: 32 bit offsets must begin in 32bit boundaries".into());
        }
        self.pack(t, v & retain, m | !retain)
    }

    fn pack16(&mut self, retain: u32, t: &mut TKey, v: u32, m: u32) -> Result<(), TcError> {
        if v > 0xffff || m > 0xffff {
            return Err("pack_key16 bad value".into());
        }
        let ind = (t.off & 3) as usize;
        if ind == 3 {
            return Err(format!("pack_key16 bad index value {ind}").into());
        }
        const M: [u32; 3] = [0x0000_ffff, 0xff00_00ff, 0xffff_0000];
        let stride = 8 * (2 - ind as u32);
        t.off &= !3;
        self.pack(
            t,
            (v & retain) << stride,
            ((m | !retain) << stride) | M[ind],
        )
    }

    fn pack8(&mut self, retain: u32, t: &mut TKey, v: u32, m: u32) -> Result<(), TcError> {
        if v > 0xff || m > 0xff {
            return Err(format!("pack_key8 bad value (val {v:x} mask {m:x})").into());
        }
        const M: [u32; 4] = [0x00ff_ffff, 0xff00_ffff, 0xffff_00ff, 0xffff_ff00];
        let ind = (t.off & 3) as usize;
        let stride = 8 * (3 - ind as u32);
        t.off &= !3;
        self.pack(
            t,
            (v & retain) << stride,
            ((m | !retain).wrapping_shl(stride)) | M[ind],
        )
    }
}

/// `parse_cmd`: `set V|add V|invert|clear|decrement|preserve [retain R]`
/// at `words[i]`, for a field of `len` bytes; the index after it.
#[allow(clippy::too_many_arguments)]
fn parse_cmd(
    words: &[&str],
    mut i: usize,
    len: u32,
    ty: Ty,
    mut retain: u32,
    sel: &mut Sel,
    t: &mut TKey,
    allow_dec: bool,
) -> Result<usize, TcError> {
    let cmd = *words
        .get(i)
        .ok_or("pedit: a command (set, add, ...) must follow the field")?;
    let o: u32 = match len {
        2 => 0xffff,
        4 => 0xffff_ffff,
        _ => 0xff,
    };
    let (mut v, mut m) = (0u32, 0u32);
    let mut wide = [0u8; 16];
    match cmd {
        "invert" => (v, m) = (o, o),
        "set" | "add" => {
            if cmd == "add" {
                t.add = true;
                if !sel.extended {
                    return Err("Non extended mode. only 'set' command is supported".into());
                }
            }
            let w = next(words, i)?;
            i += 1;
            let bad = || TcError::Syntax(format!("pedit: \"{w}\" is not a value for {cmd}"));
            match ty {
                Ty::U32 => v = super::parse_u32(w).ok_or_else(bad)?,
                Ty::Ipv4 => {
                    let a: std::net::Ipv4Addr = w
                        .split('/')
                        .next()
                        .unwrap_or(w)
                        .parse()
                        .map_err(|_| bad())?;
                    v = u32::from(a);
                }
                Ty::Ipv6 => {
                    let a: std::net::Ipv6Addr = w
                        .split('/')
                        .next()
                        .unwrap_or(w)
                        .parse()
                        .map_err(|_| bad())?;
                    wide = a.octets();
                }
                Ty::Mac => {
                    let b: Vec<u8> = w
                        .split(':')
                        .map(|x| u8::from_str_radix(x, 16))
                        .collect::<Result<_, _>>()
                        .map_err(|_| bad())?;
                    if b.len() != 6 {
                        return Err(bad());
                    }
                    wide[..6].copy_from_slice(&b);
                }
            }
        }
        "decrement" => {
            if !allow_dec {
                return Err("decrement command is not supported for this field".into());
            }
            if !sel.extended {
                return Err("Non extended mode. only 'set' command is supported".into());
            }
            t.add = true;
            v = retain;
        }
        "preserve" => retain = 0,
        "clear" => {}
        w => {
            return Err(format!(
                "pedit: \"{w}\" is not a command (set, add, invert, clear, retain, decrement, preserve)"
            ).into());
        }
    }
    i += 1;
    if words.get(i) == Some(&"retain") {
        let w = next(words, i)?;
        retain =
            super::parse_u32(w).ok_or_else(|| format!("pedit: retain \"{w}\" is not a number"))?;
        i += 2;
    }
    if len > 4 && retain != u32::MAX {
        return Err("retain is not supported for fields longer the 32 bits".into());
    }
    match ty {
        Ty::Mac => {
            let b = &wide;
            if t.off & 3 == 0 {
                sel.pack32(!0, t, u32::from_be_bytes([b[0], b[1], b[2], b[3]]), 0)?;
                t.off += 4;
                sel.pack16(!0, t, u32::from(u16::from_be_bytes([b[4], b[5]])), 0)?;
            } else if t.off & 1 == 0 {
                sel.pack16(!0, t, u32::from(u16::from_be_bytes([b[0], b[1]])), 0)?;
                t.off += 4;
                sel.pack32(!0, t, u32::from_be_bytes([b[2], b[3], b[4], b[5]]), 0)?;
            } else {
                return Err("pack_mac: mac offsets must begin in 32bit or 16bit boundaries".into());
            }
        }
        Ty::Ipv6 => {
            if t.off & 3 != 0 {
                return Err("pack_ipv6: IPv6 offsets must begin in 32bit boundaries".into());
            }
            for c in wide.chunks_exact(4) {
                sel.pack32(!0, t, u32::from_be_bytes([c[0], c[1], c[2], c[3]]), 0)?;
                t.off += 4;
            }
        }
        _ => match len {
            1 => sel.pack8(retain, t, v, m)?,
            2 => sel.pack16(retain, t, v, m)?,
            _ => sel.pack32(retain, t, v, m)?,
        },
    }
    Ok(i)
}

/// A typed field (`eth|ip|ip6|tcp|udp FIELD`): its header type, offset,
/// length, value type, retain mask, and whether it may be decremented.
fn field(sel: &Sel, hdr: &str, f: &str) -> Option<(Htype, i32, u32, Ty, u32, bool)> {
    const R8: u32 = 0xff;
    const R16: u32 = 0xffff;
    const R32: u32 = 0xffff_ffff;
    let ex = sel.extended;
    let ip4 = if ex { Htype::Ip4 } else { Htype::Network };
    Some(match (hdr, f) {
        ("eth", "type") => (Htype::Eth, 12, 2, Ty::U32, R16, false),
        ("eth", "dst") => (Htype::Eth, 0, 6, Ty::Mac, R32, false),
        ("eth", "src") => (Htype::Eth, 6, 6, Ty::Mac, R32, false),
        ("ip", "src") => (ip4, 12, 4, Ty::Ipv4, R32, false),
        ("ip", "dst") => (ip4, 16, 4, Ty::Ipv4, R32, false),
        ("ip", "tos" | "dsfield" | "precedence") => (ip4, 1, 1, Ty::U32, R8, false),
        ("ip", "ihl") => (ip4, 0, 1, Ty::U32, 0x0f, false),
        ("ip", "ttl") => (ip4, 8, 1, Ty::U32, R8, true),
        ("ip", "protocol") => (ip4, 9, 1, Ty::U32, R8, false),
        ("ip", "nofrag") => (ip4, 6, 1, Ty::U32, 0x3f, false),
        ("ip", "firstfrag") => (ip4, 6, 1, Ty::U32, 0x1f, false),
        ("ip", "ce") => (ip4, 6, 1, Ty::U32, 0x80, false),
        ("ip", "df") => (ip4, 6, 1, Ty::U32, 0x40, false),
        ("ip", "mf") => (ip4, 6, 1, Ty::U32, 0x20, false),
        // Fields past the IP header: the old scheme only.
        ("ip", "dport") if !ex => (ip4, 22, 2, Ty::U32, R16, false),
        ("ip", "sport") if !ex => (ip4, 20, 2, Ty::U32, R16, false),
        ("ip", "icmp_type" | "icmp_code") if !ex => (ip4, 20, 1, Ty::U32, R8, false),
        ("ip6", "src") if ex => (Htype::Ip6, 8, 16, Ty::Ipv6, R32, false),
        ("ip6", "dst") if ex => (Htype::Ip6, 24, 16, Ty::Ipv6, R32, false),
        ("ip6", "flow_lbl") if ex => (Htype::Ip6, 0, 4, Ty::U32, 0x0007_ffff, false),
        ("ip6", "payload_len") if ex => (Htype::Ip6, 4, 2, Ty::U32, R16, false),
        ("ip6", "nexthdr") if ex => (Htype::Ip6, 6, 1, Ty::U32, R8, false),
        ("ip6", "hoplimit") if ex => (Htype::Ip6, 7, 1, Ty::U32, R8, true),
        ("ip6", "traffic_class") if ex => (Htype::Ip6, 1, 1, Ty::U32, R8, false),
        ("tcp", "sport") if ex => (Htype::Tcp, 0, 2, Ty::U32, R16, false),
        ("tcp", "dport") if ex => (Htype::Tcp, 2, 2, Ty::U32, R16, false),
        ("tcp", "flags") if ex => (Htype::Tcp, 13, 1, Ty::U32, R8, false),
        ("udp", "sport") if ex => (Htype::Udp, 0, 2, Ty::U32, R16, false),
        ("udp", "dport") if ex => (Htype::Udp, 2, 2, Ty::U32, R16, false),
        _ => return None,
    })
}

/// `munge offset N u8|u16|u32 [at A [offmask] M [shift] S] CMD` or
/// `munge HEADER FIELD CMD` at `words[i]` (the word after `munge`).
fn parse_munge(words: &[&str], mut i: usize, sel: &mut Sel) -> Result<usize, TcError> {
    let w = *words
        .get(i)
        .ok_or("pedit: munge needs offset or a header")?;
    let mut t = TKey {
        off: 0,
        at: 0,
        offmask: 0,
        shift: 0,
        htype: Htype::Network,
        add: false,
    };
    if w == "offset" {
        let o = next(words, i)?;
        t.off =
            super::parse_i32(o).ok_or_else(|| format!("pedit: offset \"{o}\" is not a number"))?;
        let l = next(words, i + 1)?;
        let (len, retain) = match l {
            "u32" => (4, 0xffff_ffff),
            "u16" => (2, 0xffff),
            "u8" => (1, 0xff),
            _ => return Err(format!("pedit: \"{l}\" is not u8, u16 or u32").into()),
        };
        i += 3;
        if words.get(i) == Some(&"at") {
            let num = |i: usize, hex: bool| -> Result<u32, TcError> {
                let w = *words.get(i).ok_or("pedit: at needs AT OFFMASK SHIFT")?;
                let v = if hex {
                    u32::from_str_radix(w.trim_start_matches("0x"), 16).ok()
                } else {
                    super::parse_u32(w)
                };
                v.ok_or_else(|| TcError::Syntax(format!("pedit: at: \"{w}\" is not a number")))
            };
            t.at = num(i + 1, false)?;
            i += 2;
            if words.get(i) == Some(&"offmask") {
                i += 1;
            }
            t.offmask = num(i, true)?;
            i += 1;
            if words.get(i) == Some(&"shift") {
                i += 1;
            }
            t.shift = num(i, false)?;
            i += 1;
        }
        return parse_cmd(words, i, len, Ty::U32, retain, sel, &mut t, false);
    }
    let f = next(words, i)?;
    if !matches!(w, "eth" | "ip" | "ip6" | "tcp" | "udp") {
        return Err(format!("pedit: \"{w}\" is not offset, eth, ip, ip6, tcp or udp").into());
    }
    let Some((htype, off, len, ty, retain, dec)) = field(sel, w, f) else {
        return Err(if w != "eth" && w != "ip" && !sel.extended {
            TcError::Syntax(format!("pedit: \"{w} {f}\" needs 'pedit ex munge ...'"))
        } else {
            TcError::Syntax(format!("pedit: \"{f}\" is not a field of {w} (here)"))
        });
    };
    (t.htype, t.off) = (htype, off);
    let at = parse_cmd(words, i + 2, len, ty, retain, sel, &mut t, dec)?;
    if (w, f) == ("ip6", "traffic_class") {
        let k = sel.keys.last_mut().expect("just packed");
        k.mask = (k.mask << 4) | 0xf;
        k.val <<= 4;
    }
    Ok(at)
}

/// `pedit [ex] munge ... [munge ...] [CONTROL]` (`words[0]` is `pedit`).
pub fn parse(words: &[&str]) -> Result<(Pedit, Control, usize), TcError> {
    let mut sel = Sel {
        extended: false,
        keys: Vec::new(),
    };
    let mut i = 1;
    if words.get(i) == Some(&"ex") {
        sel.extended = true;
        i += 1;
    }
    while words.get(i) == Some(&"munge") {
        i = parse_munge(words, i + 1, &mut sel).map_err(|e| format!("Bad pedit construct: {e}"))?;
    }
    if sel.keys.is_empty() {
        return Err(match words.get(i) {
            Some(w) => TcError::Syntax(format!(
                "Bad pedit construct ({w}): pedit requires keys (munge ...)"
            )),
            None => "pedit requires keys (munge ...)".into(),
        });
    }
    let (control, i) = control_at(words, i, Control::OK);
    Ok((
        Pedit {
            extended: sel.extended,
            keys: sel.keys,
        },
        control,
        i,
    ))
}

/// The text after `action order N: ` (`print_pedit`).
pub fn text(a: ActionHead, p: &Pedit) -> String {
    let mut s = format!(
        " pedit action {} keys {}\n \t index {} ref {} bind {}",
        a.control.name(),
        p.keys.len(),
        a.index,
        a.refs,
        a.binds
    );
    for (i, k) in p.keys.iter().enumerate() {
        let at = if k.htype == Htype::Network {
            format!("{}", k.off)
        } else {
            format!("{}{:+}", k.htype.name(), k.off)
        };
        s += &format!(
            "\n\t key #{i}  at {at}: {} {:08x} mask {:08x}",
            if k.add { "add" } else { "val" },
            k.val,
            k.mask
        );
    }
    s
}

/// Its `tc -j` fields.
pub fn json(a: ActionHead, p: &Pedit, o: &mut Value) {
    o["control_action"] = control_json(a.control);
    o["nkeys"] = json!(p.keys.len());
    o["index"] = json!(a.index);
    o["ref"] = json!(a.refs);
    o["bind"] = json!(a.binds);
    o["keys"] = p
        .keys
        .iter()
        .map(|k| {
            json!({
                "htype": k.htype.name(),
                "offset": k.off,
                "cmd": if k.add { "add" } else { "set" },
                "val": format!("{:x}", k.val),
                "mask": format!("{:x}", k.mask),
            })
        })
        .collect();
}
