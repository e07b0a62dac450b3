//! One classic instruction's eBPF: arithmetic, jumps, scratch memory and
//! the register moves, the same in every form; packet loads, ancillary
//! fields and returns go to the form (`packet.rs`), xPF's memory and
//! loops to `xpf.rs`.

use isa::{AluOp, Cond, Insn as E, Operand, Reg, Size, Width};

use super::{A, Dest, TMP, Tr, TranslateError, X, alu32, mov32};
use crate::insn::{Insn, MEMWORDS, ancillary, class, misc, mode, op, rval, size, src, xpf};
use crate::xpf::Bank;

/// The stack offset of `M[k]`.
pub(crate) fn slot(k: u32) -> i16 {
    -4 * (MEMWORDS - k) as i16
}

pub(crate) fn size_of(code: u16) -> (Size, u32) {
    match code & 0x18 {
        size::H => (Size::H, 2),
        size::B => (Size::B, 1),
        _ => (Size::W, 4),
    }
}

impl Tr<'_> {
    /// The bank `M[]` reaches at `pc` (scratch outside xPF).
    pub fn bank(&self, pc: usize) -> Bank {
        self.xpf.map_or(Bank::Scratch, |(s, _)| s.banks[pc])
    }

    /// The eBPF instructions of classic instruction `pc`.
    pub fn one(&mut self, pc: usize, p: &Insn) -> Result<(), TranslateError> {
        let (c, k) = (p.code, p.k);
        let unsupported = |why: String| TranslateError::Unsupported { insn: pc, why };
        let kimm = Operand::Imm(k as i32);
        match c {
            xpf::LD_NDX | xpf::LDX_NDX | xpf::ST_NDX | xpf::STX_NDX => {
                let reg = if c & 0x07 == class::LD || c & 0x07 == class::ST {
                    A
                } else {
                    X
                };
                let store = matches!(c & 0x07, class::ST | class::STX);
                self.indexed(self.bank(pc), reg, store, k);
                return Ok(());
            }
            xpf::BSS | xpf::BSP | xpf::EXC => return Ok(()),
            _ => {}
        }
        match c & 0x07 {
            class::LD | class::LDX => {
                let dst = if c & 0x07 == class::LD { A } else { X };
                match c & 0xe0 {
                    mode::IMM => self.emit(mov32(dst, kimm)),
                    mode::LEN => self.len(dst),
                    mode::MEM => self.memory(self.bank(pc), dst, false, k),
                    mode::ABS if xpf::is_time_load(p) && self.xpf.is_some() => self.time_load(k),
                    mode::ABS if k >= ancillary::AD_OFF => {
                        self.ancillary(k - ancillary::AD_OFF).map_err(|name| {
                            unsupported(format!(
                                "the ancillary field `{name}` has no {} equivalent a loaded program may read",
                                match self.form {
                                    super::Form::Socket => "eBPF",
                                    super::Form::Xdp => "XDP",
                                }
                            ))
                        })?;
                    }
                    mode::ABS => self.load_abs(c, k).map_err(unsupported)?,
                    mode::IND => self.load_ind(c, k),
                    mode::MSH => self.msh(k),
                    _ => return Err(unsupported(format!("opcode {c:#06x}"))),
                }
            }
            class::ST | class::STX => {
                let reg = if c & 0x07 == class::ST { A } else { X };
                self.memory(self.bank(pc), reg, true, k);
            }
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
                        self.emit(E::Neg {
                            width: Width::W32,
                            dst: A,
                        });
                        return Ok(());
                    }
                    _ => return Err(unsupported(format!("opcode {c:#06x}"))),
                };
                if matches!(o, AluOp::Div | AluOp::Mod) && operand == Operand::Reg(X) {
                    // Classic ends with 0 on a zero divisor.
                    self.jump_if(Width::W32, Cond::Eq, X, Operand::Imm(0), Dest::Zero);
                }
                if matches!(o, AluOp::Lsh | AluOp::Rsh) && operand == Operand::Reg(X) {
                    // eBPF leaves a shift by 32 or more undefined: classic
                    // (in the kernel, on x86-64) uses the low five bits.
                    self.emit(mov32(TMP, Operand::Reg(X)));
                    self.emit(alu32(AluOp::And, TMP, Operand::Imm(31)));
                    self.emit(alu32(o, A, Operand::Reg(TMP)));
                } else {
                    self.emit(alu32(o, A, operand));
                }
            }
            class::JMP => self.jump(pc, p)?,
            class::RET => match c & 0x18 {
                rval::K => self.ret_k(k),
                rval::A => self.ret_a(),
                _ => return Err(unsupported("`ret x` is not Linux's".into())),
            },
            _ => match c & 0xf8 {
                misc::TAX => self.emit(mov32(X, Operand::Reg(A))),
                misc::TXA => self.emit(mov32(A, Operand::Reg(X))),
                _ => return Err(unsupported(format!("opcode {c:#06x}"))),
            },
        }
        Ok(())
    }

    fn jump(&mut self, pc: usize, p: &Insn) -> Result<(), TranslateError> {
        let (c, k) = (p.code, p.k);
        let next = pc + 1;
        if c & 0xf0 == op::JA {
            let target = if let Some((shape, _)) = self.xpf {
                crate::xpf::ja_target(pc, k, shape.banks.len()).expect("checked")
            } else {
                next + k as usize
            };
            if target <= pc {
                self.budget_check();
            }
            self.goto(Dest::Insn(target));
            return Ok(());
        }
        let operand = if c & 0x08 == src::X {
            Operand::Reg(X)
        } else {
            Operand::Imm(k as i32)
        };
        let cond = match c & 0xf0 {
            op::JEQ => Cond::Eq,
            op::JGT => Cond::Gt,
            op::JGE => Cond::Ge,
            op::JSET => Cond::Set,
            _ => {
                return Err(TranslateError::Unsupported {
                    insn: pc,
                    why: format!("opcode {c:#06x}"),
                });
            }
        };
        let (t, f) = (next + usize::from(p.jt), next + usize::from(p.jf));
        let inverse = match cond {
            Cond::Eq => Some(Cond::Ne),
            Cond::Gt => Some(Cond::Le),
            Cond::Ge => Some(Cond::Lt),
            _ => None,
        };
        let mut branch = |cond, to| self.jump_if(Width::W32, cond, A, operand, Dest::Insn(to));
        match (t == next, f == next, inverse) {
            (true, true, _) => {}
            (true, false, Some(inv)) => branch(inv, f),
            (_, true, _) => branch(cond, t),
            _ => {
                branch(cond, t);
                self.goto(Dest::Insn(f));
            }
        }
        Ok(())
    }

    /// `M[k]` of the scratch bank (the stack) or the persistent one.
    fn memory(&mut self, bank: Bank, reg: Reg, store: bool, k: u32) {
        match bank {
            Bank::Persistent => self.persistent(reg, store, k),
            Bank::Scratch if store => self.emit(E::Store {
                size: Size::W,
                dst: Reg::R10,
                off: slot(k),
                src: Operand::Reg(reg),
            }),
            Bank::Scratch => self.emit(E::Load {
                size: Size::W,
                signed: false,
                dst: reg,
                src: Reg::R10,
                off: slot(k),
            }),
        }
    }
}
