//! Whole 8-bit scalars against every constant: every ALU operation (64-
//! and 32-bit, the halves then being 4 bits) and both edges of every
//! conditional jump, with any scalar that one constraint gives on the left
//! (an unsigned or signed range of the value or of its low half, or a tnum;
//! after `sync`) and every constant on the right, as `r op imm` and
//! `if r cond imm` have them.
//!
//! Why not every pair, as at 4 bits (`scalar`, `branch`): the 8-bit ranges
//! alone make 10^9 pairs per operation. A constant operand is the case the
//! verifier meets most, and 8 bits give the carries, sign crossings and
//! 4-bit halves room that 4 bits do not.
//!
//! A range's concrete results are kept per constant and grown one member at
//! a time (the range `lo..=hi + 1` is `lo..=hi` and one value), so the cost
//! is one operation per member added rather than per member and input.

use std::collections::HashSet;

use isa::{AluOp, Width};

use super::branch::{EQUALITY, SIGNED, UNSIGNED, takes};
use super::scalar::{OPS, concrete};
use super::tnums;
use crate::alu::scalar_alu;
use crate::bounds::{Bits, ScalarN};
use crate::branch::{Edge, refine};

type S8 = ScalarN<8>;

/// A set of 8-bit values.
#[derive(Copy, Clone, Default, PartialEq, Debug)]
struct Set([u64; 4]);

impl Set {
    fn insert(&mut self, v: u64) {
        self.0[(v >> 6) as usize & 3] |= 1 << (v & 63);
    }
    fn contains(&self, v: u64) -> bool {
        self.0[(v >> 6) as usize & 3] & 1 << (v & 63) != 0
    }
    fn and(self, o: Set) -> Set {
        Set(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
    /// The members of `self` not in `o`.
    fn minus(self, o: Set) -> Set {
        Set(std::array::from_fn(|i| self.0[i] & !o.0[i]))
    }
    fn is_empty(&self) -> bool {
        self.0 == [0; 4]
    }
    /// `lo..=hi` in unsigned order (empty when `lo > hi`).
    fn range(lo: u64, hi: u64) -> Set {
        Set(std::array::from_fn(|i| {
            let (first, last) = (64 * i as u64, 64 * i as u64 + 63);
            if hi < first || lo > last || lo > hi {
                return 0;
            }
            let (a, b) = (lo.max(first) - first, hi.min(last) - first);
            (u64::MAX >> (63 - (b - a))) << a
        }))
    }
    /// `lo..=hi` read as signed 8-bit values.
    fn signed_range(lo: i64, hi: i64) -> Set {
        let u = |v: i64| (v as u64) & 0xff;
        if lo < 0 && hi >= 0 {
            let (a, b) = (Set::range(u(lo), 255), Set::range(0, u(hi)));
            Set(std::array::from_fn(|i| a.0[i] | b.0[i]))
        } else {
            Set::range(u(lo), u(hi))
        }
    }
}

/// The members of 8-bit scalars as sets, the tnum part from a table.
struct Members {
    by_tnum: Vec<Set>,
}

impl Members {
    fn new() -> Members {
        let mut by_tnum = vec![Set::default(); 1 << 16];
        for t in tnums::<8>() {
            let set = &mut by_tnum[(t.mask << 8 | t.value) as usize];
            for v in (0..256).filter(|&v| t.contains(v)) {
                set.insert(v);
            }
        }
        Members { by_tnum }
    }

    fn of(&self, s: &S8) -> Set {
        // The low half's constraints, as the 16 nibbles they allow, repeated.
        let span = |lo: i64, hi: i64| match lo <= hi {
            true => (u64::MAX >> (63 - (hi - lo))) << lo,
            false => 0,
        };
        let signed = match (s.s32min as i64, s.s32max as i64) {
            (lo, hi) if lo < 0 && hi >= 0 => span(lo + 16, 15) | span(0, hi),
            (lo, hi) => span(lo & 15, hi & 15),
        };
        let nibbles = span(s.u32min as i64, s.u32max as i64) & signed;
        let halves = Set([nibbles * 0x0001_0001_0001_0001; 4]);
        self.by_tnum[(s.var.mask << 8 | s.var.value) as usize]
            .and(Set::range(s.umin, s.umax))
            .and(Set::signed_range(s.smin, s.smax))
            .and(halves)
    }
}

/// One step of the inputs: start afresh (`reset`) or not, add `members`
/// to those of the previous step, and check `scalar`, whose members they
/// now are, unless an earlier step had the same scalar.
struct Step<'a> {
    reset: bool,
    members: &'a [u64],
    scalar: Option<S8>,
}

/// Every single-constraint 8-bit scalar, as steps that grow its members.
fn inputs(mut step: impl FnMut(Step)) {
    let top = S8::unknown();
    let mut seen = HashSet::new();
    let mut first = |mut s: S8| (s.sync() && seen.insert(s)).then_some(s);
    let v = |x: i64| (x as u64) & 0xff;
    // Ranges of the value, unsigned then signed, grown by their top.
    for lo in 0..256i64 {
        for hi in lo..256 {
            let scalar = first(S8 {
                umin: lo as u64,
                umax: hi as u64,
                ..top
            });
            step(Step {
                reset: hi == lo,
                members: &[v(hi)],
                scalar,
            });
        }
    }
    for lo in -128..128i64 {
        for hi in lo..128 {
            let scalar = first(S8 {
                smin: lo,
                smax: hi,
                ..top
            });
            step(Step {
                reset: hi == lo,
                members: &[v(hi)],
                scalar,
            });
        }
    }
    // Ranges of the low half, and tnums: each from scratch.
    let mut whole = |s: S8| {
        if let Some(scalar) = first(s) {
            let members: Vec<u64> = (0..256).filter(|&x| s.contains(x)).collect();
            step(Step {
                reset: true,
                members: &members,
                scalar: Some(scalar),
            });
        }
    };
    for lo in 0..16 {
        for hi in lo..16 {
            whole(S8 {
                u32min: lo,
                u32max: hi,
                ..top
            });
            whole(S8 {
                s32min: lo as i32 - 8,
                s32max: hi as i32 - 8,
                ..top
            });
        }
    }
    for t in tnums::<8>() {
        whole(S8 { var: t, ..top });
    }
}

/// Calls `check` with every input and, per constant `c`, the set of what
/// its members give with `c` (`of(x, c)`: a value, or none).
fn with_constants(of: impl Fn(u64, u64) -> Option<u64>, mut check: impl FnMut(&S8, &[Set; 256])) {
    let mut sets = [Set::default(); 256];
    inputs(|s| {
        if s.reset {
            sets = [Set::default(); 256];
        }
        for &x in s.members {
            for (c, set) in sets.iter_mut().enumerate() {
                if let Some(v) = of(x, c as u64) {
                    set.insert(v);
                }
            }
        }
        if let Some(a) = &s.scalar {
            check(a, &sets);
        }
    });
}

/// Checks `op` at `width` on every input with every constant.
fn alu(op: AluOp, width: Width, members: &Members) {
    let of = |x, c| Some(concrete(op, x, c, 8, width));
    with_constants(of, |a, results| {
        for (c, want) in results.iter().enumerate() {
            let got = scalar_alu(op, a, &S8::konst(c as u64), width);
            let lost = want.minus(members.of(&got));
            assert!(
                lost.is_empty(),
                "{op:?} {width:?}: {a} op {c} = {got} loses the results {lost:x?}"
            );
        }
    });
}

/// Checks `edge` at `bits` on every input with every constant: the edge
/// exists when a member takes it and keeps every member that does (and the
/// constant).
fn edge(edge: Edge, bits: Bits, members: &Members) {
    let of = |x, c| takes(edge, x, c, 8, bits).then_some(x);
    with_constants(of, |a, taken| {
        for (c, want) in taken.iter().enumerate().filter(|(_, t)| !t.is_empty()) {
            let Some((na, nb)) = refine(a, &S8::konst(c as u64), edge, bits) else {
                panic!(
                    "{edge:?} {bits:?}: {a} has members on this edge with {c}, which the verifier drops"
                );
            };
            let lost = want.minus(members.of(&na));
            assert!(
                lost.is_empty() && members.of(&nb).contains(c as u64),
                "{edge:?} {bits:?}: {a}, {c} become {na}, {nb}, losing {lost:x?}"
            );
        }
    });
}

#[test]
fn member_sets_agree_with_contains() {
    let members = Members::new();
    let mut n = 0;
    inputs(|s| {
        let Some(a) = s.scalar else { return };
        n += 1;
        let set = members.of(&a);
        for v in 0..256 {
            assert_eq!(set.contains(v), a.contains(v), "{a} at {v}");
        }
    });
    // Unsigned ranges, the signed ones crossing the sign, tnums, halves.
    assert!(n > 32_896 + 16_000 + 6_000, "only {n} inputs");
    eprintln!("{n} distinct single-constraint 8-bit scalars");
}

#[test]
fn arithmetic_is_sound_against_every_constant() {
    let members = Members::new();
    for op in &OPS[..7] {
        alu(*op, Width::W64, &members);
        alu(*op, Width::W32, &members);
    }
}

#[test]
fn bitwise_operations_and_shifts_are_sound_against_every_constant() {
    let members = Members::new();
    for op in &OPS[7..] {
        alu(*op, Width::W64, &members);
        alu(*op, Width::W32, &members);
    }
}

fn edges(edges: &[Edge]) {
    let members = Members::new();
    for &e in edges {
        edge(e, Bits::B64, &members);
        edge(e, Bits::B32, &members);
    }
}

#[test]
fn equality_and_bit_tests_are_sound_against_every_constant() {
    edges(&EQUALITY);
}

#[test]
fn unsigned_comparisons_are_sound_against_every_constant() {
    edges(&UNSIGNED);
}

#[test]
fn signed_comparisons_are_sound_against_every_constant() {
    edges(&SIGNED);
}
