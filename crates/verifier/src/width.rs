//! The width of the values that tnums and scalars describe.
//!
//! Rule: a value `N` bits wide lives in a `u64` with every bit above `N`
//! clear when read unsigned, and in an `i64` sign-extended from bit `N - 1`
//! when read signed; every abstract operation masks or extends its results
//! so. The verifier runs at `N = 64`, where the masks fold away. The same
//! code runs at `N = 8` in the exhaustive soundness checks, where every
//! abstract value and every value inside it can be enumerated: the Agni
//! (CAV 2023) and tnum (CGO 2022) way of checking the kernel's range
//! analysis. The "32-bit" half of a scalar is, in general, its low `N / 2`
//! bits.

/// The low `n` bits set.
pub const fn ones(n: u32) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// The low `n` bits of `v` read as a signed number.
pub const fn sext(v: u64, n: u32) -> i64 {
    let shift = 64 - n;
    ((v << shift) as i64) >> shift
}

/// The low `n` bits of `v` read unsigned.
pub const fn zext(v: i64, n: u32) -> u64 {
    v as u64 & ones(n)
}

/// The smallest signed number of `n` bits.
pub const fn smin(n: u32) -> i64 {
    i64::MIN >> (64 - n)
}

/// The largest signed number of `n` bits.
pub const fn smax(n: u32) -> i64 {
    i64::MAX >> (64 - n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_at_the_edges() {
        assert_eq!((ones(64), ones(32), ones(4)), (u64::MAX, 0xffff_ffff, 0xf));
        assert_eq!((smin(64), smax(64)), (i64::MIN, i64::MAX));
        assert_eq!((smin(32), smax(32)), (i32::MIN as i64, i32::MAX as i64));
        assert_eq!((smin(8), smax(8), smin(4), smax(4)), (-128, 127, -8, 7));
        assert_eq!((sext(0xff, 8), sext(0x7f, 8), sext(0x8, 4)), (-1, 127, -8));
        assert_eq!(
            (zext(-1, 8), zext(-8, 4), zext(-1, 64)),
            (0xff, 0x8, u64::MAX)
        );
    }
}
