//! The words after `u32` in `tc filter add ... u32 ...`, read as iproute2's
//! `u32_parse_opt` reads them: selectors (`match ...`), `offset`,
//! `hashkey`, `sample`, `classid`/`flowid`, `divisor`, `order`, `link`,
//! `ht`, `indev`, `action ...`, `skip_hw`/`skip_sw`. What comes out is what
//! tc would send the kernel; the kernel's own checks are in `mod.rs`.
//! Errors read as tc's (`Illegal "match"`, `What is "x"?`) with the reason.

use super::handle;
use super::sel::{EAT, OFFSET, Sel, TERMINAL, VAROFFSET, sample_fold};
use crate::action::{ActionRef, Actions};
use crate::action_parse::parse_actions;
use crate::argv::{get_int, get_u32, matches};
use crate::error::TcError;

/// `TCA_CLS_FLAGS_SKIP_HW` / `_SKIP_SW`.
pub const SKIP_HW: u32 = 1;
pub const SKIP_SW: u32 = 2;

/// A parsed rule (the netlink request tc would make).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spec {
    /// The request's handle (`handle`, with `order` in its node bits).
    pub handle: u32,
    /// No words at all (tc sends no options).
    pub empty: bool,
    /// The selector, when a `match` was given.
    pub sel: Option<Sel>,
    pub classid: Option<u32>,
    pub divisor: Option<u32>,
    pub link: Option<u32>,
    /// `TCA_U32_HASH`: the table (and bucket) for the rule; 0: the root.
    pub htid: u32,
    pub indev: Option<String>,
    pub mark: Option<(u32, u32)>,
    pub flags: u32,
    pub actions: Vec<ActionRef>,
}

/// Reads words left to right.
struct Words<'a, 'b> {
    w: &'b [&'a str],
    at: usize,
}

impl<'a> Words<'a, '_> {
    fn peek(&self) -> Option<&'a str> {
        self.w.get(self.at).copied()
    }
    /// The next word, or tc's "not complete" error.
    fn next(&mut self) -> Result<&'a str, TcError> {
        let w = self
            .peek()
            .ok_or_else(|| "Command line is not complete. Try option \"help\"".to_string())?;
        self.at += 1;
        Ok(w)
    }
}

/// Parses the words after `u32`; `handle` is the filter's `handle` word.
/// Actions are added to `table`; on an error they are released again.
pub fn parse(handle: Option<&str>, words: &[&str], table: &mut Actions) -> Result<Spec, TcError> {
    let mut spec = Spec::default();
    let r = parse_into(&mut spec, handle, words, table);
    if r.is_err() {
        table.release(&spec.actions);
    }
    r.map(|()| spec)
}

fn parse_into(
    spec: &mut Spec,
    handle: Option<&str>,
    words: &[&str],
    table: &mut Actions,
) -> Result<(), TcError> {
    if let Some(h) = handle {
        spec.handle = handle::parse(h).ok_or_else(|| {
            format!("Illegal filter ID \"{h}\" (HT:BUCKET:NODE, below 1000:100:1000)")
        })?;
    }
    if words.is_empty() {
        spec.empty = true;
        return Ok(());
    }
    let mut sel = Sel::default();
    let mut sel_ok = false;
    let mut terminal = false;
    let mut sample_ok = false;
    let mut order = 0u32;
    let mut w = Words { w: words, at: 0 };
    while let Some(word) = w.peek() {
        w.at += 1;
        if matches(word, "match") {
            parse_selector(&mut w, &mut sel, &mut spec.mark)
                .map_err(|e| format!("Illegal \"match\": {e}"))?;
            sel_ok = true;
        } else if matches(word, "offset") {
            parse_offset(&mut w, &mut sel).map_err(|e| format!("Illegal \"offset\": {e}"))?;
        } else if matches(word, "hashkey") {
            parse_hashkey(&mut w, &mut sel).map_err(|e| format!("Illegal \"hashkey\": {e}"))?;
        } else if matches(word, "classid") || word == "flowid" {
            let v = w.next()?;
            let c =
                crate::handle::parse_classid(v).map_err(|e| format!("Illegal \"classid\": {e}"))?;
            spec.classid = Some(c);
            sel.flags |= TERMINAL;
        } else if matches(word, "divisor") {
            let v = w.next()?;
            spec.divisor = Some(parse_divisor(v).ok_or_else(|| {
                format!("Illegal \"divisor\" \"{v}\": a power of two from 1 to 256")
            })?);
        } else if matches(word, "order") {
            let v = w.next()?;
            order = get_u32(v, 0).ok_or_else(|| format!("Illegal \"order\" \"{v}\""))?;
        } else if word == "link" {
            let v = w.next()?;
            let l = handle::parse(v).ok_or_else(|| format!("Illegal \"link\" \"{v}\""))?;
            if l != 0 && handle::node(l) != 0 {
                return Err(format!("\"link\" must be a hash table (\"{v}\" names a node)").into());
            }
            spec.link = Some(l);
        } else if word == "ht" {
            let v = w.next()?;
            let ht = handle::parse(v).ok_or_else(|| format!("Illegal \"ht\" \"{v}\""))?;
            if handle.is_some() && handle::node(ht) != 0 {
                return Err(format!("\"ht\" must be a hash table (\"{v}\" names a node)").into());
            }
            spec.htid = if sample_ok {
                (spec.htid & 0xff000) | (ht & 0xfff0_0000)
            } else {
                ht & 0xffff_f000
            };
        } else if word == "sample" {
            let mut s2 = Sel::default();
            parse_selector(&mut w, &mut s2, &mut spec.mark)
                .map_err(|e| format!("Illegal \"sample\": {e}"))?;
            if s2.keys.len() != 1 {
                return Err("\"sample\" must contain exactly ONE key".into());
            }
            let mut divisor = 0x100;
            if w.peek() == Some("divisor") {
                w.at += 1;
                let v = w.next()?;
                divisor = parse_divisor(v)
                    .ok_or_else(|| format!("Illegal sample \"divisor\" \"{v}\""))?;
                // tc steps past the value with NEXT_ARG: it must not be last.
                w.next()?;
                w.at -= 1;
            }
            let hash = sample_fold(&s2.keys[0]);
            spec.htid = ((hash % divisor) << 12) | (spec.htid & 0xfff0_0000);
            sample_ok = true;
        } else if word == "indev" {
            let v = w.next().map_err(|_| "Illegal indev".to_string())?;
            spec.indev = Some(v.chars().take(15).collect());
        } else if matches(word, "action") || word == "actions" {
            let (refs, used) = parse_actions(&words[w.at - 1..], table)
                .map_err(|e| format!("Illegal \"action\": {e}"))?;
            if used == 0 {
                // An abbreviation ("act"): tc takes it for an action kind.
                return Err(format!("bad action type {word}").into());
            }
            spec.actions.extend(refs);
            w.at += used - 1;
            terminal = true;
        } else if matches(word, "police") {
            // tc's TCA_U32_POLICE: the policer is the rule's action, as
            // `action police ...` makes it (the kernel shows it so).
            let mut as_action = vec!["action", "police"];
            as_action.extend_from_slice(&words[w.at..]);
            let (refs, used) =
                parse_actions(&as_action, table).map_err(|e| format!("Illegal \"police\": {e}"))?;
            spec.actions.extend(refs);
            w.at += used - 2;
            terminal = true;
        } else if word == "skip_hw" {
            spec.flags |= SKIP_HW;
        } else if word == "skip_sw" {
            spec.flags |= SKIP_SW;
        } else {
            return Err(format!("What is \"{word}\"?").into());
        }
    }
    if terminal {
        sel.flags |= TERMINAL;
    }
    if order != 0 {
        if handle::node(spec.handle) != 0 && order != handle::node(spec.handle) {
            return Err(format!("\"order\" {order} contradicts \"handle\"").into());
        }
        spec.handle |= order;
    }
    if spec.flags == SKIP_HW | SKIP_SW {
        return Err("skip_hw and skip_sw are mutually exclusive".into());
    }
    if sel_ok {
        spec.sel = Some(sel);
    }
    Ok(())
}

/// A divisor: a power of two, 1 to 256.
fn parse_divisor(v: &str) -> Option<u32> {
    get_u32(v, 0).filter(|&d| d != 0 && d <= 0x100 && d & (d - 1) == 0)
}

/// `at [nexthdr+]OFF` after a value and mask, if present.
fn parse_at(w: &mut Words<'_, '_>, off: &mut i32, offmask: &mut i32) -> Result<(), TcError> {
    if w.peek() != Some("at") {
        return Ok(());
    }
    w.at += 1;
    let mut p = w.next()?;
    if let Some(rest) = p.strip_prefix("nexthdr+").filter(|r| !r.is_empty()) {
        *offmask = -1;
        p = rest;
    } else if matches(p, "nexthdr+") {
        *offmask = -1;
        p = w.next()?;
    }
    *off = get_int(p).ok_or_else(|| format!("offset \"{p}\" is not a number"))?;
    Ok(())
}

/// Value (base 0) and mask (hexadecimal).
fn val_mask(w: &mut Words<'_, '_>) -> Result<(u32, u32), TcError> {
    let v = w.next()?;
    let val = get_u32(v, 0).ok_or_else(|| format!("value \"{v}\" is not a 32-bit number"))?;
    let m = w.next()?;
    let mask = get_u32(m, 16).ok_or_else(|| format!("mask \"{m}\" is not 32-bit hexadecimal"))?;
    Ok((val, mask))
}

#[derive(Clone, Copy)]
enum Width {
    W32,
    W16,
    W8,
}

/// `u32|u16|u8 VAL MASK [at [nexthdr+]OFF]` with the shorthand's default
/// offset and offset mask.
fn parse_field(
    w: &mut Words<'_, '_>,
    sel: &mut Sel,
    width: Width,
    off: i32,
    offmask: i32,
) -> Result<(), TcError> {
    let (val, mask) = val_mask(w)?;
    if matches!(width, Width::W8) && (val > 0xff || mask > 0xff) {
        return Err(format!("u8 value {val:#x} or mask {mask:#x} is wider than 8 bits").into());
    }
    let (mut off, mut offmask) = (off, offmask);
    parse_at(w, &mut off, &mut offmask)?;
    match width {
        Width::W32 => sel.pack(val, mask, off, offmask),
        Width::W16 => sel.pack16(val, mask, off, offmask),
        Width::W8 => sel.pack8(val, mask, off, offmask),
    }
}

fn parse_ip_addr(w: &mut Words<'_, '_>, sel: &mut Sel, off: i32) -> Result<(), TcError> {
    let a = w.next()?;
    let (addr, len) = a.split_once('/').unwrap_or((a, "32"));
    let ip: std::net::Ipv4Addr = addr
        .parse()
        .map_err(|_| format!("\"{a}\" is not an IPv4 prefix"))?;
    let len: u32 = len
        .parse()
        .ok()
        .filter(|&l| l <= 32)
        .ok_or_else(|| format!("\"{a}\": bad prefix length"))?;
    let (mut off, mut offmask) = (off, 0);
    parse_at(w, &mut off, &mut offmask)?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    sel.pack(u32::from(ip), mask, off, offmask)
}

fn parse_ip6_addr(w: &mut Words<'_, '_>, sel: &mut Sel, off: i32) -> Result<(), TcError> {
    let a = w.next()?;
    let (addr, len) = a.split_once('/').unwrap_or((a, "128"));
    let ip: std::net::Ipv6Addr = addr
        .parse()
        .map_err(|_| format!("\"{a}\" is not an IPv6 prefix"))?;
    let plen: i32 = len
        .parse()
        .ok()
        .filter(|&l| l <= 128)
        .ok_or_else(|| format!("\"{a}\": bad prefix length"))?;
    let (mut off, mut offmask) = (off, 0);
    parse_at(w, &mut off, &mut offmask)?;
    let o = ip.octets();
    let mut i = 0;
    while i < plen {
        let j = (i / 32) as usize;
        let word = u32::from_be_bytes([o[4 * j], o[4 * j + 1], o[4 * j + 2], o[4 * j + 3]]);
        let mask = if i + 31 < plen {
            u32::MAX
        } else {
            u32::MAX << (32 - (plen - i))
        };
        sel.pack(word, mask, off + 4 * j as i32, offmask)?;
        i += 32;
    }
    Ok(())
}

fn parse_ether_addr(w: &mut Words<'_, '_>, sel: &mut Sel, off: i32) -> Result<(), TcError> {
    let a = w.next()?;
    let bytes: Vec<u32> = a
        .split(':')
        .filter_map(|b| u32::from_str_radix(b, 16).ok())
        .collect();
    if bytes.len() != 6 || bytes.iter().any(|&b| b > 0xff) {
        return Err(format!("improperly formed address '{a}'").into());
    }
    let (mut off, mut offmask) = (off, 0);
    parse_at(w, &mut off, &mut offmask)?;
    for (i, b) in bytes.iter().enumerate() {
        sel.pack8(*b, 0xff, off + i as i32, offmask)?;
    }
    Ok(())
}

/// One selector after `match` (or `sample`).
fn parse_selector<'a>(
    w: &mut Words<'a, '_>,
    sel: &mut Sel,
    mark: &mut Option<(u32, u32)>,
) -> Result<(), TcError> {
    let kind = w.next()?;
    let what = |w: &mut Words<'a, '_>| -> Result<&'a str, TcError> {
        let f = w.next()?;
        // tc wants a word after the field, even after `nofrag`.
        if w.peek().is_none() {
            return Err(format!("{kind} {f}: a value must follow").into());
        }
        Ok(f)
    };
    let unknown = |f: &str| Err(format!("unknown field \"{kind} {f}\"").into());
    if matches(kind, "u32") {
        parse_field(w, sel, Width::W32, 0, 0)
    } else if matches(kind, "u16") {
        parse_field(w, sel, Width::W16, 0, 0)
    } else if matches(kind, "u8") {
        parse_field(w, sel, Width::W8, 0, 0)
    } else if matches(kind, "ip") {
        match what(w)? {
            "src" => parse_ip_addr(w, sel, 12),
            "dst" => parse_ip_addr(w, sel, 16),
            f if f == "tos" || matches(f, "dsfield") || matches(f, "precedence") => {
                parse_field(w, sel, Width::W8, 1, 0)
            }
            "ihl" => parse_field(w, sel, Width::W8, 0, 0),
            "protocol" => parse_field(w, sel, Width::W8, 9, 0),
            "nofrag" => sel.pack16(0, 0x3fff, 6, 0),
            "firstfrag" => sel.pack16(0x2000, 0x3fff, 6, 0),
            "df" => sel.pack16(0x4000, 0x4000, 6, 0),
            "mf" => sel.pack16(0x2000, 0x2000, 6, 0),
            "dport" => parse_field(w, sel, Width::W16, 22, 0),
            "sport" => parse_field(w, sel, Width::W16, 20, 0),
            "icmp_type" => parse_field(w, sel, Width::W8, 20, 0),
            "icmp_code" => parse_field(w, sel, Width::W8, 21, 0),
            f => unknown(f),
        }
    } else if matches(kind, "ip6") {
        match what(w)? {
            "src" => parse_ip6_addr(w, sel, 8),
            "dst" => parse_ip6_addr(w, sel, 24),
            "priority" => {
                let (val, mask) = val_mask(w)?;
                if val > 0xff || mask > 0xff {
                    return Err(format!(
                        "priority {val:#x} or mask {mask:#x} is wider than 8 bits"
                    )
                    .into());
                }
                sel.pack(val << 20, mask << 20, 0, 0)
            }
            "protocol" => parse_field(w, sel, Width::W8, 6, 0),
            "flowlabel" => parse_field(w, sel, Width::W32, 0, 0),
            "dport" => parse_field(w, sel, Width::W16, 42, 0),
            "sport" => parse_field(w, sel, Width::W16, 40, 0),
            "icmp_type" => parse_field(w, sel, Width::W8, 40, 0),
            "icmp_code" => parse_field(w, sel, Width::W8, 41, 1),
            f => unknown(f),
        }
    } else if matches(kind, "udp") || matches(kind, "tcp") {
        match what(w)? {
            "src" => parse_field(w, sel, Width::W16, 0, -1),
            "dst" => parse_field(w, sel, Width::W16, 2, -1),
            f => unknown(f),
        }
    } else if matches(kind, "icmp") {
        match what(w)? {
            "type" => parse_field(w, sel, Width::W8, 0, -1),
            "code" => parse_field(w, sel, Width::W8, 1, -1),
            f => unknown(f),
        }
    } else if matches(kind, "mark") {
        let v = w.next()?;
        let val = get_u32(v, 0).ok_or_else(|| "Illegal \"mark\" value".to_string())?;
        let m = w.next()?;
        let mask = get_u32(m, 0).ok_or_else(|| "Illegal \"mark\" mask".to_string())?;
        if val & mask != val {
            return Err("Illegal \"mark\" (impossible combination)".into());
        }
        *mark = Some((val, mask));
        Ok(())
    } else if matches(kind, "ether") {
        match what(w)? {
            "src" => parse_ether_addr(w, sel, -8),
            "dst" => parse_ether_addr(w, sel, -14),
            f => unknown(f),
        }
    } else {
        Err(format!("unknown selector \"{kind}\"").into())
    }
}

/// `offset [plus P] [at OFF] [mask M] [shift S] [eat]`.
fn parse_offset(w: &mut Words<'_, '_>, sel: &mut Sel) -> Result<(), TcError> {
    while let Some(word) = w.peek() {
        if matches(word, "plus") {
            w.at += 1;
            let v = w.next()?;
            sel.off = get_int(v).ok_or_else(|| format!("plus \"{v}\""))? as u16;
            sel.flags |= OFFSET;
        } else if matches(word, "at") {
            w.at += 1;
            let v = w.next()?;
            let off = get_int(v).ok_or_else(|| format!("at \"{v}\""))?;
            if off % 2 != 0 {
                return Err("offset \"at\" must be even".into());
            }
            sel.offoff = off as i16;
            sel.flags |= VAROFFSET;
        } else if matches(word, "mask") {
            w.at += 1;
            let v = w.next()?;
            sel.offmask = get_u32(v, 16)
                .and_then(|m| u16::try_from(m).ok())
                .ok_or_else(|| format!("mask \"{v}\" is not 16-bit hexadecimal"))?;
            sel.flags |= VAROFFSET;
        } else if matches(word, "shift") {
            w.at += 1;
            let v = w.next()?;
            sel.offshift = get_int(v).ok_or_else(|| format!("shift \"{v}\""))? as u8;
            sel.flags |= VAROFFSET;
        } else if matches(word, "eat") {
            w.at += 1;
            sel.flags |= EAT;
        } else {
            break;
        }
    }
    Ok(())
}

/// `hashkey [mask M] [at OFF]` (OFF a multiple of 4).
fn parse_hashkey(w: &mut Words<'_, '_>, sel: &mut Sel) -> Result<(), TcError> {
    while let Some(word) = w.peek() {
        if matches(word, "mask") {
            w.at += 1;
            let v = w.next()?;
            sel.hmask = get_u32(v, 16).ok_or_else(|| format!("mask \"{v}\""))?;
        } else if matches(word, "at") {
            w.at += 1;
            let v = w.next()?;
            let off = get_int(v)
                .filter(|o| o % 4 == 0)
                .ok_or_else(|| format!("at \"{v}\": a multiple of 4"))?;
            sel.hoff = off as i16;
        } else {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::u32::sel::Key;

    fn p(words: &str) -> Result<Spec, String> {
        let w: Vec<&str> = words.split_whitespace().collect();
        parse(None, &w, &mut Actions::default()).map_err(|e| e.to_string())
    }

    fn keys(words: &str) -> Vec<(u32, u32, i32, i32)> {
        p(words)
            .unwrap()
            .sel
            .unwrap()
            .keys
            .iter()
            .map(|k: &Key| (k.val, k.mask, k.off, k.offmask))
            .collect()
    }

    #[test]
    fn shorthands_become_the_keys_tc_makes() {
        assert_eq!(keys("match ip src 10.0.0.1/32"), [(0x0a00_0001, !0, 12, 0)]);
        assert_eq!(
            keys("match ip dst 10.1.2.3/16"),
            [(0x0a01_0000, 0xffff_0000, 16, 0)]
        );
        assert_eq!(
            keys(
                "match ip tos 0x10 0xff match ip ihl 5 0xf match ip sport 80 0xffff match ip dport 443 0xffff"
            ),
            [(0x0510_0000, 0x0fff_0000, 0, 0), (0x0050_01bb, !0, 20, 0)]
        );
        assert_eq!(
            keys("match ip firstfrag match ip mf flowid 1:1"),
            [(0x2000, 0x3fff, 4, 0)]
        );
        assert_eq!(
            keys("match tcp dst 80 0xffff match udp src 53 0xffff"),
            [(0x0035_0050, !0, 0, -1)]
        );
        assert_eq!(
            keys("match icmp code 1 0xff"),
            [(0x0001_0000, 0x00ff_0000, 0, -1)]
        );
        assert_eq!(
            keys("match u8 0x11 0xff at nexthdr+8"),
            [(0x1100_0000, 0xff00_0000, 8, -1)]
        );
        assert_eq!(
            keys("match u8 0x11 0xff at nexthdr+ 9"),
            [(0x0011_0000, 0x00ff_0000, 8, -1)]
        );
        assert_eq!(
            keys("match ip6 priority 0x10 0xff match ip6 flowlabel 0x12345 0xfffff"),
            [(0x0101_2345, 0x0fff_ffff, 0, 0)]
        );
        assert_eq!(
            keys("match ip6 icmp_code 0 0xff"),
            [(0, 0x00ff_0000, 40, 1)]
        );
        assert_eq!(keys("match ip6 dst 2001:db8:1::/48").len(), 2);
        assert_eq!(
            keys("match ether src 00:11:22:33:44:55"),
            [(0x0011_2233, !0, -8, 0), (0x4455_0000, 0xffff_0000, -4, 0)]
        );
    }

    #[test]
    fn the_rest_of_the_words() {
        let s = p("match u32 0 0 offset at 0 mask 0f00 shift 6 eat hashkey mask 0xff at 4 link 1: order 7").unwrap();
        let sel = s.sel.unwrap();
        assert_eq!(
            (sel.offmask, sel.offshift, sel.offoff, sel.flags),
            (0x0f00, 6, 0, VAROFFSET | EAT)
        );
        assert_eq!(
            (sel.hmask, sel.hoff, s.link, s.handle),
            (0xff, 4, Some(0x0010_0000), 7)
        );
        let s = p("ht 1: sample tcp dst 443 0xffff divisor 16 match u32 0 0 flowid 1:1").unwrap();
        assert_eq!(s.htid, 0x0010_b000);
        assert_eq!(s.sel.unwrap().flags, TERMINAL);
        let s = p("sample ip src 10.0.0.5/32 ht 1: match u32 0 0").unwrap();
        assert_eq!(s.htid, 0x0010_5000);
        let s = p("divisor 16").unwrap();
        assert_eq!((s.divisor, s.sel), (Some(16), None));
        let s = p("match mark 0x10 0xf0 indev vb skip_hw match u32 0 0").unwrap();
        assert_eq!(
            (s.mark, s.indev.as_deref(), s.flags),
            (Some((0x10, 0xf0)), Some("vb"), SKIP_HW)
        );
    }

    #[test]
    fn bad_words_are_named() {
        for (w, why) in [
            ("match u32 0 0 bogus", "What is \"bogus\"?"),
            ("match u8 0x1ff 0xff at 0", "Illegal \"match\""),
            ("match u8 0x1ff 0xff at 0", "wider than 8 bits"),
            ("divisor 3", "Illegal \"divisor\""),
            ("divisor 512", "Illegal \"divisor\""),
            ("match u32 0 0 link 1:0:1", "\"link\" must be a hash table"),
            ("match u32 0 0 ht 1000:", "Illegal \"ht\""),
            ("match u32 0 0 link 1:100:", "Illegal \"link\""),
            (
                "match ip src 1.2.3.4 sample ip src 1.2.3.4 divisor 16",
                "not complete",
            ),
            ("match ip src 1.2.3.4 match ip src 1.2.3.5", "contradicts"),
            ("match u32 0 0 skip_hw skip_sw", "mutually exclusive"),
            ("match ip bogus 1 1", "ip bogus"),
            ("match mark 0x11 0x10", "impossible"),
            ("hashkey at 2", "multiple of 4"),
            ("offset at 3", "even"),
        ] {
            let e = p(w).unwrap_err();
            assert!(e.contains(why), "{w}: {e}");
        }
        let e = parse(Some("1000:"), &["divisor", "1"], &mut Actions::default()).unwrap_err();
        assert!(e.to_string().contains("Illegal filter ID"), "{e}");
    }

    #[test]
    fn a_failed_parse_releases_its_actions() {
        let mut t = Actions::default();
        let w = [
            "match", "u32", "0", "0", "action", "mirred", "egress", "mirror", "dev", "x", "bogus",
        ];
        assert!(parse(None, &w, &mut t).is_err());
        assert_eq!(t, Actions::default());
        let s = parse(None, &w[..10], &mut t).unwrap();
        assert_eq!(s.actions.len(), 1);
        assert_eq!(s.sel.unwrap().flags, TERMINAL);
    }
}
