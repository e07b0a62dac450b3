//! What is known of a scalar: a tnum plus signed and unsigned ranges of the
//! whole 64-bit value and of its low 32 bits, kept consistent with each
//! other as the kernel's `reg_bounds_sync` does, and the transfer
//! functions of every ALU operation over them.
//!
//! Written for any width `N` (see [`crate::width`]): the "32-bit" fields
//! hold the low `N / 2` bits. The verifier's [`Scalar`] is 64 bits wide.

use std::fmt;

use crate::tnum::TnumN;
use crate::width::{ones, sext, smax, smin, zext};

/// A scalar's possible values, `N` bits wide.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct ScalarN<const N: u32> {
    pub var: TnumN<N>,
    pub umin: u64,
    pub umax: u64,
    pub smin: i64,
    pub smax: i64,
    pub u32min: u32,
    pub u32max: u32,
    pub s32min: i32,
    pub s32max: i32,
}

/// The verifier's scalar, 64 bits wide.
pub type Scalar = ScalarN<64>;

/// The ranges of one width (32 or 64 bits): unsigned values as `u64`,
/// signed as `i64`, both inside the width.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Range {
    pub umin: u64,
    pub umax: u64,
    pub smin: i64,
    pub smax: i64,
}

/// An operation's bit width: the whole value, or its low half.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Bits {
    B32,
    B64,
}

impl Bits {
    /// Bits of a 64-bit register's operation.
    pub fn n(self) -> u32 {
        self.of(64)
    }
    /// Bits of the operation on `n`-bit values.
    pub const fn of(self, n: u32) -> u32 {
        match self {
            Bits::B32 => n / 2,
            Bits::B64 => n,
        }
    }
}

/// The limits of one operation width, `W` bits.
#[derive(Copy, Clone)]
struct Lim(u32);

impl Lim {
    fn umax(self) -> u64 {
        ones(self.0)
    }
    fn unbounded(self) -> Range {
        Range {
            umin: 0,
            umax: ones(self.0),
            smin: smin(self.0),
            smax: smax(self.0),
        }
    }
    /// Unsigned bounds from an exact `[lo, hi]` over the integers, if the
    /// interval does not wrap differently at its two ends.
    fn wrap_u(self, lo: i128, hi: i128) -> Option<(u64, u64)> {
        let n = 1i128 << self.0;
        if hi - lo >= n {
            return None;
        }
        let (wl, wh) = (lo.rem_euclid(n), hi.rem_euclid(n));
        (wl <= wh).then_some((wl as u64, wh as u64))
    }
    fn fits_s(self, lo: i128, hi: i128) -> Option<(i64, i64)> {
        (lo >= smin(self.0) as i128 && hi <= smax(self.0) as i128).then_some((lo as i64, hi as i64))
    }
}

impl<const N: u32> ScalarN<N> {
    /// Bits of the low half.
    const H: u32 = N / 2;

    /// `v` read signed at the full width.
    fn s(v: u64) -> i64 {
        sext(v, N)
    }
    /// `v` read unsigned at the full width.
    fn u(v: i64) -> u64 {
        zext(v, N)
    }
    /// The low half of `v`, unsigned.
    fn lo_u(v: u64) -> u32 {
        (v & ones(Self::H)) as u32
    }
    /// The low half of `v`, signed.
    fn lo_s(v: u64) -> i32 {
        sext(v, Self::H) as i32
    }

    pub fn unknown() -> Self {
        Self {
            var: TnumN::UNKNOWN,
            umin: 0,
            umax: ones(N),
            smin: smin(N),
            smax: smax(N),
            u32min: 0,
            u32max: ones(Self::H) as u32,
            s32min: smin(Self::H) as i32,
            s32max: smax(Self::H) as i32,
        }
    }

    pub fn konst(v: u64) -> Self {
        let v = v & ones(N);
        Self {
            var: TnumN::konst(v),
            umin: v,
            umax: v,
            smin: Self::s(v),
            smax: Self::s(v),
            u32min: Self::lo_u(v),
            u32max: Self::lo_u(v),
            s32min: Self::lo_s(v),
            s32max: Self::lo_s(v),
        }
    }

    /// Values in `lo..=hi` (unsigned).
    #[cfg(test)]
    pub fn urange(lo: u64, hi: u64) -> Self {
        let mut s = Self::unknown();
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
        *self == Self::unknown()
    }

    /// Whether `v` is a member (the tests' soundness checks).
    #[cfg(test)]
    pub fn contains(&self, v: u64) -> bool {
        self.var.contains(v)
            && (self.umin..=self.umax).contains(&v)
            && (self.smin..=self.smax).contains(&Self::s(v))
            && (self.u32min..=self.u32max).contains(&Self::lo_u(v))
            && (self.s32min..=self.s32max).contains(&Self::lo_s(v))
    }

    /// Whether every value of `o` is one of `self` (state pruning).
    pub fn includes(&self, o: &Self) -> bool {
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
            let r = TnumN::range(self.umin, self.umax);
            if !self.var.overlaps(r) {
                return false;
            }
            self.var = self.var.intersect(r);
            let low = TnumN::range(self.u32min as u64, self.u32max as u64);
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
        let sign = 1u64 << (N - 1);
        self.umin = self.umin.max(t.min());
        self.umax = self.umax.min(t.max());
        self.smin = self.smin.max(Self::s(t.value | (t.mask & sign)));
        self.smax = self.smax.min(Self::s(t.value | (t.mask & !sign)));
        let t = t.subreg();
        let sign = 1u64 << (Self::H - 1);
        self.u32min = self.u32min.max(t.min() as u32);
        self.u32max = self.u32max.min(t.max() as u32);
        self.s32min = self.s32min.max(Self::lo_s(t.value | (t.mask & sign)));
        self.s32max = self.s32max.min(Self::lo_s(t.value | (t.mask & !sign)));
    }

    fn deduce32(&mut self) {
        let h = Self::H;
        let (lo_u, lo_s) = (Self::lo_u, Self::lo_s);
        // The full range pins the low half when the high half is fixed.
        if self.umin >> h == self.umax >> h {
            self.u32min = self.u32min.max(lo_u(self.umin));
            self.u32max = self.u32max.min(lo_u(self.umax));
            if lo_s(self.umin) <= lo_s(self.umax) {
                self.s32min = self.s32min.max(lo_s(self.umin));
                self.s32max = self.s32max.min(lo_s(self.umax));
            }
        }
        if self.smin >> h == self.smax >> h {
            let (smin, smax) = (self.smin as u64, self.smax as u64);
            if lo_u(smin) <= lo_u(smax) {
                self.u32min = self.u32min.max(lo_u(smin));
                self.u32max = self.u32max.min(lo_u(smax));
            }
            if lo_s(smin) <= lo_s(smax) {
                self.s32min = self.s32min.max(lo_s(smin));
                self.s32max = self.s32max.min(lo_s(smax));
            }
        }
        // Signed and unsigned agree where the range does not cross a sign.
        let (umin, umax) = (self.u32min as u64, self.u32max as u64);
        if lo_s(umin) <= lo_s(umax) {
            self.s32min = self.s32min.max(lo_s(umin));
            self.s32max = self.s32max.min(lo_s(umax));
        }
        let (smin, smax) = (self.s32min as u64, self.s32max as u64);
        if lo_u(smin) <= lo_u(smax) {
            self.u32min = self.u32min.max(lo_u(smin));
            self.u32max = self.u32max.min(lo_u(smax));
        }
    }

    fn deduce64(&mut self) {
        let (s, u) = (Self::s, Self::u);
        if s(self.umin) <= s(self.umax) {
            self.smin = self.smin.max(s(self.umin));
            self.smax = self.smax.min(s(self.umax));
        }
        if u(self.smin) <= u(self.smax) {
            self.umin = self.umin.max(u(self.smin));
            self.umax = self.umax.min(u(self.smax));
        }
    }

    /// The low half's bounds tighten the full ones: a value's high half
    /// is at least the minimum's, and where equal its low half is at least
    /// the low minimum.
    fn deduce_mixed(&mut self) {
        let high = ones(N) & !ones(Self::H);
        let lo = (self.umin & high) | self.u32min as u64;
        let hi = (self.umax & high) | self.u32max as u64;
        self.umin = self.umin.max(lo);
        self.umax = self.umax.min(hi);
        let lo = Self::s((Self::u(self.smin) & high) | self.u32min as u64);
        let hi = Self::s((Self::u(self.smax) & high) | self.u32max as u64);
        self.smin = self.smin.max(lo);
        self.smax = self.smax.min(hi);
    }

    /// After an operation on the low half: the upper half is zero.
    pub fn zext32(&mut self) {
        self.var = self.var.subreg();
        self.umin = self.u32min as u64;
        self.umax = self.u32max as u64;
        self.smin = self.umin as i64;
        self.smax = self.umax as i64;
        self.sync();
    }

    /// The value truncated to its low `bits` bits (zero-extended).
    pub fn truncate_bits(&self, bits: u32) -> Self {
        if bits >= N {
            return *self;
        }
        let mut s = Self::unknown();
        let keep = ones(bits);
        s.var = TnumN {
            value: self.var.value & keep,
            mask: self.var.mask & keep,
        };
        if self.umin >> bits == self.umax >> bits {
            s.umin = self.umin & keep;
            s.umax = self.umax & keep;
        }
        s.sync();
        s
    }

    /// `self op o` for an operation of width `bits`.
    pub fn alu(&self, op: Op, o: &Self, bits: Bits) -> Self {
        let mut out = Self::unknown();
        match bits {
            Bits::B64 => {
                out.var = tnum_op(op, self.var, o.var, N);
                out.set_view(Bits::B64, range_op(op, self, o, Bits::B64, out.var));
                if op.low_bits_from_low_bits() {
                    let low = out.var.subreg();
                    out.set_view(Bits::B32, range_op(op, self, o, Bits::B32, low));
                }
                if !out.sync() {
                    return Self::unknown();
                }
            }
            Bits::B32 => {
                let t = tnum_op(op, self.var.subreg(), o.var.subreg(), Self::H).subreg();
                out.var = t;
                out.set_view(Bits::B32, range_op(op, self, o, Bits::B32, t));
                out.zext32();
            }
        }
        out
    }
}

/// Loads, stores and sign extensions of 64-bit registers, by bytes.
impl Scalar {
    /// The value truncated to its low `bytes` bytes (zero-extended), as a
    /// narrow load or store sees it.
    pub fn truncate(&self, bytes: u32) -> Scalar {
        self.truncate_bits(bytes * 8)
    }

    /// The low `bytes` bytes sign-extended (`movsx`, sign-extending loads).
    pub fn sign_extend(&self, bytes: u32) -> Scalar {
        if bytes >= 8 {
            return *self;
        }
        let bits = bytes * 8;
        let (lo, hi) = (smin(bits), smax(bits));
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
    /// Whether the low half of the result depends on the operands' low
    /// halves only.
    fn low_bits_from_low_bits(self) -> bool {
        !matches!(self, Op::Rsh(_) | Op::Arsh(_))
    }
}

fn tnum_op<const N: u32>(op: Op, a: TnumN<N>, b: TnumN<N>, bits: u32) -> TnumN<N> {
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

fn range_op<const N: u32>(
    op: Op,
    a: &ScalarN<N>,
    b: &ScalarN<N>,
    bits: Bits,
    t: TnumN<N>,
) -> Range {
    let (x, y) = (a.view(bits), b.view(bits));
    let lim = Lim(bits.of(N));
    let mut r = lim.unbounded();
    let both_nonneg = x.smin >= 0 && y.smin >= 0;
    match op {
        Op::Add => {
            if let Some((l, h)) = lim.wrap_u(
                x.umin as i128 + y.umin as i128,
                x.umax as i128 + y.umax as i128,
            ) {
                (r.umin, r.umax) = (l, h);
            }
            if let Some((l, h)) = lim.fits_s(
                x.smin as i128 + y.smin as i128,
                x.smax as i128 + y.smax as i128,
            ) {
                (r.smin, r.smax) = (l, h);
            }
        }
        Op::Sub => {
            if let Some((l, h)) = lim.wrap_u(
                x.umin as i128 - y.umax as i128,
                x.umax as i128 - y.umin as i128,
            ) {
                (r.umin, r.umax) = (l, h);
            }
            if let Some((l, h)) = lim.fits_s(
                x.smin as i128 - y.smax as i128,
                x.smax as i128 - y.smin as i128,
            ) {
                (r.smin, r.smax) = (l, h);
            }
        }
        Op::Mul => {
            let hi = x.umax as u128 * y.umax as u128;
            if hi <= lim.umax() as u128 {
                (r.umin, r.umax) = (x.umin * y.umin, hi as u64);
            }
            let p = [
                x.smin as i128 * y.smin as i128,
                x.smin as i128 * y.smax as i128,
                x.smax as i128 * y.smin as i128,
                x.smax as i128 * y.smax as i128,
            ];
            let (lo, hi) = (*p.iter().min().unwrap(), *p.iter().max().unwrap());
            if let Some((l, h)) = lim.fits_s(lo, hi) {
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
            if x.umax <= lim.umax() >> k {
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

impl<const N: u32> fmt::Display for ScalarN<N> {
    /// Like the kernel's log: a constant as its value, else the bounds
    /// that say something.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(v) = self.as_const() {
            return write!(f, "{}", Self::s(v));
        }
        let all = Self::unknown();
        let mut parts = Vec::new();
        if self.smin != all.smin {
            parts.push(format!("smin={}", self.smin));
        }
        if self.smax != all.smax {
            parts.push(format!("smax={}", self.smax));
        }
        if self.umin != 0 {
            parts.push(format!("umin={}", self.umin));
        }
        if self.umax != all.umax {
            parts.push(format!("umax={}", self.umax));
        }
        if self.s32min != all.s32min && self.s32min as i64 != self.smin {
            parts.push(format!("smin32={}", self.s32min));
        }
        if self.s32max != all.s32max && self.s32max as i64 != self.smax {
            parts.push(format!("smax32={}", self.s32max));
        }
        if self.u32min != 0 && self.u32min as u64 != self.umin {
            parts.push(format!("umin32={}", self.u32min));
        }
        if self.u32max != all.u32max && self.u32max as u64 != self.umax {
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
    use crate::tnum::Tnum;
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
