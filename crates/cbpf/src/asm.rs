//! The Linux `bpf_asm` syntax (`tools/bpf/bpf_asm`), after McCanne and
//! Jacobson's paper: a line is `[label:] mnemonic operands`, `;` starts a
//! comment; jumps name labels, which must lie ahead (`jeq #0x800, ip,
//! drop`; with one label the false branch falls through; `jneq`, `jlt`
//! and `jle` name only their false target). Operands: `#k`, `M[k]`, `[k]`,
//! `[x + k]`, `4*([k]&0xf)`, `x`, `a`, `#len`, and Linux's ancillary
//! fields by name (`ld #proto`, `ldb #vlan_avail`...). Numbers are
//! decimal, `0x` hex, `0` octal or `0b` binary, optionally negative.
//!
//! ```
//! let prog = cbpf::assemble("ldh [12]\njneq #0x800, drop\nret #-1\ndrop: ret #0").unwrap();
//! assert_eq!(prog.len(), 4);
//! assert_eq!(cbpf::image_line(&prog[1], 1), "(001) jeq      #0x800           jt 2\tjf 3");
//! ```

use std::collections::HashMap;

use crate::insn::{Insn, ancillary, class, misc, mode, op, rval, size, src, xpf};

/// Why text is not a program, and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub struct AsmError {
    pub line: usize,
    pub why: String,
}

/// A jump's label, to be resolved once every label is known.
enum Target<'a> {
    None,
    Label(&'a str),
}

struct Pending<'a> {
    line: usize,
    insn: Insn,
    /// For `ja`: `k`; for conditionals: the true and false targets.
    k: Target<'a>,
    jt: Target<'a>,
    jf: Target<'a>,
}

fn number(s: &str) -> Option<u32> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse::<u64>().ok()?
    };
    if neg {
        let v = i64::try_from(v).ok()?.checked_neg()?;
        (v >= i64::from(i32::MIN)).then_some(v as i32 as u32)
    } else {
        u32::try_from(v).ok()
    }
}

/// `#n` or `n`.
fn immediate(s: &str) -> Option<u32> {
    number(s.strip_prefix('#').unwrap_or(s))
}

/// `x` or `%x` (and `a`, `%a`).
fn is_reg(s: &str, r: char) -> bool {
    let s = s.strip_prefix('%').unwrap_or(s);
    s.len() == 1 && s.starts_with(r)
}

/// An ancillary field by `bpf_asm`'s name (`#proto`, `vlan_avail`...).
fn extension(s: &str) -> Option<u32> {
    let name = s.strip_prefix('#').unwrap_or(s);
    let name = match name {
        "vlan_pr" => "vlan_avail",
        "random" => "rand",
        n => n,
    };
    ancillary::NAMES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, off)| ancillary::AD_OFF + off)
        .or_else(|| {
            xpf::TIME_NAMES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|&(_, k)| k)
        })
}

fn is_len(s: &str) -> bool {
    matches!(s, "#len" | "#pktlen" | "len" | "pktlen")
}

/// The inside of `[...]`: `k` (absolute) or `x + k` (indirect).
fn bracket(s: &str) -> Option<(bool, u32)> {
    let inner = s.strip_prefix('[')?.strip_suffix(']')?.trim();
    match inner.split_once('+') {
        Some((r, k)) if is_reg(r.trim(), 'x') => Some((true, number(k.trim())?)),
        Some(_) => None,
        None => Some((false, number(inner)?)),
    }
}

/// `M[k]`.
fn scratch(s: &str) -> Option<u32> {
    number(s.strip_prefix("M[")?.strip_suffix(']')?.trim())
}

/// `M[x + k]` (xPF's indexed mode).
fn indexed(s: &str) -> Option<u32> {
    let inner = s.strip_prefix("M[")?.strip_suffix(']')?;
    let (r, k) = inner.split_once('+')?;
    is_reg(r.trim(), 'x').then_some(())?;
    number(k.trim())
}

/// `4*([k]&0xf)`.
fn msh(s: &str) -> Option<u32> {
    let s: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    let inner = s.strip_prefix("4*([")?.strip_suffix("]&0xf)")?;
    number(inner)
}

/// Assembles `text` in `bpf_asm` syntax.
pub fn assemble(text: &str) -> Result<Vec<Insn>, AsmError> {
    assemble_with(text, false)
}

/// Assembles an xPF program: `bpf_asm` syntax plus `bss`, `bsp`, `exc`,
/// the indexed operand `M[x + k]` and `ja` to a label behind.
pub fn assemble_xpf(text: &str) -> Result<Vec<Insn>, AsmError> {
    assemble_with(text, true)
}

fn assemble_with(text: &str, xpf: bool) -> Result<Vec<Insn>, AsmError> {
    let mut pending: Vec<Pending> = Vec::new();
    let mut labels: HashMap<&str, usize> = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let err = |why: String| AsmError { line, why };
        let mut rest = raw.split(';').next().unwrap_or("").trim();
        if let Some((label, after)) = rest.split_once(':')
            && !label.contains(char::is_whitespace)
            && !label.is_empty()
            && !label.contains('[')
        {
            if labels.insert(label, pending.len()).is_some() {
                return Err(err(format!("label `{label}` defined twice")));
            }
            rest = after.trim();
        }
        if rest.is_empty() {
            continue;
        }
        let (mnemonic, operands) = match rest.split_once(char::is_whitespace) {
            Some((m, o)) => (m, o.trim()),
            None => (rest, ""),
        };
        let ops: Vec<&str> = if operands.is_empty() {
            Vec::new()
        } else {
            operands.split(',').map(str::trim).collect()
        };
        let p = parse(mnemonic, &ops, xpf).map_err(err)?;
        pending.push(Pending { line, ..p });
    }
    let resolve = |t: &Target, at: usize, line: usize| -> Result<Option<usize>, AsmError> {
        match t {
            Target::None => Ok(None),
            Target::Label(l) => {
                let to = *labels.get(l).ok_or_else(|| AsmError {
                    line,
                    why: format!("no label `{l}`"),
                })?;
                if to <= at && xpf {
                    return Err(AsmError {
                        line,
                        why: format!(
                            "`{l}` is behind: only `ja` jumps back in xPF (branch forward, then `ja` back)"
                        ),
                    });
                }
                if to <= at {
                    return Err(AsmError {
                        line,
                        why: format!("`{l}` is not ahead: classic BPF jumps forward only"),
                    });
                }
                Ok(Some(to - at - 1))
            }
        }
    };
    let mut out = Vec::with_capacity(pending.len());
    for (at, p) in pending.iter().enumerate() {
        let mut insn = p.insn;
        if let Target::Label(l) = p.k
            && xpf
            && labels.get(l).is_some_and(|&to| to <= at)
        {
            // A backward `ja`: `k` negative as an i32.
            insn.k = (labels[l] as i64 - at as i64 - 1) as i32 as u32;
        } else if let Some(d) = resolve(&p.k, at, p.line)? {
            insn.k = d as u32;
        }
        let small = |d: usize| {
            u8::try_from(d).map_err(|_| AsmError {
                line: p.line,
                why: format!("a conditional jump reaches {d} ahead, over 255"),
            })
        };
        if let Some(d) = resolve(&p.jt, at, p.line)? {
            insn.jt = small(d)?;
        }
        if let Some(d) = resolve(&p.jf, at, p.line)? {
            insn.jf = small(d)?;
        }
        out.push(insn);
    }
    Ok(out)
}

/// One instruction from its mnemonic and operands.
fn parse<'a>(mnemonic: &str, ops: &[&'a str], xpf: bool) -> Result<Pending<'a>, String> {
    let plain = |code: u16, k: u32| Pending {
        line: 0,
        insn: Insn::stmt(code, k),
        k: Target::None,
        jt: Target::None,
        jf: Target::None,
    };
    let bad = || format!("`{mnemonic} {}`: operands not understood", ops.join(", "));
    let one = || -> Result<&'a str, String> {
        match ops {
            [o] => Ok(o),
            _ => Err(format!("`{mnemonic}` takes one operand")),
        }
    };
    let load = |sz: u16| -> Result<Pending<'a>, String> {
        let o = one()?;
        if let Some(k) = extension(o) {
            return Ok(plain(class::LD | sz | mode::ABS, k));
        }
        match bracket(o) {
            Some((true, k)) => Ok(plain(class::LD | sz | mode::IND, k)),
            Some((false, k)) => Ok(plain(class::LD | sz | mode::ABS, k)),
            None => Err(bad()),
        }
    };
    let alu = |o: u16| -> Result<Pending<'a>, String> {
        let v = one()?;
        if is_reg(v, 'x') {
            Ok(plain(class::ALU | o | src::X, 0))
        } else {
            immediate(v)
                .filter(|_| v.starts_with('#'))
                .map(|k| plain(class::ALU | o | src::K, k))
                .ok_or_else(bad)
        }
    };
    // Conditional jumps: `(code, k)` and the labels.
    let jump = |o: u16, only_false: bool| -> Result<Pending<'a>, String> {
        let (v, labels) = ops.split_first().ok_or_else(bad)?;
        let (s, k) = if is_reg(v, 'x') {
            (src::X, 0)
        } else {
            let k = immediate(v)
                .filter(|_| v.starts_with('#'))
                .ok_or_else(bad)?;
            (src::K, k)
        };
        let mut p = plain(class::JMP | o | s, k);
        match (labels, only_false) {
            ([f], true) => p.jf = Target::Label(f),
            ([t], false) => p.jt = Target::Label(t),
            ([t, f], false) => {
                p.jt = Target::Label(t);
                p.jf = Target::Label(f);
            }
            _ => return Err(bad()),
        }
        Ok(p)
    };
    match mnemonic {
        "ldb" => load(size::B),
        "ldh" => load(size::H),
        "ld" | "ldx" | "st" | "stx" if ops.len() == 1 && indexed(ops[0]).is_some() => {
            if !xpf {
                return Err(format!(
                    "`{mnemonic} {}` is xPF's indexed mode: assemble it as xPF (`sluice xpf asm`)",
                    ops[0]
                ));
            }
            let code = match mnemonic {
                "ld" => xpf::LD_NDX,
                "ldx" => xpf::LDX_NDX,
                "st" => xpf::ST_NDX,
                _ => xpf::STX_NDX,
            };
            Ok(plain(code, indexed(ops[0]).unwrap_or(0)))
        }
        "bss" | "bsp" | "exc" if !xpf => Err(format!(
            "`{mnemonic}` is an xPF instruction: assemble it as xPF (`sluice xpf asm`)"
        )),
        "bss" if ops.is_empty() => Ok(plain(xpf::BSS, 0)),
        "bsp" if ops.is_empty() => Ok(plain(xpf::BSP, 0)),
        "exc" if ops.is_empty() => Ok(plain(xpf::EXC, 0)),
        "bss" | "bsp" | "exc" => Err(format!("`{mnemonic}` takes no operand")),
        "ld" => {
            let o = one()?;
            if is_len(o) {
                Ok(plain(class::LD | size::W | mode::LEN, 0))
            } else if let Some(k) = scratch(o) {
                Ok(plain(class::LD | mode::MEM, k))
            } else if let Some(k) = extension(o) {
                Ok(plain(class::LD | size::W | mode::ABS, k))
            } else if o.starts_with('#') {
                immediate(o)
                    .map(|k| plain(class::LD | mode::IMM, k))
                    .ok_or_else(bad)
            } else {
                load(size::W)
            }
        }
        "ldi" => immediate(one()?)
            .map(|k| plain(class::LD | mode::IMM, k))
            .ok_or_else(bad),
        "ldx" | "ldxb" | "ldxi" => {
            let o = one()?;
            if mnemonic == "ldxi" {
                immediate(o)
                    .map(|k| plain(class::LDX | mode::IMM, k))
                    .ok_or_else(bad)
            } else if let Some(k) = msh(o) {
                Ok(plain(class::LDX | size::B | mode::MSH, k))
            } else if mnemonic == "ldxb" {
                Err(bad())
            } else if is_len(o) {
                Ok(plain(class::LDX | size::W | mode::LEN, 0))
            } else if let Some(k) = scratch(o) {
                Ok(plain(class::LDX | mode::MEM, k))
            } else if o.starts_with('#') {
                immediate(o)
                    .map(|k| plain(class::LDX | mode::IMM, k))
                    .ok_or_else(bad)
            } else {
                Err(bad())
            }
        }
        "st" => scratch(one()?).map(|k| plain(class::ST, k)).ok_or_else(bad),
        "stx" => scratch(one()?)
            .map(|k| plain(class::STX, k))
            .ok_or_else(bad),
        "jmp" | "ja" => {
            let mut p = plain(class::JMP | op::JA, 0);
            p.k = Target::Label(one()?);
            Ok(p)
        }
        "jeq" => jump(op::JEQ, false),
        "jneq" | "jne" => jump(op::JEQ, true),
        "jlt" => jump(op::JGE, true),
        "jle" => jump(op::JGT, true),
        "jgt" => jump(op::JGT, false),
        "jge" => jump(op::JGE, false),
        "jset" => jump(op::JSET, false),
        "add" => alu(op::ADD),
        "sub" => alu(op::SUB),
        "mul" => alu(op::MUL),
        "div" => alu(op::DIV),
        "mod" => alu(op::MOD),
        "and" => alu(op::AND),
        "or" => alu(op::OR),
        "xor" => alu(op::XOR),
        "lsh" => alu(op::LSH),
        "rsh" => alu(op::RSH),
        "neg" if ops.is_empty() => Ok(plain(class::ALU | op::NEG, 0)),
        "tax" if ops.is_empty() => Ok(plain(class::MISC | misc::TAX, 0)),
        "txa" if ops.is_empty() => Ok(plain(class::MISC | misc::TXA, 0)),
        "ret" => {
            let o = one()?;
            if is_reg(o, 'a') {
                Ok(plain(class::RET | rval::A, 0))
            } else if is_reg(o, 'x') {
                // bpf_asm takes it; Linux's checker does not.
                Ok(plain(class::RET | src::X, 0))
            } else {
                immediate(o)
                    .filter(|_| o.starts_with('#'))
                    .map(|k| plain(class::RET | rval::K, k))
                    .ok_or_else(bad)
            }
        }
        "neg" | "tax" | "txa" => Err(format!("`{mnemonic}` takes no operand")),
        m => Err(format!("unknown mnemonic `{m}`")),
    }
}
