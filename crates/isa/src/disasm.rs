//! [`Insn`]s to text, in the syntax of the BPF conformance suite
//! (`mov32 %r0, 0`, `ldxh %r2, [%r1+12]`, `jeq %r1, 0x800, +3`). Whatever
//! this prints, [`crate::assemble`] reads back to the same bytes.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use crate::helpers::helper_name;
use crate::insn::*;

/// Formats an immediate: small values and negative values in decimal,
/// large positive values in hex.
pub fn fmt_imm(v: i64) -> String {
    if (-1024..1024).contains(&v) || v < 0 {
        v.to_string()
    } else {
        format!("{v:#x}")
    }
}

fn fmt_u64(v: u64) -> String {
    if v < 1024 {
        v.to_string()
    } else {
        format!("{v:#x}")
    }
}

/// A relative jump offset with its sign, e.g. `+3` or `-1`.
pub fn fmt_offset(off: i64) -> String {
    if off < 0 {
        off.to_string()
    } else {
        format!("+{off}")
    }
}

fn fmt_mem(base: crate::Reg, off: i16) -> String {
    match off {
        0 => format!("[{base}]"),
        o if o < 0 => format!("[{base}{o}]"),
        o => format!("[{base}+{o}]"),
    }
}

fn width_suffix(width: Width) -> &'static str {
    match width {
        Width::W32 => "32",
        Width::W64 => "",
    }
}

fn fmt_operand(src: Operand) -> String {
    match src {
        Operand::Reg(r) => r.to_string(),
        Operand::Imm(i) => fmt_imm(i.into()),
    }
}

/// Writes `insn`, spelling its branch target as `target` when given (a
/// label) and as a relative offset otherwise.
pub fn write_insn(out: &mut impl Write, insn: &Insn, target: Option<&str>) -> fmt::Result {
    let tgt = |off: i64| target.map_or_else(|| fmt_offset(off), str::to_string);
    match *insn {
        Insn::Alu {
            width,
            op,
            dst,
            src,
        } => {
            if op.is_movsx() {
                let to = if width == Width::W32 { "32" } else { "64" };
                write!(out, "{}{to} {dst}, {}", op.mnemonic(), fmt_operand(src))
            } else {
                let w = width_suffix(width);
                write!(out, "{}{w} {dst}, {}", op.mnemonic(), fmt_operand(src))
            }
        }
        Insn::Neg { width, dst } => write!(out, "neg{} {dst}", width_suffix(width)),
        Insn::Endian { order, bits, dst } => {
            let name = match order {
                Endian::Le => "le",
                Endian::Be => "be",
                Endian::Swap => "bswap",
            };
            write!(out, "{name}{bits} {dst}")
        }
        Insn::Ja { off } => write!(out, "ja {}", tgt(off.into())),
        Insn::Ja32 { off } => write!(out, "ja32 {}", tgt(off.into())),
        Insn::Jmp {
            width,
            cond,
            dst,
            src,
            off,
        } => write!(
            out,
            "{}{} {dst}, {}, {}",
            cond.mnemonic(),
            width_suffix(width),
            fmt_operand(src),
            tgt(off.into())
        ),
        Insn::Call(CallTarget::Helper(id)) => write!(out, "call {}", fmt_imm(id.into())),
        Insn::Call(CallTarget::Local(off)) => write!(out, "call local {}", tgt(off.into())),
        Insn::Call(CallTarget::Kfunc { btf_id, btf_fd_idx }) => {
            write!(out, "call kfunc {}", fmt_imm(btf_id.into()))?;
            if btf_fd_idx != 0 {
                write!(out, ", {btf_fd_idx}")?;
            }
            Ok(())
        }
        Insn::Callx { reg } => write!(out, "callx {reg}"),
        Insn::Exit => write!(out, "exit"),
        Insn::Lddw { dst, value } => {
            write!(out, "lddw {dst}, ")?;
            match value {
                Lddw::Imm(v) => write!(out, "{}", fmt_u64(v)),
                Lddw::MapFd(fd) => write!(out, "map_fd({fd})"),
                Lddw::MapValue { fd, off } => {
                    write!(out, "map_value({fd}){}", fmt_offset(off.into()))
                }
                Lddw::BtfId { id, btf_fd } => write!(out, "btf_id({id}, {btf_fd})"),
                Lddw::Func(off) => write!(out, "func({})", tgt(off.into())),
                Lddw::MapIdx(idx) => write!(out, "map_idx({idx})"),
                Lddw::MapIdxValue { idx, off } => {
                    write!(out, "map_idx_value({idx}){}", fmt_offset(off.into()))
                }
            }
        }
        Insn::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            let s = if signed { "s" } else { "" };
            write!(out, "ldx{s}{} {dst}, {}", size.suffix(), fmt_mem(src, off))
        }
        Insn::Store {
            size,
            dst,
            off,
            src,
        } => {
            let x = if matches!(src, Operand::Reg(_)) {
                "x"
            } else {
                ""
            };
            write!(
                out,
                "st{x}{} {}, {}",
                size.suffix(),
                fmt_mem(dst, off),
                fmt_operand(src)
            )
        }
        Insn::Atomic {
            size,
            op,
            fetch,
            dst,
            src,
            off,
        } => {
            let fetch = if fetch && !op.always_fetches() {
                "fetch "
            } else {
                ""
            };
            let w = if size == Size::W { "32" } else { "" };
            write!(
                out,
                "lock {fetch}{}{w} {}, {src}",
                op.mnemonic(),
                fmt_mem(dst, off)
            )
        }
        Insn::LdAbs { size, imm } => write!(out, "ldabs{} {}", size.suffix(), fmt_imm(imm.into())),
        Insn::LdInd { size, src, imm } => {
            write!(out, "ldind{} {src}, {}", size.suffix(), fmt_imm(imm.into()))
        }
    }
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        write_insn(&mut s, self, None)?;
        f.pad(&s)
    }
}

/// How [`listing`] lays out a program.
#[derive(Clone, Debug, Default)]
pub struct ListingOptions {
    /// Name branch targets with labels (`L12:`) instead of relative offsets.
    pub labels: bool,
    /// Append `# pc: bytes` and helper names as comments.
    pub annotate: bool,
}

/// One line of a listing, for callers that want structure (`--json`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedInsn {
    pub pc: usize,
    pub bytes: Vec<u8>,
    pub text: String,
    /// Name of the helper a `call` invokes, when known.
    pub helper: Option<String>,
}

/// Disassembles each instruction with its slot index and bytes, branch
/// targets as relative offsets.
pub fn list(insns: &[Insn]) -> Vec<ListedInsn> {
    with_pcs(insns)
        .map(|(pc, insn)| {
            let mut bytes = Vec::new();
            insn.encode_into(&mut bytes);
            ListedInsn {
                pc,
                bytes,
                text: insn.to_string(),
                helper: called_helper(insn),
            }
        })
        .collect()
}

fn called_helper(insn: &Insn) -> Option<String> {
    match insn {
        Insn::Call(CallTarget::Helper(id)) => helper_name((*id).into()),
        _ => None,
    }
}

/// The slot a branch at `pc` lands on, if it lands inside `0..len`.
pub fn branch_target(pc: usize, insn: &Insn, len: usize) -> Option<usize> {
    let off = insn.branch_offset()?;
    let t = pc as i64 + 1 + off;
    (0..len as i64).contains(&t).then_some(t as usize)
}

/// A program as assembly text that re-assembles to the same bytes.
pub fn listing(insns: &[Insn], opts: &ListingOptions) -> String {
    let len = slot_count(insns);
    let mut labels = BTreeMap::new();
    if opts.labels {
        // Only instruction starts can carry a label; a branch into the
        // second half of an lddw keeps its relative offset.
        let starts: std::collections::BTreeSet<usize> = with_pcs(insns).map(|(pc, _)| pc).collect();
        for (pc, insn) in with_pcs(insns) {
            if let Some(t) = branch_target(pc, insn, len).filter(|t| starts.contains(t)) {
                labels.insert(t, format!("L{t}"));
            }
        }
    }
    let mut out = String::new();
    for (pc, insn) in with_pcs(insns) {
        if let Some(label) = labels.get(&pc) {
            let _ = writeln!(out, "{label}:");
        }
        let target = branch_target(pc, insn, len).and_then(|t| labels.get(&t));
        let mut line = String::from("    ");
        let _ = write_insn(&mut line, insn, target.map(String::as_str));
        if opts.annotate {
            let mut bytes = Vec::new();
            insn.encode_into(&mut bytes);
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            let pad = 40usize.saturating_sub(line.len());
            let _ = write!(line, "{:pad$} # {pc:>4}: {}", "", hex.join(" "));
            if let Some(name) = called_helper(insn) {
                let _ = write!(line, "  {name}");
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}
