//! The x86-64 code of a checked classic program (the interpreter's decoded
//! operations, [`Op`]), and the call into it.
//!
//! One leaf function, `extern "sysv64" fn(packet, caplen, wirelen, meta)
//! -> u32`, with no frame: A is `eax` (so `ret a` is a bare `ret`), X is
//! `r10d`, the packet's address stays in `rdi` and its captured length in
//! `rsi`, the wire length (`len`) in `r8d`, the [`Meta`] in `r9`; `rcx`,
//! `rdx` and `r11` are scratch (a division's `edx`, a shift's `cl`).
//! `M[0..16]` lives in the red zone below the stack pointer, and the
//! words a program reads are zeroed on entry, as the interpreter's are.
//!
//! A packet load checks `offset + size <= caplen` and loads, byte-swapped,
//! in line. Past the captured bytes, or at a negative offset, a stub out
//! of line (after the program's code) calls the interpreter's own load
//! ([`load`]), which returns the value (the `SKF_NET_OFF`/`SKF_LL_OFF`
//! windows) or says the run ends with 0. Ancillary loads call the
//! interpreter's field reader. Around such a call the stub steps below
//! the red zone and saves the registers the program lives in.

// dynasm!'s expansion converts register numbers with `.into()`.
#![allow(clippy::useless_conversion)]

use dynasmrt::x64::Assembler;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, ExecutableBuffer, dynasm};

use super::JitError;
use crate::insn::MEMWORDS;
use crate::interp::{Meta, Op, ancillary_load, load};

/// The compiled program's entry: packet, captured length, wire length,
/// the run's [`Meta`]; the filter's return value.
type Entry = extern "sysv64" fn(*const u8, u64, u32, *const Meta) -> u32;

/// Hardware numbers of the registers A and X live in.
const A: u8 = 0;
const X: u8 = 10;

/// Where `M[0]` is, from the stack pointer (the red zone's top 64 bytes).
const MEM: i32 = -(MEMWORDS as i32) * 4;

/// What a call out of line lowers the stack pointer by first: past
/// `M[]`, and to a 16-byte boundary once six registers are pushed (the
/// pointer is 8 past one on entry).
const BELOW_RED_ZONE: i32 = 72;

/// Native code and its entry.
pub(crate) struct Code {
    /// Holds the code `entry` points into (never writable once made).
    buf: ExecutableBuffer,
    entry: Entry,
}

impl Code {
    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Runs the code over `packet` (at most `i32::MAX` bytes).
    #[inline]
    pub(crate) fn run(&self, packet: &[u8], wire: u32, meta: &Meta) -> u32 {
        (self.entry)(packet.as_ptr(), packet.len() as u64, wire, meta)
    }
}

/// Out of line: the interpreter's load of `n` bytes at `off`, for what the
/// inline check did not take. The value, or -1 where the run ends with 0.
extern "sysv64" fn load_out_of_line(
    packet: *const u8,
    caplen: u64,
    meta: *const Meta,
    off: i64,
    n: u64,
) -> i64 {
    // SAFETY: native code passes on the packet (address and length) and
    // the `Meta` `Code::run` was given, borrowed for the whole run.
    let (packet, meta) = unsafe { (std::slice::from_raw_parts(packet, caplen as usize), &*meta) };
    load(packet, meta, off, n as usize).map_or(-1, i64::from)
}

/// Out of line: the ancillary field at `SKF_AD_OFF + off`.
extern "sysv64" fn field(meta: *const Meta, off: u32, a: u32, x: u32) -> u32 {
    // SAFETY: as for `load_out_of_line`.
    ancillary_load(unsafe { &*meta }, off, a, x)
}

/// Where a load's offset comes from.
#[derive(Clone, Copy)]
enum At {
    /// `[k]`.
    Abs(u32),
    /// `[x + k]`.
    Ind(u32),
}

/// A load's way out of line: its stub's label, where to come back, what
/// it loads into which register.
struct Slow {
    stub: DynamicLabel,
    back: DynamicLabel,
    at: At,
    n: u8,
    dest: u8,
}

struct Gen {
    ops: Assembler,
    /// One label per instruction.
    labels: Vec<DynamicLabel>,
    /// `xor eax, eax; ret`.
    ret0: DynamicLabel,
    slow: Vec<Slow>,
}

/// Compiles checked operations.
pub(crate) fn compile(ops: &[Op]) -> Result<Code, JitError> {
    let mut asm = Assembler::new()?;
    let labels = (0..ops.len()).map(|_| asm.new_dynamic_label()).collect();
    let ret0 = asm.new_dynamic_label();
    let mut g = Gen {
        ops: asm,
        labels,
        ret0,
        slow: Vec::new(),
    };
    let entry = g.ops.offset();
    g.prologue(ops);
    for (pc, op) in ops.iter().enumerate() {
        let l = g.labels[pc];
        dynasm!(g.ops ; .arch x64 ; =>l);
        g.op(pc, *op)?;
    }
    g.epilogue();
    let buf = g
        .ops
        .finalize()
        .map_err(|_| JitError::Memory(std::io::Error::other("finalizing the code")))?;
    // SAFETY: `entry` is the start of the function emitted above, which
    // follows the sysv64 convention with `Entry`'s arguments; `buf` holds
    // it, executable and never again writable, as long as `Code` lives.
    let entry = unsafe { std::mem::transmute::<*const u8, Entry>(buf.ptr(entry)) };
    Ok(Code { buf, entry })
}

impl Gen {
    /// The arguments where the body wants them; A, X and the `M[]` words
    /// the program reads zeroed.
    fn prologue(&mut self, ops: &[Op]) {
        dynasm!(self.ops ; .arch x64
            ; mov r8d, edx
            ; mov r9, rcx
            ; xor eax, eax
            ; xor r10d, r10d
        );
        let mut read = 0u16;
        for op in ops {
            if let Op::LdMem(s) | Op::LdxMem(s) = op {
                read |= 1 << (s & 15);
            }
        }
        for s in 0..MEMWORDS as i32 {
            if read & (1 << s) != 0 {
                dynasm!(self.ops ; .arch x64 ; mov DWORD [rsp + MEM + 4 * s], 0);
            }
        }
    }

    /// `ret0`, then every load's stub.
    fn epilogue(&mut self) {
        let ret0 = self.ret0;
        dynasm!(self.ops ; .arch x64 ; =>ret0 ; xor eax, eax ; ret);
        for s in std::mem::take(&mut self.slow) {
            let (stub, back, dest) = (s.stub, s.back, s.dest);
            dynasm!(self.ops ; .arch x64 ; =>stub);
            self.save();
            match s.at {
                At::Abs(k) => {
                    dynasm!(self.ops ; .arch x64 ; mov rcx, QWORD i64::from(k as i32))
                }
                At::Ind(k) => {
                    dynasm!(self.ops ; .arch x64 ; lea ecx, [r10 + k as i32] ; movsxd rcx, ecx)
                }
            }
            dynasm!(self.ops ; .arch x64
                ; mov rdx, r9
                ; mov r8d, s.n as i32
                ; mov r11, QWORD load_out_of_line as *const () as i64
                ; call r11
                ; mov r11, rax
            );
            self.restore();
            dynasm!(self.ops ; .arch x64
                ; test r11, r11
                ; js =>ret0
                ; mov Rd(dest), r11d
                ; jmp =>back
            );
        }
    }

    /// Below the red zone, the registers a call may clobber pushed.
    fn save(&mut self) {
        dynasm!(self.ops ; .arch x64
            ; sub rsp, BELOW_RED_ZONE
            ; push rdi ; push rsi ; push r8 ; push r9 ; push r10 ; push rax
        );
    }

    fn restore(&mut self) {
        dynasm!(self.ops ; .arch x64
            ; pop rax ; pop r10 ; pop r9 ; pop r8 ; pop rsi ; pop rdi
            ; add rsp, BELOW_RED_ZONE
        );
    }

    /// `n` bytes at `at` into `dest`, big-endian; the run ends with 0 if
    /// the interpreter's load would.
    fn packet_load(&mut self, at: At, n: u8, dest: u8) {
        let stub = self.ops.new_dynamic_label();
        let back = self.ops.new_dynamic_label();
        let n32 = i32::from(n);
        match at {
            At::Abs(k) => match i32::try_from(i64::from(k) + i64::from(n)) {
                // The offset is positive: one compare with the length.
                Ok(end) if (k as i32) >= 0 => {
                    let k = k as i32;
                    dynasm!(self.ops ; .arch x64 ; cmp rsi, end ; jb =>stub);
                    match n {
                        1 => dynasm!(self.ops ; .arch x64 ; movzx Rd(dest), BYTE [rdi + k]),
                        2 => dynasm!(self.ops ; .arch x64
                            ; movzx Rd(dest), WORD [rdi + k] ; rol Rw(dest), 8),
                        _ => dynasm!(self.ops ; .arch x64
                            ; mov Rd(dest), DWORD [rdi + k] ; bswap Rd(dest)),
                    }
                }
                // Negative (a window, or nothing): always out of line.
                _ => dynasm!(self.ops ; .arch x64 ; jmp =>stub),
            },
            At::Ind(k) => {
                // X + k wraps at 32 bits; as a 64-bit number, an offset
                // negative as an `i32` is over 2 GiB, past any packet run
                // here, so it goes out of line too.
                dynasm!(self.ops ; .arch x64
                    ; lea edx, [r10 + k as i32]
                    ; lea r11, [rdx + n32]
                    ; cmp r11, rsi
                    ; ja =>stub
                );
                match n {
                    1 => dynasm!(self.ops ; .arch x64 ; movzx Rd(dest), BYTE [rdi + rdx]),
                    2 => dynasm!(self.ops ; .arch x64
                        ; movzx Rd(dest), WORD [rdi + rdx] ; rol Rw(dest), 8),
                    _ => dynasm!(self.ops ; .arch x64
                        ; mov Rd(dest), DWORD [rdi + rdx] ; bswap Rd(dest)),
                }
            }
        }
        dynasm!(self.ops ; .arch x64 ; =>back);
        self.slow.push(Slow {
            stub,
            back,
            at,
            n,
            dest,
        });
    }

    /// A conditional jump after a compare: to `t` where `yes` holds, else
    /// to `f`; `next` falls through.
    fn branch(&mut self, pc: usize, cond: Cond, t: u32, f: u32) {
        let next = pc as u32 + 1;
        let (lt, lf) = (self.labels[t as usize], self.labels[f as usize]);
        if t == f {
            if t != next {
                dynasm!(self.ops ; .arch x64 ; jmp =>lt);
            }
            return;
        }
        let (cond, target, other) = if t == next {
            (cond.not(), lf, None)
        } else if f == next {
            (cond, lt, None)
        } else {
            (cond, lt, Some(lf))
        };
        match cond {
            Cond::Eq => dynasm!(self.ops ; .arch x64 ; je =>target),
            Cond::Ne => dynasm!(self.ops ; .arch x64 ; jne =>target),
            Cond::Above => dynasm!(self.ops ; .arch x64 ; ja =>target),
            Cond::BelowEq => dynasm!(self.ops ; .arch x64 ; jbe =>target),
            Cond::AboveEq => dynasm!(self.ops ; .arch x64 ; jae =>target),
            Cond::Below => dynasm!(self.ops ; .arch x64 ; jb =>target),
        }
        if let Some(l) = other {
            dynasm!(self.ops ; .arch x64 ; jmp =>l);
        }
    }

    /// `a /= k` or `a %= k`, `k` not zero.
    fn div_k(&mut self, k: u32, modulo: bool) {
        if k.is_power_of_two() {
            if modulo {
                dynasm!(self.ops ; .arch x64 ; and eax, (k - 1) as i32);
            } else if k > 1 {
                dynasm!(self.ops ; .arch x64 ; shr eax, k.trailing_zeros() as i8);
            }
            return;
        }
        dynasm!(self.ops ; .arch x64 ; xor edx, edx ; mov ecx, k as i32 ; div ecx);
        if modulo {
            dynasm!(self.ops ; .arch x64 ; mov eax, edx);
        }
    }

    fn op(&mut self, pc: usize, op: Op) -> Result<(), JitError> {
        let ret0 = self.ret0;
        let m = |s: u8| MEM + 4 * i32::from(s & 15);
        match op {
            Op::LdB(k) => self.packet_load(At::Abs(k), 1, A),
            Op::LdH(k) => self.packet_load(At::Abs(k), 2, A),
            Op::LdW(k) => self.packet_load(At::Abs(k), 4, A),
            Op::LdIndB(k) => self.packet_load(At::Ind(k), 1, A),
            Op::LdIndH(k) => self.packet_load(At::Ind(k), 2, A),
            Op::LdIndW(k) => self.packet_load(At::Ind(k), 4, A),
            Op::LdxPacket(n, ind, k) => {
                let at = if ind { At::Ind(k) } else { At::Abs(k) };
                self.packet_load(at, n, X);
            }
            Op::Msh(k) => {
                self.packet_load(At::Abs(k), 1, X);
                dynasm!(self.ops ; .arch x64 ; and r10d, 0xf ; shl r10d, 2);
            }
            Op::Ancillary(off) => {
                self.save();
                dynasm!(self.ops ; .arch x64
                    ; mov rdi, r9
                    ; mov esi, off as i32
                    ; mov edx, eax
                    ; mov ecx, r10d
                    ; mov r11, QWORD field as *const () as i64
                    ; call r11
                    ; mov r11d, eax
                );
                self.restore();
                dynasm!(self.ops ; .arch x64 ; mov eax, r11d);
            }
            Op::LdImm(k) => dynasm!(self.ops ; .arch x64 ; mov eax, k as i32),
            Op::LdxImm(k) => dynasm!(self.ops ; .arch x64 ; mov r10d, k as i32),
            Op::LdLen => dynasm!(self.ops ; .arch x64 ; mov eax, r8d),
            Op::LdxLen => dynasm!(self.ops ; .arch x64 ; mov r10d, r8d),
            Op::LdMem(s) => dynasm!(self.ops ; .arch x64 ; mov eax, DWORD [rsp + m(s)]),
            Op::LdxMem(s) => dynasm!(self.ops ; .arch x64 ; mov r10d, DWORD [rsp + m(s)]),
            Op::St(s) => dynasm!(self.ops ; .arch x64 ; mov DWORD [rsp + m(s)], eax),
            Op::Stx(s) => dynasm!(self.ops ; .arch x64 ; mov DWORD [rsp + m(s)], r10d),
            Op::AddK(k) => dynasm!(self.ops ; .arch x64 ; add eax, k as i32),
            Op::AddX => dynasm!(self.ops ; .arch x64 ; add eax, r10d),
            Op::SubK(k) => dynasm!(self.ops ; .arch x64 ; sub eax, k as i32),
            Op::SubX => dynasm!(self.ops ; .arch x64 ; sub eax, r10d),
            Op::MulK(k) => dynasm!(self.ops ; .arch x64 ; imul eax, eax, k as i32),
            Op::MulX => dynasm!(self.ops ; .arch x64 ; imul eax, r10d),
            // (the checker refuses a constant zero; kept exact anyway)
            Op::DivK(0) | Op::ModK(0) => dynasm!(self.ops ; .arch x64 ; jmp =>ret0),
            Op::DivK(k) => self.div_k(k, false),
            Op::ModK(k) => self.div_k(k, true),
            Op::DivX | Op::ModX => {
                dynasm!(self.ops ; .arch x64
                    ; test r10d, r10d
                    ; jz =>ret0
                    ; xor edx, edx
                    ; div r10d
                );
                if let Op::ModX = op {
                    dynasm!(self.ops ; .arch x64 ; mov eax, edx);
                }
            }
            Op::OrK(k) => dynasm!(self.ops ; .arch x64 ; or eax, k as i32),
            Op::OrX => dynasm!(self.ops ; .arch x64 ; or eax, r10d),
            Op::AndK(k) => dynasm!(self.ops ; .arch x64 ; and eax, k as i32),
            Op::AndX => dynasm!(self.ops ; .arch x64 ; and eax, r10d),
            Op::XorK(k) => dynasm!(self.ops ; .arch x64 ; xor eax, k as i32),
            Op::XorX => dynasm!(self.ops ; .arch x64 ; xor eax, r10d),
            // Shifts use the count's low five bits, as the interpreter.
            Op::LshK(k) => dynasm!(self.ops ; .arch x64 ; shl eax, (k & 31) as i8),
            Op::RshK(k) => dynasm!(self.ops ; .arch x64 ; shr eax, (k & 31) as i8),
            Op::LshX => dynasm!(self.ops ; .arch x64 ; mov ecx, r10d ; shl eax, cl),
            Op::RshX => dynasm!(self.ops ; .arch x64 ; mov ecx, r10d ; shr eax, cl),
            Op::Neg => dynasm!(self.ops ; .arch x64 ; neg eax),
            Op::Ja(t) => {
                if t as usize != pc + 1 {
                    let l = self.labels[t as usize];
                    dynasm!(self.ops ; .arch x64 ; jmp =>l);
                }
            }
            Op::JeqK(0, t, f) => {
                dynasm!(self.ops ; .arch x64 ; test eax, eax);
                self.branch(pc, Cond::Eq, t, f);
            }
            Op::JeqK(k, t, f) | Op::JgtK(k, t, f) | Op::JgeK(k, t, f) => {
                dynasm!(self.ops ; .arch x64 ; cmp eax, k as i32);
                self.branch(pc, Cond::of(op), t, f);
            }
            Op::JeqX(t, f) | Op::JgtX(t, f) | Op::JgeX(t, f) => {
                dynasm!(self.ops ; .arch x64 ; cmp eax, r10d);
                self.branch(pc, Cond::of(op), t, f);
            }
            Op::JsetK(k, t, f) => {
                dynasm!(self.ops ; .arch x64 ; test eax, k as i32);
                self.branch(pc, Cond::Ne, t, f);
            }
            Op::JsetX(t, f) => {
                dynasm!(self.ops ; .arch x64 ; test eax, r10d);
                self.branch(pc, Cond::Ne, t, f);
            }
            Op::RetK(k) => dynasm!(self.ops ; .arch x64 ; mov eax, k as i32 ; ret),
            Op::RetA => dynasm!(self.ops ; .arch x64 ; ret),
            Op::Tax => dynasm!(self.ops ; .arch x64 ; mov r10d, eax),
            Op::Txa => dynasm!(self.ops ; .arch x64 ; mov eax, r10d),
            // What the checker refuses (backward jumps, bad operands) and
            // xPF's operations never reach here.
            Op::JaBack(_)
            | Op::LdP(_)
            | Op::LdxP(_)
            | Op::StP(_)
            | Op::StxP(_)
            | Op::LdNdx(..)
            | Op::LdxNdx(..)
            | Op::StNdx(..)
            | Op::StxNdx(..)
            | Op::Nop
            | Op::Bad(_) => {
                return Err(JitError::Unsupported {
                    insn: pc,
                    what: format!("{op:?}"),
                });
            }
        }
        Ok(())
    }
}

/// Jump conditions, after `cmp a, b` (unsigned) or `test`.
#[derive(Clone, Copy)]
enum Cond {
    Eq,
    Ne,
    Above,
    BelowEq,
    AboveEq,
    Below,
}

impl Cond {
    fn not(self) -> Cond {
        match self {
            Cond::Eq => Cond::Ne,
            Cond::Ne => Cond::Eq,
            Cond::Above => Cond::BelowEq,
            Cond::BelowEq => Cond::Above,
            Cond::AboveEq => Cond::Below,
            Cond::Below => Cond::AboveEq,
        }
    }

    /// A comparing jump's condition.
    fn of(op: Op) -> Cond {
        match op {
            Op::JgtK(..) | Op::JgtX(..) => Cond::Above,
            Op::JgeK(..) | Op::JgeX(..) => Cond::AboveEq,
            _ => Cond::Eq,
        }
    }
}
