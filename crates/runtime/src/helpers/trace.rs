//! `bpf_trace_printk` and `bpf_trace_vprintk`: printf into the run's trace.

use vm::{HelperError, HelperFn};

use super::{Ctx, Ret, read};
use crate::Env;

pub const HELPERS: &[(&str, HelperFn<Env>)] = &[
    ("trace_printk", trace_printk),
    ("trace_vprintk", trace_vprintk),
];

/// Longest string a `%s` reads, as the kernel's buffer.
const MAX_STR: usize = 512;

fn trace_printk(c: &mut Ctx) -> Ret {
    let fmt = read(c, c.args[0], c.args[1] as usize)?;
    let args = [c.args[2], c.args[3], c.args[4]];
    emit(c, &fmt, &args)
}

fn trace_vprintk(c: &mut Ctx) -> Ret {
    let fmt = read(c, c.args[0], c.args[1] as usize)?;
    let data_len = c.args[3] as usize;
    if !data_len.is_multiple_of(8) || data_len > 12 * 8 {
        return Ok((-22i64) as u64);
    }
    let data = read(c, c.args[2], data_len)?;
    let args: Vec<u64> = data
        .chunks(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect();
    emit(c, &fmt, &args)
}

fn emit(c: &mut Ctx, fmt: &[u8], args: &[u64]) -> Ret {
    let fmt = fmt.split(|&b| b == 0).next().unwrap_or(&[]);
    let text = format(c, fmt, args)?;
    let n = text.len() as u64;
    c.env.trace.push(text.trim_end_matches('\n').to_string());
    Ok(n)
}

/// The kernel's `bstr_printf` subset: `%d %i %u %x %X %o %c %s %p %%`
/// with `l`/`ll`/`h` length modifiers, widths and `-`/`0` flags.
fn format(c: &Ctx, fmt: &[u8], args: &[u64]) -> Result<String, HelperError> {
    let mut out = String::new();
    let mut next = args.iter().copied();
    let mut i = 0;
    while i < fmt.len() {
        let ch = fmt[i];
        i += 1;
        if ch != b'%' {
            out.push(ch as char);
            continue;
        }
        let (mut left, mut zero, mut width) = (false, false, 0usize);
        while i < fmt.len() && matches!(fmt[i], b'-' | b'0') {
            left |= fmt[i] == b'-';
            zero |= fmt[i] == b'0';
            i += 1;
        }
        while i < fmt.len() && fmt[i].is_ascii_digit() {
            width = width * 10 + usize::from(fmt[i] - b'0');
            i += 1;
        }
        let mut long = 0;
        while i < fmt.len() && matches!(fmt[i], b'l' | b'h' | b'z') {
            if fmt[i] == b'l' {
                long += 1;
            }
            i += 1;
        }
        let Some(&conv) = fmt.get(i) else {
            return Err(HelperError("format string ends inside a conversion".into()));
        };
        i += 1;
        let mut take = || {
            next.next()
                .ok_or_else(|| HelperError("more conversions than arguments".into()))
        };
        let body = match conv {
            b'%' => "%".to_string(),
            b'd' | b'i' => {
                let v = take()?;
                if long >= 1 {
                    (v as i64).to_string()
                } else {
                    (v as i32).to_string()
                }
            }
            b'u' => {
                let v = take()?;
                if long >= 1 {
                    v.to_string()
                } else {
                    (v as u32).to_string()
                }
            }
            b'x' | b'X' => {
                let v = take()?;
                let v = if long >= 1 { v } else { u64::from(v as u32) };
                if conv == b'x' {
                    format!("{v:x}")
                } else {
                    format!("{v:X}")
                }
            }
            b'o' => format!("{:o}", take()?),
            b'c' => char::from(take()? as u8).to_string(),
            b'p' => {
                // %pI4 / %pi4 etc. print addresses; plain %p a pointer.
                let v = take()?;
                match fmt.get(i) {
                    Some(b'I' | b'i') if fmt.get(i + 1) == Some(&b'4') => {
                        i += 2;
                        let b = c.mem.read(v, 4)?;
                        format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
                    }
                    _ => format!("0x{v:016x}"),
                }
            }
            b's' => {
                let addr = take()?;
                let mut s = Vec::new();
                for k in 0..MAX_STR as u64 {
                    match c.mem.read(addr + k, 1) {
                        Ok([0]) | Err(_) => break,
                        Ok(b) => s.push(b[0]),
                    }
                }
                String::from_utf8_lossy(&s).into_owned()
            }
            other => {
                return Err(HelperError(format!(
                    "unsupported conversion %{}",
                    other as char
                )));
            }
        };
        let pad = width.saturating_sub(body.len());
        if left {
            out.push_str(&body);
            out.extend(std::iter::repeat_n(' ', pad));
        } else {
            let fill = if zero && conv != b's' { '0' } else { ' ' };
            out.extend(std::iter::repeat_n(fill, pad));
            out.push_str(&body);
        }
    }
    Ok(out)
}
