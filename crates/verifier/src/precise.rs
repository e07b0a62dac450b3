//! Precision: which numbers a path's safety depended on. Pruning compares
//! only those (a stored state's other numbers match any number), which is
//! what lets big programs verify quickly, as the kernel's
//! `mark_chain_precision` does.
//!
//! Where a value decides something (a branch only one way possible, a
//! helper's size, an offset added to a pointer), the registers holding it
//! are *demanded*; the demand is traced back through the instructions of
//! the path (a move demands its source, a fill the stack slot, a spill the
//! register) and every stored state it passes gets those numbers marked
//! precise. A path pruned against a stored state inherits that state's
//! precise numbers as demands, since its future is the stored state's.

use isa::{AluOp, AtomicOp, CallTarget, Insn, Operand};

use crate::check::Verifier;
use crate::state::{Byte, Kind, MAX_FRAMES, State};

/// One executed instruction, as backtracking needs it.
#[derive(Copy, Clone, Debug)]
pub struct Entry {
    pub pc: u32,
    /// Index of the frame it ran in.
    pub frame: u8,
    /// The stack slot (frame, slot) a load or store touched at a fixed offset.
    pub stack: Option<(u8, u8)>,
    /// At a conditional jump: registers and stack slots of this frame
    /// linked (same id) to the compared registers, and whether links reach
    /// into other frames.
    pub linked: u16,
    pub linked_slots: u64,
    pub linked_far: bool,
}

impl Entry {
    pub fn new(pc: usize, frame: usize) -> Entry {
        Entry {
            pc: pc as u32,
            frame: frame as u8,
            stack: None,
            linked: 0,
            linked_slots: 0,
            linked_far: false,
        }
    }
}

/// Registers and stack slots whose values are demanded, per frame index.
#[derive(Clone, Default, Debug)]
pub struct Demand {
    pub regs: [u16; MAX_FRAMES],
    pub slots: [u64; MAX_FRAMES],
}

impl Demand {
    pub fn is_empty(&self) -> bool {
        self.regs.iter().all(|r| *r == 0) && self.slots.iter().all(|s| *s == 0)
    }

    /// What a stored state's precise numbers demand of a path pruned
    /// against it.
    pub fn of_precise(st: &State) -> Demand {
        let mut d = Demand::default();
        for (f, frame) in st.frames.iter().enumerate() {
            for (r, reg) in frame.regs.iter().enumerate() {
                if reg.precise && reg.is_scalar() {
                    d.regs[f] |= 1 << r;
                }
            }
            for (i, slot) in frame.stack.iter().enumerate() {
                if slot.bytes.contains(&Byte::Spill) && slot.spill.precise {
                    d.slots[f] |= 1 << i;
                }
            }
        }
        d
    }

    /// The stack slots a stored state's future reads.
    pub fn of_live(st: &State) -> Demand {
        let mut d = Demand::default();
        for (f, frame) in st.frames.iter().enumerate() {
            for (i, slot) in frame.stack.iter().enumerate() {
                if slot.live {
                    d.slots[f] |= 1 << i;
                }
            }
        }
        d
    }

    /// Marks the demanded slots of `st` live; says whether any was not.
    fn mark_live(&mut self, st: &mut State) -> bool {
        let mut new = false;
        for f in 0..MAX_FRAMES {
            let Some(frame) = st.frames.get_mut(f) else {
                self.slots[f] = 0;
                continue;
            };
            for i in 0..64 {
                if self.slots[f] & (1 << i) != 0 {
                    let s = frame.slot_mut(i);
                    new |= !s.live;
                    s.live = true;
                }
            }
        }
        new
    }

    /// Marks the demanded numbers of `st` precise; demands on registers or
    /// slots that do not hold numbers there end (pointers are always
    /// compared exactly, misc bytes read as unknown anyway). Says whether
    /// anything was not marked already.
    fn mark(&mut self, st: &mut State) -> bool {
        let mut new = false;
        for f in 0..MAX_FRAMES {
            let Some(frame) = st.frames.get_mut(f) else {
                self.regs[f] = 0;
                self.slots[f] = 0;
                continue;
            };
            for r in 0..11 {
                if self.regs[f] & (1 << r) != 0 {
                    let reg = &mut frame.regs[r];
                    if reg.kind == Kind::Scalar {
                        new |= !reg.precise;
                        reg.precise = true;
                    } else {
                        self.regs[f] &= !(1 << r);
                    }
                }
            }
            for i in 0..64 {
                if self.slots[f] & (1 << i) != 0 {
                    match frame.stack.get_mut(i) {
                        Some(s) if s.bytes.contains(&Byte::Spill) && s.spill.is_scalar() => {
                            new |= !s.spill.precise;
                            s.spill.precise = true;
                        }
                        _ => self.slots[f] &= !(1 << i),
                    }
                }
            }
        }
        new
    }
}

fn bit(r: isa::Reg) -> u16 {
    1 << r.index()
}

/// Undoes one instruction on the demand: what it needed before.
fn back(insn: &Insn, e: &Entry, d: &mut Demand) {
    let f = e.frame as usize;
    let regs = &mut d.regs[f];
    let demanded = |regs: &u16, r: isa::Reg| regs & bit(r) != 0;
    match *insn {
        Insn::Alu { op, dst, src, .. } => {
            let is_mov = matches!(
                op,
                AluOp::Mov | AluOp::MovSx8 | AluOp::MovSx16 | AluOp::MovSx32
            );
            if demanded(regs, dst) {
                if is_mov {
                    *regs &= !bit(dst);
                }
                if let Operand::Reg(s) = src {
                    *regs |= bit(s);
                }
            }
        }
        Insn::Neg { .. } | Insn::Endian { .. } | Insn::Ja { .. } | Insn::Ja32 { .. } => {}
        Insn::Jmp { dst, src, .. } => {
            let mut involved = bit(dst);
            if let Operand::Reg(s) = src {
                involved |= bit(s);
            }
            let all = involved | e.linked;
            if *regs & all != 0
                || d.slots[f] & e.linked_slots != 0
                || (e.linked_far && e.linked != 0)
            {
                // A refinement ties the compared numbers (and their
                // linked copies) together.
                d.regs[f] |= all;
                d.slots[f] |= e.linked_slots;
            }
        }
        Insn::Lddw { dst, .. } => *regs &= !bit(dst),
        Insn::Load { dst, .. } => {
            if demanded(regs, dst) {
                *regs &= !bit(dst);
                if let Some((sf, slot)) = e.stack {
                    d.slots[sf as usize] |= 1 << slot;
                }
            }
        }
        Insn::Store { src, size, .. } => {
            if let Some((sf, slot)) = e.stack
                && d.slots[sf as usize] & (1 << slot) != 0
            {
                if size == isa::Size::DW {
                    d.slots[sf as usize] &= !(1 << slot);
                }
                if let Operand::Reg(s) = src {
                    d.regs[f] |= bit(s);
                }
            }
        }
        Insn::Atomic { op, fetch, src, .. } => {
            let out = if op == AtomicOp::CmpXchg {
                isa::Reg::R0
            } else {
                src
            };
            if (fetch || op.always_fetches() || op == AtomicOp::CmpXchg) && demanded(regs, out) {
                *regs &= !bit(out);
                if let Some((sf, slot)) = e.stack {
                    d.slots[sf as usize] |= 1 << slot;
                }
            }
            if let Some((sf, slot)) = e.stack
                && d.slots[sf as usize] & (1 << slot) != 0
            {
                d.regs[f] |= bit(src);
            }
        }
        Insn::Call(CallTarget::Local(_)) => {
            // Back from the callee's entry into the caller: the callee's
            // arguments were the caller's r1-r5; its own stack was empty.
            if f + 1 < MAX_FRAMES {
                let args = d.regs[f + 1] & 0b11_1110;
                d.regs[f] |= args;
                d.regs[f + 1] = 0;
                d.slots[f + 1] = 0;
            }
        }
        Insn::Call(_) | Insn::Callx { .. } | Insn::LdAbs { .. } | Insn::LdInd { .. } => {
            *regs &= !0b11_1111;
        }
        Insn::Exit => {
            // Back from the caller (after the call) into the callee's exit:
            // the caller's r0 was the callee's.
            if f >= 1 && d.regs[f - 1] & 1 != 0 {
                d.regs[f - 1] &= !1;
                d.regs[f] |= 1;
            }
        }
    }
}

/// Undoes one instruction on a set of slots about to be read: a whole
/// 8-byte store ends the need; a callee's stack did not exist before it
/// was called.
fn back_reads(insn: &Insn, e: &Entry, d: &mut Demand) {
    match *insn {
        Insn::Store {
            size: isa::Size::DW,
            ..
        } => {
            if let Some((sf, slot)) = e.stack {
                d.slots[sf as usize] &= !(1 << slot);
            }
        }
        Insn::Call(CallTarget::Local(_)) => {
            let f = e.frame as usize;
            if f + 1 < MAX_FRAMES {
                d.slots[f + 1] = 0;
            }
        }
        _ => {}
    }
}

impl Verifier<'_> {
    /// Stack bytes `min..max` of frame `frame` are read: mark their slots
    /// live in every stored state back to where they were written.
    pub fn read_stack(&mut self, frame: u8, min: i64, max: i64) {
        if min >= max {
            return;
        }
        let mut d = Demand::default();
        let (last, _) = crate::state::Frame::locate(min);
        let (first, _) = crate::state::Frame::locate(max - 1);
        for s in first..=last.min(63) {
            d.slots[frame as usize] |= 1 << s;
        }
        self.backtrack_reads(d);
    }

    pub fn backtrack_reads(&mut self, d: Demand) {
        self.walk_back(d, back_reads, Demand::mark_live);
    }

    /// Registers `regs` of the current frame (and stack slots `slots`) hold
    /// values a decision depends on: trace them back and mark them precise
    /// in every stored state on the way.
    pub fn demand(&mut self, st: &State, regs: u16, slots: &[(u8, u8)]) {
        let mut d = Demand::default();
        d.regs[st.frames.len() - 1] = regs;
        for &(f, s) in slots {
            d.slots[f as usize] |= 1 << s;
        }
        self.backtrack(d);
    }

    /// Traces `d` back from the current instruction through the path's
    /// history and its stored states.
    pub fn backtrack(&mut self, d: Demand) {
        self.walk_back(d, back, Demand::mark);
    }

    /// Walks a demand back over the current path's instructions (`step`
    /// undoes one) and stored states (`mark` records it there, saying
    /// whether anything was new; if not, an earlier walk went on from
    /// there already).
    fn walk_back(
        &mut self,
        mut d: Demand,
        step: fn(&Insn, &Entry, &mut Demand),
        mark: fn(&mut Demand, &mut State) -> bool,
    ) {
        for e in self.hist.iter().rev() {
            if d.is_empty() {
                return;
            }
            let insn = self.code[e.pc as usize].expect("history holds instructions");
            step(&insn, e, &mut d);
        }
        let mut node = self.parent;
        while let Some(n) = node {
            if d.is_empty() || !mark(&mut d, &mut self.nodes[n].state) {
                return;
            }
            for i in (0..self.nodes[n].history.len()).rev() {
                if d.is_empty() {
                    return;
                }
                let e = self.nodes[n].history[i];
                let insn = self.code[e.pc as usize].expect("history holds instructions");
                step(&insn, &e, &mut d);
            }
            node = self.nodes[n].parent;
        }
    }
}
