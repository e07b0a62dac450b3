//! Tristate numbers: what is known of each bit of a value. A bit is known
//! when its `mask` bit is clear (then it equals the `value` bit) and
//! unknown when its `mask` bit is set (its `value` bit is then 0).
//!
//! The operations over-approximate: every concrete result of the operation
//! on members of the inputs is a member of the output.

// Named methods rather than operator traits: the operations are abstract
// (sets of values), not arithmetic on one value.
#![allow(clippy::should_implement_trait)]

use std::fmt;

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Tnum {
    pub value: u64,
    pub mask: u64,
}

impl Tnum {
    pub const UNKNOWN: Tnum = Tnum {
        value: 0,
        mask: u64::MAX,
    };

    pub const fn konst(value: u64) -> Tnum {
        Tnum { value, mask: 0 }
    }

    /// The smallest tnum holding every value of `min..=max`.
    pub fn range(min: u64, max: u64) -> Tnum {
        let differing = min ^ max;
        if differing == 0 {
            return Tnum::konst(min);
        }
        let bits = 64 - differing.leading_zeros();
        if bits > 63 {
            return Tnum::UNKNOWN;
        }
        let low = (1u64 << bits) - 1;
        Tnum {
            value: min & !low,
            mask: low,
        }
    }

    pub fn is_const(self) -> bool {
        self.mask == 0
    }

    pub fn is_unknown(self) -> bool {
        self.mask == u64::MAX
    }

    /// Whether `v` is a member.
    pub fn contains(self, v: u64) -> bool {
        v & !self.mask == self.value
    }

    /// Whether every member of `other` is a member of `self`.
    pub fn includes(self, other: Tnum) -> bool {
        other.mask & !self.mask == 0 && other.value & !self.mask == self.value
    }

    pub fn min(self) -> u64 {
        self.value
    }

    pub fn max(self) -> u64 {
        self.value | self.mask
    }

    pub fn shl(self, k: u32) -> Tnum {
        Tnum {
            value: self.value.wrapping_shl(k),
            mask: self.mask.wrapping_shl(k),
        }
    }

    pub fn shr(self, k: u32) -> Tnum {
        Tnum {
            value: self.value.wrapping_shr(k),
            mask: self.mask.wrapping_shr(k),
        }
    }

    /// Arithmetic right shift of a `bits`-wide (32 or 64) value.
    pub fn ashr(self, k: u32, bits: u32) -> Tnum {
        if bits == 32 {
            Tnum {
                value: ((self.value as i32) >> k) as u32 as u64,
                mask: ((self.mask as i32) >> k) as u32 as u64,
            }
        } else {
            Tnum {
                value: ((self.value as i64) >> k) as u64,
                mask: ((self.mask as i64) >> k) as u64,
            }
        }
    }

    pub fn add(self, o: Tnum) -> Tnum {
        let sm = self.mask.wrapping_add(o.mask);
        let sv = self.value.wrapping_add(o.value);
        let sigma = sm.wrapping_add(sv);
        let chi = sigma ^ sv;
        let mu = chi | self.mask | o.mask;
        Tnum {
            value: sv & !mu,
            mask: mu,
        }
    }

    pub fn sub(self, o: Tnum) -> Tnum {
        let dv = self.value.wrapping_sub(o.value);
        let alpha = dv.wrapping_add(self.mask);
        let beta = dv.wrapping_sub(o.mask);
        let chi = alpha ^ beta;
        let mu = chi | self.mask | o.mask;
        Tnum {
            value: dv & !mu,
            mask: mu,
        }
    }

    pub fn neg(self) -> Tnum {
        Tnum::konst(0).sub(self)
    }

    pub fn and(self, o: Tnum) -> Tnum {
        let alpha = self.value | self.mask;
        let beta = o.value | o.mask;
        let v = self.value & o.value;
        Tnum {
            value: v,
            mask: alpha & beta & !v,
        }
    }

    pub fn or(self, o: Tnum) -> Tnum {
        let v = self.value | o.value;
        let mu = self.mask | o.mask;
        Tnum {
            value: v,
            mask: mu & !v,
        }
    }

    pub fn xor(self, o: Tnum) -> Tnum {
        let v = self.value ^ o.value;
        let mu = self.mask | o.mask;
        Tnum {
            value: v & !mu,
            mask: mu,
        }
    }

    /// Multiplication by long multiplication over the bits of `self`: a
    /// certain 1 adds `o`'s unknown bits, an unknown bit adds all of `o`'s
    /// possible bits as unknown.
    pub fn mul(self, o: Tnum) -> Tnum {
        let exact = self.value.wrapping_mul(o.value);
        let mut uncertain = Tnum::konst(0);
        let (mut a, mut b) = (self, o);
        while a.value != 0 || a.mask != 0 {
            if a.value & 1 != 0 {
                uncertain = uncertain.add(Tnum {
                    value: 0,
                    mask: b.mask,
                });
            } else if a.mask & 1 != 0 {
                uncertain = uncertain.add(Tnum {
                    value: 0,
                    mask: b.value | b.mask,
                });
            }
            a = a.shr(1);
            b = b.shl(1);
        }
        Tnum::konst(exact).add(uncertain)
    }

    /// Members of both (the caller knows they overlap).
    pub fn intersect(self, o: Tnum) -> Tnum {
        let v = self.value | o.value;
        let mu = self.mask & o.mask;
        Tnum {
            value: v & !mu,
            mask: mu,
        }
    }

    /// Whether some value is a member of both.
    pub fn overlaps(self, o: Tnum) -> bool {
        let known_both = !self.mask & !o.mask;
        (self.value ^ o.value) & known_both == 0
    }

    /// The low `bytes` bytes, zero-extended.
    pub fn truncate(self, bytes: u32) -> Tnum {
        if bytes >= 8 {
            return self;
        }
        let keep = (1u64 << (bytes * 8)) - 1;
        Tnum {
            value: self.value & keep,
            mask: self.mask & keep,
        }
    }

    /// The low 32 bits, zero-extended.
    pub fn subreg(self) -> Tnum {
        self.truncate(4)
    }

    /// `self` with its low 32 bits replaced by `low`'s.
    pub fn with_subreg(self, low: Tnum) -> Tnum {
        let high = Tnum {
            value: self.value & !0xffff_ffff,
            mask: self.mask & !0xffff_ffff,
        };
        high.or(low.subreg())
    }

    /// Sign extension of the low `bytes` bytes.
    pub fn sign_extend(self, bytes: u32) -> Tnum {
        if bytes >= 8 {
            return self;
        }
        let shift = 64 - bytes * 8;
        Tnum {
            value: (((self.value << shift) as i64) >> shift) as u64,
            mask: (((self.mask << shift) as i64) >> shift) as u64,
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

    /// Whether every member is a multiple of `align` (a power of two).
    pub fn is_aligned(self, align: u64) -> bool {
        align == 0 || (self.value | self.mask) & (align - 1) == 0
    }
}

impl fmt::Display for Tnum {
    /// The kernel's spelling: `(0x0; 0xff)` for value and mask.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_const() {
            return write!(f, "{}", self.value as i64);
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
