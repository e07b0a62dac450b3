//! Tristate numbers: what is known of each bit of a value. A bit is known
//! when its `mask` bit is clear (then it equals the `value` bit) and
//! unknown when its `mask` bit is set (its `value` bit is then 0).
//!
//! The operations over-approximate: every concrete result of the operation
//! on members of the inputs is a member of the output. They are written for
//! any width `N` (see [`crate::width`]); the verifier's [`Tnum`] is 64 bits.

// Named methods rather than operator traits: the operations are abstract
// (sets of values), not arithmetic on one value.
#![allow(clippy::should_implement_trait)]

use std::fmt;

use crate::width::{ones, sext};

/// A tnum of `N`-bit values (bits above `N` always clear).
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct TnumN<const N: u32> {
    pub value: u64,
    pub mask: u64,
}

/// The verifier's tnum, over 64-bit values.
pub type Tnum = TnumN<64>;

impl<const N: u32> TnumN<N> {
    const ONES: u64 = ones(N);
    /// The low half's bits (a 64-bit value's low 32).
    const HALF: u32 = N / 2;

    pub const UNKNOWN: Self = Self {
        value: 0,
        mask: ones(N),
    };

    pub const fn konst(value: u64) -> Self {
        Self {
            value: value & ones(N),
            mask: 0,
        }
    }

    /// Keeps the invariant: nothing above bit `N`, unknown bits' values 0.
    fn masked(value: u64, mask: u64) -> Self {
        Self {
            value: value & !mask & Self::ONES,
            mask: mask & Self::ONES,
        }
    }

    /// The smallest tnum holding every value of `min..=max`.
    pub fn range(min: u64, max: u64) -> Self {
        let differing = min ^ max;
        if differing == 0 {
            return Self::konst(min);
        }
        let bits = 64 - differing.leading_zeros();
        if bits >= N {
            return Self::UNKNOWN;
        }
        let low = (1u64 << bits) - 1;
        Self {
            value: min & !low,
            mask: low,
        }
    }

    pub fn is_const(self) -> bool {
        self.mask == 0
    }

    pub fn is_unknown(self) -> bool {
        self.mask == Self::ONES
    }

    /// Whether `v` is a member.
    #[cfg(test)]
    pub fn contains(self, v: u64) -> bool {
        v & !self.mask == self.value
    }

    /// Whether every member of `other` is a member of `self`.
    pub fn includes(self, other: Self) -> bool {
        other.mask & !self.mask == 0 && other.value & !self.mask == self.value
    }

    pub fn min(self) -> u64 {
        self.value
    }

    pub fn max(self) -> u64 {
        self.value | self.mask
    }

    pub fn shl(self, k: u32) -> Self {
        Self::masked(self.value.wrapping_shl(k), self.mask.wrapping_shl(k))
    }

    pub fn shr(self, k: u32) -> Self {
        Self {
            value: self.value.wrapping_shr(k),
            mask: self.mask.wrapping_shr(k),
        }
    }

    /// Arithmetic right shift of a `bits`-wide value (`N` or `N / 2`).
    pub fn ashr(self, k: u32, bits: u32) -> Self {
        let m = ones(bits);
        Self {
            value: (sext(self.value, bits) >> k) as u64 & m,
            mask: (sext(self.mask, bits) >> k) as u64 & m,
        }
    }

    pub fn add(self, o: Self) -> Self {
        let sm = self.mask.wrapping_add(o.mask);
        let sv = self.value.wrapping_add(o.value);
        let sigma = sm.wrapping_add(sv);
        let chi = sigma ^ sv;
        let mu = chi | self.mask | o.mask;
        Self::masked(sv, mu)
    }

    pub fn sub(self, o: Self) -> Self {
        let dv = self.value.wrapping_sub(o.value);
        let alpha = dv.wrapping_add(self.mask);
        let beta = dv.wrapping_sub(o.mask);
        let chi = alpha ^ beta;
        let mu = chi | self.mask | o.mask;
        Self::masked(dv, mu)
    }

    #[cfg(test)]
    pub fn neg(self) -> Self {
        Self::konst(0).sub(self)
    }

    pub fn and(self, o: Self) -> Self {
        let alpha = self.value | self.mask;
        let beta = o.value | o.mask;
        let v = self.value & o.value;
        Self {
            value: v,
            mask: alpha & beta & !v,
        }
    }

    pub fn or(self, o: Self) -> Self {
        let v = self.value | o.value;
        let mu = self.mask | o.mask;
        Self {
            value: v,
            mask: mu & !v,
        }
    }

    pub fn xor(self, o: Self) -> Self {
        let v = self.value ^ o.value;
        let mu = self.mask | o.mask;
        Self {
            value: v & !mu,
            mask: mu,
        }
    }

    /// Multiplication by long multiplication over the bits of `self`: a
    /// certain 1 adds `o`'s unknown bits, an unknown bit adds all of `o`'s
    /// possible bits as unknown.
    pub fn mul(self, o: Self) -> Self {
        let exact = self.value.wrapping_mul(o.value);
        let mut uncertain = Self::konst(0);
        let (mut a, mut b) = (self, o);
        while a.value != 0 || a.mask != 0 {
            if a.value & 1 != 0 {
                uncertain = uncertain.add(Self {
                    value: 0,
                    mask: b.mask,
                });
            } else if a.mask & 1 != 0 {
                uncertain = uncertain.add(Self {
                    value: 0,
                    mask: b.value | b.mask,
                });
            }
            a = a.shr(1);
            b = b.shl(1);
        }
        Self::konst(exact).add(uncertain)
    }

    /// Members of both (the caller knows they overlap).
    pub fn intersect(self, o: Self) -> Self {
        let v = self.value | o.value;
        let mu = self.mask & o.mask;
        Self {
            value: v & !mu,
            mask: mu,
        }
    }

    /// Whether some value is a member of both.
    pub fn overlaps(self, o: Self) -> bool {
        let known_both = !self.mask & !o.mask;
        (self.value ^ o.value) & known_both == 0
    }

    /// The low half (the low 32 bits of a 64-bit value), zero-extended.
    pub fn subreg(self) -> Self {
        let keep = ones(Self::HALF);
        Self {
            value: self.value & keep,
            mask: self.mask & keep,
        }
    }

    /// `self` with its low half replaced by `low`'s.
    pub fn with_subreg(self, low: Self) -> Self {
        let high = !ones(Self::HALF);
        let high = Self {
            value: self.value & high,
            mask: self.mask & high,
        };
        high.or(low.subreg())
    }

    /// Whether every member is a multiple of `align` (a power of two).
    pub fn is_aligned(self, align: u64) -> bool {
        align == 0 || (self.value | self.mask) & (align - 1) == 0
    }
}

/// Byte-sized views, for loads, stores and byte swaps of 64-bit registers.
impl Tnum {
    /// The low `bytes` bytes, zero-extended.
    pub fn truncate(self, bytes: u32) -> Tnum {
        if bytes >= 8 {
            return self;
        }
        let keep = ones(bytes * 8);
        Tnum {
            value: self.value & keep,
            mask: self.mask & keep,
        }
    }

    /// Sign extension of the low `bytes` bytes.
    pub fn sign_extend(self, bytes: u32) -> Tnum {
        if bytes >= 8 {
            return self;
        }
        Tnum {
            value: sext(self.value, bytes * 8) as u64,
            mask: sext(self.mask, bytes * 8) as u64,
        }
    }

    /// Byte swap of the low `bytes` bytes (the rest cleared).
    pub fn swap_bytes(self, bytes: u32) -> Tnum {
        let t = self.truncate(bytes);
        let shift = 64 - bytes * 8;
        Tnum {
            value: t.value.swap_bytes() >> shift,
            mask: t.mask.swap_bytes() >> shift,
        }
    }
}

impl<const N: u32> fmt::Display for TnumN<N> {
    /// The kernel's spelling: `(0x0; 0xff)` for value and mask.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_const() {
            return write!(f, "{}", sext(self.value, N));
        }
        write!(f, "({:#x}; {:#x})", self.value, self.mask)
    }
}

#[cfg(test)]
mod tests {
    use super::Tnum;
    use proptest::prelude::*;

    /// A tnum and one of its members.
    fn member() -> impl Strategy<Value = (Tnum, u64)> {
        (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(v, m, pick)| {
            let t = Tnum {
                value: v & !m,
                mask: m,
            };
            (t, t.value | (pick & m))
        })
    }

    proptest! {
        #[test]
        fn operations_contain_every_concrete_result((a, x) in member(), (b, y) in member(), k in 0u32..64) {
            prop_assert!(a.add(b).contains(x.wrapping_add(y)));
            prop_assert!(a.sub(b).contains(x.wrapping_sub(y)));
            prop_assert!(a.mul(b).contains(x.wrapping_mul(y)));
            prop_assert!(a.and(b).contains(x & y));
            prop_assert!(a.or(b).contains(x | y));
            prop_assert!(a.xor(b).contains(x ^ y));
            prop_assert!(a.neg().contains(x.wrapping_neg()));
            prop_assert!(a.shl(k).contains(x << k));
            prop_assert!(a.shr(k).contains(x >> k));
            prop_assert!(a.ashr(k, 64).contains(((x as i64) >> k) as u64));
            prop_assert!(a.ashr(k % 32, 32).contains(((x as i32) >> (k % 32)) as u32 as u64));
            prop_assert!(a.swap_bytes(2).contains((x as u16).swap_bytes() as u64));
            prop_assert!(a.swap_bytes(4).contains((x as u32).swap_bytes() as u64));
            prop_assert!(a.swap_bytes(8).contains(x.swap_bytes()));
            prop_assert!(a.sign_extend(1).contains(x as i8 as i64 as u64));
            prop_assert!(a.sign_extend(4).contains(x as i32 as i64 as u64));
            prop_assert!(a.with_subreg(b).contains((x & !0xffff_ffff) | (y & 0xffff_ffff)));
            if a.overlaps(b) {
                prop_assert!(a.intersect(b).includes(a.intersect(b)));
            }
        }

        #[test]
        fn range_holds_its_interval(a in any::<u64>(), b in any::<u64>(), pick in any::<u64>()) {
            let (lo, hi) = (a.min(b), a.max(b));
            let t = Tnum::range(lo, hi);
            let v = lo + pick % (hi - lo).saturating_add(1).max(1);
            prop_assert!(t.contains(lo) && t.contains(hi) && t.contains(v.min(hi)));
        }
    }

    #[test]
    fn intersect_keeps_what_both_know() {
        let a = Tnum {
            value: 0b1000,
            mask: 0b0111,
        };
        let b = Tnum {
            value: 0b0001,
            mask: 0b1110,
        };
        assert_eq!(
            a.intersect(b),
            Tnum {
                value: 0b1001,
                mask: 0b0110
            }
        );
        assert!(!Tnum::konst(1).overlaps(Tnum::konst(2)));
    }
}
