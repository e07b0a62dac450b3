//! What native code and its trampolines agree on: which x86 register
//! holds each eBPF register, the scratch registers and the machine's, the
//! machine's fields by offset, and the way back to the trampoline's
//! caller. `codegen.rs` (a program's code) and `batch_code.rs` (the
//! batch's packet loop) both build on it.

use std::mem::offset_of;

use super::x64::*;
use crate::interp::Machine;

/// eBPF r0-r10 in x86 registers: r1-r5 are the System V argument
/// registers, r6-r9 and the frame pointer callee-saved ones.
pub(super) const MAP: [R; 11] = [RAX, RDI, RSI, RDX, RCX, R8, RBX, R13, R14, R15, RBP];
/// Scratch registers (no eBPF register lives there) and the machine.
pub(super) const T0: R = R9;
pub(super) const T1: R = R10;
pub(super) const T2: R = R11;
pub(super) const CTX: R = R12;

pub(super) const REGS: i32 = offset_of!(Machine, r) as i32;
pub(super) const LEFT: i32 = offset_of!(Machine, left) as i32;
pub(super) const PC: i32 = offset_of!(Machine, pc) as i32;
pub(super) const DEPTH: i32 = offset_of!(Machine, depth) as i32;
pub(super) const DONE: i32 = offset_of!(Machine, done) as i32;
pub(super) const HELPER_CALLS: i32 =
    (offset_of!(Machine, stats) + offset_of!(crate::Stats, helper_calls)) as i32;
/// Back to the caller of the trampoline (the native stack as it found it).
pub(super) fn epilogue(a: &mut Asm) {
    a.add_rsp(8);
    for r in [R15, R14, R13, R12, RBX, RBP] {
        a.pop(r);
    }
    a.ret();
}
