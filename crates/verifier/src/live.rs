//! Which registers may still be read at each instruction (backward
//! dataflow inside each function). State pruning ignores dead registers,
//! as the kernel's liveness marks let it.

use isa::{AtomicOp, CallTarget, Insn, Operand};

use crate::protos;

/// Live-in register sets by slot (bit `r` for register `r`).
pub struct Liveness {
    live_in: Vec<u16>,
}

const CALLER_SAVED: u16 = 0b11_1111; // r0..r5

fn bit(r: isa::Reg) -> u16 {
    1 << r.index()
}

/// Registers an instruction reads and writes.
fn uses_defs(insn: &Insn) -> (u16, u16) {
    match *insn {
        Insn::Alu { op, dst, src, .. } => {
            let s = match src {
                Operand::Reg(r) => bit(r),
                Operand::Imm(_) => 0,
            };
            let d = if matches!(op, isa::AluOp::Mov) || op.is_movsx() {
                0
            } else {
                bit(dst)
            };
            (s | d, bit(dst))
        }
        Insn::Neg { dst, .. } | Insn::Endian { dst, .. } => (bit(dst), bit(dst)),
        Insn::Jmp { dst, src, .. } => {
            let s = match src {
                Operand::Reg(r) => bit(r),
                Operand::Imm(_) => 0,
            };
            (bit(dst) | s, 0)
        }
        Insn::Ja { .. } | Insn::Ja32 { .. } => (0, 0),
        Insn::Call(CallTarget::Helper(id)) => {
            let n = protos::arg_count(id as u32);
            (((1u16 << (n + 1)) - 2), CALLER_SAVED)
        }
        Insn::Call(_) | Insn::Callx { .. } => (0b11_1110, CALLER_SAVED),
        Insn::Exit => (1, 0),
        Insn::Lddw { dst, .. } => (0, bit(dst)),
        Insn::Load { dst, src, .. } => (bit(src), bit(dst)),
        Insn::Store { dst, src, .. } => {
            let s = match src {
                Operand::Reg(r) => bit(r),
                Operand::Imm(_) => 0,
            };
            (bit(dst) | s, 0)
        }
        Insn::Atomic {
            op,
            fetch,
            dst,
            src,
            ..
        } => {
            if op == AtomicOp::CmpXchg {
                (bit(dst) | bit(src) | 1, 1)
            } else if fetch || op.always_fetches() {
                (bit(dst) | bit(src), bit(src))
            } else {
                (bit(dst) | bit(src), 0)
            }
        }
        Insn::LdAbs { .. } => (1 << 6, CALLER_SAVED),
        Insn::LdInd { src, .. } => ((1 << 6) | bit(src), CALLER_SAVED),
    }
}

impl Liveness {
    pub fn compute(code: &[Option<Insn>]) -> Liveness {
        let n = code.len();
        let mut live_in = vec![0u16; n];
        let succ = |s: usize| -> Vec<usize> {
            let Some(insn) = &code[s] else { return vec![] };
            let next = s + insn.slots();
            let target = |off: i64| (s as i64 + 1 + off) as usize;
            match *insn {
                Insn::Exit => vec![],
                Insn::Ja { off } => vec![target(off.into())],
                Insn::Ja32 { off } => vec![target(off.into())],
                Insn::Jmp { off, .. } => vec![next, target(off.into())],
                _ => vec![next],
            }
        };
        let mut changed = true;
        while changed {
            changed = false;
            for s in (0..n).rev() {
                let Some(insn) = &code[s] else { continue };
                let out = succ(s)
                    .into_iter()
                    .filter(|&t| t < n)
                    .fold(0u16, |acc, t| acc | live_in[t]);
                let (uses, defs) = uses_defs(insn);
                let v = uses | (out & !defs) | (1 << 10);
                if v != live_in[s] {
                    live_in[s] = v;
                    changed = true;
                }
            }
        }
        Liveness { live_in }
    }

    /// Whether register `r` may be read from slot `pc` on.
    pub fn is_live(&self, pc: usize, r: usize) -> bool {
        self.live_in.get(pc).is_none_or(|m| m & (1 << r) != 0)
    }
}
