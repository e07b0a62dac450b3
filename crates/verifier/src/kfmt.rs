//! Instructions in the kernel verifier log's syntax (`r0 = *(u32 *)(r1 +4)`,
//! `if r2 > r3 goto pc+5`, `w1 += 2`), so a sluice log reads like the
//! kernel's.

use isa::{AluOp, AtomicOp, CallTarget, Cond, Endian, Insn, Lddw, Operand, Size, Width};

fn reg(r: isa::Reg, width: Width) -> String {
    match width {
        Width::W64 => format!("r{}", r.number()),
        Width::W32 => format!("w{}", r.number()),
    }
}

fn operand(o: Operand, width: Width) -> String {
    match o {
        Operand::Reg(r) => reg(r, width),
        Operand::Imm(i) => i.to_string(),
    }
}

fn size_name(s: Size) -> &'static str {
    match s {
        Size::B => "u8",
        Size::H => "u16",
        Size::W => "u32",
        Size::DW => "u64",
    }
}

fn mem(base: isa::Reg, off: i16) -> String {
    if off < 0 {
        format!("(r{} {})", base.number(), off)
    } else {
        format!("(r{} +{})", base.number(), off)
    }
}

fn alu_op(op: AluOp) -> &'static str {
    match op {
        AluOp::Add => "+=",
        AluOp::Sub => "-=",
        AluOp::Mul => "*=",
        AluOp::Div => "/=",
        AluOp::SDiv => "s/=",
        AluOp::Or => "|=",
        AluOp::And => "&=",
        AluOp::Lsh => "<<=",
        AluOp::Rsh => ">>=",
        AluOp::Mod => "%=",
        AluOp::SMod => "s%=",
        AluOp::Xor => "^=",
        AluOp::Mov | AluOp::MovSx8 | AluOp::MovSx16 | AluOp::MovSx32 => "=",
        AluOp::Arsh => "s>>=",
    }
}

/// The kernel's spelling of an ALU operator in messages (`bpf_alu_string`).
pub fn alu_string(op: AluOp) -> &'static str {
    match op {
        AluOp::SDiv => "/=",
        AluOp::SMod => "%=",
        o => alu_op(o),
    }
}

fn cond_op(c: Cond) -> &'static str {
    match c {
        Cond::Eq => "==",
        Cond::Gt => ">",
        Cond::Ge => ">=",
        Cond::Set => "&",
        Cond::Ne => "!=",
        Cond::Sgt => "s>",
        Cond::Sge => "s>=",
        Cond::Lt => "<",
        Cond::Le => "<=",
        Cond::Slt => "s<",
        Cond::Sle => "s<=",
    }
}

/// `insn` as the kernel's log prints it.
pub fn insn(insn: &Insn) -> String {
    match *insn {
        Insn::Alu {
            width,
            op,
            dst,
            src,
        } => {
            let src = match op {
                AluOp::MovSx8 => format!("(s8){}", operand(src, width)),
                AluOp::MovSx16 => format!("(s16){}", operand(src, width)),
                AluOp::MovSx32 => format!("(s32){}", operand(src, width)),
                _ => operand(src, width),
            };
            format!("{} {} {}", reg(dst, width), alu_op(op), src)
        }
        Insn::Neg { width, dst } => format!("{} = -{}", reg(dst, width), reg(dst, width)),
        Insn::Endian { order, bits, dst } => {
            let name = match order {
                Endian::Le => "le",
                Endian::Be => "be",
                Endian::Swap => "bswap",
            };
            format!("r{} = {name}{bits} r{}", dst.number(), dst.number())
        }
        Insn::Ja { off } => format!("goto pc{off:+}"),
        Insn::Ja32 { off } => format!("gotol pc{off:+}"),
        Insn::Jmp {
            width,
            cond,
            dst,
            src,
            off,
        } => format!(
            "if {} {} {} goto pc{off:+}",
            reg(dst, width),
            cond_op(cond),
            operand(src, width)
        ),
        Insn::Call(CallTarget::Helper(id)) => match isa::helper_name(id.into()) {
            Some(n) => format!("call {n}#{id}"),
            None => format!("call unknown#{id}"),
        },
        Insn::Call(CallTarget::Local(off)) => format!("call pc{off:+}"),
        Insn::Call(CallTarget::Kfunc { btf_id, .. }) => format!("call kernel-function#{btf_id}"),
        Insn::Callx { reg: r } => format!("callx r{}", r.number()),
        Insn::Exit => "exit".into(),
        Insn::Lddw { dst, value } => {
            let v = match value {
                Lddw::Imm(v) => format!("{v:#x}"),
                Lddw::MapFd(fd) => format!("map[fd:{fd}]"),
                Lddw::MapValue { fd, off } => format!("map[fd:{fd}][0]+{off}"),
                Lddw::BtfId { id, .. } => format!("btf_id[{id}]"),
                Lddw::Func(off) => format!("func pc{off:+}"),
                Lddw::MapIdx(i) => format!("map[idx:{i}]"),
                Lddw::MapIdxValue { idx, off } => format!("map[idx:{idx}][0]+{off}"),
            };
            format!("r{} = {v} ll", dst.number())
        }
        Insn::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            let t = size_name(size);
            let t = if signed {
                t.replace('u', "s")
            } else {
                t.into()
            };
            format!("r{} = *({t} *){}", dst.number(), mem(src, off))
        }
        Insn::Store {
            size,
            dst,
            off,
            src,
        } => format!(
            "*({} *){} = {}",
            size_name(size),
            mem(dst, off),
            operand(src, Width::W64)
        ),
        Insn::Atomic {
            size,
            op,
            fetch,
            dst,
            src,
            off,
        } => {
            let w = if size == Size::DW {
                Width::W64
            } else {
                Width::W32
            };
            let m = format!("*({} *){}", size_name(size), mem(dst, off));
            let s = reg(src, w);
            match op {
                AtomicOp::CmpXchg => format!("r0 = atomic_cmpxchg({m}, r0, {s})"),
                AtomicOp::Xchg => format!("{s} = atomic_xchg({m}, {s})"),
                _ if fetch => format!("{s} = atomic_fetch_{}({m}, {s})", op.mnemonic()),
                _ => format!("lock {m} {}= {s}", op_char(op)),
            }
        }
        Insn::LdAbs { size, imm } => format!("r0 = *({} *)skb[{imm}]", size_name(size)),
        Insn::LdInd { size, src, imm } => format!(
            "r0 = *({} *)skb[r{} + {imm}]",
            size_name(size),
            src.number()
        ),
    }
}

fn op_char(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Add => "+",
        AtomicOp::Or => "|",
        AtomicOp::And => "&",
        AtomicOp::Xor => "^",
        _ => "?",
    }
}

/// The instruction starting at slot `slot`, as the log shows it:
/// `(61) r0 = *(u32 *)(r1 +0)`.
pub fn insn_at(insns: &[Insn], slot: usize) -> Option<String> {
    let mut s = 0;
    for i in insns {
        if s == slot {
            return Some(format!("({:02x}) {}", opcode(i), insn(i)));
        }
        s += i.slots();
    }
    None
}

/// The opcode byte, as the log shows it in parentheses.
pub fn opcode(i: &Insn) -> u8 {
    i.to_raw().0[0].code
}
