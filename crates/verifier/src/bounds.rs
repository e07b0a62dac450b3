//! What is known of a scalar: a tnum plus signed and unsigned ranges of the
//! whole 64-bit value and of its low 32 bits, kept consistent with each
//! other as the kernel's `reg_bounds_sync` does, and the transfer
//! functions of every ALU operation over them.

use std::fmt;

use crate::tnum::Tnum;

/// A scalar's possible values.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Scalar {
    pub var: Tnum,
    pub umin: u64,
    pub umax: u64,
    pub smin: i64,
    pub smax: i64,
    pub u32min: u32,
    pub u32max: u32,
    pub s32min: i32,
    pub s32max: i32,
}

/// The ranges of one width (32 or 64 bits): unsigned values as `u64`,
/// signed as `i64`, both inside the width.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Range {
    pub umin: u64,
    pub umax: u64,
    pub smin: i64,
    pub smax: i64,
}

/// An operation's bit width.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Bits {
    B32,
    B64,
}

impl Bits {
    pub fn n(self) -> u32 {
        match self {
            Bits::B32 => 32,
            Bits::B64 => 64,
        }
    }
    fn umax(self) -> u64 {
        match self {
            Bits::B32 => u32::MAX as u64,
            Bits::B64 => u64::MAX,
        }
    }
    fn smin(self) -> i64 {
        match self {
            Bits::B32 => i32::MIN as i64,
            Bits::B64 => i64::MIN,
        }
    }
    fn smax(self) -> i64 {
        match self {
            Bits::B32 => i32::MAX as i64,
            Bits::B64 => i64::MAX,
        }
    }
    fn unbounded(self) -> Range {
        Range {
            umin: 0,
            umax: self.umax(),
            smin: self.smin(),
            smax: self.smax(),
        }
    }
    /// Unsigned bounds from an exact `[lo, hi]` over the integers, if the
    /// interval does not wrap differently at its two ends.
    fn wrap_u(self, lo: i128, hi: i128) -> Option<(u64, u64)> {
        let n = 1i128 << self.n();
        if hi - lo >= n {
            return None;
        }
        let (wl, wh) = (lo.rem_euclid(n), hi.rem_euclid(n));
        (wl <= wh).then_some((wl as u64, wh as u64))
    }
    fn fits_s(self, lo: i128, hi: i128) -> Option<(i64, i64)> {
        (lo >= self.smin() as i128 && hi <= self.smax() as i128).then_some((lo as i64, hi as i64))
    }
}

impl Scalar {
    pub fn unknown() -> Scalar {
        Scalar {
            var: Tnum::UNKNOWN,
            umin: 0,
            umax: u64::MAX,
            smin: i64::MIN,
            smax: i64::MAX,
            u32min: 0,
            u32max: u32::MAX,
            s32min: i32::MIN,
            s32max: i32::MAX,
        }
    }

    pub fn konst(v: u64) -> Scalar {
        Scalar {
            var: Tnum::konst(v),
            umin: v,
            umax: v,
            smin: v as i64,
            smax: v as i64,
            u32min: v as u32,
            u32max: v as u32,
            s32min: v as i32,
            s32max: v as i32,
        }
    }

    /// Values in `lo..=hi` (unsigned).
    pub fn urange(lo: u64, hi: u64) -> Scalar {
        let mut s = Scalar::unknown();
        s.umin = lo;
        s.umax = hi;
        s.sync();
        s
    }

    pub fn as_const(&self) -> Option<u64> {
        self.var.is_const().then_some(self.var.value)
    }

    pub fn is_const(&self) -> bool {
        self.var.is_const()
    }

    pub fn is_unknown(&self) -> bool {
        *self == Scalar::unknown()
    }

    /// Whether the low 32 bits are a known constant.
    pub fn subreg_const(&self) -> Option<u32> {
        self.var
            .subreg()
            .is_const()
            .then_some(self.var.value as u32)
    }

    pub fn contains(&self, v: u64) -> bool {
        self.var.contains(v)
            && (self.umin..=self.umax).contains(&v)
            && (self.smin..=self.smax).contains(&(v as i64))
            && (self.u32min..=self.u32max).contains(&(v as u32))
            && (self.s32min..=self.s32max).contains(&(v as i32))
    }

    /// Whether every value of `o` is one of `self` (state pruning).
    pub fn includes(&self, o: &Scalar) -> bool {
        self.umin <= o.umin
            && self.umax >= o.umax
            && self.smin <= o.smin
            && self.smax >= o.smax
            && self.u32min <= o.u32min
            && self.u32max >= o.u32max
            && self.s32min <= o.s32min
            && self.s32max >= o.s32max
            && self.var.includes(o.var)
    }

    pub fn view(&self, bits: Bits) -> Range {
        match bits {
            Bits::B64 => Range {
                umin: self.umin,
                umax: self.umax,
                smin: self.smin,
                smax: self.smax,
            },
            Bits::B32 => Range {
                umin: self.u32min as u64,
                umax: self.u32max as u64,
                smin: self.s32min as i64,
                smax: self.s32max as i64,
            },
        }
    }

    fn set_view(&mut self, bits: Bits, r: Range) {
        match bits {
            Bits::B64 => {
                self.umin = r.umin;
                self.umax = r.umax;
                self.smin = r.smin;
                self.smax = r.smax;
            }
            Bits::B32 => {
                self.u32min = r.umin as u32;
                self.u32max = r.umax as u32;
                self.s32min = r.smin as i32;
                self.s32max = r.smax as i32;
            }
        }
    }

    /// Tightens every bound from the others; false when no value is left
    /// (a branch that cannot be taken).
    pub fn sync(&mut self) -> bool {
        for _ in 0..2 {
            self.tighten_from_tnum();
            self.deduce32();
            self.deduce64();
            self.deduce_mixed();
            if !self.consistent() {
                return false;
            }
            let r = Tnum::range(self.umin, self.umax);
            if !self.var.overlaps(r) {
                return false;
            }
            self.var = self.var.intersect(r);
            let low = Tnum::range(self.u32min as u64, self.u32max as u64);
            if !self.var.subreg().overlaps(low) {
                return false;
            }
            self.var = self.var.with_subreg(self.var.subreg().intersect(low));
            self.tighten_from_tnum();
            if !self.consistent() {
                return false;
            }
        }
        true
    }

    fn consistent(&self) -> bool {
        self.umin <= self.umax
            && self.smin <= self.smax
            && self.u32min <= self.u32max
            && self.s32min <= self.s32max
    }

    fn tighten_from_tnum(&mut self) {
        let t = self.var;
        let sign = 1u64 << 63;
        self.umin = self.umin.max(t.min());
        self.umax = self.umax.min(t.max());
        self.smin = self.smin.max((t.value | (t.mask & sign)) as i64);
        self.smax = self.smax.min((t.value | (t.mask & !sign)) as i64);
        let t = t.subreg();
        let sign = 1u64 << 31;
        self.u32min = self.u32min.max(t.min() as u32);
        self.u32max = self.u32max.min(t.max() as u32);
        self.s32min = self.s32min.max((t.value | (t.mask & sign)) as u32 as i32);
        self.s32max = self.s32max.min((t.value | (t.mask & !sign)) as u32 as i32);
    }

    fn deduce32(&mut self) {
        // The 64-bit range pins the low half when the high half is fixed.
        if self.umin >> 32 == self.umax >> 32 {
            self.u32min = self.u32min.max(self.umin as u32);
            self.u32max = self.u32max.min(self.umax as u32);
            if (self.umin as i32) <= (self.umax as i32) {
                self.s32min = self.s32min.max(self.umin as i32);
                self.s32max = self.s32max.min(self.umax as i32);
            }
        }
        if self.smin >> 32 == self.smax >> 32 {
            if (self.smin as u32) <= (self.smax as u32) {
                self.u32min = self.u32min.max(self.smin as u32);
                self.u32max = self.u32max.min(self.smax as u32);
            }
            if (self.smin as i32) <= (self.smax as i32) {
                self.s32min = self.s32min.max(self.smin as i32);
                self.s32max = self.s32max.min(self.smax as i32);
            }
        }
        // Signed and unsigned agree where the range does not cross a sign.
        if (self.u32min as i32) <= (self.u32max as i32) {
            self.s32min = self.s32min.max(self.u32min as i32);
            self.s32max = self.s32max.min(self.u32max as i32);
        }
        if (self.s32min as u32) <= (self.s32max as u32) {
            self.u32min = self.u32min.max(self.s32min as u32);
            self.u32max = self.u32max.min(self.s32max as u32);
        }
    }

    fn deduce64(&mut self) {
        if (self.umin as i64) <= (self.umax as i64) {
            self.smin = self.smin.max(self.umin as i64);
            self.smax = self.smax.min(self.umax as i64);
        }
        if (self.smin as u64) <= (self.smax as u64) {
            self.umin = self.umin.max(self.smin as u64);
            self.umax = self.umax.min(self.smax as u64);
        }
    }

    /// The low half's bounds tighten the 64-bit ones: a value's high half
    /// is at least the minimum's, and where equal its low half is at least
    /// the low minimum.
    fn deduce_mixed(&mut self) {
        const HIGH: u64 = !0xffff_ffff;
        let lo = (self.umin & HIGH) | self.u32min as u64;
        let hi = (self.umax & HIGH) | self.u32max as u64;
        self.umin = self.umin.max(lo);
        self.umax = self.umax.min(hi);
        let lo = ((self.smin as u64 & HIGH) | self.u32min as u64) as i64;
        let hi = ((self.smax as u64 & HIGH) | self.u32max as u64) as i64;
        self.smin = self.smin.max(lo);
        self.smax = self.smax.min(hi);
    }

    /// After a 32-bit operation: the upper half is zero.
    pub fn zext32(&mut self) {
        self.var = self.var.subreg();
        self.umin = self.u32min as u64;
        self.umax = self.u32max as u64;
        self.smin = self.umin as i64;
        self.smax = self.umax as i64;
        self.sync();
    }

    /// The value truncated to its low `bytes` bytes (zero-extended), as a
    /// narrow load or store sees it.
    pub fn truncate(&self, bytes: u32) -> Scalar {
        if bytes >= 8 {
            return *self;
        }
        let mut s = Scalar::unknown();
        s.var = self.var.truncate(bytes);
        let bits = bytes * 8;
        if self.umin >> bits == self.umax >> bits {
            let keep = (1u64 << bits) - 1;
            s.umin = self.umin & keep;
            s.umax = self.umax & keep;
        }
        s.sync();
        s
    }

    /// The low `bytes` bytes sign-extended (`movsx`, sign-extending loads).
    pub fn sign_extend(&self, bytes: u32) -> Scalar {
        if bytes >= 8 {
            return *self;
        }
        let bits = bytes * 8;
        let (lo, hi) = (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1);
        let mut s = Scalar::unknown();
        s.var = self.var.sign_extend(bytes);
        if self.smin >= lo && self.smax <= hi {
            s.smin = self.smin;
            s.smax = self.smax;
        } else {
            s.smin = lo;
            s.smax = hi;
        }
        s.sync();
        s
    }

    /// `self op o` for an operation of width `bits`; `None` when the
    /// result is unknown in the way the kernel gives up (division, shifts
    /// by non-constants or too far).
    pub fn alu(&self, op: Op, o: &Scalar, bits: Bits) -> Scalar {
        let mut out = Scalar::unknown();
        match bits {
            Bits::B64 => {
                out.var = tnum_op(op, self.var, o.var, 64);
                out.set_view(Bits::B64, range_op(op, self, o, Bits::B64, out.var));
                if op.low_bits_from_low_bits() {
                    let low = out.var.subreg();
                    out.set_view(Bits::B32, range_op(op, self, o, Bits::B32, low));
                }
                if !out.sync() {
                    return Scalar::unknown();
                }
            }
            Bits::B32 => {
                let t = tnum_op(op, self.var.subreg(), o.var.subreg(), 32).subreg();
                out.var = t;
                out.set_view(Bits::B32, range_op(op, self, o, Bits::B32, t));
                out.zext32();
            }
        }
        out
    }
}

/// The ALU operations with range tracking.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Op {
    Add,
    Sub,
    Mul,
    And,
    Or,
    Xor,
    /// Shifts by a constant below the width.
    Lsh(u32),
    Rsh(u32),
    Arsh(u32),
}

impl Op {
    /// Whether the low 32 bits of the result depend on the operands' low
    /// 32 bits only.
    fn low_bits_from_low_bits(self) -> bool {
        !matches!(self, Op::Rsh(_) | Op::Arsh(_))
    }
}

fn tnum_op(op: Op, a: Tnum, b: Tnum, bits: u32) -> Tnum {
    match op {
        Op::Add => a.add(b),
        Op::Sub => a.sub(b),
        Op::Mul => a.mul(b),
        Op::And => a.and(b),
        Op::Or => a.or(b),
        Op::Xor => a.xor(b),
        Op::Lsh(k) => a.shl(k),
        Op::Rsh(k) => a.shr(k),
        Op::Arsh(k) => a.ashr(k, bits),
    }
}

fn range_op(op: Op, a: &Scalar, b: &Scalar, bits: Bits, t: Tnum) -> Range {
    let (x, y) = (a.view(bits), b.view(bits));
    let mut r = bits.unbounded();
    let both_nonneg = x.smin >= 0 && y.smin >= 0;
    match op {
        Op::Add => {
            if let Some((l, h)) = bits.wrap_u(
                x.umin as i128 + y.umin as i128,
                x.umax as i128 + y.umax as i128,
            ) {
                (r.umin, r.umax) = (l, h);
            }
            if let Some((l, h)) = bits.fits_s(
                x.smin as i128 + y.smin as i128,
                x.smax as i128 + y.smax as i128,
            ) {
                (r.smin, r.smax) = (l, h);
            }
        }
        Op::Sub => {
            if let Some((l, h)) = bits.wrap_u(
                x.umin as i128 - y.umax as i128,
                x.umax as i128 - y.umin as i128,
            ) {
                (r.umin, r.umax) = (l, h);
            }
            if let Some((l, h)) = bits.fits_s(
                x.smin as i128 - y.smax as i128,
                x.smax as i128 - y.smin as i128,
            ) {
                (r.smin, r.smax) = (l, h);
            }
        }
        Op::Mul => {
            let hi = x.umax as u128 * y.umax as u128;
            if hi <= bits.umax() as u128 {
                (r.umin, r.umax) = (x.umin * y.umin, hi as u64);
            }
            let p = [
                x.smin as i128 * y.smin as i128,
                x.smin as i128 * y.smax as i128,
                x.smax as i128 * y.smin as i128,
                x.smax as i128 * y.smax as i128,
            ];
            let (lo, hi) = (*p.iter().min().unwrap(), *p.iter().max().unwrap());
            if let Some((l, h)) = bits.fits_s(lo, hi) {
                (r.smin, r.smax) = (l, h);
            }
        }
        Op::And => {
            (r.umin, r.umax) = (t.min(), x.umax.min(y.umax).min(t.max()));
            if both_nonneg {
                (r.smin, r.smax) = (r.umin as i64, r.umax as i64);
            }
        }
        Op::Or => {
            (r.umin, r.umax) = (x.umin.max(y.umin).max(t.min()), t.max());
            if both_nonneg {
                (r.smin, r.smax) = (r.umin as i64, r.umax as i64);
            }
        }
        Op::Xor => {
            (r.umin, r.umax) = (t.min(), t.max());
            if both_nonneg {
                (r.smin, r.smax) = (r.umin as i64, r.umax as i64);
            }
        }
        Op::Lsh(k) => {
            if x.umax <= bits.umax() >> k {
                (r.umin, r.umax) = (x.umin << k, x.umax << k);
            }
        }
        Op::Rsh(k) => {
            (r.umin, r.umax) = (x.umin >> k, x.umax >> k);
        }
        Op::Arsh(k) => {
            (r.smin, r.smax) = (x.smin >> k, x.smax >> k);
        }
    }
    r
}

impl fmt::Display for Scalar {
    /// Like the kernel's log: a constant as its value, else the bounds
    /// that say something.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(v) = self.as_const() {
            return write!(f, "{}", v as i64);
        }
        let mut parts = Vec::new();
        if self.smin != i64::MIN {
            parts.push(format!("smin={}", self.smin));
        }
        if self.smax != i64::MAX {
            parts.push(format!("smax={}", self.smax));
        }
        if self.umin != 0 {
            parts.push(format!("umin={}", self.umin));
        }
        if self.umax != u64::MAX {
            parts.push(format!("umax={}", self.umax));
        }
        if self.s32min != i32::MIN && self.s32min as i64 != self.smin {
            parts.push(format!("smin32={}", self.s32min));
        }
        if self.s32max != i32::MAX && self.s32max as i64 != self.smax {
            parts.push(format!("smax32={}", self.s32max));
        }
        if self.u32min != 0 && self.u32min as u64 != self.umin {
            parts.push(format!("umin32={}", self.u32min));
        }
        if self.u32max != u32::MAX && self.u32max as u64 != self.umax {
            parts.push(format!("umax32={}", self.u32max));
        }
        if !self.var.is_unknown() {
            parts.push(format!("var_off={}", self.var));
        }
        write!(f, "scalar({})", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A scalar built from random constraints, and one of its values.
    fn member() -> impl Strategy<Value = (Scalar, u64)> {
        (any::<u64>(), any::<u64>(), any::<u64>(), 0u8..6).prop_map(|(v, a, b, how)| {
            let mut s = Scalar::unknown();
            match how {
                0 => s = Scalar::konst(v),
                1 => {
                    s.umin = v.min(a);
                    s.umax = v.max(a);
                }
                2 => {
                    s.smin = (v as i64).min(a as i64);
                    s.smax = (v as i64).max(a as i64);
                }
                3 => {
                    s.var = Tnum {
                        value: v & !a,
                        mask: a,
                    };
                }
                4 => {
                    s.u32min = (v as u32).min(a as u32);
                    s.u32max = (v as u32).max(a as u32);
                }
                _ => {
                    s.s32min = (v as i32).min(b as i32);
                    s.s32max = (v as i32).max(b as i32);
                }
            }
            assert!(s.sync(), "{s:?}");
            let x = if how == 3 { (v & !a) | (b & a) } else { v };
            (s, x)
        })
    }

    fn concrete(op: Op, x: u64, y: u64, bits: Bits) -> u64 {
        let r = match op {
            Op::Add => x.wrapping_add(y),
            Op::Sub => x.wrapping_sub(y),
            Op::Mul => x.wrapping_mul(y),
            Op::And => x & y,
            Op::Or => x | y,
            Op::Xor => x ^ y,
            Op::Lsh(k) => x << k,
            Op::Rsh(k) => match bits {
                Bits::B32 => ((x as u32) >> k) as u64,
                Bits::B64 => x >> k,
            },
            Op::Arsh(k) => match bits {
                Bits::B32 => ((x as i32) >> k) as u32 as u64,
                Bits::B64 => ((x as i64) >> k) as u64,
            },
        };
        match bits {
            Bits::B32 => r as u32 as u64,
            Bits::B64 => r,
        }
    }

    proptest! {
        #[test]
        fn sync_keeps_members((s, x) in member()) {
            prop_assert!(s.contains(x), "{s:?} lost {x:#x}");
        }

        #[test]
        fn alu_contains_every_concrete_result((a, x) in member(), (b, y) in member(), which in 0u8..9, k in 0u32..64, wide in any::<bool>()) {
            let bits = if wide { Bits::B64 } else { Bits::B32 };
            let k = k % bits.n();
            let op = [Op::Add, Op::Sub, Op::Mul, Op::And, Op::Or, Op::Xor, Op::Lsh(k), Op::Rsh(k), Op::Arsh(k)][which as usize];
            let (b, y) = match op { Op::Lsh(_) | Op::Rsh(_) | Op::Arsh(_) => (Scalar::konst(k as u64), k as u64), _ => (b, y) };
            let r = a.alu(op, &b, bits);
            let v = concrete(op, x, y, bits);
            prop_assert!(r.contains(v), "{op:?} {bits:?}: {a} op {b} = {r} misses {v:#x} ({x:#x}, {y:#x})");
        }

        #[test]
        fn narrowing_contains((a, x) in member(), bytes in prop::sample::select(vec![1u32, 2, 4])) {
            let t = a.truncate(bytes);
            let keep = (1u64 << (bytes * 8)) - 1;
            prop_assert!(t.contains(x & keep));
            let s = a.sign_extend(bytes);
            let shift = 64 - bytes * 8;
            prop_assert!(s.contains((((x << shift) as i64) >> shift) as u64));
        }
    }

    #[test]
    fn constants_fold() {
        let r = Scalar::konst(6).alu(Op::Mul, &Scalar::konst(7), Bits::B64);
        assert_eq!(r.as_const(), Some(42));
        let r = Scalar::konst(u64::MAX).alu(Op::Add, &Scalar::konst(2), Bits::B32);
        assert_eq!(r.as_const(), Some(1));
        let r = Scalar::urange(0, 255).alu(Op::Lsh(2), &Scalar::konst(2), Bits::B64);
        assert_eq!((r.umin, r.umax), (0, 1020));
        assert!(r.var.is_aligned(4));
    }
}
