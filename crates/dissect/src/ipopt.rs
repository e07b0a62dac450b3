//! IPv4 header options as tcpdump's `-v` prints them inside
//! `options (...)`: their names, router alert values, recorded and
//! source routes, timestamps.

use crate::addr;
use crate::cursor::{R, Truncated, bytes_at, u8_at, u16_at, u32_at};
use std::fmt::Write;

fn name(code: u8) -> String {
    match code {
        0 => "EOL".into(),
        1 => "NOP".into(),
        7 => "RR".into(),
        68 => "timestamp".into(),
        82 => "traceroute".into(),
        130 => "security".into(),
        131 => "LSRR".into(),
        137 => "SSRR".into(),
        148 => "RA".into(),
        _ => format!("unknown {code}"),
    }
}

/// The options text for `area` bytes of options, of which `b` holds
/// those captured; `Err` when an option is not all captured.
pub(crate) fn print(out: &mut String, b: &[u8], area: usize) -> R<()> {
    let mut cp = 0;
    let mut left = area;
    let mut sep = "";
    while left > 0 {
        out.push_str(sep);
        sep = ",";
        let code = u8_at(b, cp)?;
        out.push_str(&name(code));
        let len = if code <= 1 {
            1
        } else {
            let l = usize::from(u8_at(b, cp + 1)?);
            if l < 2 {
                let _ = write!(out, " [bad length {l}]");
                return Ok(());
            }
            l
        };
        if len > left {
            let _ = write!(out, " [bad length {len}]");
            return Ok(());
        }
        let opt = bytes_at(b, cp, len)?;
        match code {
            0 => return Ok(()),
            68 => timestamp(out, opt)?,
            7 | 131 | 137 => route(out, opt)?,
            148 => {
                if len < 4 {
                    let _ = write!(out, " [bad length {len}]");
                } else if u16_at(opt, 2)? != 0 {
                    let _ = write!(out, " value {}", u16_at(opt, 2)?);
                }
            }
            _ => {}
        }
        cp += len;
        left -= len;
    }
    Ok(())
}

fn route(out: &mut String, opt: &[u8]) -> R<()> {
    let length = opt.len();
    if length < 3 {
        let _ = write!(out, " [bad length {length}]");
        return Ok(());
    }
    if (length + 1) & 3 != 0 {
        let _ = write!(out, " [bad length {length}]");
    }
    let ptr = usize::from(opt[2]).wrapping_sub(1);
    if ptr < 3 || (ptr + 1) & 3 != 0 || ptr > length + 1 {
        let _ = write!(out, " [bad ptr {}]", opt[2]);
    }
    let mut len = 3;
    while len < length {
        let a = bytes_at(opt, len, 4)?;
        let _ = write!(out, " {}", addr::ipv4(a));
        if ptr > len {
            out.push(',');
        }
        len += 4;
    }
    Ok(())
}

fn timestamp(out: &mut String, opt: &[u8]) -> R<()> {
    let length = opt.len();
    if length < 4 {
        let _ = write!(out, "[bad length {length}]");
        return Ok(());
    }
    out.push_str(" TS{");
    let flags = opt[3];
    let hoplen = if flags & 0xf != 0 { 8 } else { 4 };
    if (length - 4) & (hoplen - 1) != 0 {
        let _ = write!(out, "[bad length {length}]");
    }
    let ptr = usize::from(opt[2]).wrapping_sub(1);
    if ptr < 4 || (ptr.wrapping_sub(4)) & (hoplen - 1) != 0 || ptr > length + 1 {
        let _ = write!(out, "[bad ptr {}]", opt[2]);
    }
    let mut len = 0;
    match flags & 0xf {
        0 => out.push_str("TSONLY"),
        1 => out.push_str("TS+ADDR"),
        3 => out.push_str("PRESPEC"),
        t => {
            let _ = write!(out, "[bad ts type {t}]");
            len = usize::MAX;
        }
    }
    if len == 0 {
        let mut kind = " ";
        len = 4;
        while len < length {
            if ptr == len {
                kind = " ^ ";
            }
            if len + hoplen > opt.len() {
                return Err(Truncated);
            }
            let ts = u32_at(opt, len + hoplen - 4)?;
            let at = if hoplen == 8 {
                addr::ipv4(&opt[len..len + 4])
            } else {
                String::new()
            };
            let _ = write!(out, "{kind}{ts}@{at}");
            kind = " ";
            len += hoplen;
        }
    }
    out.push_str(if ptr == len { " ^ " } else { "" });
    if flags >> 4 != 0 {
        let _ = write!(out, " [{} hops not recorded]}} ", flags >> 4);
    } else {
        out.push('}');
    }
    Ok(())
}
