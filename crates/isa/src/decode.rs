//! Bytes to [`Insn`]s, strictly: any encoding that does not decode to exactly
//! one instruction (unknown opcode, reserved field set, bad register) is an
//! error naming the slot index, as the Linux verifier rejects such programs.

use crate::Reg;
use crate::insn::*;
use crate::opcode::{self, alu, atomic, class, jmp, mode, pseudo, size, source};

/// Why a program's bytes do not decode, and at which slot.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("instruction {index}: {kind}")]
pub struct DecodeError {
    /// Slot index (8-byte units from the start of the program).
    pub index: usize,
    pub kind: DecodeErrorKind,
}

#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum DecodeErrorKind {
    #[error("the program is {len} bytes long, not a multiple of 8 (truncated?)")]
    Truncated { len: usize },
    #[error("unknown opcode 0x{code:02x}")]
    UnknownOpcode { code: u8 },
    #[error("opcode 0x{code:02x} must have field `{field}` zero, found {value}")]
    ReservedField {
        code: u8,
        field: &'static str,
        value: i64,
    },
    #[error("opcode 0x{code:02x} names register r{value} in field `{field}`; registers are r0-r10")]
    BadRegister {
        code: u8,
        field: &'static str,
        value: u8,
    },
    #[error("lddw at the end of the program is missing its second half")]
    LddwMissingSecondHalf,
    #[error(
        "the second half of lddw must have opcode, registers and offset zero (found opcode 0x{code:02x}, dst {dst}, src {src}, offset {off})"
    )]
    LddwBadSecondHalf {
        code: u8,
        dst: u8,
        src: u8,
        off: i16,
    },
    #[error("lddw with unknown source kind {src} (known: 0-6)")]
    LddwBadSource { src: u8 },
    #[error("byte swap width must be 16, 32 or 64, found {imm}")]
    BadEndianWidth { imm: i32 },
    #[error("unknown atomic operation 0x{imm:x}")]
    BadAtomicOp { imm: i32 },
    #[error("atomic operations need size w or dw, found {size}")]
    BadAtomicSize { size: &'static str },
    #[error(
        "sign-extending move with offset {off}: valid offsets are 8 and 16 (and 32 for 64-bit)"
    )]
    BadMovsxOffset { off: i16 },
    #[error("call with unknown source kind {src} (0 helper, 1 local, 2 kfunc)")]
    BadCallSource { src: u8 },
    #[error("{what} is not part of RFC 9669 and is not supported")]
    Unsupported { what: &'static str },
}

/// Decodes a whole program.
pub fn decode(bytes: &[u8]) -> Result<Vec<Insn>, DecodeError> {
    if !bytes.len().is_multiple_of(opcode::INSN_SIZE) {
        return Err(DecodeError {
            index: bytes.len() / opcode::INSN_SIZE,
            kind: DecodeErrorKind::Truncated { len: bytes.len() },
        });
    }
    let raws: Vec<RawInsn> = bytes
        .chunks_exact(opcode::INSN_SIZE)
        .map(|c| RawInsn::from_bytes(c.try_into().expect("chunk of 8")))
        .collect();
    decode_raw(&raws)
}

/// Decodes a program already split into raw slots.
pub fn decode_raw(raws: &[RawInsn]) -> Result<Vec<Insn>, DecodeError> {
    let mut out = Vec::with_capacity(raws.len());
    let mut pc = 0;
    while pc < raws.len() {
        let next = raws.get(pc + 1).copied();
        let insn = decode_one(raws[pc], next).map_err(|kind| DecodeError { index: pc, kind })?;
        pc += insn.slots();
        out.push(insn);
    }
    Ok(out)
}

/// Decodes the instruction starting with `raw`; `next` is the following
/// slot, needed only by `lddw`.
pub fn decode_one(raw: RawInsn, next: Option<RawInsn>) -> Result<Insn, DecodeErrorKind> {
    let f = Fields(raw);
    match raw.code & class::MASK {
        class::LD => f.decode_ld(next),
        class::LDX => f.decode_ldx(),
        class::ST => f.decode_st(),
        class::STX => f.decode_stx(),
        class::ALU => f.decode_alu(Width::W32),
        class::ALU64 => f.decode_alu(Width::W64),
        class::JMP => f.decode_jmp(Width::W64),
        _ => f.decode_jmp(Width::W32),
    }
}

/// Field checks over one raw slot.
struct Fields(RawInsn);

type R<T> = Result<T, DecodeErrorKind>;

impl Fields {
    fn unknown(&self) -> DecodeErrorKind {
        DecodeErrorKind::UnknownOpcode { code: self.0.code }
    }

    fn reserved(&self, field: &'static str, value: i64) -> DecodeErrorKind {
        DecodeErrorKind::ReservedField {
            code: self.0.code,
            field,
            value,
        }
    }

    fn zero(&self, field: &'static str, value: i64) -> R<()> {
        if value == 0 {
            Ok(())
        } else {
            Err(self.reserved(field, value))
        }
    }

    fn no_dst(&self) -> R<()> {
        self.zero("dst", self.0.dst.into())
    }
    fn no_src(&self) -> R<()> {
        self.zero("src", self.0.src.into())
    }
    fn no_off(&self) -> R<()> {
        self.zero("offset", self.0.off.into())
    }
    fn no_imm(&self) -> R<()> {
        self.zero("imm", self.0.imm.into())
    }

    fn reg(&self, field: &'static str, value: u8) -> R<Reg> {
        Reg::new(value).ok_or(DecodeErrorKind::BadRegister {
            code: self.0.code,
            field,
            value,
        })
    }
    fn dst(&self) -> R<Reg> {
        self.reg("dst", self.0.dst)
    }
    fn src(&self) -> R<Reg> {
        self.reg("src", self.0.src)
    }

    fn size(&self) -> Size {
        match self.0.code & size::MASK {
            size::W => Size::W,
            size::H => Size::H,
            size::B => Size::B,
            _ => Size::DW,
        }
    }

    fn decode_ld(&self, next: Option<RawInsn>) -> R<Insn> {
        let raw = self.0;
        match (raw.code & mode::MASK, self.size()) {
            (mode::IMM, Size::DW) => {
                self.no_off()?;
                let dst = self.dst()?;
                let hi = next.ok_or(DecodeErrorKind::LddwMissingSecondHalf)?;
                if hi.code != 0 || hi.dst != 0 || hi.src != 0 || hi.off != 0 {
                    return Err(DecodeErrorKind::LddwBadSecondHalf {
                        code: hi.code,
                        dst: hi.dst,
                        src: hi.src,
                        off: hi.off,
                    });
                }
                let second_zero = || {
                    if hi.imm == 0 {
                        Ok(())
                    } else {
                        Err(DecodeErrorKind::ReservedField {
                            code: raw.code,
                            field: "imm of the second half",
                            value: hi.imm.into(),
                        })
                    }
                };
                let value = match raw.src {
                    0 => Lddw::Imm((raw.imm as u32 as u64) | ((hi.imm as u32 as u64) << 32)),
                    pseudo::MAP_FD => {
                        second_zero()?;
                        Lddw::MapFd(raw.imm)
                    }
                    pseudo::MAP_VALUE => Lddw::MapValue {
                        fd: raw.imm,
                        off: hi.imm,
                    },
                    pseudo::BTF_ID => Lddw::BtfId {
                        id: raw.imm,
                        btf_fd: hi.imm,
                    },
                    pseudo::FUNC => {
                        second_zero()?;
                        Lddw::Func(raw.imm)
                    }
                    pseudo::MAP_IDX => {
                        second_zero()?;
                        Lddw::MapIdx(raw.imm)
                    }
                    pseudo::MAP_IDX_VALUE => Lddw::MapIdxValue {
                        idx: raw.imm,
                        off: hi.imm,
                    },
                    src => return Err(DecodeErrorKind::LddwBadSource { src }),
                };
                Ok(Insn::Lddw { dst, value })
            }
            (mode::ABS, size) if size != Size::DW => {
                self.no_dst()?;
                self.no_src()?;
                self.no_off()?;
                Ok(Insn::LdAbs { size, imm: raw.imm })
            }
            (mode::IND, size) if size != Size::DW => {
                self.no_dst()?;
                self.no_off()?;
                Ok(Insn::LdInd {
                    size,
                    src: self.src()?,
                    imm: raw.imm,
                })
            }
            _ => Err(self.unknown()),
        }
    }

    fn decode_ldx(&self) -> R<Insn> {
        let size = self.size();
        let signed = match self.0.code & mode::MASK {
            mode::MEM => false,
            mode::MEMSX if size != Size::DW => true,
            _ => return Err(self.unknown()),
        };
        self.no_imm()?;
        Ok(Insn::Load {
            size,
            signed,
            dst: self.dst()?,
            src: self.src()?,
            off: self.0.off,
        })
    }

    fn decode_st(&self) -> R<Insn> {
        if self.0.code & mode::MASK != mode::MEM {
            return Err(self.unknown());
        }
        self.no_src()?;
        Ok(Insn::Store {
            size: self.size(),
            dst: self.dst()?,
            off: self.0.off,
            src: Operand::Imm(self.0.imm),
        })
    }

    fn decode_stx(&self) -> R<Insn> {
        let size = self.size();
        match self.0.code & mode::MASK {
            mode::MEM => {
                self.no_imm()?;
                Ok(Insn::Store {
                    size,
                    dst: self.dst()?,
                    off: self.0.off,
                    src: Operand::Reg(self.src()?),
                })
            }
            mode::ATOMIC => {
                if !matches!(size, Size::W | Size::DW) {
                    return Err(DecodeErrorKind::BadAtomicSize {
                        size: size.suffix(),
                    });
                }
                let imm = self.0.imm;
                let (op, fetch) = match imm {
                    atomic::XCHG => (AtomicOp::Xchg, true),
                    atomic::CMPXCHG => (AtomicOp::CmpXchg, true),
                    // Load-acquire and store-release arrived in Linux 6.15.
                    0x100 | 0x110 => {
                        return Err(DecodeErrorKind::Unsupported {
                            what: "load-acquire/store-release",
                        });
                    }
                    _ => {
                        let op = match imm & !atomic::FETCH {
                            atomic::ADD => AtomicOp::Add,
                            atomic::OR => AtomicOp::Or,
                            atomic::AND => AtomicOp::And,
                            atomic::XOR => AtomicOp::Xor,
                            _ => return Err(DecodeErrorKind::BadAtomicOp { imm }),
                        };
                        (op, imm & atomic::FETCH != 0)
                    }
                };
                Ok(Insn::Atomic {
                    size,
                    op,
                    fetch,
                    dst: self.dst()?,
                    src: self.src()?,
                    off: self.0.off,
                })
            }
            _ => Err(self.unknown()),
        }
    }

    /// The source operand of arithmetic and jumps: a register with a zero
    /// immediate, or an immediate with a zero source register.
    fn operand(&self) -> R<Operand> {
        if self.0.code & source::MASK == source::X {
            self.no_imm()?;
            Ok(Operand::Reg(self.src()?))
        } else {
            self.no_src()?;
            Ok(Operand::Imm(self.0.imm))
        }
    }

    fn decode_alu(&self, width: Width) -> R<Insn> {
        let raw = self.0;
        let dst = self.dst()?;
        let op = match raw.code & alu::MASK {
            alu::NEG => {
                if raw.code & source::MASK != source::K {
                    return Err(self.unknown());
                }
                self.no_src()?;
                self.no_off()?;
                self.no_imm()?;
                return Ok(Insn::Neg { width, dst });
            }
            alu::END => {
                let order = match (width, raw.code & source::MASK) {
                    (Width::W32, source::K) => Endian::Le,
                    (Width::W32, _) => Endian::Be,
                    (Width::W64, source::K) => Endian::Swap,
                    (Width::W64, _) => return Err(self.unknown()),
                };
                self.no_src()?;
                self.no_off()?;
                if !matches!(raw.imm, 16 | 32 | 64) {
                    return Err(DecodeErrorKind::BadEndianWidth { imm: raw.imm });
                }
                return Ok(Insn::Endian {
                    order,
                    bits: raw.imm as u8,
                    dst,
                });
            }
            alu::MOV => {
                let is_reg = raw.code & source::MASK == source::X;
                match (raw.off, is_reg, width) {
                    (0, _, _) => AluOp::Mov,
                    (8, true, _) => AluOp::MovSx8,
                    (16, true, _) => AluOp::MovSx16,
                    (32, true, Width::W64) => AluOp::MovSx32,
                    (1, true, Width::W64) => {
                        return Err(DecodeErrorKind::Unsupported {
                            what: "addr_space_cast (BPF arena)",
                        });
                    }
                    (off, true, _) => return Err(DecodeErrorKind::BadMovsxOffset { off }),
                    (off, false, _) => return Err(self.reserved("offset", off.into())),
                }
            }
            alu::DIV | alu::MOD => {
                let signed = match raw.off {
                    0 => false,
                    1 => true,
                    off => return Err(self.reserved("offset", off.into())),
                };
                match (raw.code & alu::MASK == alu::DIV, signed) {
                    (true, false) => AluOp::Div,
                    (true, true) => AluOp::SDiv,
                    (false, false) => AluOp::Mod,
                    (false, true) => AluOp::SMod,
                }
            }
            other => {
                self.no_off()?;
                match other {
                    alu::ADD => AluOp::Add,
                    alu::SUB => AluOp::Sub,
                    alu::MUL => AluOp::Mul,
                    alu::OR => AluOp::Or,
                    alu::AND => AluOp::And,
                    alu::LSH => AluOp::Lsh,
                    alu::RSH => AluOp::Rsh,
                    alu::XOR => AluOp::Xor,
                    alu::ARSH => AluOp::Arsh,
                    _ => return Err(self.unknown()),
                }
            }
        };
        Ok(Insn::Alu {
            width,
            op,
            dst,
            src: self.operand()?,
        })
    }

    fn decode_jmp(&self, width: Width) -> R<Insn> {
        let raw = self.0;
        let is_reg = raw.code & source::MASK == source::X;
        let cond = match raw.code & jmp::MASK {
            jmp::JA => {
                if is_reg {
                    return Err(self.unknown());
                }
                self.no_dst()?;
                self.no_src()?;
                return Ok(match width {
                    Width::W64 => {
                        self.no_imm()?;
                        Insn::Ja { off: raw.off }
                    }
                    Width::W32 => {
                        self.no_off()?;
                        Insn::Ja32 { off: raw.imm }
                    }
                });
            }
            jmp::CALL if width == Width::W64 => {
                if is_reg {
                    // LLVM encodes the register of `callx` in dst.
                    self.no_src()?;
                    self.no_off()?;
                    self.no_imm()?;
                    return Ok(Insn::Callx { reg: self.dst()? });
                }
                self.no_dst()?;
                let target = match raw.src {
                    0 => {
                        self.no_off()?;
                        CallTarget::Helper(raw.imm)
                    }
                    pseudo::CALL_LOCAL => {
                        self.no_off()?;
                        CallTarget::Local(raw.imm)
                    }
                    pseudo::CALL_KFUNC => CallTarget::Kfunc {
                        btf_id: raw.imm,
                        btf_fd_idx: raw.off,
                    },
                    src => return Err(DecodeErrorKind::BadCallSource { src }),
                };
                return Ok(Insn::Call(target));
            }
            jmp::EXIT if width == Width::W64 && !is_reg => {
                self.no_dst()?;
                self.no_src()?;
                self.no_off()?;
                self.no_imm()?;
                return Ok(Insn::Exit);
            }
            jmp::JEQ => Cond::Eq,
            jmp::JGT => Cond::Gt,
            jmp::JGE => Cond::Ge,
            jmp::JSET => Cond::Set,
            jmp::JNE => Cond::Ne,
            jmp::JSGT => Cond::Sgt,
            jmp::JSGE => Cond::Sge,
            jmp::JLT => Cond::Lt,
            jmp::JLE => Cond::Le,
            jmp::JSLT => Cond::Slt,
            jmp::JSLE => Cond::Sle,
            0xe0 if width == Width::W64 => {
                return Err(DecodeErrorKind::Unsupported {
                    what: "may_goto (BPF_JCOND)",
                });
            }
            _ => return Err(self.unknown()),
        };
        Ok(Insn::Jmp {
            width,
            cond,
            dst: self.dst()?,
            src: self.operand()?,
            off: raw.off,
        })
    }
}
