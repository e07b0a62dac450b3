//! Classic BPF as eBPF, the way the kernel translates a socket filter
//! (`bpf_convert_filter`), so that a classic filter runs in sluice's VM and
//! JIT, passes its verifier, and loads into the kernel; in two forms and
//! for xPF too.
//!
//! The mapping: A is r0, X is r7, r6 holds the context, r8 is scratch,
//! r1-r5 are temporaries, and `M[k]` is the stack word at
//! `r10 - 4 * (16 - k)`. A and X start at zero; arithmetic is 32-bit; a
//! division or modulo by an X of zero ends the program with 0; jumps
//! compare 32 bits (`jmp32`), so a `k` with the top bit set compares as
//! classic does.
//! - The **socket form** ([`to_ebpf`]; socket filters, tc classifiers):
//!   packet loads become `ld_abs`/`ld_ind`, which end the program with 0
//!   outside the packet as classic loads do; `ld #pktlen` reads
//!   `__sk_buff.len`; ancillary loads read the `__sk_buff` field the kernel
//!   reads or call the helper; those with neither (`hatype`, `poff`,
//!   netlink attributes) are refused by name. It returns the filter's value.
//! - The **XDP form** ([`to_xdp`]): direct packet access, each load checked
//!   against `data_end` (outside the frame: the filter's 0); `len` is the
//!   frame's length; `ifidx` and `queue` read `xdp_md`; the other
//!   ancillary fields have no XDP source and are refused by name, as are
//!   loads relative to the network header (`SKF_NET_OFF`); an `ld_ind`
//!   whose offset comes out negative reads nothing (0). A filter's nonzero
//!   result becomes `XDP_PASS`, zero `XDP_DROP`.
//! - **xPF** ([`translate_xpf`], either form): scratch words are zeroed at
//!   the start; the persistent bank is a value of an array map of the
//!   instance's blocks (map 0), the active block's index a one-entry array
//!   (map 1), looked up once per packet; `M[x + k]` checks its index against
//!   the bank; a program that loops counts the body's instructions in r9,
//!   a block's length at its first instruction, and each backward `ja`
//!   first goes to the handler (or returns 0) when r9 is over the budget.

mod ops;
mod packet;
mod xpf;

use isa::{AluOp, Cond, Insn as E, Operand, Reg, Width};

use crate::check::{CheckError, check};
use crate::insn::Insn;
use crate::xpf::{Shape, XpfOptions};

pub use xpf::{XpfProgram, translate_xpf};

pub(crate) const A: Reg = Reg::R0;
pub(crate) const X: Reg = Reg::R7;
pub(crate) const CTX: Reg = Reg::R6;
pub(crate) const TMP: Reg = Reg::R8;
/// xPF: body instructions run so far.
pub(crate) const COUNT: Reg = Reg::R9;

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

/// Where the translation runs: how it reads the packet and what it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `ld_abs`/`ld_ind` on an `__sk_buff`; returns the filter's value.
    Socket,
    /// Direct access to an `xdp_md` frame; returns `XDP_PASS` or `XDP_DROP`.
    Xdp,
}

/// Where a jump goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dest {
    /// Classic instruction `n`.
    Insn(usize),
    /// The shared exit with the filter's 0 (dropped).
    Zero,
    /// xPF's exception handler, or `Zero` where there is none.
    Handler,
}

pub(crate) enum Out {
    Insn(E),
    /// `if dst <cond> src goto to` (`cond` given) or `goto to`.
    Jump {
        cond: Option<(Width, Cond, Reg, Operand)>,
        to: Dest,
    },
}

/// A translation in progress.
pub(crate) struct Tr<'a> {
    pub form: Form,
    /// xPF's shape and instance, when translating xPF.
    pub xpf: Option<(&'a Shape, XpfOptions)>,
    pub out: Vec<Out>,
}

pub(crate) fn alu32(op: AluOp, dst: Reg, src: Operand) -> E {
    E::Alu {
        width: Width::W32,
        op,
        dst,
        src,
    }
}

pub(crate) fn alu64(op: AluOp, dst: Reg, src: Operand) -> E {
    E::Alu {
        width: Width::W64,
        op,
        dst,
        src,
    }
}

pub(crate) fn mov32(dst: Reg, src: Operand) -> E {
    alu32(AluOp::Mov, dst, src)
}

impl Tr<'_> {
    pub fn emit(&mut self, e: E) {
        self.out.push(Out::Insn(e));
    }

    pub fn goto(&mut self, to: Dest) {
        self.out.push(Out::Jump { cond: None, to });
    }

    pub fn jump_if(&mut self, width: Width, cond: Cond, dst: Reg, src: Operand, to: Dest) {
        self.out.push(Out::Jump {
            cond: Some((width, cond, dst, src)),
            to,
        });
    }

    /// The whole program.
    fn run(mut self, prog: &[Insn]) -> Result<Vec<E>, TranslateError> {
        self.emit(alu64(AluOp::Mov, CTX, Operand::Reg(Reg::R1)));
        self.xpf_prologue();
        self.emit(mov32(A, Operand::Imm(0)));
        self.emit(mov32(X, Operand::Imm(0)));
        let blocks = self.xpf_blocks(prog);
        // Where each classic instruction starts in `out`.
        let mut at = Vec::with_capacity(prog.len());
        for (pc, p) in prog.iter().enumerate() {
            at.push(self.out.len());
            if let Some(&len) = blocks.get(pc).and_then(Option::as_ref) {
                self.emit(alu64(AluOp::Add, COUNT, Operand::Imm(len as i32)));
            }
            self.one(pc, p)?;
        }
        let handler = self.xpf.and_then(|(s, _)| s.handler);
        // The shared zero exit.
        let zero = self.out.len();
        self.emit(mov32(A, Operand::Imm(self.zero_value())));
        self.emit(E::Exit);
        let target = |to: Dest| match (to, handler) {
            (Dest::Insn(t), _) | (Dest::Handler, Some(t)) => at[t],
            (Dest::Zero, _) | (Dest::Handler, None) => zero,
        };
        // The verifier refuses dead code: keep what a path reaches (a load
        // always outside the frame leaves the rest of its block dead).
        let live = reachable(&self.out, target);
        // Jump offsets count instruction slots (`lddw` takes two).
        let mut slot = Vec::with_capacity(self.out.len());
        let mut n = 0usize;
        for (o, &keep) in self.out.iter().zip(&live) {
            slot.push(n);
            if keep {
                n += match o {
                    Out::Insn(e) => e.slots(),
                    Out::Jump { .. } => 1,
                };
            }
        }
        let total = n;
        let mut insns = Vec::with_capacity(self.out.len());
        for (i, o) in self.out.iter().enumerate().filter(|&(i, _)| live[i]) {
            insns.push(match *o {
                Out::Insn(e) => e,
                Out::Jump { cond, to } => {
                    let off = i16::try_from(slot[target(to)] as i64 - slot[i] as i64 - 1)
                        .map_err(|_| TranslateError::TooFar(total))?;
                    match cond {
                        None => E::Ja { off },
                        Some((width, cond, dst, src)) => E::Jmp {
                            width,
                            cond,
                            dst,
                            src,
                            off,
                        },
                    }
                }
            });
        }
        Ok(insns)
    }
}

/// Which entries of `out` some path from the first reaches (the fixed
/// jumps inside an entry sequence, as `ret a`'s, count in entries: each
/// is one slot).
fn reachable(out: &[Out], target: impl Fn(Dest) -> usize) -> Vec<bool> {
    let mut live = vec![false; out.len()];
    let mut work = vec![0usize];
    while let Some(i) = work.pop() {
        if i >= out.len() || live[i] {
            continue;
        }
        live[i] = true;
        match &out[i] {
            Out::Insn(E::Exit) => {}
            Out::Insn(E::Ja { off }) => work.push((i as i64 + 1 + i64::from(*off)) as usize),
            Out::Insn(E::Jmp { off, .. }) => {
                work.push(i + 1);
                work.push((i as i64 + 1 + i64::from(*off)) as usize);
            }
            Out::Insn(_) => work.push(i + 1),
            Out::Jump { cond, to } => {
                work.push(target(*to));
                if cond.is_some() {
                    work.push(i + 1);
                }
            }
        }
    }
    live
}

/// The eBPF program of a classic filter (checked first, as the kernel
/// does), for a socket filter or tc classifier: it returns the filter's
/// value.
pub fn to_ebpf(prog: &[Insn]) -> Result<Vec<E>, TranslateError> {
    check(prog)?;
    Tr {
        form: Form::Socket,
        xpf: None,
        out: Vec::new(),
    }
    .run(prog)
}

/// The XDP program of a classic filter (checked first): `XDP_PASS` where
/// the filter accepts, `XDP_DROP` where it returns 0.
pub fn to_xdp(prog: &[Insn]) -> Result<Vec<E>, TranslateError> {
    check(prog)?;
    Tr {
        form: Form::Xdp,
        xpf: None,
        out: Vec::new(),
    }
    .run(prog)
}
