//! Every tnum operator at 8 bits, on every pair of tnums (6561 squared).
//!
//! The concrete results of a pair are not enumerated pair by pair: a tnum
//! with an unknown bit is the union of the two tnums with that bit known,
//! so the smallest tnum holding all results of `(a, b)` is the join of
//! those of two smaller pairs, computed once each (a table of 43M entries).
//! The abstract result must include it; how often it equals it (the
//! operator is then optimal on that pair) is reported.

use super::tnums;
use crate::tnum::TnumN;
use crate::width::{ones, sext};

type T8 = TnumN<8>;

/// The set of results as known-and-unknown bits: (AND, OR) of its members.
#[derive(Copy, Clone)]
struct Bits2 {
    and: u8,
    or: u8,
}

impl Bits2 {
    fn join(self, o: Bits2) -> Bits2 {
        Bits2 {
            and: self.and & o.and,
            or: self.or | o.or,
        }
    }
    fn tnum(self) -> T8 {
        TnumN {
            value: self.and as u64,
            mask: (self.or ^ self.and) as u64,
        }
    }
}

/// Where a tnum splits on its lowest unknown bit: the indices of its two
/// halves, which come earlier in `tnums()`'s order.
fn splits(all: &[T8]) -> Vec<Option<(usize, usize)>> {
    let mut index = vec![usize::MAX; 1 << 16];
    for (i, t) in all.iter().enumerate() {
        index[(t.mask << 8 | t.value) as usize] = i;
    }
    all.iter()
        .map(|t| {
            (t.mask != 0).then(|| {
                let bit = t.mask & t.mask.wrapping_neg();
                let m = t.mask & !bit;
                (
                    index[(m << 8 | t.value) as usize],
                    index[(m << 8 | t.value | bit) as usize],
                )
            })
        })
        .collect()
}

/// Checks `abs` against `conc` on every pair; returns how many pairs the
/// abstract result was the smallest tnum possible.
fn binary(name: &str, abs: impl Fn(T8, T8) -> T8, conc: impl Fn(u64, u64) -> u64) -> usize {
    let all = tnums::<8>();
    let split = splits(&all);
    let n = all.len();
    let mut table = vec![Bits2 { and: 0, or: 0 }; n * n];
    let mut optimal = 0;
    for bi in 0..n {
        for ai in 0..n {
            let h = if let Some((b0, b1)) = split[bi] {
                table[b0 * n + ai].join(table[b1 * n + ai])
            } else if let Some((a0, a1)) = split[ai] {
                table[bi * n + a0].join(table[bi * n + a1])
            } else {
                let r = (conc(all[ai].value, all[bi].value) & 0xff) as u8;
                Bits2 { and: r, or: r }
            };
            table[bi * n + ai] = h;
            let got = abs(all[ai], all[bi]);
            let best = h.tnum();
            assert!(
                got.includes(best) && got.mask >> 8 == 0 && got.value >> 8 == 0,
                "{name}({}, {}) = {got}, but the results need {best}",
                all[ai],
                all[bi]
            );
            optimal += usize::from(got == best);
        }
    }
    eprintln!("tnum {name}: {} pairs sound, {optimal} optimal", n * n);
    optimal
}

/// Checks a unary `abs` against `conc` on every tnum.
fn unary(name: &str, abs: impl Fn(T8) -> T8, conc: impl Fn(u64) -> u64) {
    let all = tnums::<8>();
    let split = splits(&all);
    let mut hull = vec![Bits2 { and: 0, or: 0 }; all.len()];
    for (i, t) in all.iter().enumerate() {
        hull[i] = match split[i] {
            Some((a, b)) => hull[a].join(hull[b]),
            None => {
                let r = (conc(t.value) & 0xff) as u8;
                Bits2 { and: r, or: r }
            }
        };
        let got = abs(*t);
        assert!(
            got.includes(hull[i].tnum()),
            "{name}({t}) = {got}, but the results need {}",
            hull[i].tnum()
        );
    }
}

#[test]
fn add_sub_mul_are_sound_on_every_pair() {
    // Addition is optimal (the kernel's tnum_add is the best transformer).
    let all = 6561 * 6561;
    assert_eq!(binary("add", T8::add, |x, y| x + y), all);
    binary("sub", T8::sub, |x, y| x.wrapping_sub(y));
    binary("mul", T8::mul, |x, y| x * y);
}

#[test]
fn bitwise_are_sound_and_optimal_on_every_pair() {
    let all = 6561 * 6561;
    assert_eq!(binary("and", T8::and, |x, y| x & y), all);
    assert_eq!(binary("or", T8::or, |x, y| x | y), all);
    assert_eq!(binary("xor", T8::xor, |x, y| x ^ y), all);
    binary("with_subreg", T8::with_subreg, |x, y| {
        (x & 0xf0) | (y & 0xf)
    });
}

#[test]
fn unary_operators_are_sound_on_every_tnum() {
    unary("neg", T8::neg, |x| x.wrapping_neg());
    unary("subreg", T8::subreg, |x| x & 0xf);
    for k in 0..8 {
        unary("shl", |t| t.shl(k), |x| x << k);
        unary("shr", |t| t.shr(k), |x| x >> k);
        unary("ashr", |t| t.ashr(k, 8), |x| (sext(x, 8) >> k) as u64);
    }
    for k in 0..4 {
        // The low half's arithmetic shift (a 32-bit `arsh` at 64 bits).
        let half = |x: u64| (sext(x & 0xf, 4) >> k) as u64 & ones(4);
        unary("ashr32", |t| t.subreg().ashr(k, 4), half);
    }
}

#[test]
fn range_holds_every_interval_and_intersect_every_common_member() {
    for lo in 0..256u64 {
        for hi in lo..256 {
            let t = T8::range(lo, hi);
            assert!((lo..=hi).all(|v| t.contains(v)), "range({lo}, {hi}) = {t}");
        }
    }
    // Members as 256-bit sets, found for a computed tnum by its bits.
    let all = tnums::<8>();
    let members: Vec<[u64; 4]> = all
        .iter()
        .map(|t| {
            let mut set = [0u64; 4];
            for v in (0..256).filter(|&v| t.contains(v)) {
                set[v as usize / 64] |= 1 << (v % 64);
            }
            set
        })
        .collect();
    let mut index = vec![usize::MAX; 1 << 16];
    for (i, t) in all.iter().enumerate() {
        index[(t.mask << 8 | t.value) as usize] = i;
    }
    for (a, ma) in all.iter().zip(&members) {
        for (b, mb) in all.iter().zip(&members) {
            let common: [u64; 4] = std::array::from_fn(|i| ma[i] & mb[i]);
            let overlap = common != [0; 4];
            assert_eq!(a.overlaps(*b), overlap, "overlaps({a}, {b})");
            if overlap {
                let i = a.intersect(*b);
                let mi = &members[index[(i.mask << 8 | i.value) as usize]];
                assert!(
                    (0..4).all(|w| common[w] & !mi[w] == 0),
                    "intersect({a}, {b}) = {i}"
                );
            }
        }
    }
}
