//! Both edges of every conditional jump on whole 4-bit scalars, at both
//! widths, on every pair of input scalars: an edge whose condition some
//! pair of members satisfies exists, and keeps every such member.

use isa::Cond;

use super::{members, scalars};
use crate::bounds::Bits;
use crate::branch::{Edge, negate, refine};
use crate::width::sext;

/// Whether `x c y` holds for `n`-bit values compared at `bits`.
fn holds(c: Cond, x: u64, y: u64, n: u32, bits: Bits) -> bool {
    let w = bits.of(n);
    let m = (1u64 << w) - 1;
    let (x, y) = (x & m, y & m);
    let (sx, sy) = (sext(x, w), sext(y, w));
    match c {
        Cond::Eq => x == y,
        Cond::Ne => x != y,
        Cond::Gt => x > y,
        Cond::Ge => x >= y,
        Cond::Lt => x < y,
        Cond::Le => x <= y,
        Cond::Sgt => sx > sy,
        Cond::Sge => sx >= sy,
        Cond::Slt => sx < sy,
        Cond::Sle => sx <= sy,
        Cond::Set => x & y != 0,
    }
}

/// Whether the concrete `n`-bit pair `(x, y)` takes `edge`.
pub(super) fn takes(edge: Edge, x: u64, y: u64, n: u32, bits: Bits) -> bool {
    match edge {
        Edge::Holds(c) => holds(c, x, y, n, bits),
        Edge::NotSet => !holds(Cond::Set, x, y, n, bits),
    }
}

/// Checks one edge on every pair. Each edge is the true edge of one
/// condition and the false edge of its negation (`NotSet` that of `jset`),
/// so checking each once checks both edges of every jump.
fn check(edge: Edge, bits: Bits) {
    let inputs = scalars();
    let sets: Vec<u16> = inputs.iter().map(members).collect();
    // by_y[y]: the x that take the edge with y; by_x[x]: the y.
    let mut by_y = [0u16; 16];
    let mut by_x = [0u16; 16];
    for x in 0..16 {
        for y in 0..16 {
            if takes(edge, x, y, 4, bits) {
                by_y[y as usize] |= 1 << x;
                by_x[x as usize] |= 1 << y;
            }
        }
    }
    let any = |set: u16, table: &[u16; 16]| {
        (0..16)
            .filter(|v| set & 1 << v != 0)
            .fold(0, |acc, v| acc | table[v])
    };
    let reach_x: Vec<u16> = sets.iter().map(|&mb| any(mb, &by_y)).collect();
    let reach_y: Vec<u16> = sets.iter().map(|&ma| any(ma, &by_x)).collect();
    for (ai, a) in inputs.iter().enumerate() {
        for (bi, b) in inputs.iter().enumerate() {
            let xs = sets[ai] & reach_x[bi];
            if xs == 0 {
                continue;
            }
            let ys = sets[bi] & reach_y[ai];
            let Some((na, nb)) = refine(a, b, edge, bits) else {
                panic!(
                    "{edge:?} {bits:?}: {a} and {b} have members on this edge, which the verifier drops"
                );
            };
            let (lost_a, lost_b) = (xs & !members(&na), ys & !members(&nb));
            assert!(
                lost_a == 0 && lost_b == 0,
                "{edge:?} {bits:?}: {a}, {b} become {na}, {nb}, losing {lost_a:#018b} and {lost_b:#018b}"
            );
        }
    }
}

fn edges(edges: &[Edge]) {
    for &edge in edges {
        check(edge, Bits::B64);
        check(edge, Bits::B32);
    }
}

/// The edges of the jumps, in three groups (a test each, run in parallel).
pub(super) const EQUALITY: [Edge; 4] = [
    Edge::Holds(Cond::Eq),
    Edge::Holds(Cond::Ne),
    Edge::Holds(Cond::Set),
    Edge::NotSet,
];
pub(super) const UNSIGNED: [Edge; 4] = [
    Edge::Holds(Cond::Gt),
    Edge::Holds(Cond::Ge),
    Edge::Holds(Cond::Lt),
    Edge::Holds(Cond::Le),
];
pub(super) const SIGNED: [Edge; 4] = [
    Edge::Holds(Cond::Sgt),
    Edge::Holds(Cond::Sge),
    Edge::Holds(Cond::Slt),
    Edge::Holds(Cond::Sle),
];

#[test]
fn equality_and_bit_tests_are_sound_on_every_pair() {
    edges(&EQUALITY);
}

#[test]
fn unsigned_comparisons_are_sound_on_every_pair() {
    edges(&UNSIGNED);
}

#[test]
fn signed_comparisons_are_sound_on_every_pair() {
    edges(&SIGNED);
}

#[test]
fn every_edge_is_the_negation_of_another() {
    // What makes checking each edge once enough: the verifier's false edge
    // of `c` is `negate(c)`'s true edge, and the concrete outcomes agree.
    for c in Cond::ALL {
        for x in 0..16 {
            for y in 0..16 {
                let other = negate(c).map_or(Edge::NotSet, Edge::Holds);
                assert_ne!(
                    holds(c, x, y, 4, Bits::B64),
                    takes(other, x, y, 4, Bits::B64)
                );
            }
        }
    }
}
