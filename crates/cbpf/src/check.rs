//! The kernel's classic checker (`bpf_check_classic` in
//! `net/core/filter.c`): a filter the kernel would refuse with `EINVAL` is
//! refused here too, with the instruction and the reason. The rules: 1 to
//! 4096 instructions, only the opcodes Linux knows, no division or modulo
//! by a constant zero, constant shifts below 32, scratch words `M[0..16]`,
//! every jump forward and inside the program, only known ancillary
//! offsets, a `ret` last, and no scratch word read before every path to
//! the read has written it.

use crate::insn::{Insn, MAXINSNS, MEMWORDS, ancillary, class, misc, mode, op, rval, size, src};

/// Why the kernel would refuse a filter.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("an empty filter")]
    Empty,
    #[error("{0} instructions, over the {MAXINSNS} a filter may have")]
    TooLong(usize),
    #[error("insn {insn}: {why}")]
    At { insn: usize, why: String },
    #[error("the last instruction is not a `ret`")]
    NoReturn,
}

pub(crate) fn at(insn: usize, why: impl Into<String>) -> CheckError {
    CheckError::At {
        insn,
        why: why.into(),
    }
}

/// Whether Linux knows the opcode (`chk_code_allowed`).
pub fn known_opcode(code: u16) -> bool {
    let alu = |o: u16| [class::ALU | o | src::K, class::ALU | o | src::X];
    let jmp = |o: u16| [class::JMP | o | src::K, class::JMP | o | src::X];
    let alu_ops = [
        op::ADD,
        op::SUB,
        op::MUL,
        op::DIV,
        op::MOD,
        op::AND,
        op::OR,
        op::XOR,
        op::LSH,
        op::RSH,
    ];
    let jmp_ops = [op::JEQ, op::JGE, op::JGT, op::JSET];
    alu_ops.iter().any(|&o| alu(o).contains(&code))
        || jmp_ops.iter().any(|&o| jmp(o).contains(&code))
        || [
            class::ALU | op::NEG,
            class::LD | size::W | mode::ABS,
            class::LD | size::H | mode::ABS,
            class::LD | size::B | mode::ABS,
            class::LD | size::W | mode::LEN,
            class::LD | size::W | mode::IND,
            class::LD | size::H | mode::IND,
            class::LD | size::B | mode::IND,
            class::LD | mode::IMM,
            class::LD | mode::MEM,
            class::LDX | size::W | mode::LEN,
            class::LDX | size::B | mode::MSH,
            class::LDX | mode::IMM,
            class::LDX | mode::MEM,
            class::ST,
            class::STX,
            class::MISC | misc::TAX,
            class::MISC | misc::TXA,
            class::RET | rval::K,
            class::RET | rval::A,
            class::JMP | op::JA,
        ]
        .contains(&code)
}

/// Whether `k` of an absolute load names an ancillary field the kernel
/// knows (`bpf_anc_helper`): `SKF_AD_OFF + n`, `n` one of `SKF_AD_*`.
pub(crate) fn known_ancillary(k: u32) -> bool {
    k.checked_sub(ancillary::AD_OFF)
        .is_some_and(|off| off < ancillary::MAX && off.is_multiple_of(4))
}

/// Checks `prog` as the kernel does before attaching it.
pub fn check(prog: &[Insn]) -> Result<(), CheckError> {
    let n = prog.len();
    if n == 0 {
        return Err(CheckError::Empty);
    }
    if n > MAXINSNS {
        return Err(CheckError::TooLong(n));
    }
    for (pc, p) in prog.iter().enumerate() {
        if !known_opcode(p.code) {
            return Err(at(pc, format!("unknown opcode {:#06x}", p.code)));
        }
        check_operands(pc, p)?;
        let c = p.code;
        let k = p.k;
        if [
            class::LD | mode::MEM,
            class::LDX | mode::MEM,
            class::ST,
            class::STX,
        ]
        .contains(&c)
        {
            if k >= MEMWORDS {
                return Err(at(pc, format!("scratch word M[{k}]: there are {MEMWORDS}")));
            }
        } else if c == class::JMP | op::JA {
            // Jumps are unsigned, so forward; the target must be inside.
            let back = pc as i64 + 1 + i64::from(k as i32);
            if (k as i32) < 0 && back >= 0 {
                // What libpcap's `bpf_filter` runs (`ip6 protochain`).
                return Err(at(
                    pc,
                    format!(
                        "`ja` jumps backward (to insn {back}): the kernel runs no backward jump \
                         (libpcap's interpreter does, for `protochain`)"
                    ),
                ));
            }
            if u64::from(k) >= (n - pc - 1) as u64 {
                return Err(at(
                    pc,
                    format!("`ja` over {k} instructions leaves the program ({n} instructions)"),
                ));
            }
        } else if p.is_conditional() {
            check_conditional(pc, p, n)?;
        }
    }
    let last = prog[n - 1].code;
    if last != class::RET | rval::K && last != class::RET | rval::A {
        return Err(CheckError::NoReturn);
    }
    check_scratch(prog)
}

/// The rules on constants: no division or modulo by zero, shifts below
/// 32, known ancillary offsets.
pub(crate) fn check_operands(pc: usize, p: &Insn) -> Result<(), CheckError> {
    let c = p.code;
    let k = p.k;
    if c == class::ALU | op::DIV | src::K || c == class::ALU | op::MOD | src::K {
        if k == 0 {
            return Err(at(pc, "division by the constant zero"));
        }
    } else if c == class::ALU | op::LSH | src::K || c == class::ALU | op::RSH | src::K {
        if k >= 32 {
            return Err(at(pc, format!("shift by {k}, not below 32")));
        }
    } else if (c == class::LD | size::W | mode::ABS
        || c == class::LD | size::H | mode::ABS
        || c == class::LD | size::B | mode::ABS)
        && k >= ancillary::AD_OFF
        && !known_ancillary(k)
    {
        return Err(at(
            pc,
            format!(
                "ancillary offset SKF_AD_OFF + {} is unknown",
                k - ancillary::AD_OFF
            ),
        ));
    }
    Ok(())
}

/// Both branches of a conditional jump land inside the program.
pub(crate) fn check_conditional(pc: usize, p: &Insn, n: usize) -> Result<(), CheckError> {
    for (which, off) in [("true", p.jt), ("false", p.jf)] {
        if pc + usize::from(off) + 1 >= n {
            return Err(at(
                pc,
                format!("the {which} branch (+{off}) leaves the program ({n} instructions)"),
            ));
        }
    }
    Ok(())
}

/// No scratch word is read before it was written on every path to the read
/// (the kernel's `check_load_and_stores`): a bit per word, known-written
/// words meet (AND) at jump targets.
fn check_scratch(prog: &[Insn]) -> Result<(), CheckError> {
    let mut masks = vec![u16::MAX; prog.len()];
    let mut valid: u16 = 0;
    for (pc, p) in prog.iter().enumerate() {
        valid &= masks[pc];
        let c = p.code;
        if c == class::ST || c == class::STX {
            valid |= 1 << p.k;
        } else if c == class::LD | mode::MEM || c == class::LDX | mode::MEM {
            if valid & (1 << p.k) == 0 {
                return Err(at(
                    pc,
                    format!("M[{}] is read before every path here has written it", p.k),
                ));
            }
        } else if c == class::JMP | op::JA {
            masks[pc + 1 + p.k as usize] &= valid;
            valid = u16::MAX;
        } else if p.is_conditional() {
            masks[pc + 1 + usize::from(p.jt)] &= valid;
            masks[pc + 1 + usize::from(p.jf)] &= valid;
            valid = u16::MAX;
        }
    }
    Ok(())
}
