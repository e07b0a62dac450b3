//! Assembly text to [`Insn`]s.
//!
//! The syntax is the BPF conformance suite's: one instruction per line,
//! registers `%r0`-`%r10`, memory operands `[%r1+12]`, jump targets as signed
//! offsets (`+3`) or labels (`done:` on a line of its own or before an
//! instruction), comments after `#`, `;` or `//`. The first `exit` is also
//! the label `exit` unless a label of that name exists. Beyond the suite:
//! `call bpf_map_lookup_elem` by helper name, `call kfunc ID`, `callx %rN`,
//! `ldabs*`/`ldind*`, and the `lddw` reference forms `map_fd(N)`,
//! `map_value(N)+OFF`, `btf_id(ID, FD)`, `func(TARGET)`, `map_idx(N)` and
//! `map_idx_value(N)+OFF` that [`crate::disasm`] prints.

use std::collections::HashMap;

use crate::Reg;
use crate::helpers::helper_id;
use crate::insn::*;

/// Why a text does not assemble, and on which line (1-based).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct AsmError {
    pub line: usize,
    pub message: String,
}

type R<T> = Result<T, String>;

/// A branch target as written.
#[derive(Clone, Debug)]
enum Target {
    Rel(i64),
    Label(String),
}

struct Pending {
    line: usize,
    pc: usize,
    insn: Insn,
    target: Option<Target>,
}

/// Assembles a whole program.
pub fn assemble(text: &str) -> Result<Vec<Insn>, AsmError> {
    let mut pending = Vec::new();
    let mut labels: HashMap<String, usize> = HashMap::new();
    let mut first_exit = None;
    let mut pc = 0usize;

    for (idx, raw_line) in text.lines().enumerate() {
        let line = idx + 1;
        let err = |message: String| AsmError { line, message };
        let mut rest = strip_comment(raw_line).trim();
        while let Some((label, after)) = split_label(rest) {
            if labels.insert(label.to_string(), pc).is_some() {
                return Err(err(format!("label `{label}` is defined twice")));
            }
            rest = after.trim();
        }
        if rest.is_empty() {
            continue;
        }
        let (insn, target) = parse_insn(rest).map_err(|m| err(format!("`{rest}`: {m}")))?;
        if insn == Insn::Exit && first_exit.is_none() {
            first_exit = Some(pc);
        }
        let slots = insn.slots();
        pending.push(Pending {
            line,
            pc,
            insn,
            target,
        });
        pc += slots;
    }
    if let Some(exit_pc) = first_exit {
        labels.entry("exit".to_string()).or_insert(exit_pc);
    }

    pending
        .into_iter()
        .map(|p| {
            let Some(target) = p.target else {
                return Ok(p.insn);
            };
            let off = match target {
                Target::Rel(off) => off,
                Target::Label(name) => {
                    let Some(&to) = labels.get(&name) else {
                        return Err(AsmError {
                            line: p.line,
                            message: format!("unknown label `{name}`"),
                        });
                    };
                    to as i64 - (p.pc as i64 + 1)
                }
            };
            with_branch_offset(p.insn, off).map_err(|message| AsmError {
                line: p.line,
                message,
            })
        })
        .collect()
}

fn strip_comment(line: &str) -> &str {
    let cut = [line.find('#'), line.find(';'), line.find("//")]
        .into_iter()
        .flatten()
        .min();
    cut.map_or(line, |i| &line[..i])
}

/// `name: rest` to `(name, rest)` when the line starts with a label.
fn split_label(s: &str) -> Option<(&str, &str)> {
    let colon = s.find(':')?;
    let name = s[..colon].trim_end();
    is_ident(name).then(|| (name, &s[colon + 1..]))
}

fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '.')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// Puts a resolved branch offset into a parsed instruction.
fn with_branch_offset(insn: Insn, off: i64) -> R<Insn> {
    insn.with_branch_offset(off).ok_or_else(|| match insn {
        Insn::Ja { .. } | Insn::Jmp { .. } => {
            format!("jump of {off} slots does not fit the 16-bit offset (use ja32 for far jumps)")
        }
        _ => format!("offset {off} does not fit 32 bits"),
    })
}

/// Splits operands on commas that are not inside parentheses or brackets.
fn split_operands(s: &str) -> Vec<&str> {
    let s = s.trim();
    if s.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(s[start..].trim());
    parts
}

fn expect_n(ops: &[&str], n: usize) -> R<()> {
    if ops.len() == n {
        Ok(())
    } else {
        Err(format!("expects {n} operand(s), found {}", ops.len()))
    }
}

fn parse_insn(text: &str) -> R<(Insn, Option<Target>)> {
    let (mnemonic, rest) = match text.find(char::is_whitespace) {
        Some(i) => (&text[..i], text[i..].trim()),
        None => (text, ""),
    };
    let mnemonic = mnemonic.to_ascii_lowercase();
    let m = mnemonic.as_str();
    let ops = split_operands(rest);
    let plain = |insn: Insn| Ok((insn, None));

    match m {
        "exit" => {
            expect_n(&ops, 0)?;
            return plain(Insn::Exit);
        }
        "lock" => return plain(parse_atomic(rest)?),
        "call" => return parse_call(rest),
        "callx" => {
            expect_n(&ops, 1)?;
            return plain(Insn::Callx { reg: reg(ops[0])? });
        }
        "ja" | "ja32" => {
            expect_n(&ops, 1)?;
            let t = target(ops[0])?;
            let insn = if m == "ja" {
                Insn::Ja { off: 0 }
            } else {
                Insn::Ja32 { off: 0 }
            };
            return Ok((insn, Some(t)));
        }
        "lddw" => {
            expect_n(&ops, 2)?;
            let dst = reg(ops[0])?;
            let (value, t) = lddw_value(ops[1])?;
            return Ok((Insn::Lddw { dst, value }, t));
        }
        "neg" | "neg32" => {
            expect_n(&ops, 1)?;
            let width = if m == "neg" { Width::W64 } else { Width::W32 };
            return plain(Insn::Neg {
                width,
                dst: reg(ops[0])?,
            });
        }
        _ => {}
    }

    if let Some(insn) = parse_endian(m, &ops)? {
        return plain(insn);
    }
    if let Some(insn) = parse_load_store(m, &ops)? {
        return plain(insn);
    }
    if let Some(r) = parse_jump(m, &ops)? {
        return Ok(r);
    }
    if let Some(insn) = parse_alu(m, &ops)? {
        return plain(insn);
    }
    Err(format!("unknown mnemonic `{m}`"))
}

fn split_width(m: &str) -> (&str, Width) {
    match m.strip_suffix("32") {
        Some(base) => (base, Width::W32),
        None => (m, Width::W64),
    }
}

fn parse_alu(m: &str, ops: &[&str]) -> R<Option<Insn>> {
    let (op, width) = if let Some(rest) = m.strip_prefix("movsx") {
        let (from, width) = match rest {
            "832" => (AluOp::MovSx8, Width::W32),
            "1632" => (AluOp::MovSx16, Width::W32),
            "864" => (AluOp::MovSx8, Width::W64),
            "1664" => (AluOp::MovSx16, Width::W64),
            "3264" => (AluOp::MovSx32, Width::W64),
            _ => return Err(
                "sign-extending moves are movsx832, movsx1632, movsx864, movsx1664 and movsx3264"
                    .into(),
            ),
        };
        (from, width)
    } else {
        let (base, width) = split_width(m);
        let Some(op) = AluOp::ALL
            .iter()
            .copied()
            .find(|op| !op.is_movsx() && op.mnemonic() == base)
        else {
            return Ok(None);
        };
        (op, width)
    };
    expect_n(ops, 2)?;
    let src = operand(ops[1])?;
    if op.is_movsx() && !matches!(src, Operand::Reg(_)) {
        return Err("sign-extending moves take a register source".into());
    }
    Ok(Some(Insn::Alu {
        width,
        op,
        dst: reg(ops[0])?,
        src,
    }))
}

fn parse_endian(m: &str, ops: &[&str]) -> R<Option<Insn>> {
    let (order, bits) = if let Some(b) = m.strip_prefix("bswap").or_else(|| m.strip_prefix("swap"))
    {
        (Endian::Swap, b)
    } else if let Some(b) = m.strip_prefix("le") {
        (Endian::Le, b)
    } else if let Some(b) = m.strip_prefix("be") {
        (Endian::Be, b)
    } else {
        return Ok(None);
    };
    let bits = match bits {
        "16" => 16,
        "32" => 32,
        "64" => 64,
        _ => return Ok(None),
    };
    expect_n(ops, 1)?;
    Ok(Some(Insn::Endian {
        order,
        bits,
        dst: reg(ops[0])?,
    }))
}

fn size_from_suffix(s: &str) -> Option<Size> {
    Size::ALL.into_iter().find(|size| size.suffix() == s)
}

fn parse_load_store(m: &str, ops: &[&str]) -> R<Option<Insn>> {
    if let Some(rest) = m.strip_prefix("ldabs") {
        let Some(size) = size_from_suffix(rest).filter(|s| *s != Size::DW) else {
            return Ok(None);
        };
        expect_n(ops, 1)?;
        return Ok(Some(Insn::LdAbs {
            size,
            imm: imm32(ops[0])?,
        }));
    }
    if let Some(rest) = m.strip_prefix("ldind") {
        let Some(size) = size_from_suffix(rest).filter(|s| *s != Size::DW) else {
            return Ok(None);
        };
        expect_n(ops, 2)?;
        return Ok(Some(Insn::LdInd {
            size,
            src: reg(ops[0])?,
            imm: imm32(ops[1])?,
        }));
    }
    if let Some(rest) = m.strip_prefix("ldx") {
        let (signed, rest) = match rest.strip_prefix('s') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let Some(size) = size_from_suffix(rest).filter(|s| !(signed && *s == Size::DW)) else {
            return Ok(None);
        };
        expect_n(ops, 2)?;
        let (src, off) = mem(ops[1])?;
        return Ok(Some(Insn::Load {
            size,
            signed,
            dst: reg(ops[0])?,
            src,
            off,
        }));
    }
    if let Some(rest) = m.strip_prefix("st") {
        let (is_reg, rest) = match rest.strip_prefix('x') {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let Some(size) = size_from_suffix(rest) else {
            return Ok(None);
        };
        expect_n(ops, 2)?;
        let (dst, off) = mem(ops[0])?;
        let src = if is_reg {
            Operand::Reg(reg(ops[1])?)
        } else {
            Operand::Imm(imm32(ops[1])?)
        };
        return Ok(Some(Insn::Store {
            size,
            dst,
            off,
            src,
        }));
    }
    Ok(None)
}

fn parse_jump(m: &str, ops: &[&str]) -> R<Option<(Insn, Option<Target>)>> {
    let (base, width) = split_width(m);
    let Some(cond) = Cond::ALL.into_iter().find(|c| c.mnemonic() == base) else {
        return Ok(None);
    };
    expect_n(ops, 3)?;
    let insn = Insn::Jmp {
        width,
        cond,
        dst: reg(ops[0])?,
        src: operand(ops[1])?,
        off: 0,
    };
    Ok(Some((insn, Some(target(ops[2])?))))
}

fn parse_call(rest: &str) -> R<(Insn, Option<Target>)> {
    let (kind, arg) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    match kind {
        "local" => Ok((Insn::Call(CallTarget::Local(0)), Some(target(arg)?))),
        "helper" => Ok((Insn::Call(CallTarget::Helper(helper(arg)?)), None)),
        "kfunc" => {
            let ops = split_operands(arg);
            let btf_fd_idx = match ops.len() {
                1 => 0,
                2 => offset16(ops[1])?,
                _ => return Err("call kfunc takes a BTF id and an optional BTF fd index".into()),
            };
            Ok((
                Insn::Call(CallTarget::Kfunc {
                    btf_id: imm32(ops[0])?,
                    btf_fd_idx,
                }),
                None,
            ))
        }
        _ if !arg.is_empty() => Err(format!("unknown call kind `{kind}` (helper, local, kfunc)")),
        _ if looks_like_reg(kind) => Ok((Insn::Callx { reg: reg(kind)? }, None)),
        _ => Ok((Insn::Call(CallTarget::Helper(helper(kind)?)), None)),
    }
}

/// A helper by number or by name (`bpf_map_lookup_elem`).
fn helper(s: &str) -> R<i32> {
    if let Some(id) = helper_id(s) {
        return Ok(id as i32);
    }
    imm32(s).map_err(|_| format!("`{s}` is neither a helper id nor a known helper name"))
}

fn parse_atomic(rest: &str) -> R<Insn> {
    let (fetch, rest) = match rest.strip_prefix("fetch") {
        Some(r) if r.starts_with(char::is_whitespace) => (true, r.trim_start()),
        _ => (false, rest),
    };
    let (name, operands) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => return Err("lock needs an operation and two operands".into()),
    };
    let (base, width) = split_width(name);
    let op = AtomicOp::ALL
        .into_iter()
        .find(|op| op.mnemonic() == base)
        .ok_or_else(|| format!("unknown atomic operation `{name}`"))?;
    let ops = split_operands(operands);
    expect_n(&ops, 2)?;
    let (dst, off) = mem(ops[0])?;
    Ok(Insn::Atomic {
        size: if width == Width::W32 {
            Size::W
        } else {
            Size::DW
        },
        op,
        fetch: fetch || op.always_fetches(),
        dst,
        src: reg(ops[1])?,
        off,
    })
}

fn lddw_value(s: &str) -> R<(Lddw, Option<Target>)> {
    let Some(open) = s.find('(') else {
        return Ok((Lddw::Imm(imm64(s)?), None));
    };
    let close = s
        .rfind(')')
        .filter(|&c| c > open)
        .ok_or_else(|| format!("missing `)` after `(` in `{s}`"))?;
    let kind = s[..open].trim();
    let args = split_operands(&s[open + 1..close]);
    let tail = s[close + 1..].trim();
    let extra = if tail.is_empty() { 0 } else { offset32(tail)? };
    let no_tail = || {
        if tail.is_empty() {
            Ok(())
        } else {
            Err(format!("{kind}(..) takes no offset"))
        }
    };
    let one = |args: &[&str]| -> R<i32> {
        expect_n(args, 1)?;
        imm32(args[0])
    };
    let value = match kind {
        "map_fd" => {
            no_tail()?;
            Lddw::MapFd(one(&args)?)
        }
        "map_idx" => {
            no_tail()?;
            Lddw::MapIdx(one(&args)?)
        }
        "map_value" => Lddw::MapValue {
            fd: one(&args)?,
            off: extra,
        },
        "map_idx_value" => Lddw::MapIdxValue {
            idx: one(&args)?,
            off: extra,
        },
        "btf_id" => {
            no_tail()?;
            let btf_fd = match args.len() {
                1 => 0,
                2 => imm32(args[1])?,
                _ => return Err("btf_id(ID[, FD]) takes one or two numbers".into()),
            };
            Lddw::BtfId {
                id: imm32(args[0])?,
                btf_fd,
            }
        }
        "func" => {
            no_tail()?;
            expect_n(&args, 1)?;
            return Ok((Lddw::Func(0), Some(target(args[0])?)));
        }
        _ => return Err(format!("unknown lddw form `{kind}(..)`")),
    };
    Ok((value, None))
}

fn looks_like_reg(s: &str) -> bool {
    let body = s.strip_prefix('%').unwrap_or(s);
    body.len() >= 2 && body.starts_with('r') && body[1..].bytes().all(|b| b.is_ascii_digit())
}

fn reg(s: &str) -> R<Reg> {
    let body = s.trim().strip_prefix('%').unwrap_or(s.trim());
    let n = body
        .strip_prefix('r')
        .and_then(|n| n.parse::<u8>().ok())
        .ok_or_else(|| format!("`{s}` is not a register (%r0-%r10)"))?;
    Reg::new(n).ok_or_else(|| format!("there is no register r{n} (registers are %r0-%r10)"))
}

fn operand(s: &str) -> R<Operand> {
    if looks_like_reg(s) {
        Ok(Operand::Reg(reg(s)?))
    } else {
        Ok(Operand::Imm(imm32(s)?))
    }
}

/// `[%rN]`, `[%rN+OFF]` or `[%rN-OFF]`.
fn mem(s: &str) -> R<(Reg, i16)> {
    let inner = s
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .ok_or_else(|| format!("`{s}` is not a memory operand like [%r1+8]"))?
        .trim();
    match inner.find(['+', '-']) {
        Some(i) => Ok((reg(&inner[..i])?, offset16(&inner[i..])?)),
        None => Ok((reg(inner)?, 0)),
    }
}

fn target(s: &str) -> R<Target> {
    if s.starts_with(['+', '-']) {
        let v = parse_int(s).ok_or_else(|| format!("`{s}` is not a jump offset"))?;
        let v = i64::try_from(v).map_err(|_| format!("jump offset `{s}` is out of range"))?;
        Ok(Target::Rel(v))
    } else if is_ident(s) {
        Ok(Target::Label(s.to_string()))
    } else {
        Err(format!(
            "jump target `{s}` must be a label or a signed offset such as +3"
        ))
    }
}

/// An integer literal: decimal, `0x` hex, `0o` octal or `0b` binary, with an
/// optional sign.
pub fn parse_int(s: &str) -> Option<i128> {
    let s = s.trim();
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, s[1..].trim_start()),
        b'+' => (false, s[1..].trim_start()),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else {
        (10, lower.as_str())
    };
    if digits.is_empty() || digits.len() > 40 {
        return None;
    }
    let v = i128::from_str_radix(digits, radix).ok()?;
    Some(if neg { -v } else { v })
}

/// A 32-bit immediate: a signed or unsigned 32-bit value, or a 64-bit value
/// that is the sign extension of one (as `0xfffffffffffffff6` for -10).
fn imm32(s: &str) -> R<i32> {
    let v = parse_int(s).ok_or_else(|| format!("`{s}` is not a number"))?;
    if (i32::MIN as i128..=u32::MAX as i128).contains(&v) {
        Ok(v as i64 as u32 as i32)
    } else if (0xffff_ffff_8000_0000i128..=u64::MAX as i128).contains(&v) {
        Ok(v as u64 as i64 as i32)
    } else {
        Err(format!("`{s}` does not fit a 32-bit immediate"))
    }
}

fn imm64(s: &str) -> R<u64> {
    let v = parse_int(s).ok_or_else(|| format!("`{s}` is not a number"))?;
    if (i64::MIN as i128..=u64::MAX as i128).contains(&v) {
        Ok(v as u64)
    } else {
        Err(format!("`{s}` does not fit 64 bits"))
    }
}

fn offset16(s: &str) -> R<i16> {
    let v = parse_int(s).ok_or_else(|| format!("`{s}` is not an offset"))?;
    i16::try_from(v).map_err(|_| format!("offset `{s}` does not fit 16 bits"))
}

fn offset32(s: &str) -> R<i32> {
    let v = parse_int(s).ok_or_else(|| format!("`{s}` is not an offset"))?;
    i32::try_from(v).map_err(|_| format!("offset `{s}` does not fit 32 bits"))
}
