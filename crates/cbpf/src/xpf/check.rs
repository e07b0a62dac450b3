//! xPF's checker. The rule: a program passes when the kernel's classic
//! checker would pass it with xPF's changes, and every instruction can
//! run. Changes: the xPF opcodes are known; a `ja` may go back, except
//! inside the exception handler (from `exc` to the end), so the handler
//! always ends; `M[k]` is bounded by its bank (16 scratch words, or the
//! persistent block's words) and every memory access is reached with one
//! bank on every path; scratch words need no write before a read (they
//! are zeroed per packet); at most one `exc`; no unreachable instruction
//! (the handler is reached from the backward jumps, where the budget is
//! checked), since the eBPF verifier refuses those.

use super::XpfOptions;
use crate::check::{CheckError, at, check_conditional, check_operands, known_opcode};
use crate::insn::{Insn, MAXINSNS, MEMWORDS, class, mode, op, rval, xpf};

/// The bank `M[]` addresses at an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bank {
    Scratch,
    Persistent,
}

/// What the checker learnt, for the interpreter and the translation.
#[derive(Clone, Debug)]
pub(crate) struct Shape {
    /// The bank each instruction runs with (Scratch where unreached).
    pub banks: Vec<Bank>,
    /// Where the exception handler starts.
    pub handler: Option<usize>,
    /// Whether any `ja` goes back (the budget is counted).
    pub loops: bool,
    /// Whether any access reaches the persistent bank.
    pub persistent: bool,
    /// Whether the program reads the time (`ld #time_sec`, `#time_nsec`).
    pub time: bool,
}

/// Whether `code` is one of xPF's own opcodes.
pub(crate) fn is_xpf_opcode(code: u16) -> bool {
    [
        xpf::LD_NDX,
        xpf::LDX_NDX,
        xpf::ST_NDX,
        xpf::STX_NDX,
        xpf::BSS,
        xpf::BSP,
        xpf::EXC,
    ]
    .contains(&code)
}

/// `M[k]` in the MEM mode.
fn is_direct_memory(code: u16) -> bool {
    [
        class::LD | mode::MEM,
        class::LDX | mode::MEM,
        class::ST,
        class::STX,
    ]
    .contains(&code)
}

/// The target of a `ja` at `pc`, if inside the program.
pub(crate) fn ja_target(pc: usize, k: u32, n: usize) -> Option<usize> {
    let t = pc as i64 + 1 + i64::from(k as i32);
    (0..n as i64).contains(&t).then_some(t as usize)
}

/// Checks an xPF program for an instance of `opts`.
pub fn check(prog: &[Insn], opts: &XpfOptions) -> Result<(), CheckError> {
    shape(prog, opts).map(|_| ())
}

pub(crate) fn shape(prog: &[Insn], opts: &XpfOptions) -> Result<Shape, CheckError> {
    let n = prog.len();
    if n == 0 {
        return Err(CheckError::Empty);
    }
    if n > MAXINSNS {
        return Err(CheckError::TooLong(n));
    }
    opts.validate()
        .map_err(|why| at(0, format!("the instance: {why}")))?;
    let mut handler = None;
    let mut loops = false;
    for (pc, p) in prog.iter().enumerate() {
        if !known_opcode(p.code) && !is_xpf_opcode(p.code) {
            return Err(at(pc, format!("unknown opcode {:#06x}", p.code)));
        }
        if !xpf::is_time_load(p) {
            check_operands(pc, p)?;
        }
        if p.code == xpf::EXC {
            if let Some(h) = handler {
                return Err(at(
                    pc,
                    format!("a second `exc`: the exception handler starts at {h}"),
                ));
            }
            handler = Some(pc);
        } else if p.code == class::JMP | op::JA {
            let Some(t) = ja_target(pc, p.k, n) else {
                return Err(at(
                    pc,
                    format!(
                        "`ja` by {} leaves the program ({n} instructions)",
                        p.k as i32
                    ),
                ));
            };
            if t <= pc {
                if handler.is_some() {
                    return Err(at(
                        pc,
                        "a backward jump in the exception handler: only forward jumps there, so it always ends",
                    ));
                }
                loops = true;
            }
        } else if p.is_conditional() {
            check_conditional(pc, p, n)?;
        }
    }
    let last = prog[n - 1].code;
    if last != class::RET | rval::K && last != class::RET | rval::A {
        return Err(CheckError::NoReturn);
    }
    let banks = banks(prog, handler)?;
    let mut persistent = false;
    for (pc, p) in prog.iter().enumerate() {
        let bank = banks[pc];
        if is_direct_memory(p.code) {
            let size = match bank {
                Bank::Scratch => MEMWORDS,
                Bank::Persistent => opts.words,
            };
            if p.k >= size {
                return Err(at(
                    pc,
                    match bank {
                        Bank::Scratch => {
                            format!("scratch word M[{}]: there are {MEMWORDS}", p.k)
                        }
                        Bank::Persistent => format!(
                            "persistent word M[{}]: the block has {} words",
                            p.k, opts.words
                        ),
                    },
                ));
            }
        }
        if bank == Bank::Persistent
            && (is_direct_memory(p.code)
                || [xpf::LD_NDX, xpf::LDX_NDX, xpf::ST_NDX, xpf::STX_NDX].contains(&p.code))
        {
            persistent = true;
        }
    }
    let time = prog.iter().any(xpf::is_time_load);
    Ok(Shape {
        banks,
        handler,
        loops,
        persistent,
        time,
    })
}

/// The bank at each instruction, from the start's scratch bank through
/// `bss`/`bsp` along every path (the handler is entered from each backward
/// jump); refuses a memory access reached with both banks, and
/// unreachable instructions.
fn banks(prog: &[Insn], handler: Option<usize>) -> Result<Vec<Bank>, CheckError> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Unreached,
        One(Bank),
        Both,
    }
    let n = prog.len();
    let mut state = vec![State::Unreached; n];
    state[0] = State::One(Bank::Scratch);
    let mut work = vec![0usize];
    let join = |s: State, b: State| match (s, b) {
        (State::Unreached, x) | (x, State::Unreached) => x,
        (x, y) if x == y => x,
        _ => State::Both,
    };
    while let Some(pc) = work.pop() {
        let p = &prog[pc];
        let out = match p.code {
            xpf::BSS => State::One(Bank::Scratch),
            xpf::BSP => State::One(Bank::Persistent),
            _ => state[pc],
        };
        let mut next: Vec<usize> = Vec::with_capacity(3);
        match p.class() {
            class::RET => {}
            class::JMP if p.code == class::JMP | op::JA => {
                let t = ja_target(pc, p.k, n).expect("checked");
                next.push(t);
                if t <= pc
                    && let Some(h) = handler
                {
                    next.push(h);
                }
            }
            class::JMP => {
                next.push(pc + 1 + usize::from(p.jt));
                next.push(pc + 1 + usize::from(p.jf));
            }
            _ if pc + 1 < n => next.push(pc + 1),
            _ => {}
        }
        for t in next {
            let s = join(state[t], out);
            if s != state[t] {
                state[t] = s;
                work.push(t);
            }
        }
    }
    let mut banks = Vec::with_capacity(n);
    for (pc, p) in prog.iter().enumerate() {
        let memory = is_direct_memory(p.code)
            || [xpf::LD_NDX, xpf::LDX_NDX, xpf::ST_NDX, xpf::STX_NDX].contains(&p.code);
        banks.push(match state[pc] {
            State::Unreached => {
                let why = if Some(pc) == handler {
                    "the exception handler never runs: no backward jump reaches it".to_string()
                } else {
                    "unreachable: no path reaches this instruction".to_string()
                };
                return Err(at(pc, why));
            }
            State::One(b) => b,
            State::Both if memory => {
                return Err(at(
                    pc,
                    "paths reach this memory access with different banks (scratch and persistent): switch with `bss` or `bsp` on every path",
                ));
            }
            State::Both => Bank::Scratch,
        });
    }
    Ok(banks)
}
