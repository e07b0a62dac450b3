//! Which x86-64 each eBPF instruction becomes (docs/jit.md has the table).
//!
//! Arithmetic, jumps, `lddw`, loads, stores, atomics, helper calls,
//! bpf-to-bpf calls and exits, and tail calls run natively (calls, exits
//! and tail calls through small Rust functions that keep the interpreter's
//! frames); what needs the interpreter's state machine (helpers with
//! callbacks and the exits that resume them, legacy packet loads) leaves
//! the code with `pc` set, and the driver lets the interpreter execute that
//! one instruction. Instructions are counted per block: a block's header
//! subtracts its length from the budget and, if the budget cannot pay for
//! all of it, leaves for the interpreter, which then runs out exactly
//! where it would have alone. In checked mode every load and store asks
//! `check_access` first; a refused access also leaves for the interpreter
//! with the block's unexecuted instructions given back, so the
//! interpreter re-executes it and reports the very same error.

use std::mem::offset_of;

use dynasmrt::{DynamicLabel, ExecutableBuffer};

use super::check_access;
use isa::opcode::atomic;

use super::frame::*;
use super::x64::*;
use crate::interp::Machine;
use crate::op::{Op, Slot};
use crate::{ArrayLookup, Lookup};

fn reg(n: u8) -> R {
    MAP[n as usize]
}

const BRANCHES: i32 = (offset_of!(Machine, stats) + offset_of!(crate::Stats, branches)) as i32;
const TAKEN: i32 = (offset_of!(Machine, stats) + offset_of!(crate::Stats, taken)) as i32;
/// The kernel's helper id of `bpf_map_lookup_elem`.
const MAP_LOOKUP_ELEM: i64 = 1;

/// The Rust functions native code calls, monomorphised for the VM's
/// environment type (`jit/mod.rs`). Each takes the machine first.
#[derive(Clone, Copy)]
pub struct Natives {
    /// `(m, helper id) -> 0 | 1`: 1 = leave (error set, or a helper that
    /// calls back: the interpreter runs it).
    pub helper: *const (),
    /// `(m, return pc) -> 0 | 1`: 1 = the call cannot be made (the
    /// interpreter repeats it and reports why).
    pub call_local: *const (),
    /// `(m) -> 0 | 1 | address`: 0 = not a plain return (the interpreter
    /// runs the exit), 1 = returned to a slot without native code
    /// (`m.pc` set), else where to continue.
    pub return_local: *const (),
    /// `(m) -> 0 | 1 | address`: 0 = no tail call (fall through), 1 = went
    /// to a program whose first slot has no native code, else its entry.
    pub tail_call: *const (),
    /// `(m, packed slot) -> 0 | 1 | 2`: 0 = r0 loaded, 1 = the program
    /// ended (out of the packet; `done` set), 2 = error set.
    pub legacy_load: *const (),
}

/// An `ld_abs`/`ld_ind` slot in one word for `Natives::legacy_load`:
/// opcode, source register, immediate.
pub fn pack_legacy(s: &Slot) -> i64 {
    (s.op as u8 as i64) | (i64::from(s.src) << 8) | ((s.imm as u32 as i64) << 32)
}

/// The slot [`pack_legacy`] packed.
pub fn unpack_legacy(v: u64) -> Option<Slot> {
    use Op::*;
    let op = [LdAbsB, LdAbsH, LdAbsW, LdIndB, LdIndH, LdIndW]
        .into_iter()
        .find(|&o| o as u8 == v as u8)?;
    Some(Slot {
        op,
        dst: 0,
        src: (v >> 8) as u8,
        off: 0,
        imm: i64::from((v >> 32) as u32 as i32),
    })
}

/// What every instruction's code may refer to.
struct Env<'a> {
    labels: &'a [DynamicLabel],
    exit: DynamicLabel,
    /// Where the program's own exit leaves (`done` set).
    finish: DynamicLabel,
    checked: bool,
    natives: Natives,
    /// Array lookups done inline (unchecked code only), by slot.
    lookups: &'a [(usize, Lookup)],
}

/// Native code for one program.
pub struct Code {
    /// Owns the pages the addresses below point into.
    buf: ExecutableBuffer,
    enter: Enter,
    /// Where each slot that starts a native block begins (null: nowhere).
    at: Vec<*const u8>,
}

// SAFETY: the addresses point into `buf`, which the `Code` owns and which
// is never written after `compile`.
unsafe impl Send for Code {}

/// `extern "sysv64" fn(ctx, code address)`: loads the registers from
/// `ctx`, jumps to the address, and stores them back when the code leaves.
pub type Enter = unsafe extern "sysv64" fn(*mut Machine, *const u8);

impl Code {
    /// The entry trampoline and the address to start at for `pc`, if
    /// native code starts there.
    #[inline]
    pub fn entry(&self, pc: usize) -> Option<(Enter, *const u8)> {
        let at = *self.at.get(pc)?;
        (!at.is_null()).then_some((self.enter, at))
    }

    /// Bytes of machine code.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
}

/// Whether the instruction runs natively (else the interpreter runs it).
fn native(s: &Slot) -> bool {
    if s.op == Op::CallHelper {
        // Callbacks need the interpreter's frames.
        return !isa::calls_back(s.imm);
    }
    if matches!(s.op, Op::Atomic32 | Op::Atomic64) {
        return atomic_alu(s.imm as i32).is_some()
            || matches!(s.imm as i32, atomic::XCHG | atomic::CMPXCHG);
    }
    !matches!(s.op, Op::Poisoned | Op::FellOff | Op::LddwHigh)
}

fn is_jump(op: Op) -> bool {
    (Op::Ja as u8..=Op::Jsle32Reg as u8).contains(&(op as u8))
}

/// Slots where a block starts: the entry, jump and call targets, the
/// functions whose address is taken, and whatever follows a jump, a call,
/// an exit, a tail call or an instruction the interpreter runs (so that a
/// block's instructions all run once its first does, unless it leaves).
fn leaders(slots: &[Slot]) -> Vec<bool> {
    let n = slots.len();
    let mut lead = vec![false; n];
    let mut mark = |i: usize| {
        if i < n {
            lead[i] = true;
        }
    };
    mark(0);
    for (pc, s) in slots.iter().enumerate() {
        if is_jump(s.op) || s.op == Op::CallLocal {
            mark(s.off as usize);
        }
        if s.op == Op::Lddw
            && let Some(t) = crate::func_slot(s.imm as u64)
        {
            mark(t);
        }
        if is_jump(s.op) || (!native(s) && s.op != Op::LddwHigh) {
            mark(pc);
            mark(pc + 1);
        }
        if matches!(
            s.op,
            Op::CallLocal
                | Op::Exit
                | Op::TailCall
                | Op::LdAbsB
                | Op::LdAbsH
                | Op::LdAbsW
                | Op::LdIndB
                | Op::LdIndH
                | Op::LdIndW
        ) {
            mark(pc + 1);
        }
    }
    lead
}

struct Stub {
    label: DynamicLabel,
    pc: usize,
    give_back: i32,
}

/// Compiles `slots` (a validated program). `checked`: every load and store
/// is checked (and counted when the machine asks) by `check_access`.
/// `natives` are the VM's Rust functions for helpers, calls and tail calls.
/// `batch`: the code runs batches (`vm::batch`), zeroing that many bytes
/// of the entry frame per packet.
pub fn compile(
    slots: &[Slot],
    checked: bool,
    natives: Natives,
    lookups: &[(usize, Lookup)],
    batch: Option<usize>,
) -> std::io::Result<Code> {
    let mut a = Asm::new()?;
    let n = slots.len();
    let lead = leaders(slots);
    let labels: Vec<DynamicLabel> = (0..n).map(|_| a.label()).collect();
    let exit = a.label();

    // The trampoline: a run from `pc`, or a batch's packet loop.
    let enter = a.offset();
    for r in [RBP, RBX, R12, R13, R14, R15] {
        a.push(r);
    }
    a.add_rsp(-8);
    a.alu_rr(Alu::Mov, W::Q, CTX, RDI);
    let finish = a.label();
    match batch {
        Some(zeroed) => super::batch_code::packet_loop(&mut a, zeroed, finish),
        None => {
            a.alu_rr(Alu::Mov, W::Q, T2, RSI);
            for (i, &r) in MAP.iter().enumerate() {
                a.load_q(r, CTX, REGS + 8 * i as i32);
            }
            a.jmp_r(T2);
        }
    }
    a.bind(exit);
    for (i, &r) in MAP.iter().enumerate() {
        a.store_q(CTX, REGS + 8 * i as i32, r);
    }
    epilogue(&mut a);
    // The program's own exit: only r0 matters to the driver (a batch
    // stores it and goes on with the next packet).
    if batch.is_none() {
        a.bind(finish);
        a.store_q(CTX, REGS, MAP[0]);
        epilogue(&mut a);
    }

    let mut at = vec![None; n];
    let mut stubs: Vec<Stub> = Vec::new();
    // The current block: its length and how many of it have been emitted.
    let (mut block, mut done) = (0i32, 0i32);
    for pc in 0..n {
        let s = slots[pc];
        if lead[pc] {
            a.bind(labels[pc]);
        }
        if s.op == Op::LddwHigh {
            continue;
        }
        if !native(&s) {
            a.mov_mi(CTX, PC, pc as i32);
            a.jmp(exit);
            continue;
        }
        if lead[pc] {
            at[pc] = Some(a.offset());
            block = (pc..n)
                .take_while(|&i| i == pc || !lead[i])
                .filter(|&i| native(&slots[i]))
                .count() as i32;
            done = 0;
            let stub = a.label();
            a.sub_mi(CTX, LEFT, block);
            a.jcc(Cond::Below, stub);
            stubs.push(Stub {
                label: stub,
                pc,
                give_back: block,
            });
        }
        let fault = a.label();
        let env = Env {
            labels: &labels,
            exit,
            finish,
            checked,
            natives,
            lookups,
        };
        if emit(&mut a, &s, pc, &env, fault) {
            stubs.push(Stub {
                label: fault,
                pc,
                give_back: block - done,
            });
        }
        done += 1;
    }
    for st in stubs {
        a.bind(st.label);
        a.add_mi(CTX, LEFT, st.give_back);
        a.mov_mi(CTX, PC, st.pc as i32);
        a.jmp(exit);
    }
    let buf = a
        .ops
        .finalize()
        .map_err(|_| std::io::Error::other("finalising JIT code"))?;
    // SAFETY: `enter` is the offset of the trampoline emitted above, whose
    // signature is `Enter`.
    let enter = unsafe { std::mem::transmute::<*const u8, Enter>(buf.ptr(enter)) };
    let at = at
        .iter()
        .map(|o| o.map_or(std::ptr::null(), |o| buf.ptr(o)))
        .collect();
    Ok(Code { buf, enter, at })
}

/// `bpf_map_lookup_elem(map, key)` on an array map (r1 known to be it):
/// r0 = the value's address when the 32-bit key at r2 is in range, else 0,
/// r1-r5 are dead after a call in verified code; only r0 and a scratch
/// register change.
fn array_lookup(a: &mut Asm, l: ArrayLookup) {
    let (null, done) = (a.label(), a.label());
    a.load(Size::W, false, RAX, reg(2), 0);
    // An unsigned compare: max_entries above i32::MAX cannot be an
    // immediate, and then every u32 key is below it.
    if let Ok(max) = i32::try_from(l.max_entries) {
        a.cmp_ri(W::Q, RAX, max);
        a.jcc(Cond::AboveEq, null);
    }
    if l.stride.is_power_of_two() {
        a.shift_ri(Shift::Shl, W::Q, RAX, l.stride.trailing_zeros() as i8);
    } else {
        a.mov_ri64(T0, i64::from(l.stride));
        a.imul_rr(W::Q, RAX, T0);
    }
    a.mov_ri64(T0, l.base as i64);
    a.alu_rr(Alu::Add, W::Q, RAX, T0);
    a.jmp(done);
    a.bind(null);
    a.alu_rr(Alu::Xor, W::D, RAX, RAX);
    a.bind(done);
}

/// `bpf_map_lookup_elem(map, key)` through the map's own lookup:
/// `func(data, r2, cpu)`, whose result is r0. The call clobbers only what
/// the C convention lets it: r1-r5 (dead after a call in verified code) and
/// the scratch registers; the stack is 16-aligned here, as for helpers.
fn direct_lookup(a: &mut Asm, func: crate::DirectLookup, data: u64, cpu: u32) {
    // r2, the key's address, is RSI already: the second argument.
    debug_assert_eq!(reg(2), RSI);
    a.mov_ri64(RDI, data as i64);
    a.mov_ri64(RDX, i64::from(cpu));
    a.call_abs(func as usize as i64);
}

/// Calls `f(machine, arg)` with every eBPF register in the machine, which
/// `f` may change; they come back, and `f`'s result is in `T0`.
fn call_with_registers(a: &mut Asm, f: *const (), arg: i64) {
    for (i, &r) in MAP.iter().enumerate() {
        a.store_q(CTX, REGS + 8 * i as i32, r);
    }
    a.alu_rr(Alu::Mov, W::Q, RDI, CTX);
    a.mov_ri64(RSI, arg);
    a.call_abs(f as i64);
    a.alu_rr(Alu::Mov, W::Q, T0, RAX);
    for (i, &r) in MAP.iter().enumerate() {
        a.load_q(r, CTX, REGS + 8 * i as i32);
    }
}

/// Emits one native instruction; says whether it jumps to `fault`.
fn emit(a: &mut Asm, s: &Slot, pc: usize, env: &Env, fault: DynamicLabel) -> bool {
    use Op::*;
    let (labels, checked) = (env.labels, env.checked);
    let d = reg(s.dst & 15);
    let x = || reg(s.src & 15);
    let imm = s.imm as i32;
    let w = |q: bool| if q { W::Q } else { W::D };
    match s.op {
        Add64Imm | Sub64Imm | And64Imm | Or64Imm | Xor64Imm | Mov64Imm | Add32Imm | Sub32Imm
        | And32Imm | Or32Imm | Xor32Imm | Mov32Imm => {
            let (op, q) = alu_of(s.op);
            a.alu_ri(op, w(q), d, imm);
        }
        Add64Reg | Sub64Reg | And64Reg | Or64Reg | Xor64Reg | Mov64Reg | Add32Reg | Sub32Reg
        | And32Reg | Or32Reg | Xor32Reg | Mov32Reg => {
            let (op, q) = alu_of(s.op);
            a.alu_rr(op, w(q), d, x());
        }
        Mul64Imm => a.imul_ri(W::Q, d, imm),
        Mul32Imm => a.imul_ri(W::D, d, imm),
        Mul64Reg => a.imul_rr(W::Q, d, x()),
        Mul32Reg => a.imul_rr(W::D, d, x()),
        Neg64 => a.neg(W::Q, d),
        Neg32 => a.neg(W::D, d),
        Lsh64Imm | Rsh64Imm | Arsh64Imm | Lsh32Imm | Rsh32Imm | Arsh32Imm => {
            let (op, q) = shift_of(s.op);
            let n = (s.imm & if q { 63 } else { 31 }) as i8;
            if n != 0 {
                a.shift_ri(op, w(q), d, n);
            } else if !q {
                a.alu_rr(Alu::Mov, W::D, d, d);
            }
        }
        Lsh64Reg | Rsh64Reg | Arsh64Reg | Lsh32Reg | Rsh32Reg | Arsh32Reg => {
            // The count must be in cl, and rcx is r4: shift a copy.
            let (op, q) = shift_of(s.op);
            a.alu_rr(Alu::Mov, w(q), T1, d);
            a.alu_rr(Alu::Mov, W::Q, T0, RCX);
            a.alu_rr(Alu::Mov, W::Q, RCX, x());
            a.shift_cl(op, w(q), T1);
            a.alu_rr(Alu::Mov, W::Q, RCX, T0);
            a.alu_rr(Alu::Mov, W::Q, d, T1);
        }
        Div64Imm | Div64Reg | Mod64Imm | Mod64Reg | SDiv64Imm | SDiv64Reg | SMod64Imm
        | SMod64Reg | Div32Imm | Div32Reg | Mod32Imm | Mod32Reg | SDiv32Imm | SDiv32Reg
        | SMod32Imm | SMod32Reg => divide(a, s, d),
        MovSx8To64 => a.movsx(W::Q, Size::B, d, x()),
        MovSx16To64 => a.movsx(W::Q, Size::H, d, x()),
        MovSx32To64 => a.movsx(W::Q, Size::W, d, x()),
        MovSx8To32 => a.movsx(W::D, Size::B, d, x()),
        MovSx16To32 => a.movsx(W::D, Size::H, d, x()),
        Le16 => a.movzx16(d),
        Le32 => a.alu_rr(Alu::Mov, W::D, d, d),
        Le64 => {}
        Be16 | Swap16 => {
            a.rol16_8(d);
            a.movzx16(d);
        }
        Be32 | Swap32 => a.bswap(W::D, d),
        Be64 | Swap64 => a.bswap(W::Q, d),
        Ja => a.jmp(labels[s.off as usize]),
        Lddw => a.mov_ri64(d, s.imm),
        CallHelper
            if !checked
                && s.imm == MAP_LOOKUP_ELEM
                && let Some(&(_, l)) = env.lookups.iter().find(|(at, _)| *at == pc) =>
        {
            match l {
                Lookup::Array(l) => array_lookup(a, l),
                Lookup::Direct { func, data, cpu } => direct_lookup(a, func, data, cpu),
            }
            a.add_mi(CTX, HELPER_CALLS, 1);
        }
        CallHelper | Callx => {
            // r0-r5 go to the machine for the helper, which writes r0
            // there; r1-r5 come back unchanged, as in the interpreter.
            for r in 0..=5 {
                a.store_q(CTX, REGS + 8 * r, MAP[r as usize]);
            }
            if s.op == Callx {
                a.alu_rr(Alu::Mov, W::Q, RSI, d);
            } else {
                a.mov_ri64(RSI, s.imm);
            }
            a.alu_rr(Alu::Mov, W::Q, RDI, CTX);
            a.call_abs(env.natives.helper as i64);
            a.test_rr(W::Q, RAX, RAX);
            // (loads leave the flags alone)
            for r in 0..=5 {
                a.load_q(MAP[r as usize], CTX, REGS + 8 * r);
            }
            a.jcc(Cond::Ne, fault);
            return true;
        }
        CallLocal => {
            // The frame is pushed in Rust, on the interpreter's frames.
            call_with_registers(a, env.natives.call_local, (pc + 1) as i64);
            a.cmp_ri(W::Q, T0, 0);
            a.jcc(Cond::Ne, fault);
            a.jmp(labels[s.off as usize]);
            return true;
        }
        Exit => {
            // The program's own exit ends the run; a function's returns.
            let local = a.label();
            a.cmp_mi(CTX, DEPTH, 0);
            a.jcc(Cond::Ne, local);
            a.mov_mi(CTX, DONE, 1);
            a.jmp(env.finish);
            a.bind(local);
            call_with_registers(a, env.natives.return_local, 0);
            a.cmp_ri(W::Q, T0, 1);
            a.jcc(Cond::Below, fault);
            a.jcc(Cond::Eq, env.exit);
            a.jmp_r(T0);
            return true;
        }
        LdAbsB | LdAbsH | LdAbsW | LdIndB | LdIndH | LdIndW => {
            // In Rust, as the interpreter does it; a load outside the packet
            // ends the program with r0 = 0 (the block ends here, so nothing
            // after it was charged).
            call_with_registers(a, env.natives.legacy_load, pack_legacy(s));
            a.cmp_ri(W::Q, T0, 1);
            a.jcc(Cond::Eq, env.exit);
            a.jcc(Cond::Above, fault);
            return true;
        }
        TailCall => {
            let no_target = a.label();
            call_with_registers(a, env.natives.tail_call, 0);
            a.cmp_ri(W::Q, T0, 1);
            a.jcc(Cond::Below, no_target);
            a.jcc(Cond::Eq, env.exit);
            a.jmp_r(T0);
            a.bind(no_target);
        }
        LdxB | LdxH | LdxW | LdxDW | LdxSB | LdxSH | LdxSW => {
            let (size, signed) = match s.op {
                LdxB => (Size::B, false),
                LdxH => (Size::H, false),
                LdxW => (Size::W, false),
                LdxDW => (Size::Dw, false),
                LdxSB => (Size::B, true),
                LdxSH => (Size::H, true),
                _ => (Size::W, true),
            };
            let base = x();
            if checked {
                check(a, base, s.off, size, 0, fault);
                a.load(size, signed, d, T0, 0);
            } else {
                a.load(size, signed, d, base, s.off);
            }
            return checked;
        }
        StB | StH | StW | StDW | StxB | StxH | StxW | StxDW => {
            let size = match s.op {
                StB | StxB => Size::B,
                StH | StxH => Size::H,
                StW | StxW => Size::W,
                _ => Size::Dw,
            };
            let (base, off) = if checked {
                check(a, d, s.off, size, WRITE, fault);
                (T0, 0)
            } else {
                (d, s.off)
            };
            if matches!(s.op, StB | StH | StW | StDW) {
                a.store_i(size, base, off, imm);
            } else {
                a.store_r(size, base, off, x());
            }
            return checked;
        }
        Atomic32 | Atomic64 => {
            atomic_op(a, s, checked, fault);
            return true;
        }
        op if is_jump(op) => {
            let t = labels[s.off as usize];
            let (cond, q, with_reg) = jump_of(op);
            // Checked code also serves counting runs: it counts branches
            // (the driver forgets them for other runs).
            if checked {
                a.add_mi(CTX, BRANCHES, 1);
            }
            let c = if cond == JumpKind::Set {
                if with_reg {
                    a.test_rr(w(q), d, x());
                } else {
                    a.test_ri(w(q), d, imm);
                }
                Cond::Ne
            } else {
                if with_reg {
                    a.cmp_rr(w(q), d, x());
                } else {
                    a.cmp_ri(w(q), d, imm);
                }
                cond.cond()
            };
            if checked {
                let stay = a.label();
                a.jcc(c.not(), stay);
                a.add_mi(CTX, TAKEN, 1);
                a.jmp(t);
                a.bind(stay);
            } else {
                a.jcc(c, t);
            }
        }
        other => unreachable!("{other:?} is not native"),
    }
    false
}

fn alu_of(op: Op) -> (Alu, bool) {
    use Op::*;
    match op {
        Add64Imm | Add64Reg => (Alu::Add, true),
        Sub64Imm | Sub64Reg => (Alu::Sub, true),
        And64Imm | And64Reg => (Alu::And, true),
        Or64Imm | Or64Reg => (Alu::Or, true),
        Xor64Imm | Xor64Reg => (Alu::Xor, true),
        Mov64Imm | Mov64Reg => (Alu::Mov, true),
        Add32Imm | Add32Reg => (Alu::Add, false),
        Sub32Imm | Sub32Reg => (Alu::Sub, false),
        And32Imm | And32Reg => (Alu::And, false),
        Or32Imm | Or32Reg => (Alu::Or, false),
        Xor32Imm | Xor32Reg => (Alu::Xor, false),
        _ => (Alu::Mov, false),
    }
}

fn shift_of(op: Op) -> (Shift, bool) {
    use Op::*;
    match op {
        Lsh64Imm | Lsh64Reg => (Shift::Shl, true),
        Rsh64Imm | Rsh64Reg => (Shift::Shr, true),
        Arsh64Imm | Arsh64Reg => (Shift::Sar, true),
        Lsh32Imm | Lsh32Reg => (Shift::Shl, false),
        Rsh32Imm | Rsh32Reg => (Shift::Shr, false),
        _ => (Shift::Sar, false),
    }
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum JumpKind {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    SGt,
    SGe,
    SLt,
    SLe,
    Set,
}

impl JumpKind {
    fn cond(self) -> Cond {
        match self {
            JumpKind::Eq => Cond::Eq,
            JumpKind::Ne => Cond::Ne,
            JumpKind::Gt => Cond::Above,
            JumpKind::Ge => Cond::AboveEq,
            JumpKind::Lt => Cond::Below,
            JumpKind::Le => Cond::BelowEq,
            JumpKind::SGt => Cond::Greater,
            JumpKind::SGe => Cond::GreaterEq,
            JumpKind::SLt => Cond::Less,
            JumpKind::SLe => Cond::LessEq,
            JumpKind::Set => Cond::Ne,
        }
    }
}

/// A conditional jump: its condition, width (true: 64-bit) and whether it
/// compares with a register.
fn jump_of(op: Op) -> (JumpKind, bool, bool) {
    use JumpKind as K;
    use Op::*;
    match op {
        Jeq64Imm => (K::Eq, true, false),
        Jeq64Reg => (K::Eq, true, true),
        Jgt64Imm => (K::Gt, true, false),
        Jgt64Reg => (K::Gt, true, true),
        Jge64Imm => (K::Ge, true, false),
        Jge64Reg => (K::Ge, true, true),
        Jset64Imm => (K::Set, true, false),
        Jset64Reg => (K::Set, true, true),
        Jne64Imm => (K::Ne, true, false),
        Jne64Reg => (K::Ne, true, true),
        Jsgt64Imm => (K::SGt, true, false),
        Jsgt64Reg => (K::SGt, true, true),
        Jsge64Imm => (K::SGe, true, false),
        Jsge64Reg => (K::SGe, true, true),
        Jlt64Imm => (K::Lt, true, false),
        Jlt64Reg => (K::Lt, true, true),
        Jle64Imm => (K::Le, true, false),
        Jle64Reg => (K::Le, true, true),
        Jslt64Imm => (K::SLt, true, false),
        Jslt64Reg => (K::SLt, true, true),
        Jsle64Imm => (K::SLe, true, false),
        Jsle64Reg => (K::SLe, true, true),
        Jeq32Imm => (K::Eq, false, false),
        Jeq32Reg => (K::Eq, false, true),
        Jgt32Imm => (K::Gt, false, false),
        Jgt32Reg => (K::Gt, false, true),
        Jge32Imm => (K::Ge, false, false),
        Jge32Reg => (K::Ge, false, true),
        Jset32Imm => (K::Set, false, false),
        Jset32Reg => (K::Set, false, true),
        Jne32Imm => (K::Ne, false, false),
        Jne32Reg => (K::Ne, false, true),
        Jsgt32Imm => (K::SGt, false, false),
        Jsgt32Reg => (K::SGt, false, true),
        Jsge32Imm => (K::SGe, false, false),
        Jsge32Reg => (K::SGe, false, true),
        Jlt32Imm => (K::Lt, false, false),
        Jlt32Reg => (K::Lt, false, true),
        Jle32Imm => (K::Le, false, false),
        Jle32Reg => (K::Le, false, true),
        Jslt32Imm => (K::SLt, false, false),
        Jslt32Reg => (K::SLt, false, true),
        Jsle32Imm => (K::SLe, false, false),
        _ => (K::SLe, false, true),
    }
}

/// Division and modulo, unsigned and signed, in rdx:rax (r0 and r3 live
/// there: they are saved in the scratch registers around the divide).
/// Division by zero gives 0 and modulo by zero keeps the dividend
/// (truncated to 32 bits at 32-bit width); signed division by -1 negates
/// and modulo by -1 gives 0, where x86 would trap on the minimum.
fn divide(a: &mut Asm, s: &Slot, d: R) {
    use Op::*;
    let q = matches!(
        s.op,
        Div64Imm | Div64Reg | Mod64Imm | Mod64Reg | SDiv64Imm | SDiv64Reg | SMod64Imm | SMod64Reg
    );
    let w = if q { W::Q } else { W::D };
    let signed = matches!(
        s.op,
        SDiv64Imm
            | SDiv64Reg
            | SMod64Imm
            | SMod64Reg
            | SDiv32Imm
            | SDiv32Reg
            | SMod32Imm
            | SMod32Reg
    );
    let modulo = matches!(
        s.op,
        Mod64Imm | Mod64Reg | SMod64Imm | SMod64Reg | Mod32Imm | Mod32Reg | SMod32Imm | SMod32Reg
    );
    let with_imm = matches!(
        s.op,
        Div64Imm | Mod64Imm | SDiv64Imm | SMod64Imm | Div32Imm | Mod32Imm | SDiv32Imm | SMod32Imm
    );
    if with_imm {
        a.alu_ri(Alu::Mov, w, T2, s.imm as i32);
    } else {
        a.alu_rr(Alu::Mov, W::Q, T2, reg(s.src & 15));
    }
    let (zero, minus_one, end) = (a.label(), a.label(), a.label());
    a.test_rr(w, T2, T2);
    a.jcc(Cond::Eq, zero);
    if signed {
        a.cmp_ri(w, T2, -1);
        a.jcc(Cond::Eq, minus_one);
    }
    a.alu_rr(Alu::Mov, W::Q, T0, RAX);
    a.alu_rr(Alu::Mov, W::Q, T1, RDX);
    let dividend = match d {
        RAX => T0,
        RDX => T1,
        other => other,
    };
    a.alu_rr(Alu::Mov, w, RAX, dividend);
    a.div(w, signed, T2);
    a.alu_rr(Alu::Mov, W::Q, T2, if modulo { RDX } else { RAX });
    a.alu_rr(Alu::Mov, W::Q, RAX, T0);
    a.alu_rr(Alu::Mov, W::Q, RDX, T1);
    a.alu_rr(Alu::Mov, W::Q, d, T2);
    a.jmp(end);
    a.bind(zero);
    if !modulo {
        a.alu_rr(Alu::Xor, W::D, d, d);
    } else if !q {
        a.alu_rr(Alu::Mov, W::D, d, d);
    }
    if signed {
        a.jmp(end);
        a.bind(minus_one);
        if modulo {
            a.alu_rr(Alu::Xor, W::D, d, d);
        } else {
            a.neg(w, d);
        }
    }
    a.bind(end);
}

/// The lock-prefixed operation of an atomic add/or/and/xor (fetching or
/// not).
fn atomic_alu(imm: i32) -> Option<Alu> {
    match imm & !atomic::FETCH {
        atomic::ADD => Some(Alu::Add),
        atomic::OR => Some(Alu::Or),
        atomic::AND => Some(Alu::And),
        atomic::XOR => Some(Alu::Xor),
        _ => None,
    }
}

/// Atomics. A misaligned address leaves for the interpreter (which reports
/// it), as does a refused one in checked mode (counted as a load and a
/// store, like the interpreter).
fn atomic_op(a: &mut Asm, s: &Slot, checked: bool, fault: DynamicLabel) {
    let (w, size, bytes) = if s.op == Op::Atomic64 {
        (W::Q, Size::Dw, 8)
    } else {
        (W::D, Size::W, 4)
    };
    let base = reg(s.dst & 15);
    let x = reg(s.src & 15);
    a.lea(T0, base, s.off);
    a.test_ri(W::Q, T0, bytes - 1);
    a.jcc(Cond::Ne, fault);
    if checked {
        check(a, base, s.off, size, WRITE | ATOMIC, fault);
    }
    let op = s.imm as i32;
    match (op, atomic_alu(op)) {
        (atomic::XCHG, _) => a.xchg_mr(w, T0, x),
        (atomic::CMPXCHG, _) => {
            a.lock_cmpxchg(w, T0, x);
            if w == W::D {
                // A successful 32-bit cmpxchg leaves rax's upper half.
                a.alu_rr(Alu::Mov, W::D, RAX, RAX);
            }
        }
        (_, Some(Alu::Add)) if op & atomic::FETCH != 0 => {
            a.alu_rr(Alu::Mov, W::Q, T1, x);
            a.lock_xadd(w, T0, T1);
            a.alu_rr(Alu::Mov, W::Q, x, T1);
        }
        (_, Some(alu)) if op & atomic::FETCH != 0 => {
            // or/and/xor with the old value: a cmpxchg loop on rax (r0,
            // saved in T2 meanwhile).
            a.alu_rr(Alu::Mov, W::Q, T2, RAX);
            let operand = if x == RAX { T2 } else { x };
            a.load(size, false, RAX, T0, 0);
            let again = a.label();
            a.bind(again);
            a.alu_rr(Alu::Mov, W::Q, T1, RAX);
            a.alu_rr(alu, w, T1, operand);
            a.lock_cmpxchg(w, T0, T1);
            a.jcc(Cond::Ne, again);
            if x != RAX {
                a.alu_rr(Alu::Mov, W::Q, x, RAX);
                a.alu_rr(Alu::Mov, W::Q, RAX, T2);
            }
        }
        (_, Some(alu)) => a.lock_alu_mr(alu, w, T0, x),
        _ => unreachable!("`native` leaves other atomics to the interpreter"),
    }
}

/// `check_access` flags: a write; an atomic (counted as a load and a
/// store).
const WRITE: i32 = 0x100;
const ATOMIC: i32 = 0x200;

/// Checked mode: asks `check_access` whether `[base + off]` may be read or
/// written with `size` bytes (and counts it); jumps to `fault` if not.
/// Leaves the address in T0.
fn check(a: &mut Asm, base: R, off: i32, size: Size, flags: i32, fault: DynamicLabel) {
    const SAVED: [R; 6] = [RAX, RCX, RDX, RSI, RDI, R8];
    let bytes = match size {
        Size::B => 1,
        Size::H => 2,
        Size::W => 4,
        Size::Dw => 8,
    };
    a.lea(T0, base, off);
    for r in SAVED {
        a.push(r);
    }
    a.alu_rr(Alu::Mov, W::Q, RDI, CTX);
    a.alu_rr(Alu::Mov, W::Q, RSI, T0);
    a.alu_ri(Alu::Mov, W::D, RDX, bytes | flags);
    a.call_abs(check_access as *const () as i64);
    a.alu_rr(Alu::Mov, W::Q, T1, RAX);
    for r in SAVED.iter().rev() {
        a.pop(*r);
    }
    a.test_rr(W::Q, T1, T1);
    a.jcc(Cond::Ne, fault);
    // The call may have clobbered T0 (r9 is caller-saved).
    a.lea(T0, base, off);
}
