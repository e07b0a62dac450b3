//! Templates aimed at the verifier's pointer and range reasoning: pointer
//! arithmetic with variable offsets on the stack and in map values, every
//! form of a packet bounds check, spills and fills (whole and partial, of
//! pointers and numbers), bpf-to-bpf calls passing pointers, and helpers
//! whose arguments are buffers and sizes. Offsets and bounds fall near the
//! edges of what is allowed, on either side.

use super::{ARRAY_VALUE, HASH_VALUE, Rng, SIZES, imm, scratch};

type Out<'a> = &'a mut dyn FnMut(String);

/// A size and its byte count, and an offset near `edge` aligned to it.
fn near(r: &mut Rng, edge: i64) -> (&'static str, i64, i64) {
    let (sz, n) = *r.pick(&SIZES);
    let off = edge - n + r.below(3) as i64 - 1;
    (sz, n, off.max(0) - off.max(0) % n)
}

/// A stack access through a pointer with a variable offset.
pub(super) fn stack_var_offset(r: &mut Rng, out: Out) {
    if r.chance(60) {
        // Initialise the area the access may touch.
        for slot in 1..=8 {
            out(format!("stdw [%r10-{}], 0", slot * 8));
        }
    }
    let x = scratch(r);
    let mask = *r.pick(&[7, 15, 31, 63]);
    out(format!("and %r{x}, {mask}"));
    out("mov %r9, %r10".into());
    out(format!("add %r9, -{}", *r.pick(&[64, 64, 72, 32])));
    out(format!("add %r9, %r{x}"));
    let (sz, _, off) = near(r, 64 - mask);
    if r.chance(50) {
        out(format!("ldx{sz} %r{}, [%r9+{off}]", scratch(r)));
    } else {
        out(format!("stx{sz} [%r9+{off}], %r{}", scratch(r)));
    }
}

/// A map value pointer moved by a number bounded by a comparison.
pub(super) fn map_value_var_offset(r: &mut Rng, out: Out, b: u64) {
    let (map, vsize) = if r.chance(50) {
        (0, ARRAY_VALUE)
    } else {
        (1, HASH_VALUE)
    };
    out("stw [%r10-4], 0".into());
    out("mov %r2, %r10".into());
    out("add %r2, -4".into());
    out(format!("lddw %r1, map_idx({map})"));
    out("call bpf_map_lookup_elem".into());
    out("jeq %r0, 0, end".into());
    let x = 1 + r.below(5);
    if r.chance(50) {
        out(format!("ldxw %r{x}, [%r0+0]"));
    } else {
        out(format!("mov %r{x}, {}", imm(r)));
    }
    let (sz, n, _) = near(r, 0);
    let bound = vsize as i64 - n + r.below(3) as i64 - 1;
    match r.below(4) {
        0 => out(format!("jgt %r{x}, {bound}, end")),
        1 => out(format!("jge %r{x}, {}, end", bound + 1)),
        2 => out(format!("jsgt %r{x}, {bound}, end")),
        _ => {
            out(format!("jle %r{x}, {bound}, ok{b}"));
            out("ja end".into());
            out(format!("ok{b}:"));
        }
    }
    out(format!("add %r0, %r{x}"));
    if r.chance(50) {
        out(format!("ldx{sz} %r1, [%r0+0]"));
    } else {
        out(format!("st{sz} [%r0+0], {}", imm(r)));
    }
}

/// `data + k` checked against `data_end` in one of the forms compilers
/// emit, then a load near `k`.
pub(super) fn packet_check_forms(r: &mut Rng, out: Out, b: u64) {
    let k = 1 + r.below(40) as i64;
    out("mov %r9, %r7".into());
    out(format!("add %r9, {k}"));
    match r.below(6) {
        0 => out("jgt %r9, %r8, end".into()),
        1 => out("jge %r9, %r8, end".into()),
        2 => out("jlt %r8, %r9, end".into()),
        3 => out("jle %r8, %r9, end".into()),
        4 => {
            out(format!("jle %r9, %r8, ok{b}"));
            out("ja end".into());
            out(format!("ok{b}:"));
        }
        _ => {
            out(format!("jge %r8, %r9, ok{b}"));
            out("ja end".into());
            out(format!("ok{b}:"));
        }
    }
    let (sz, _, off) = near(r, k);
    if r.chance(70) {
        out(format!("ldx{sz} %r{}, [%r7+{off}]", scratch(r)));
    } else {
        out(format!("stx{sz} [%r7+{off}], %r{}", scratch(r)));
    }
}

/// A register spilled to the stack and filled back, whole or in part,
/// then used.
pub(super) fn spill_fill(r: &mut Rng, out: Out) {
    let slot = -8 * (2 + r.below(4) as i64);
    match r.below(5) {
        0 => {
            // A packet pointer, filled into another register and read.
            out(format!("stxdw [%r10{slot:+}], %r7"));
            out(format!("ldxdw %r9, [%r10{slot:+}]"));
            out(format!("ldxb %r{}, [%r9+{}]", scratch(r), r.below(8)));
        }
        1 => {
            // The context pointer, filled and read as the context.
            out(format!("stxdw [%r10{slot:+}], %r6"));
            out(format!("ldxdw %r1, [%r10{slot:+}]"));
            out(format!("ldxw %r{}, [%r1+{}]", scratch(r), 4 * r.below(4)));
        }
        2 => {
            // Half a number spilled, the whole slot filled.
            out(format!("stxw [%r10{slot:+}], %r{}", scratch(r)));
            out(format!("ldxdw %r{}, [%r10{slot:+}]", scratch(r)));
        }
        3 => {
            // A bounded number spilled whole, a part filled and used as
            // a packet offset.
            let x = scratch(r);
            out(format!("and %r{x}, 15"));
            out(format!("stxdw [%r10{slot:+}], %r{x}"));
            out(format!(
                "ldx{} %r{x}, [%r10{slot:+}]",
                r.pick(&["b", "w", "dw"])
            ));
            out("mov %r9, %r7".into());
            out(format!("add %r9, %r{x}"));
            out("mov %r1, %r9".into());
            out("add %r1, 1".into());
            out("jgt %r1, %r8, end".into());
            out("ldxb %r1, [%r9+0]".into());
        }
        _ => {
            // Part of a pointer filled: a number, never a pointer again.
            out(format!("stxdw [%r10{slot:+}], %r7"));
            out(format!("ldxw %r9, [%r10{slot:+}]"));
            if r.chance(30) {
                out("ldxb %r1, [%r9+0]".into());
            }
        }
    }
}

/// A bpf-to-bpf call `subN` given a pointer to the caller's stack (or the
/// packet) and a number; it reads through the pointer and returns a number.
pub(super) fn subprogram(r: &mut Rng, out: Out, funcs: Out, b: u64) {
    out(format!("stdw [%r10-8], {}", imm(r)));
    if r.chance(80) {
        out("mov %r1, %r10".into());
        out("add %r1, -8".into());
    } else {
        out("mov %r1, %r7".into());
    }
    out(format!("mov %r2, {}", imm(r)));
    out(format!("call local sub{b}"));
    out(format!("mov %r{}, %r0", scratch(r)));
    funcs(format!("sub{b}:"));
    let (sz, _, off) = near(r, 8);
    funcs(format!("ldx{sz} %r0, [%r1+{off}]"));
    funcs("and %r2, 15".into());
    funcs("add %r0, %r2".into());
    if r.chance(40) {
        funcs(format!("stxw [%r1+{}], %r2", 4 * r.below(2)));
    }
    if r.chance(30) {
        // A frame of its own, used.
        funcs("stxdw [%r10-8], %r0".into());
        funcs("ldxdw %r0, [%r10-8]".into());
    }
    funcs("exit".into());
}

/// Helpers taking buffers and sizes: map updates and deletes with keys and
/// values on the stack, `bpf_xdp_load_bytes` into a stack buffer.
pub(super) fn helper_buffers(r: &mut Rng, out: Out) {
    match r.below(3) {
        0 => {
            let (map, vsize) = if r.chance(50) {
                (0, ARRAY_VALUE)
            } else {
                (1, HASH_VALUE)
            };
            out(format!("stw [%r10-4], {}", r.below(8)));
            // The value at fp-40, initialised all or in part.
            let init = if r.chance(80) {
                vsize / 8
            } else {
                r.below(4) as u32
            };
            for i in 0..init {
                out(format!("stdw [%r10-{}], 0", 40 - 8 * i as i64));
            }
            out(format!("lddw %r1, map_idx({map})"));
            out("mov %r2, %r10".into());
            out("add %r2, -4".into());
            out("mov %r3, %r10".into());
            out("add %r3, -40".into());
            out("mov %r4, 0".into());
            out("call bpf_map_update_elem".into());
        }
        1 => {
            out(format!("stw [%r10-4], {}", r.below(8)));
            out(format!("lddw %r1, map_idx({})", r.below(2)));
            out("mov %r2, %r10".into());
            out("add %r2, -4".into());
            out("call bpf_map_delete_elem".into());
        }
        _ => {
            let len = 1 + r.below(33) as i64;
            if r.chance(50) {
                out(format!("mov %r4, {len}"));
            } else {
                // A length bounded by a mask and a check.
                out(format!("mov %r4, %r{}", scratch(r)));
                out("and %r4, 63".into());
                out(format!("jgt %r4, {len}, end"));
                if r.chance(70) {
                    out("jeq %r4, 0, end".into());
                }
            }
            out("mov %r1, %r6".into());
            out(format!("mov %r2, {}", r.below(16)));
            out("mov %r3, %r10".into());
            out("add %r3, -32".into());
            out("call bpf_xdp_load_bytes".into());
            out(format!(
                "ldx{} %r1, [%r10-{}]",
                r.pick(&["b", "w"]),
                8 + 4 * r.below(4)
            ));
        }
    }
}
