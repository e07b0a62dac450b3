//! Exhaustive soundness checks of the abstract operators at small widths.
//!
//! Rule: for every abstract input (or pair of inputs) and every concrete
//! value inside it, the concrete result of the operation lies inside the
//! abstract result. The operators are the verifier's own code, generic over
//! the width ([`crate::width`]); run at 8 bits (tnums; whole scalars against
//! every constant, in `constants`) and 4 bits (every pair of whole scalars,
//! whose halves are then 2 bits) every case can be enumerated, as
//! the kernel's range analysis was checked by Agni (CAV 2023) and the tnum
//! multiplication proved (CGO 2022). Bugs of these operators are
//! width-independent in practice (carries, sign crossings, the halves'
//! interplay all exist at 4 bits); the proptests beside each operator run
//! the same code at 64 bits.
//!
//! Sets of concrete values are kept as bit sets (`u16` at 4 bits), so a
//! pair's concrete results cost a few ORs rather than a loop per pair.

mod branch;
mod constants;
mod scalar;
mod tnum;

use crate::bounds::ScalarN;
use crate::tnum::TnumN;

/// Every tnum of `N` bits, those with fewer unknown bits first.
pub(crate) fn tnums<const N: u32>() -> Vec<TnumN<N>> {
    let mut all = Vec::new();
    for mask in 0..1u64 << N {
        for value in 0..1u64 << N {
            if value & mask == 0 {
                all.push(TnumN { value, mask });
            }
        }
    }
    all.sort_by_key(|t| t.mask.count_ones());
    all
}

/// The members of `s` among 4-bit values, as a bit set.
pub(crate) fn members(s: &ScalarN<4>) -> u16 {
    (0..16)
        .filter(|&v| s.contains(v))
        .fold(0, |m, v| m | 1 << v)
}

/// The tightest scalar holding every value of the (non-empty) set `set`.
pub(crate) fn hull(set: u16) -> ScalarN<4> {
    let vals: Vec<u64> = (0..16).filter(|v| set & 1 << v != 0).collect();
    let and = vals.iter().fold(0xf, |a, v| a & v);
    let or = vals.iter().fold(0, |a, v| a | v);
    let signed = |v: u64, bits: u32| crate::width::sext(v, bits);
    let low = |v: &u64| v & 3;
    ScalarN {
        var: TnumN {
            value: and,
            mask: or ^ and,
        },
        umin: *vals.iter().min().unwrap(),
        umax: *vals.iter().max().unwrap(),
        smin: vals.iter().map(|&v| signed(v, 4)).min().unwrap(),
        smax: vals.iter().map(|&v| signed(v, 4)).max().unwrap(),
        u32min: vals.iter().map(low).min().unwrap() as u32,
        u32max: vals.iter().map(low).max().unwrap() as u32,
        s32min: vals.iter().map(|v| signed(low(v), 2)).min().unwrap() as i32,
        s32max: vals.iter().map(|v| signed(low(v), 2)).max().unwrap() as i32,
    }
}

/// The 4-bit scalars the checks take as inputs: the tightest scalar of every
/// non-empty set of values (every precise state there is), and the states
/// that one constraint gives after `sync` (an unsigned or signed range of
/// either half, or a tnum), which may be less precise than the tightest.
pub(crate) fn scalars() -> Vec<ScalarN<4>> {
    let mut seen = std::collections::HashSet::new();
    let mut all = Vec::new();
    let mut keep = |s: ScalarN<4>| {
        if seen.insert(s) {
            all.push(s);
        }
    };
    for set in 1..=u16::MAX {
        keep(hull(set));
    }
    let top = ScalarN::<4>::unknown();
    for lo in 0..16u64 {
        for hi in lo..16 {
            let (slo, shi) = (lo as i64 - 8, hi as i64 - 8);
            for s in [
                ScalarN {
                    umin: lo,
                    umax: hi,
                    ..top
                },
                ScalarN {
                    smin: slo,
                    smax: shi,
                    ..top
                },
            ] {
                let mut s = s;
                if s.sync() {
                    keep(s);
                }
            }
        }
    }
    for lo in 0..4u32 {
        for hi in lo..4 {
            let (slo, shi) = (lo as i32 - 2, hi as i32 - 2);
            for s in [
                ScalarN {
                    u32min: lo,
                    u32max: hi,
                    ..top
                },
                ScalarN {
                    s32min: slo,
                    s32max: shi,
                    ..top
                },
            ] {
                let mut s = s;
                if s.sync() {
                    keep(s);
                }
            }
        }
    }
    for t in tnums::<4>() {
        let mut s = ScalarN { var: t, ..top };
        if s.sync() {
            keep(s);
        }
    }
    all
}

#[test]
fn the_inputs_are_well_formed() {
    let all = scalars();
    for s in &all {
        let m = members(s);
        assert_ne!(m, 0, "{s:?} is empty");
        // Sync keeps every member and loses nothing of the tightest state.
        let mut t = *s;
        assert!(t.sync());
        assert_eq!(members(&t), m, "{s:?}");
    }
    eprintln!("{} distinct 4-bit scalars", all.len());
}
