//! The interpreter loop.
//!
//! Semantics follow RFC 9669: 32-bit operations zero the upper half,
//! immediates are sign-extended to 64 bits (and compared that way by 64-bit
//! jumps), shift amounts are masked, division by zero yields 0 and modulo
//! by zero leaves the destination (truncated to 32 bits for 32-bit ops),
//! signed overflow wraps.
//!
//! Performance shape: the loop keeps only the registers, `pc` and the
//! remaining budget live; operations that need calls or many temporaries
//! (helpers, atomics, legacy packet loads) live in out-of-line functions so
//! they do not force the hot state onto the stack.

use std::ptr;

use crate::error::{VmError, VmErrorKind};
use crate::helpers::{Callback, HelperCtx, HelperTable, Resume};
use crate::memops::{atomic_op, legacy_load};
use crate::memory::{Access, Memory, RegionKind};
use crate::op::{Op, Slot};
use crate::{MAX_FRAMES, Regs, STACK_SIZE, Stats, Vm};

/// Where a run is: what the JIT's native code and the interpreter hand
/// back and forth. `repr(C)`: native code addresses the fields. Kept by the
/// VM from run to run (boxed), so a run does not initialise the frames
/// (each is written by the call that pushes it before it is read).
#[repr(C)]
pub(crate) struct Machine {
    pub r: Regs,
    /// Instructions still allowed; the count executed is `budget - left`.
    pub left: u64,
    pub pc: usize,
    /// The program running (tail calls move between programs).
    pub cur: usize,
    pub depth: usize,
    pub tail_calls_left: u32,
    pub stats: Stats,
    /// Set by native code when the program exited (r0 holds the result).
    pub done: u64,
    /// For native code's checks: the run's memory, and whether to count.
    pub mem: *const Memory<'static>,
    pub count: bool,
    /// For native helper calls: the run's `jit::Host`, and the error a
    /// helper ended the run with.
    pub host: *mut (),
    pub error: Option<VmErrorKind>,
    /// Loads and stores per place of a counting run (`Vm::last_region_accesses`).
    pub regions: Vec<[u64; 2]>,
    /// The batch being run (`vm::batch`), null otherwise.
    pub batch: *mut crate::batch::BatchState,
    frames: [Frame; MAX_FRAMES],
}

// SAFETY: `mem`, `host` and `batch` are only dereferenced during a
// run, after the driver set them to that run's; between runs they are dead.
unsafe impl Send for Machine {}

#[derive(Copy, Clone, Default)]
struct Frame {
    /// Program and slot to return to.
    program: usize,
    return_pc: usize,
    saved: [u64; 4],
    /// For a callback's frame: the helper to resume when it returns.
    callback: Option<Pending>,
}

/// A helper waiting for its callback to return.
#[derive(Copy, Clone)]
struct Pending {
    helper: u64,
    args: [u64; 5],
    state: u64,
}

/// Zeroes the top `bytes` (a multiple of 16, at most a frame) of a stack
/// frame with inline 16-byte stores (a `memset` call costs more than the
/// stores, for at most 512 bytes, once per run).
#[inline(always)]
fn zero_top(frame: &mut [u64; STACK_SIZE / 8], bytes: usize) {
    debug_assert!(bytes <= STACK_SIZE && bytes.is_multiple_of(16));
    let from = STACK_SIZE.saturating_sub(bytes) / 16;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_setzero_si128};
        let p = frame.as_mut_ptr().cast::<__m128i>();
        for i in from..STACK_SIZE / 16 {
            // SAFETY: 16 bytes at `i * 16 < STACK_SIZE`, 16-aligned
            // (`StackMem` is 64-aligned, frames 512 bytes): inside the
            // frame, which `frame` borrows exclusively. Volatile, or the
            // compiler turns the loop back into a `memset` call.
            unsafe { ptr::write_volatile(p.add(i), _mm_setzero_si128()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        frame[from * 2..].fill(0);
    }
}

/// Native code's calls and exits (the JIT), on the registers in `r`, with
/// the very frames the interpreter uses.
impl Machine {
    /// A bpf-to-bpf call in program `cur` returning to `return_pc`.
    pub(crate) fn call_local(
        &mut self,
        return_pc: usize,
        mem: &mut Memory<'_>,
    ) -> Result<(), VmErrorKind> {
        let (cur, r) = (self.cur, &mut self.r);
        push_frame(
            &mut self.frames,
            &mut self.depth,
            cur,
            return_pc,
            None,
            r,
            mem,
        )
    }

    /// A legacy packet load (`ld_abs`/`ld_ind`) from native code: the
    /// value, `None` when the program ends there (out of the packet).
    pub(crate) fn legacy_load(
        &mut self,
        s: &Slot,
        mem: &Memory<'_>,
    ) -> Result<Option<u64>, VmErrorKind> {
        if self.count {
            legacy_load::<true>(s, &self.r, mem, &mut self.stats, &mut self.regions)
        } else {
            legacy_load::<false>(s, &self.r, mem, &mut self.stats, &mut [])
        }
    }

    /// An exit from a function (`depth > 0`) that returns to a call
    /// instruction: `cur` and `pc` are then where to continue. `false`
    /// (nothing changed) for a callback's exit, which resumes its helper:
    /// the interpreter does that.
    pub(crate) fn return_local(&mut self, mem: &mut Memory<'_>) -> bool {
        if self.depth == 0 || self.frames[self.depth - 1].callback.is_some() {
            return false;
        }
        let f = pop_frame(&self.frames, &mut self.depth, &mut self.r, mem);
        self.cur = f.program;
        self.pc = f.return_pc;
        true
    }
}

impl<E> Vm<E> {
    #[cold]
    #[inline(never)]
    pub(crate) fn fail(&self, program: usize, pc: usize, kind: VmErrorKind) -> VmError {
        let text = match self.programs[program].insn_at(pc) {
            Some(insn) => insn.to_string(),
            None => "past the end".to_string(),
        };
        VmError {
            program,
            pc,
            text,
            kind,
        }
    }

    /// `CHECK == false` skips the region lookup of plain loads and stores
    /// (the verifier proved them); counting still classifies each access.
    pub(crate) fn execute<const COUNT: bool, const CHECK: bool>(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Result<u64, VmError> {
        let mut m = self.start::<COUNT>(mem, args);
        let r0 = self.resume::<COUNT, CHECK, false>(env, mem, &mut m);
        self.machine = Some(m);
        Ok(r0?.expect("a run without steps ends"))
    }

    /// The state a run starts in (and maps the VM's stack into `mem`);
    /// give it back to `self.machine` after the run.
    #[inline(always)]
    pub(crate) fn start<const COUNT: bool>(
        &mut self,
        mem: &mut Memory<'_>,
        args: [u64; 5],
    ) -> Box<Machine> {
        // Each frame starts zeroed, so a run never sees bytes an earlier run
        // (or an earlier callee) left behind: replays are deterministic even
        // for programs that read stack they did not write.
        let zeroed = self.zeroed_stack();
        zero_top(&mut self.stack.0[MAX_FRAMES - 1], zeroed);
        let stack_bottom = self.stack.0.as_mut_ptr().expose_provenance() as u64;
        let stack_top = stack_bottom + (STACK_SIZE * MAX_FRAMES) as u64;
        mem.stack.start = stack_top - STACK_SIZE as u64;
        mem.stack.len = STACK_SIZE as u64;
        let mut m = self.machine.take().unwrap_or_else(|| {
            Box::new(Machine {
                r: [0; 16],
                left: 0,
                pc: 0,
                cur: 0,
                depth: 0,
                tail_calls_left: 0,
                stats: Stats::default(),
                done: 0,
                mem: ptr::null(),
                count: false,
                host: ptr::null_mut(),
                error: None,
                regions: Vec::new(),
                batch: ptr::null_mut(),
                frames: [Frame::default(); MAX_FRAMES],
            })
        });
        if COUNT {
            m.regions.clear();
            m.regions.resize(mem.regions().len() + 1, [0; 2]);
        }
        m.r = [0; 16];
        m.r[1..6].copy_from_slice(&args);
        m.r[10] = stack_top;
        m.left = self.budget;
        m.pc = 0;
        m.cur = self.entry;
        m.depth = 0;
        m.tail_calls_left = crate::MAX_TAIL_CALLS;
        m.stats = Stats::default();
        m.done = 0;
        m.mem = ptr::null();
        m.host = ptr::null_mut();
        m.error = None;
        m.batch = ptr::null_mut();
        m
    }

    /// Runs from the state `m` until the program exits (`Some(r0)`, with
    /// the instruction count in `m.stats`) or, with `STEP`, after one
    /// instruction (`None`, `m` updated).
    pub(crate) fn resume<const COUNT: bool, const CHECK: bool, const STEP: bool>(
        &self,
        env: &mut E,
        mem: &mut Memory<'_>,
        m: &mut Machine,
    ) -> Result<Option<u64>, VmError> {
        let mut cur = m.cur;
        let mut slots = self.programs[cur].slots();
        let mut tail_calls_left = m.tail_calls_left;
        let budget = self.budget;
        let mut stats = m.stats;
        // 16 registers so that `idx & 15` needs no bounds check; r11-r15 are
        // never named by a validated program.
        let mut r: Regs = m.r;
        let frames = &mut m.frames;
        let mut depth = m.depth;
        let mut pc = m.pc;
        // Instructions still allowed; the count executed is `budget - left`.
        let mut left = m.left;

        macro_rules! fail {
            ($kind:expr) => {
                return Err(self.fail(cur, pc - 1, $kind))
            };
        }
        macro_rules! done {
            ($r0:expr) => {{
                stats.insns = budget - left;
                m.stats = stats;
                m.left = left;
                return Ok(Some($r0));
            }};
        }
        macro_rules! check {
            ($addr:expr, $size:expr, $access:expr) => {{
                let (addr, size, access) = ($addr, $size, $access);
                if COUNT {
                    match mem.find_at(addr, size, access) {
                        Some((kind, at)) => match access {
                            Access::Read => {
                                stats.loads[kind as usize] += 1;
                                m.regions[at][0] += 1;
                            }
                            Access::Write => {
                                stats.stores[kind as usize] += 1;
                                m.regions[at][1] += 1;
                            }
                        },
                        None => fail!(VmErrorKind::Memory(mem.fault(addr, size, access))),
                    }
                } else if CHECK && mem.find(addr, size, access).is_none() {
                    fail!(VmErrorKind::Memory(mem.fault(addr, size, access)));
                }
            }};
        }
        macro_rules! branch {
            ($target:expr, $cond:expr) => {{
                let taken: bool = $cond;
                if COUNT {
                    stats.branches += 1;
                    stats.taken += u64::from(taken);
                }
                if taken {
                    pc = $target;
                }
            }};
        }
        macro_rules! load {
            ($ty:ty, $addr:expr) => {{
                let addr: u64 = $addr;
                check!(addr, size_of::<$ty>() as u64, Access::Read);
                // SAFETY: `find` proved the bytes lie in a mapped region, or the
                // verifier did (`Vm::trust_verified`).
                unsafe { ptr::read_unaligned(ptr::with_exposed_provenance::<$ty>(addr as usize)) }
            }};
        }
        macro_rules! store {
            ($ty:ty, $addr:expr, $value:expr) => {{
                let addr: u64 = $addr;
                check!(addr, size_of::<$ty>() as u64, Access::Write);
                // SAFETY: `find` proved the bytes lie in a writable region, or
                // the verifier did (`Vm::trust_verified`).
                unsafe {
                    ptr::write_unaligned(
                        ptr::with_exposed_provenance_mut::<$ty>(addr as usize),
                        $value,
                    )
                }
            }};
        }

        loop {
            debug_assert!(pc < slots.len());
            // SAFETY: `Program::new` checked that every branch and call target
            // is a slot of the program, and a program that could run past
            // its last instruction ends in the `FellOff` sentinel, so `pc`
            // is always in bounds.
            let s = unsafe { slots.get_unchecked(pc) };
            pc += 1;
            let (next_left, exhausted) = left.overflowing_sub(1);
            if exhausted {
                fail!(VmErrorKind::Budget(budget));
            }
            left = next_left;
            let d = (s.dst & 15) as usize;
            let x = (s.src & 15) as usize;
            let imm = s.imm as u64;
            let target = s.off as usize;
            macro_rules! addr_src {
                () => {
                    r[x].wrapping_add(s.off as i64 as u64)
                };
            }
            macro_rules! addr_dst {
                () => {
                    r[d].wrapping_add(s.off as i64 as u64)
                };
            }
            match s.op {
                Op::Add64Imm => r[d] = r[d].wrapping_add(imm),
                Op::Add64Reg => r[d] = r[d].wrapping_add(r[x]),
                Op::Sub64Imm => r[d] = r[d].wrapping_sub(imm),
                Op::Sub64Reg => r[d] = r[d].wrapping_sub(r[x]),
                Op::Mul64Imm => r[d] = r[d].wrapping_mul(imm),
                Op::Mul64Reg => r[d] = r[d].wrapping_mul(r[x]),
                Op::Div64Imm => r[d] = div64(r[d], imm),
                Op::Div64Reg => r[d] = div64(r[d], r[x]),
                Op::SDiv64Imm => r[d] = sdiv64(r[d], imm),
                Op::SDiv64Reg => r[d] = sdiv64(r[d], r[x]),
                Op::Or64Imm => r[d] |= imm,
                Op::Or64Reg => r[d] |= r[x],
                Op::And64Imm => r[d] &= imm,
                Op::And64Reg => r[d] &= r[x],
                Op::Lsh64Imm => r[d] <<= imm & 63,
                Op::Lsh64Reg => r[d] <<= r[x] & 63,
                Op::Rsh64Imm => r[d] >>= imm & 63,
                Op::Rsh64Reg => r[d] >>= r[x] & 63,
                Op::Mod64Imm => r[d] = mod64(r[d], imm),
                Op::Mod64Reg => r[d] = mod64(r[d], r[x]),
                Op::SMod64Imm => r[d] = smod64(r[d], imm),
                Op::SMod64Reg => r[d] = smod64(r[d], r[x]),
                Op::Xor64Imm => r[d] ^= imm,
                Op::Xor64Reg => r[d] ^= r[x],
                Op::Mov64Imm => r[d] = imm,
                Op::Mov64Reg => r[d] = r[x],
                Op::Arsh64Imm => r[d] = ((r[d] as i64) >> (imm & 63)) as u64,
                Op::Arsh64Reg => r[d] = ((r[d] as i64) >> (r[x] & 63)) as u64,
                Op::MovSx8To64 => r[d] = r[x] as i8 as i64 as u64,
                Op::MovSx16To64 => r[d] = r[x] as i16 as i64 as u64,
                Op::MovSx32To64 => r[d] = r[x] as i32 as i64 as u64,
                Op::Neg64 => r[d] = r[d].wrapping_neg(),

                Op::Add32Imm => r[d] = u64::from((r[d] as u32).wrapping_add(imm as u32)),
                Op::Add32Reg => r[d] = u64::from((r[d] as u32).wrapping_add(r[x] as u32)),
                Op::Sub32Imm => r[d] = u64::from((r[d] as u32).wrapping_sub(imm as u32)),
                Op::Sub32Reg => r[d] = u64::from((r[d] as u32).wrapping_sub(r[x] as u32)),
                Op::Mul32Imm => r[d] = u64::from((r[d] as u32).wrapping_mul(imm as u32)),
                Op::Mul32Reg => r[d] = u64::from((r[d] as u32).wrapping_mul(r[x] as u32)),
                Op::Div32Imm => r[d] = div32(r[d], imm),
                Op::Div32Reg => r[d] = div32(r[d], r[x]),
                Op::SDiv32Imm => r[d] = sdiv32(r[d], imm),
                Op::SDiv32Reg => r[d] = sdiv32(r[d], r[x]),
                Op::Or32Imm => r[d] = u64::from(r[d] as u32 | imm as u32),
                Op::Or32Reg => r[d] = u64::from(r[d] as u32 | r[x] as u32),
                Op::And32Imm => r[d] = u64::from(r[d] as u32 & imm as u32),
                Op::And32Reg => r[d] = u64::from(r[d] as u32 & r[x] as u32),
                Op::Lsh32Imm => r[d] = u64::from((r[d] as u32) << (imm & 31)),
                Op::Lsh32Reg => r[d] = u64::from((r[d] as u32) << (r[x] & 31)),
                Op::Rsh32Imm => r[d] = u64::from((r[d] as u32) >> (imm & 31)),
                Op::Rsh32Reg => r[d] = u64::from((r[d] as u32) >> (r[x] & 31)),
                Op::Mod32Imm => r[d] = mod32(r[d], imm),
                Op::Mod32Reg => r[d] = mod32(r[d], r[x]),
                Op::SMod32Imm => r[d] = smod32(r[d], imm),
                Op::SMod32Reg => r[d] = smod32(r[d], r[x]),
                Op::Xor32Imm => r[d] = u64::from(r[d] as u32 ^ imm as u32),
                Op::Xor32Reg => r[d] = u64::from(r[d] as u32 ^ r[x] as u32),
                Op::Mov32Imm => r[d] = u64::from(imm as u32),
                Op::Mov32Reg => r[d] = u64::from(r[x] as u32),
                Op::Arsh32Imm => r[d] = u64::from(((r[d] as i32) >> (imm & 31)) as u32),
                Op::Arsh32Reg => r[d] = u64::from(((r[d] as i32) >> (r[x] & 31)) as u32),
                Op::MovSx8To32 => r[d] = u64::from(r[x] as i8 as i32 as u32),
                Op::MovSx16To32 => r[d] = u64::from(r[x] as i16 as i32 as u32),
                Op::Neg32 => r[d] = u64::from((r[d] as u32).wrapping_neg()),

                Op::Le16 => r[d] = u64::from((r[d] as u16).to_le()),
                Op::Le32 => r[d] = u64::from((r[d] as u32).to_le()),
                Op::Le64 => r[d] = r[d].to_le(),
                Op::Be16 => r[d] = u64::from((r[d] as u16).to_be()),
                Op::Be32 => r[d] = u64::from((r[d] as u32).to_be()),
                Op::Be64 => r[d] = r[d].to_be(),
                Op::Swap16 => r[d] = u64::from((r[d] as u16).swap_bytes()),
                Op::Swap32 => r[d] = u64::from((r[d] as u32).swap_bytes()),
                Op::Swap64 => r[d] = r[d].swap_bytes(),

                Op::Ja => pc = target,
                Op::Jeq64Imm => branch!(target, r[d] == imm),
                Op::Jeq64Reg => branch!(target, r[d] == r[x]),
                Op::Jgt64Imm => branch!(target, r[d] > imm),
                Op::Jgt64Reg => branch!(target, r[d] > r[x]),
                Op::Jge64Imm => branch!(target, r[d] >= imm),
                Op::Jge64Reg => branch!(target, r[d] >= r[x]),
                Op::Jset64Imm => branch!(target, r[d] & imm != 0),
                Op::Jset64Reg => branch!(target, r[d] & r[x] != 0),
                Op::Jne64Imm => branch!(target, r[d] != imm),
                Op::Jne64Reg => branch!(target, r[d] != r[x]),
                Op::Jsgt64Imm => branch!(target, (r[d] as i64) > imm as i64),
                Op::Jsgt64Reg => branch!(target, (r[d] as i64) > r[x] as i64),
                Op::Jsge64Imm => branch!(target, (r[d] as i64) >= imm as i64),
                Op::Jsge64Reg => branch!(target, (r[d] as i64) >= r[x] as i64),
                Op::Jlt64Imm => branch!(target, r[d] < imm),
                Op::Jlt64Reg => branch!(target, r[d] < r[x]),
                Op::Jle64Imm => branch!(target, r[d] <= imm),
                Op::Jle64Reg => branch!(target, r[d] <= r[x]),
                Op::Jslt64Imm => branch!(target, (r[d] as i64) < imm as i64),
                Op::Jslt64Reg => branch!(target, (r[d] as i64) < r[x] as i64),
                Op::Jsle64Imm => branch!(target, (r[d] as i64) <= imm as i64),
                Op::Jsle64Reg => branch!(target, (r[d] as i64) <= r[x] as i64),
                Op::Jeq32Imm => branch!(target, r[d] as u32 == imm as u32),
                Op::Jeq32Reg => branch!(target, r[d] as u32 == r[x] as u32),
                Op::Jgt32Imm => branch!(target, r[d] as u32 > imm as u32),
                Op::Jgt32Reg => branch!(target, r[d] as u32 > r[x] as u32),
                Op::Jge32Imm => branch!(target, r[d] as u32 >= imm as u32),
                Op::Jge32Reg => branch!(target, r[d] as u32 >= r[x] as u32),
                Op::Jset32Imm => branch!(target, r[d] as u32 & imm as u32 != 0),
                Op::Jset32Reg => branch!(target, r[d] as u32 & r[x] as u32 != 0),
                Op::Jne32Imm => branch!(target, r[d] as u32 != imm as u32),
                Op::Jne32Reg => branch!(target, r[d] as u32 != r[x] as u32),
                Op::Jsgt32Imm => branch!(target, (r[d] as i32) > imm as i32),
                Op::Jsgt32Reg => branch!(target, (r[d] as i32) > r[x] as i32),
                Op::Jsge32Imm => branch!(target, (r[d] as i32) >= imm as i32),
                Op::Jsge32Reg => branch!(target, (r[d] as i32) >= r[x] as i32),
                Op::Jlt32Imm => branch!(target, (r[d] as u32) < imm as u32),
                Op::Jlt32Reg => branch!(target, (r[d] as u32) < r[x] as u32),
                Op::Jle32Imm => branch!(target, r[d] as u32 <= imm as u32),
                Op::Jle32Reg => branch!(target, r[d] as u32 <= r[x] as u32),
                Op::Jslt32Imm => branch!(target, (r[d] as i32) < imm as i32),
                Op::Jslt32Reg => branch!(target, (r[d] as i32) < r[x] as i32),
                Op::Jsle32Imm => branch!(target, (r[d] as i32) <= imm as i32),
                Op::Jsle32Reg => branch!(target, (r[d] as i32) <= r[x] as i32),

                Op::CallHelper | Op::Callx => {
                    let id = if s.op == Op::Callx { r[d] } else { imm };
                    stats.helper_calls += 1;
                    let args = [r[1], r[2], r[3], r[4], r[5]];
                    match call_helper(&self.helpers, id, args, None, &mut r, env, mem) {
                        Ok(None) => {}
                        Ok(Some(cb)) => {
                            let pending = Pending {
                                helper: id,
                                args,
                                state: cb.state,
                            };
                            match enter_callback(
                                cb, slots, pending, cur, pc, &mut depth, frames, &mut r, mem,
                            ) {
                                Ok(target) => pc = target,
                                Err(kind) => fail!(kind),
                            }
                        }
                        Err(kind) => fail!(kind),
                    }
                }
                Op::TailCall => {
                    // Falls through (r0 unchanged) when there is no target or
                    // the run has used up its tail calls, as in the kernel.
                    let resolve = self.tail_calls.expect("checked at load");
                    if tail_calls_left > 0
                        && let Some(target) =
                            resolve(env, r[2], r[3]).filter(|&t| t < self.programs.len())
                    {
                        tail_calls_left -= 1;
                        stats.tail_calls += 1;
                        cur = target;
                        slots = self.programs[cur].slots();
                        pc = 0;
                    }
                }
                Op::CallLocal => {
                    if let Err(kind) = push_frame(frames, &mut depth, cur, pc, None, &mut r, mem) {
                        fail!(kind);
                    }
                    pc = target;
                }
                Op::Exit => {
                    if depth == 0 {
                        done!(r[0]);
                    }
                    let f = pop_frame(frames, &mut depth, &mut r, mem);
                    if f.program != cur {
                        cur = f.program;
                        slots = self.programs[cur].slots();
                    }
                    pc = f.return_pc;
                    if let Some(p) = f.callback {
                        // Resume the helper that asked for this callback.
                        let resume = Resume {
                            state: p.state,
                            ret: r[0],
                        };
                        match call_helper(
                            &self.helpers,
                            p.helper,
                            p.args,
                            Some(resume),
                            &mut r,
                            env,
                            mem,
                        ) {
                            Ok(None) => {}
                            Ok(Some(cb)) => {
                                let pending = Pending {
                                    state: cb.state,
                                    ..p
                                };
                                match enter_callback(
                                    cb, slots, pending, cur, pc, &mut depth, frames, &mut r, mem,
                                ) {
                                    Ok(target) => pc = target,
                                    Err(kind) => fail!(kind),
                                }
                            }
                            Err(kind) => fail!(kind),
                        }
                    }
                }

                Op::Lddw => {
                    r[d] = imm;
                    pc += 1;
                }
                Op::LdxB => r[d] = u64::from(load!(u8, addr_src!())),
                Op::LdxH => r[d] = u64::from(load!(u16, addr_src!())),
                Op::LdxW => r[d] = u64::from(load!(u32, addr_src!())),
                Op::LdxDW => r[d] = load!(u64, addr_src!()),
                Op::LdxSB => r[d] = load!(i8, addr_src!()) as i64 as u64,
                Op::LdxSH => r[d] = load!(i16, addr_src!()) as i64 as u64,
                Op::LdxSW => r[d] = load!(i32, addr_src!()) as i64 as u64,
                Op::StB => store!(u8, addr_dst!(), imm as u8),
                Op::StH => store!(u16, addr_dst!(), imm as u16),
                Op::StW => store!(u32, addr_dst!(), imm as u32),
                Op::StDW => store!(u64, addr_dst!(), imm),
                Op::StxB => store!(u8, addr_dst!(), r[x] as u8),
                Op::StxH => store!(u16, addr_dst!(), r[x] as u16),
                Op::StxW => store!(u32, addr_dst!(), r[x] as u32),
                Op::StxDW => store!(u64, addr_dst!(), r[x]),

                Op::Atomic32 | Op::Atomic64 => {
                    if let Err(kind) =
                        atomic_op::<COUNT>(s, &mut r, mem, &mut stats, &mut m.regions)
                    {
                        fail!(kind);
                    }
                }
                Op::LdAbsB | Op::LdAbsH | Op::LdAbsW | Op::LdIndB | Op::LdIndH | Op::LdIndW => {
                    match legacy_load::<COUNT>(s, &r, mem, &mut stats, &mut m.regions) {
                        Ok(Some(v)) => r[0] = v,
                        Ok(None) => done!(0),
                        Err(kind) => fail!(kind),
                    }
                }

                Op::Poisoned => fail!(VmErrorKind::CorePoisoned),
                Op::LddwHigh => unreachable!("validated programs never branch into an lddw"),
                Op::FellOff => fail!(VmErrorKind::FellOff),
            }
            if STEP {
                m.r = r;
                m.left = left;
                m.pc = pc;
                m.cur = cur;
                m.depth = depth;
                m.tail_calls_left = tail_calls_left;
                m.stats = stats;
                return Ok(None);
            }
        }
    }
}

/// A helper call: id from the immediate or (callx) a register. Returns the
/// callback the helper asks for, if any.
#[inline(never)]
pub(crate) fn call_helper<E>(
    helpers: &HelperTable<E>,
    id: u64,
    args: [u64; 5],
    resume: Option<Resume>,
    r: &mut Regs,
    env: &mut E,
    mem: &mut Memory<'_>,
) -> Result<Option<Callback>, VmErrorKind> {
    // Immediate ids were checked at load; only callx can miss.
    let helper = helpers.get(id).ok_or(VmErrorKind::UnknownHelper(id))?;
    let mut ctx = HelperCtx {
        args,
        env,
        mem,
        resume,
        callback: None,
    };
    let ret = (helper.func)(&mut ctx).map_err(|e| VmErrorKind::Helper {
        name: helper.name.clone(),
        message: e.0,
    })?;
    if ctx.callback.is_none() {
        r[0] = ret;
    }
    Ok(ctx.callback)
}

/// Calls a BPF function for a helper: a new frame that resumes the helper
/// when it exits. Returns the slot to continue at.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn enter_callback(
    cb: Callback,
    slots: &[Slot],
    pending: Pending,
    cur: usize,
    return_pc: usize,
    depth: &mut usize,
    frames: &mut [Frame; MAX_FRAMES],
    r: &mut Regs,
    mem: &mut Memory<'_>,
) -> Result<usize, VmErrorKind> {
    // The handle came from a register: it must name an instruction of the
    // running program (the loop relies on in-range slots).
    let target = crate::func_slot(cb.func)
        .filter(|&t| t < slots.len() && slots[t].op != Op::LddwHigh)
        .ok_or(VmErrorKind::BadCallback(cb.func))?;
    push_frame(frames, depth, cur, return_pc, Some(pending), r, mem)?;
    r[1..6].copy_from_slice(&cb.args);
    Ok(target)
}

/// Enters a function: saves the caller's r6-r9 and where to return, and
/// gives the callee a fresh, zeroed frame below the caller's (r10 at its
/// top). The interpreter and native code share this, so both see the same
/// frames.
#[inline]
fn push_frame(
    frames: &mut [Frame; MAX_FRAMES],
    depth: &mut usize,
    program: usize,
    return_pc: usize,
    callback: Option<Pending>,
    r: &mut Regs,
    mem: &mut Memory<'_>,
) -> Result<(), VmErrorKind> {
    if *depth + 1 >= MAX_FRAMES {
        return Err(VmErrorKind::CallDepth);
    }
    frames[*depth] = Frame {
        program,
        return_pc,
        saved: [r[6], r[7], r[8], r[9]],
        callback,
    };
    *depth += 1;
    mem.stack.start -= STACK_SIZE as u64;
    mem.stack.len += STACK_SIZE as u64;
    r[10] = mem.stack.start + STACK_SIZE as u64;
    // SAFETY: the stack region always starts at the deepest frame, which is
    // frame `depth` of the VM's own stack (depth < MAX_FRAMES); nothing
    // borrows it.
    unsafe {
        *ptr::with_exposed_provenance_mut::<[u64; STACK_SIZE / 8]>(mem.stack.start as usize) =
            [0; STACK_SIZE / 8];
    }
    Ok(())
}

/// Leaves a function (`depth > 0`): restores the caller's r6-r9 and frame
/// pointer and gives back the frame, which says where to return.
#[inline]
fn pop_frame(
    frames: &[Frame; MAX_FRAMES],
    depth: &mut usize,
    r: &mut Regs,
    mem: &mut Memory<'_>,
) -> Frame {
    *depth -= 1;
    let f = frames[*depth];
    r[6..10].copy_from_slice(&f.saved);
    mem.stack.start += STACK_SIZE as u64;
    mem.stack.len -= STACK_SIZE as u64;
    r[10] = mem.stack.start + STACK_SIZE as u64;
    f
}

#[inline(always)]
fn div64(a: u64, b: u64) -> u64 {
    a.checked_div(b).unwrap_or(0)
}

#[inline(always)]
fn sdiv64(a: u64, b: u64) -> u64 {
    if b == 0 {
        0
    } else {
        (a as i64).wrapping_div(b as i64) as u64
    }
}

#[inline(always)]
fn mod64(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { a % b }
}

#[inline(always)]
fn smod64(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        (a as i64).wrapping_rem(b as i64) as u64
    }
}

#[inline(always)]
fn div32(a: u64, b: u64) -> u64 {
    u64::from((a as u32).checked_div(b as u32).unwrap_or(0))
}

#[inline(always)]
fn sdiv32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as i32, b as i32);
    u64::from(if b == 0 { 0 } else { a.wrapping_div(b) as u32 })
}

#[inline(always)]
fn mod32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as u32, b as u32);
    u64::from(if b == 0 { a } else { a % b })
}

#[inline(always)]
fn smod32(a: u64, b: u64) -> u64 {
    let (a, b) = (a as i32, b as i32);
    u64::from(if b == 0 {
        a as u32
    } else {
        a.wrapping_rem(b) as u32
    })
}

// Counters are indexed by `RegionKind as usize`.
const _: () = assert!(RegionKind::Map as usize == RegionKind::COUNT - 1);
