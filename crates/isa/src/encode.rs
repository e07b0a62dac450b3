//! [`Insn`]s to bytes: the exact inverse of [`crate::decode`].

use crate::Reg;
use crate::insn::*;
use crate::opcode::{self, alu, atomic, class, jmp, mode, pseudo, size, source};

impl Insn {
    /// The instruction's raw slots: one, or two for `lddw`.
    pub fn to_raw(&self) -> ([RawInsn; 2], usize) {
        let one = |r: RawInsn| ([r, RawInsn::default()], 1);
        match *self {
            Insn::Alu {
                width,
                op,
                dst,
                src,
            } => {
                let (code_op, off) = match op {
                    AluOp::Add => (alu::ADD, 0),
                    AluOp::Sub => (alu::SUB, 0),
                    AluOp::Mul => (alu::MUL, 0),
                    AluOp::Div => (alu::DIV, 0),
                    AluOp::SDiv => (alu::DIV, 1),
                    AluOp::Or => (alu::OR, 0),
                    AluOp::And => (alu::AND, 0),
                    AluOp::Lsh => (alu::LSH, 0),
                    AluOp::Rsh => (alu::RSH, 0),
                    AluOp::Mod => (alu::MOD, 0),
                    AluOp::SMod => (alu::MOD, 1),
                    AluOp::Xor => (alu::XOR, 0),
                    AluOp::Mov => (alu::MOV, 0),
                    AluOp::MovSx8 => (alu::MOV, 8),
                    AluOp::MovSx16 => (alu::MOV, 16),
                    AluOp::MovSx32 => (alu::MOV, 32),
                    AluOp::Arsh => (alu::ARSH, 0),
                };
                let (flag, src_reg, imm) = operand_fields(src);
                one(RawInsn {
                    code: alu_class(width) | code_op | flag,
                    dst: dst.number(),
                    src: src_reg,
                    off,
                    imm,
                })
            }
            Insn::Neg { width, dst } => one(RawInsn {
                code: alu_class(width) | alu::NEG,
                dst: dst.number(),
                ..RawInsn::default()
            }),
            Insn::Endian { order, bits, dst } => {
                let code = match order {
                    Endian::Le => class::ALU | alu::END | source::K,
                    Endian::Be => class::ALU | alu::END | source::X,
                    Endian::Swap => class::ALU64 | alu::END | source::K,
                };
                one(RawInsn {
                    code,
                    dst: dst.number(),
                    imm: bits.into(),
                    ..RawInsn::default()
                })
            }
            Insn::Ja { off } => one(RawInsn {
                code: opcode::JA,
                off,
                ..RawInsn::default()
            }),
            Insn::Ja32 { off } => one(RawInsn {
                code: opcode::JA32,
                imm: off,
                ..RawInsn::default()
            }),
            Insn::Jmp {
                width,
                cond,
                dst,
                src,
                off,
            } => {
                let (flag, src_reg, imm) = operand_fields(src);
                let cls = match width {
                    Width::W32 => class::JMP32,
                    Width::W64 => class::JMP,
                };
                one(RawInsn {
                    code: cls | cond_code(cond) | flag,
                    dst: dst.number(),
                    src: src_reg,
                    off,
                    imm,
                })
            }
            Insn::Call(target) => {
                let (src, off, imm) = match target {
                    CallTarget::Helper(id) => (0, 0, id),
                    CallTarget::Local(rel) => (pseudo::CALL_LOCAL, 0, rel),
                    CallTarget::Kfunc { btf_id, btf_fd_idx } => {
                        (pseudo::CALL_KFUNC, btf_fd_idx, btf_id)
                    }
                };
                one(RawInsn {
                    code: opcode::CALL,
                    src,
                    off,
                    imm,
                    ..RawInsn::default()
                })
            }
            Insn::Callx { reg } => one(RawInsn {
                code: opcode::CALLX,
                dst: reg.number(),
                ..RawInsn::default()
            }),
            Insn::Exit => one(RawInsn {
                code: opcode::EXIT,
                ..RawInsn::default()
            }),
            Insn::Lddw { dst, value } => {
                let (src, lo, hi) = match value {
                    Lddw::Imm(v) => (0, v as u32 as i32, (v >> 32) as u32 as i32),
                    Lddw::MapFd(fd) => (pseudo::MAP_FD, fd, 0),
                    Lddw::MapValue { fd, off } => (pseudo::MAP_VALUE, fd, off),
                    Lddw::BtfId { id, btf_fd } => (pseudo::BTF_ID, id, btf_fd),
                    Lddw::Func(rel) => (pseudo::FUNC, rel, 0),
                    Lddw::MapIdx(idx) => (pseudo::MAP_IDX, idx, 0),
                    Lddw::MapIdxValue { idx, off } => (pseudo::MAP_IDX_VALUE, idx, off),
                };
                (
                    [
                        RawInsn {
                            code: opcode::LDDW,
                            dst: dst.number(),
                            src,
                            off: 0,
                            imm: lo,
                        },
                        RawInsn {
                            imm: hi,
                            ..RawInsn::default()
                        },
                    ],
                    2,
                )
            }
            Insn::Load {
                size,
                signed,
                dst,
                src,
                off,
            } => one(RawInsn {
                code: class::LDX | size_code(size) | if signed { mode::MEMSX } else { mode::MEM },
                dst: dst.number(),
                src: src.number(),
                off,
                imm: 0,
            }),
            Insn::Store {
                size,
                dst,
                off,
                src,
            } => {
                let (cls, src_reg, imm) = match src {
                    Operand::Reg(r) => (class::STX, r.number(), 0),
                    Operand::Imm(i) => (class::ST, 0, i),
                };
                one(RawInsn {
                    code: cls | mode::MEM | size_code(size),
                    dst: dst.number(),
                    src: src_reg,
                    off,
                    imm,
                })
            }
            Insn::Atomic {
                size,
                op,
                fetch,
                dst,
                src,
                off,
            } => {
                let imm = match op {
                    AtomicOp::Add => atomic::ADD,
                    AtomicOp::Or => atomic::OR,
                    AtomicOp::And => atomic::AND,
                    AtomicOp::Xor => atomic::XOR,
                    AtomicOp::Xchg => atomic::XCHG,
                    AtomicOp::CmpXchg => atomic::CMPXCHG,
                };
                let imm = if fetch { imm | atomic::FETCH } else { imm };
                one(RawInsn {
                    code: class::STX | mode::ATOMIC | size_code(size),
                    dst: dst.number(),
                    src: src.number(),
                    off,
                    imm,
                })
            }
            Insn::LdAbs { size, imm } => one(RawInsn {
                code: class::LD | mode::ABS | size_code(size),
                imm,
                ..RawInsn::default()
            }),
            Insn::LdInd { size, src, imm } => one(RawInsn {
                code: class::LD | mode::IND | size_code(size),
                src: src.number(),
                imm,
                ..RawInsn::default()
            }),
        }
    }

    /// Appends the instruction's bytes to `out`.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        let (raws, n) = self.to_raw();
        for raw in &raws[..n] {
            out.extend_from_slice(&raw.to_bytes());
        }
    }
}

/// Encodes a whole program.
pub fn encode(insns: &[Insn]) -> Vec<u8> {
    let mut out = Vec::with_capacity(slot_count(insns) * opcode::INSN_SIZE);
    for insn in insns {
        insn.encode_into(&mut out);
    }
    out
}

fn alu_class(width: Width) -> u8 {
    match width {
        Width::W32 => class::ALU,
        Width::W64 => class::ALU64,
    }
}

fn operand_fields(src: Operand) -> (u8, u8, i32) {
    match src {
        Operand::Reg(r) => (source::X, Reg::number(r), 0),
        Operand::Imm(i) => (source::K, 0, i),
    }
}

fn cond_code(cond: Cond) -> u8 {
    match cond {
        Cond::Eq => jmp::JEQ,
        Cond::Gt => jmp::JGT,
        Cond::Ge => jmp::JGE,
        Cond::Set => jmp::JSET,
        Cond::Ne => jmp::JNE,
        Cond::Sgt => jmp::JSGT,
        Cond::Sge => jmp::JSGE,
        Cond::Lt => jmp::JLT,
        Cond::Le => jmp::JLE,
        Cond::Slt => jmp::JSLT,
        Cond::Sle => jmp::JSLE,
    }
}

fn size_code(s: Size) -> u8 {
    match s {
        Size::B => size::B,
        Size::H => size::H,
        Size::W => size::W,
        Size::DW => size::DW,
    }
}
