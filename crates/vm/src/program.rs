//! A validated, pre-decoded program image.

use isa::{AluOp, CallTarget, Cond, Endian, Insn, Lddw, Operand, Size, Width};

use crate::op::{Op, Slot};

/// Why a program cannot be loaded, and at which instruction (slot index).
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the program is empty")]
    Empty,
    #[error(transparent)]
    Decode(#[from] isa::DecodeError),
    #[error("instruction {pc} ({text}): jump target {target} is outside the program (0..{len})")]
    JumpOutOfRange {
        pc: usize,
        text: String,
        target: i64,
        len: usize,
    },
    #[error("instruction {pc} ({text}): jump target {target} is the second half of an lddw")]
    JumpIntoLddw {
        pc: usize,
        text: String,
        target: usize,
    },
    #[error("instruction {pc} ({text}): r10 is the read-only frame pointer")]
    WritesFramePointer { pc: usize, text: String },
    #[error(
        "instruction {pc} ({text}): {what} must be resolved by an object loader before the program can run"
    )]
    Unresolved {
        pc: usize,
        text: String,
        what: &'static str,
    },
    #[error("instruction {pc} ({text}): calls helper {id}{}, which this VM does not provide", name.as_ref().map(|n| format!(" ({n})")).unwrap_or_default())]
    UnknownHelper {
        pc: usize,
        text: String,
        id: i64,
        name: Option<String>,
    },
}

/// A program ready to run: instructions checked for in-range branches and
/// lowered to [`Slot`]s. Build one with [`Program::new`] or
/// [`Program::from_bytes`].
#[derive(Clone, Debug)]
pub struct Program {
    insns: Vec<Insn>,
    slots: Vec<Slot>,
    /// Slot index where each instruction starts.
    starts: Vec<usize>,
}

impl Program {
    /// Decodes and loads raw bytecode.
    pub fn from_bytes(bytes: &[u8]) -> Result<Program, LoadError> {
        Program::new(isa::decode(bytes)?)
    }

    /// Checks and lowers decoded instructions.
    pub fn new(insns: Vec<Insn>) -> Result<Program, LoadError> {
        if insns.is_empty() {
            return Err(LoadError::Empty);
        }
        let len = isa::slot_count(&insns);
        let mut starts = Vec::with_capacity(insns.len());
        let mut is_high = vec![false; len];
        for (pc, insn) in isa::with_pcs(&insns) {
            starts.push(pc);
            if insn.slots() == 2 {
                is_high[pc + 1] = true;
            }
        }
        let mut slots = Vec::with_capacity(len + 1);
        for (pc, insn) in isa::with_pcs(&insns) {
            if writes_frame_pointer(insn) {
                return Err(LoadError::WritesFramePointer {
                    pc,
                    text: insn.to_string(),
                });
            }
            let target = match insn.branch_offset() {
                Some(off) => {
                    let t = pc as i64 + 1 + off;
                    if !(0..len as i64).contains(&t) {
                        return Err(LoadError::JumpOutOfRange {
                            pc,
                            text: insn.to_string(),
                            target: t,
                            len,
                        });
                    }
                    if is_high[t as usize] {
                        return Err(LoadError::JumpIntoLddw {
                            pc,
                            text: insn.to_string(),
                            target: t as usize,
                        });
                    }
                    t as i32
                }
                None => 0,
            };
            slots.push(lower(pc, insn, target)?);
            if insn.slots() == 2 {
                slots.push(slot(Op::LddwHigh, 0, 0, 0, 0));
            }
        }
        // A program whose last instruction may fall through runs into a
        // sentinel that reports it, so the interpreter never checks bounds.
        if !insns.last().is_some_and(Insn::is_terminator) {
            slots.push(slot(Op::FellOff, 0, 0, 0, 0));
        }
        Ok(Program {
            insns,
            slots,
            starts,
        })
    }

    /// The decoded instructions.
    pub fn insns(&self) -> &[Insn] {
        &self.insns
    }

    /// Number of 8-byte slots.
    pub fn len(&self) -> usize {
        self.starts
            .last()
            .map_or(0, |&s| s + self.insns.last().map_or(1, Insn::slots))
    }

    pub fn is_empty(&self) -> bool {
        self.insns.is_empty()
    }

    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The instruction that starts at slot `pc`.
    pub fn insn_at(&self, pc: usize) -> Option<&Insn> {
        self.starts.binary_search(&pc).ok().map(|i| &self.insns[i])
    }

    /// Ids of the helpers the program calls by immediate, with the slot of
    /// each call.
    pub fn helper_calls(&self) -> impl Iterator<Item = (usize, i64)> + '_ {
        self.starts
            .iter()
            .zip(&self.insns)
            .filter_map(|(&pc, insn)| match insn {
                Insn::Call(CallTarget::Helper(id)) if *id != TAIL_CALL && *id != CORE_POISON => {
                    Some((pc, i64::from(*id)))
                }
                _ => None,
            })
    }

    /// The first tail call of the program, if any.
    pub fn tail_call_pc(&self) -> Option<usize> {
        self.starts
            .iter()
            .zip(&self.insns)
            .find(|(_, insn)| **insn == Insn::Call(CallTarget::Helper(TAIL_CALL)))
            .map(|(&pc, _)| pc)
    }
}

/// The helper id of `bpf_tail_call`, which the VM implements itself.
pub const TAIL_CALL: i32 = 12;

/// The call libbpf puts in place of an instruction whose CO-RE relocation
/// failed (`0xbad2310`): the program loads, and faults only if it runs it.
pub const CORE_POISON: i32 = 0xbad2310;

/// Whether the instruction assigns r10 (the frame pointer is read-only).
fn writes_frame_pointer(insn: &Insn) -> bool {
    let fp = isa::Reg::FP;
    match *insn {
        Insn::Alu { dst, .. }
        | Insn::Neg { dst, .. }
        | Insn::Endian { dst, .. }
        | Insn::Lddw { dst, .. }
        | Insn::Load { dst, .. } => dst == fp,
        Insn::Atomic { fetch, src, op, .. } => fetch && src == fp && op != isa::AtomicOp::CmpXchg,
        _ => false,
    }
}

fn slot(op: Op, dst: u8, src: u8, off: i32, imm: i64) -> Slot {
    Slot {
        op,
        dst,
        src,
        off,
        imm,
    }
}

fn lower(pc: usize, insn: &Insn, target: i32) -> Result<Slot, LoadError> {
    let unresolved = |what| LoadError::Unresolved {
        pc,
        text: insn.to_string(),
        what,
    };
    Ok(match *insn {
        Insn::Alu {
            width,
            op,
            dst,
            src,
        } => {
            let (src_reg, imm, is_reg) = match src {
                Operand::Reg(r) => (r.number(), 0, true),
                Operand::Imm(i) => (0, i64::from(i), false),
            };
            slot(alu_op(width, op, is_reg), dst.number(), src_reg, 0, imm)
        }
        Insn::Neg { width, dst } => {
            let op = if width == Width::W64 {
                Op::Neg64
            } else {
                Op::Neg32
            };
            slot(op, dst.number(), 0, 0, 0)
        }
        Insn::Endian { order, bits, dst } => {
            let op = match (order, bits) {
                (Endian::Le, 16) => Op::Le16,
                (Endian::Le, 32) => Op::Le32,
                (Endian::Le, _) => Op::Le64,
                (Endian::Be, 16) => Op::Be16,
                (Endian::Be, 32) => Op::Be32,
                (Endian::Be, _) => Op::Be64,
                (Endian::Swap, 16) => Op::Swap16,
                (Endian::Swap, 32) => Op::Swap32,
                (Endian::Swap, _) => Op::Swap64,
            };
            slot(op, dst.number(), 0, 0, 0)
        }
        Insn::Ja { .. } | Insn::Ja32 { .. } => slot(Op::Ja, 0, 0, target, 0),
        Insn::Jmp {
            width,
            cond,
            dst,
            src,
            ..
        } => {
            let (src_reg, imm, is_reg) = match src {
                Operand::Reg(r) => (r.number(), 0, true),
                Operand::Imm(i) => (0, i64::from(i), false),
            };
            slot(
                jmp_op(width, cond, is_reg),
                dst.number(),
                src_reg,
                target,
                imm,
            )
        }
        Insn::Call(CallTarget::Helper(TAIL_CALL)) => slot(Op::TailCall, 0, 0, 0, 0),
        Insn::Call(CallTarget::Helper(CORE_POISON)) => slot(Op::Poisoned, 0, 0, 0, 0),
        Insn::Call(CallTarget::Helper(id)) => slot(Op::CallHelper, 0, 0, 0, id.into()),
        Insn::Call(CallTarget::Local(_)) => slot(Op::CallLocal, 0, 0, target, 0),
        Insn::Call(CallTarget::Kfunc { .. }) => return Err(unresolved("a kfunc call")),
        Insn::Callx { reg } => slot(Op::Callx, reg.number(), 0, 0, 0),
        Insn::Exit => slot(Op::Exit, 0, 0, 0, 0),
        Insn::Lddw { dst, value } => match value {
            Lddw::Imm(v) => slot(Op::Lddw, dst.number(), 0, 0, v as i64),
            Lddw::MapFd(_) | Lddw::MapIdx(_) => return Err(unresolved("a map reference")),
            Lddw::MapValue { .. } | Lddw::MapIdxValue { .. } => {
                return Err(unresolved("a map value reference"));
            }
            Lddw::BtfId { .. } => return Err(unresolved("a kernel variable (BTF id)")),
            // The address of a BPF function (a callback) becomes a handle
            // the VM can call; `target` was checked to be in the program.
            Lddw::Func(_) => slot(
                Op::Lddw,
                dst.number(),
                0,
                0,
                crate::func_handle(target as usize) as i64,
            ),
        },
        Insn::Load {
            size,
            signed,
            dst,
            src,
            off,
        } => {
            let op = match (size, signed) {
                (Size::B, false) => Op::LdxB,
                (Size::H, false) => Op::LdxH,
                (Size::W, false) => Op::LdxW,
                (Size::DW, _) => Op::LdxDW,
                (Size::B, true) => Op::LdxSB,
                (Size::H, true) => Op::LdxSH,
                (Size::W, true) => Op::LdxSW,
            };
            slot(op, dst.number(), src.number(), off.into(), 0)
        }
        Insn::Store {
            size,
            dst,
            off,
            src,
        } => match src {
            Operand::Imm(imm) => {
                let op = match size {
                    Size::B => Op::StB,
                    Size::H => Op::StH,
                    Size::W => Op::StW,
                    Size::DW => Op::StDW,
                };
                slot(op, dst.number(), 0, off.into(), imm.into())
            }
            Operand::Reg(r) => {
                let op = match size {
                    Size::B => Op::StxB,
                    Size::H => Op::StxH,
                    Size::W => Op::StxW,
                    Size::DW => Op::StxDW,
                };
                slot(op, dst.number(), r.number(), off.into(), 0)
            }
        },
        Insn::Atomic {
            size,
            dst,
            src,
            off,
            ..
        } => {
            // The operation stays encoded in the immediate, as in the ISA.
            let imm = insn.to_raw().0[0].imm;
            let code = if size == Size::W {
                Op::Atomic32
            } else {
                Op::Atomic64
            };
            slot(code, dst.number(), src.number(), off.into(), imm.into())
        }
        Insn::LdAbs { size, imm } => {
            let op = match size {
                Size::B => Op::LdAbsB,
                Size::H => Op::LdAbsH,
                _ => Op::LdAbsW,
            };
            slot(op, 0, 0, 0, imm.into())
        }
        Insn::LdInd { size, src, imm } => {
            let op = match size {
                Size::B => Op::LdIndB,
                Size::H => Op::LdIndH,
                _ => Op::LdIndW,
            };
            slot(op, 0, src.number(), 0, imm.into())
        }
    })
}

fn alu_op(width: Width, op: AluOp, reg: bool) -> Op {
    use Op::*;
    let pick = |imm, r| if reg { r } else { imm };
    match (width, op) {
        (Width::W64, AluOp::Add) => pick(Add64Imm, Add64Reg),
        (Width::W64, AluOp::Sub) => pick(Sub64Imm, Sub64Reg),
        (Width::W64, AluOp::Mul) => pick(Mul64Imm, Mul64Reg),
        (Width::W64, AluOp::Div) => pick(Div64Imm, Div64Reg),
        (Width::W64, AluOp::SDiv) => pick(SDiv64Imm, SDiv64Reg),
        (Width::W64, AluOp::Or) => pick(Or64Imm, Or64Reg),
        (Width::W64, AluOp::And) => pick(And64Imm, And64Reg),
        (Width::W64, AluOp::Lsh) => pick(Lsh64Imm, Lsh64Reg),
        (Width::W64, AluOp::Rsh) => pick(Rsh64Imm, Rsh64Reg),
        (Width::W64, AluOp::Mod) => pick(Mod64Imm, Mod64Reg),
        (Width::W64, AluOp::SMod) => pick(SMod64Imm, SMod64Reg),
        (Width::W64, AluOp::Xor) => pick(Xor64Imm, Xor64Reg),
        (Width::W64, AluOp::Mov) => pick(Mov64Imm, Mov64Reg),
        (Width::W64, AluOp::Arsh) => pick(Arsh64Imm, Arsh64Reg),
        (Width::W64, AluOp::MovSx8) => MovSx8To64,
        (Width::W64, AluOp::MovSx16) => MovSx16To64,
        (_, AluOp::MovSx32) => MovSx32To64,
        (Width::W32, AluOp::Add) => pick(Add32Imm, Add32Reg),
        (Width::W32, AluOp::Sub) => pick(Sub32Imm, Sub32Reg),
        (Width::W32, AluOp::Mul) => pick(Mul32Imm, Mul32Reg),
        (Width::W32, AluOp::Div) => pick(Div32Imm, Div32Reg),
        (Width::W32, AluOp::SDiv) => pick(SDiv32Imm, SDiv32Reg),
        (Width::W32, AluOp::Or) => pick(Or32Imm, Or32Reg),
        (Width::W32, AluOp::And) => pick(And32Imm, And32Reg),
        (Width::W32, AluOp::Lsh) => pick(Lsh32Imm, Lsh32Reg),
        (Width::W32, AluOp::Rsh) => pick(Rsh32Imm, Rsh32Reg),
        (Width::W32, AluOp::Mod) => pick(Mod32Imm, Mod32Reg),
        (Width::W32, AluOp::SMod) => pick(SMod32Imm, SMod32Reg),
        (Width::W32, AluOp::Xor) => pick(Xor32Imm, Xor32Reg),
        (Width::W32, AluOp::Mov) => pick(Mov32Imm, Mov32Reg),
        (Width::W32, AluOp::Arsh) => pick(Arsh32Imm, Arsh32Reg),
        (Width::W32, AluOp::MovSx8) => MovSx8To32,
        (Width::W32, AluOp::MovSx16) => MovSx16To32,
    }
}

fn jmp_op(width: Width, cond: Cond, reg: bool) -> Op {
    use Op::*;
    let pick = |imm, r| if reg { r } else { imm };
    match (width, cond) {
        (Width::W64, Cond::Eq) => pick(Jeq64Imm, Jeq64Reg),
        (Width::W64, Cond::Gt) => pick(Jgt64Imm, Jgt64Reg),
        (Width::W64, Cond::Ge) => pick(Jge64Imm, Jge64Reg),
        (Width::W64, Cond::Set) => pick(Jset64Imm, Jset64Reg),
        (Width::W64, Cond::Ne) => pick(Jne64Imm, Jne64Reg),
        (Width::W64, Cond::Sgt) => pick(Jsgt64Imm, Jsgt64Reg),
        (Width::W64, Cond::Sge) => pick(Jsge64Imm, Jsge64Reg),
        (Width::W64, Cond::Lt) => pick(Jlt64Imm, Jlt64Reg),
        (Width::W64, Cond::Le) => pick(Jle64Imm, Jle64Reg),
        (Width::W64, Cond::Slt) => pick(Jslt64Imm, Jslt64Reg),
        (Width::W64, Cond::Sle) => pick(Jsle64Imm, Jsle64Reg),
        (Width::W32, Cond::Eq) => pick(Jeq32Imm, Jeq32Reg),
        (Width::W32, Cond::Gt) => pick(Jgt32Imm, Jgt32Reg),
        (Width::W32, Cond::Ge) => pick(Jge32Imm, Jge32Reg),
        (Width::W32, Cond::Set) => pick(Jset32Imm, Jset32Reg),
        (Width::W32, Cond::Ne) => pick(Jne32Imm, Jne32Reg),
        (Width::W32, Cond::Sgt) => pick(Jsgt32Imm, Jsgt32Reg),
        (Width::W32, Cond::Sge) => pick(Jsge32Imm, Jsge32Reg),
        (Width::W32, Cond::Lt) => pick(Jlt32Imm, Jlt32Reg),
        (Width::W32, Cond::Le) => pick(Jle32Imm, Jle32Reg),
        (Width::W32, Cond::Slt) => pick(Jslt32Imm, Jslt32Reg),
        (Width::W32, Cond::Sle) => pick(Jsle32Imm, Jsle32Reg),
    }
}
