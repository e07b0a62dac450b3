//! Classic BPF as eBPF, the way the kernel translates a socket filter
//! (`bpf_convert_filter`), so that a classic filter runs in sluice's VM and
//! JIT, passes its verifier, and loads into the kernel as a socket filter
//! or a tc classifier (program types that have `ld_abs`).
//!
//! The mapping: A is r0, X is r7, r6 holds the context (`ld_abs`/`ld_ind`
//! read the packet through it), r8 is scratch, and `M[k]` is the stack
//! word at `r10 - 4 * (16 - k)`. A and X start at zero. Packet loads
//! become `ld_abs`/`ld_ind`, which end the program with 0 outside the
//! packet, as classic loads do; `ld #pktlen` reads `__sk_buff.len`;
//! arithmetic is 32-bit; a division or modulo by X first checks X and
//! returns 0 when it is zero; jumps compare 32 bits (`jmp32`), so a `k`
//! with the top bit set compares as classic does. Ancillary loads read the
//! `__sk_buff` field the kernel reads (protocol, packet type, ifindex,
//! mark, queue, hash, the VLAN tag), or call the helper (`cpu`, `rand`);
//! those with no field or helper a loaded program may use (`hatype`,
//! `poff`, netlink attributes) are refused by name.

use isa::{AluOp, CallTarget, Cond, Endian, Insn as E, Operand, Reg, Size, Width};

use crate::check::{CheckError, check};
use crate::insn::{Insn, MEMWORDS, ancillary, class, misc, mode, op, rval, size, src};

const A: Reg = Reg::R0;
const X: Reg = Reg::R7;
const CTX: Reg = Reg::R6;
const TMP: Reg = Reg::R8;

/// `__sk_buff` field offsets the translation reads.
mod skb {
    pub const LEN: i16 = 0;
    pub const PKT_TYPE: i16 = 4;
    pub const MARK: i16 = 8;
    pub const QUEUE_MAPPING: i16 = 12;
    pub const PROTOCOL: i16 = 16;
    pub const VLAN_PRESENT: i16 = 20;
    pub const VLAN_TCI: i16 = 24;
    pub const VLAN_PROTO: i16 = 28;
    pub const IFINDEX: i16 = 40;
    pub const HASH: i16 = 68;
}

/// Helper ids.
const GET_PRANDOM_U32: i32 = 7;
const GET_SMP_PROCESSOR_ID: i32 = 8;

/// Why a classic program has no eBPF translation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TranslateError {
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error("insn {insn}: {why}")]
    Unsupported { insn: usize, why: String },
    #[error("the translation is {0} instructions, too far for a 16-bit jump")]
    TooFar(usize),
}

fn alu32(op: AluOp, dst: Reg, src: Operand) -> E {
    E::Alu {
        width: Width::W32,
        op,
        dst,
        src,
    }
}

fn mov32(dst: Reg, src: Operand) -> E {
    alu32(AluOp::Mov, dst, src)
}

fn load_ctx(dst: Reg, off: i16) -> E {
    E::Load {
        size: Size::W,
        signed: false,
        dst,
        src: CTX,
        off,
    }
}

/// The stack offset of `M[k]`.
fn slot(k: u32) -> i16 {
    -4 * (MEMWORDS - k) as i16
}

fn size_of(code: u16) -> Size {
    match code & 0x18 {
        size::H => Size::H,
        size::B => Size::B,
        _ => Size::W,
    }
}

/// A jump to classic instruction `target`, resolved once every classic
/// instruction's position is known.
#[derive(Clone, Copy)]
enum Jump {
    /// `if A <cond> operand goto target`.
    If(Cond, Operand, usize),
    /// `goto target`.
    Goto(usize),
}

enum Out {
    Insn(E),
    Jump(Jump),
}

/// The eBPF instructions of classic instruction `pc`.
fn translate_one(pc: usize, p: &Insn, out: &mut Vec<Out>) -> Result<(), TranslateError> {
    let (c, k) = (p.code, p.k);
    let unsupported = |why: String| TranslateError::Unsupported { insn: pc, why };
    let mut emit = |e: E| out.push(Out::Insn(e));
    let kimm = Operand::Imm(k as i32);
    match c & 0x07 {
        class::LD | class::LDX => {
            let dst = if c & 0x07 == class::LD { A } else { X };
            match c & 0xe0 {
                mode::IMM => emit(mov32(dst, kimm)),
                mode::LEN => emit(load_ctx(dst, skb::LEN)),
                mode::MEM => emit(E::Load {
                    size: Size::W,
                    signed: false,
                    dst,
                    src: Reg::R10,
                    off: slot(k),
                }),
                mode::ABS if k >= ancillary::AD_OFF => {
                    ancillary_load(k - ancillary::AD_OFF, &mut emit)
                        .map_err(|name| unsupported(format!("the ancillary field `{name}` has no eBPF equivalent a loaded program may read")))?;
                }
                mode::ABS => emit(E::LdAbs {
                    size: size_of(c),
                    imm: k as i32,
                }),
                mode::IND => emit(E::LdInd {
                    size: size_of(c),
                    src: X,
                    imm: k as i32,
                }),
                mode::MSH => {
                    // X = 4 * (p[k] & 0xf), A kept.
                    emit(E::Alu {
                        width: Width::W64,
                        op: AluOp::Mov,
                        dst: TMP,
                        src: Operand::Reg(A),
                    });
                    emit(E::LdAbs {
                        size: Size::B,
                        imm: k as i32,
                    });
                    emit(alu32(AluOp::And, A, Operand::Imm(0xf)));
                    emit(alu32(AluOp::Lsh, A, Operand::Imm(2)));
                    emit(mov32(X, Operand::Reg(A)));
                    emit(E::Alu {
                        width: Width::W64,
                        op: AluOp::Mov,
                        dst: A,
                        src: Operand::Reg(TMP),
                    });
                }
                _ => return Err(unsupported(format!("opcode {c:#06x}"))),
            }
        }
        class::ST | class::STX => emit(E::Store {
            size: Size::W,
            dst: Reg::R10,
            off: slot(k),
            src: Operand::Reg(if c & 0x07 == class::ST { A } else { X }),
        }),
        class::ALU => {
            let operand = if c & 0x08 == src::X {
                Operand::Reg(X)
            } else {
                kimm
            };
            let o = match c & 0xf0 {
                op::ADD => AluOp::Add,
                op::SUB => AluOp::Sub,
                op::MUL => AluOp::Mul,
                op::DIV => AluOp::Div,
                op::MOD => AluOp::Mod,
                op::OR => AluOp::Or,
                op::AND => AluOp::And,
                op::XOR => AluOp::Xor,
                op::LSH => AluOp::Lsh,
                op::RSH => AluOp::Rsh,
                op::NEG => {
                    emit(E::Neg {
                        width: Width::W32,
                        dst: A,
                    });
                    return Ok(());
                }
                _ => return Err(unsupported(format!("opcode {c:#06x}"))),
            };
            if matches!(o, AluOp::Div | AluOp::Mod) && operand == Operand::Reg(X) {
                // Classic ends with 0 on a zero divisor.
                emit(E::Jmp {
                    width: Width::W32,
                    cond: Cond::Ne,
                    dst: X,
                    src: Operand::Imm(0),
                    off: 2,
                });
                emit(alu32(AluOp::Xor, A, Operand::Reg(A)));
                emit(E::Exit);
            }
            if matches!(o, AluOp::Lsh | AluOp::Rsh) && operand == Operand::Reg(X) {
                // eBPF leaves a shift by 32 or more undefined: classic
                // (in the kernel, on x86-64) uses the low five bits.
                emit(mov32(TMP, Operand::Reg(X)));
                emit(alu32(AluOp::And, TMP, Operand::Imm(31)));
                emit(alu32(o, A, Operand::Reg(TMP)));
            } else {
                emit(alu32(o, A, operand));
            }
        }
        class::JMP => {
            let next = pc + 1;
            if c & 0xf0 == op::JA {
                out.push(Out::Jump(Jump::Goto(next + k as usize)));
                return Ok(());
            }
            let operand = if c & 0x08 == src::X {
                Operand::Reg(X)
            } else {
                kimm
            };
            let cond = match c & 0xf0 {
                op::JEQ => Cond::Eq,
                op::JGT => Cond::Gt,
                op::JGE => Cond::Ge,
                op::JSET => Cond::Set,
                _ => return Err(unsupported(format!("opcode {c:#06x}"))),
            };
            let (t, f) = (next + usize::from(p.jt), next + usize::from(p.jf));
            let inverse = match cond {
                Cond::Eq => Some(Cond::Ne),
                Cond::Gt => Some(Cond::Le),
                Cond::Ge => Some(Cond::Lt),
                _ => None,
            };
            match (t == next, f == next, inverse) {
                (true, true, _) => {}
                (true, false, Some(inv)) => out.push(Out::Jump(Jump::If(inv, operand, f))),
                (_, true, _) => out.push(Out::Jump(Jump::If(cond, operand, t))),
                _ => {
                    out.push(Out::Jump(Jump::If(cond, operand, t)));
                    out.push(Out::Jump(Jump::Goto(f)));
                }
            }
        }
        class::RET => {
            match c & 0x18 {
                rval::K => emit(mov32(A, kimm)),
                rval::A => {}
                _ => return Err(unsupported("`ret x` is not Linux's".into())),
            }
            emit(E::Exit);
        }
        _ => match c & 0xf8 {
            misc::TAX => emit(mov32(X, Operand::Reg(A))),
            misc::TXA => emit(mov32(A, Operand::Reg(X))),
            _ => return Err(unsupported(format!("opcode {c:#06x}"))),
        },
    }
    Ok(())
}

/// A = the ancillary field at `SKF_AD_OFF + off`; `Err(name)` where a
/// loaded program cannot read it.
fn ancillary_load(off: u32, emit: &mut impl FnMut(E)) -> Result<(), &'static str> {
    use ancillary::*;
    let field = |emit: &mut dyn FnMut(E), at: i16| emit(load_ctx(A, at));
    let call = |emit: &mut dyn FnMut(E), id: i32| emit(E::Call(CallTarget::Helper(id)));
    match off {
        // `__sk_buff.protocol` and `vlan_proto` hold network order; the
        // classic loads give the value.
        PROTOCOL | VLAN_TPID => {
            field(
                emit,
                if off == PROTOCOL {
                    skb::PROTOCOL
                } else {
                    skb::VLAN_PROTO
                },
            );
            emit(E::Endian {
                order: Endian::Be,
                bits: 16,
                dst: A,
            });
        }
        PKTTYPE => field(emit, skb::PKT_TYPE),
        IFINDEX => field(emit, skb::IFINDEX),
        MARK => field(emit, skb::MARK),
        QUEUE => field(emit, skb::QUEUE_MAPPING),
        RXHASH => field(emit, skb::HASH),
        VLAN_TAG => field(emit, skb::VLAN_TCI),
        VLAN_TAG_PRESENT => field(emit, skb::VLAN_PRESENT),
        ALU_XOR_X => emit(alu32(AluOp::Xor, A, Operand::Reg(X))),
        CPU => call(emit, GET_SMP_PROCESSOR_ID),
        RANDOM => call(emit, GET_PRANDOM_U32),
        HATYPE => return Err("hatype"),
        PAY_OFFSET => return Err("poff"),
        NLATTR => return Err("nla"),
        NLATTR_NEST => return Err("nlan"),
        _ => return Err("unknown"),
    }
    Ok(())
}

/// The eBPF program of a classic filter (checked first, as the kernel
/// does), for a socket filter or tc classifier: it returns the filter's
/// value.
pub fn to_ebpf(prog: &[Insn]) -> Result<Vec<E>, TranslateError> {
    check(prog)?;
    let mut out: Vec<Out> = vec![
        Out::Insn(E::Alu {
            width: Width::W64,
            op: AluOp::Mov,
            dst: CTX,
            src: Operand::Reg(Reg::R1),
        }),
        Out::Insn(mov32(A, Operand::Imm(0))),
        Out::Insn(mov32(X, Operand::Imm(0))),
    ];
    // Where each classic instruction starts in `out`.
    let mut at = Vec::with_capacity(prog.len());
    for (pc, p) in prog.iter().enumerate() {
        at.push(out.len());
        translate_one(pc, p, &mut out)?;
    }
    let off = |from: usize, target: usize| -> Result<i16, TranslateError> {
        i16::try_from(at[target] as i64 - from as i64 - 1)
            .map_err(|_| TranslateError::TooFar(out.len()))
    };
    let mut insns = Vec::with_capacity(out.len());
    for (i, o) in out.iter().enumerate() {
        insns.push(match *o {
            Out::Insn(e) => e,
            Out::Jump(Jump::Goto(t)) => E::Ja { off: off(i, t)? },
            Out::Jump(Jump::If(cond, src, t)) => E::Jmp {
                width: Width::W32,
                cond,
                dst: A,
                src,
                off: off(i, t)?,
            },
        });
    }
    Ok(insns)
}
