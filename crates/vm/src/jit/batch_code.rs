//! The packet loop of batch code (`vm::batch`): what the trampoline of a
//! batch variant runs instead of entering at one slot.
//!
//! Per packet, from the batch's state (`BatchState`, addressed through the
//! machine's `batch`): the context's first 16 bytes from the packet's
//! descriptor, the machine as `Vm::start` leaves it for a run (budget, 33
//! tail calls, counters at zero, the entry program), the top of the entry
//! frame zeroed as far as the verifier saw it used, r0-r9 zero, r1 the
//! context, r10 the frame; then a jump to the entry program's first slot.
//! The program's exit at depth 0 comes back to `finish`, which stores the
//! packet's result and goes on, or returns to Rust after a packet that
//! called a helper outside the quiet set. Anything else that leaves native
//! code (the interpreter's instructions, the budget) returns through the
//! usual exit with the machine's state saved, and Rust finishes the packet.

use std::mem::{offset_of, size_of};

use dynasmrt::DynamicLabel;

use super::frame::{CTX, DONE, HELPER_CALLS, LEFT, MAP, T0, T1, T2, epilogue};
use super::x64::*;
use crate::batch::{BatchPacket, BatchResult, BatchState};
use crate::interp::Machine;

const BATCH: i32 = offset_of!(Machine, batch) as i32;
const CUR: i32 = offset_of!(Machine, cur) as i32;
const TAIL_CALLS_LEFT: i32 = offset_of!(Machine, tail_calls_left) as i32;
const TAIL_CALLS: i32 = (offset_of!(Machine, stats) + offset_of!(crate::Stats, tail_calls)) as i32;

const NEXT: i32 = offset_of!(BatchState, next) as i32;
const LEN: i32 = offset_of!(BatchState, len) as i32;
const PACKETS: i32 = offset_of!(BatchState, packets) as i32;
const RESULTS: i32 = offset_of!(BatchState, results) as i32;
const CTX_ADDR: i32 = offset_of!(BatchState, ctx) as i32;
const ENTRY: i32 = offset_of!(BatchState, entry) as i32;
const ENTRY_PROG: i32 = offset_of!(BatchState, entry_prog) as i32;
const BUDGET: i32 = offset_of!(BatchState, budget) as i32;
const STACK_TOP: i32 = offset_of!(BatchState, stack_top) as i32;
const LOUD: i32 = offset_of!(BatchState, loud) as i32;
const STATUS: i32 = offset_of!(BatchState, status) as i32;

const _: () = assert!(size_of::<BatchResult>() == 32);
const _: () = assert!(offset_of!(BatchPacket, ctx_head) == 0);

/// Emits the loop (the trampoline's prologue is done, the machine in CTX)
/// and binds `finish`, where the program's exit at depth 0 jumps.
pub(super) fn packet_loop(a: &mut Asm, zeroed: usize, finish: DynamicLabel) {
    let (top, all_done, leave) = (a.label(), a.label(), a.label());
    a.bind(top);
    a.load_q(T0, CTX, BATCH);
    a.load_q(T1, T0, NEXT);
    a.load_q(T2, T0, LEN);
    a.cmp_rr(W::Q, T1, T2);
    a.jcc(Cond::AboveEq, all_done);
    // The packet's descriptor.
    a.alu_rr(Alu::Mov, W::Q, T2, T1);
    a.imul_ri(W::Q, T2, size_of::<BatchPacket>() as i32);
    a.load_q(RAX, T0, PACKETS);
    a.alu_rr(Alu::Add, W::Q, T2, RAX);
    // r1 = the context; its first 16 bytes from the descriptor.
    let r1 = MAP[1];
    a.load_q(r1, T0, CTX_ADDR);
    a.load_q(RAX, T2, 0);
    a.store_q(r1, 0, RAX);
    a.load_q(RAX, T2, 8);
    a.store_q(r1, 8, RAX);
    // The machine as a run starts.
    a.load_q(RAX, T0, BUDGET);
    a.store_q(CTX, LEFT, RAX);
    a.store_i(Size::W, CTX, TAIL_CALLS_LEFT, crate::MAX_TAIL_CALLS as i32);
    a.store_i(Size::Dw, CTX, HELPER_CALLS, 0);
    a.store_i(Size::Dw, CTX, TAIL_CALLS, 0);
    a.store_i(Size::Dw, T0, LOUD, 0);
    a.store_i(Size::Dw, CTX, DONE, 0);
    a.load_q(RAX, T0, ENTRY_PROG);
    a.store_q(CTX, CUR, RAX);
    // The frame: r10 at its top, the bytes the program uses zeroed.
    let r10 = MAP[10];
    a.load_q(r10, T0, STACK_TOP);
    a.alu_rr(Alu::Xor, W::D, RAX, RAX);
    for k in 1..=(zeroed / 8) as i32 {
        a.store_q(r10, -8 * k, RAX);
    }
    for (i, &r) in MAP.iter().enumerate().take(10) {
        if i != 1 {
            a.alu_rr(Alu::Xor, W::D, r, r);
        }
    }
    a.load_q(T2, T0, ENTRY);
    a.jmp_r(T2);

    // The program exited: its result, then the next packet.
    a.bind(finish);
    a.load_q(T0, CTX, BATCH);
    a.load_q(T2, T0, NEXT);
    a.shift_ri(Shift::Shl, W::Q, T2, 5);
    a.load_q(RDX, T0, RESULTS);
    a.alu_rr(Alu::Add, W::Q, T2, RDX);
    a.store_q(T2, 0, RAX);
    a.load_q(RDX, T0, BUDGET);
    a.load_q(RCX, CTX, LEFT);
    a.alu_rr(Alu::Sub, W::Q, RDX, RCX);
    a.store_q(T2, 8, RDX);
    a.load_q(RDX, CTX, HELPER_CALLS);
    a.store_q(T2, 16, RDX);
    a.load_q(RDX, CTX, TAIL_CALLS);
    a.store_q(T2, 24, RDX);
    a.add_mi(T0, NEXT, 1);
    a.cmp_mi(T0, LOUD, 0);
    a.jcc(Cond::Eq, top);
    a.store_i(Size::Dw, T0, STATUS, 1);
    a.jmp(leave);
    a.bind(all_done);
    a.store_i(Size::Dw, T0, STATUS, 2);
    a.bind(leave);
    epilogue(a);
}
