//! A hash of fixed-width keys of `u64` words: each pair of words is folded
//! into the state by one 64x64->128-bit multiply whose halves are xored
//! (the "folded multiply" of foldhash and wyhash), from seeds drawn per
//! table.
//!
//! Keys are hashed two words at a time ([`Words`] writes each pair with
//! `write_u128`): half as many dependent multiplies as words, no byte
//! slicing, no allocation per lookup.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash, Hasher};

/// An odd constant with well spread bits (the fractional part of pi).
const MULT: u64 = 0x243f_6a88_85a3_08d3;

fn folded_multiply(a: u64, b: u64) -> u64 {
    let p = (a as u128).wrapping_mul(b as u128);
    (p as u64) ^ ((p >> 64) as u64)
}

/// Builds [`WordHasher`]s from one random seed.
#[derive(Copy, Clone, Debug)]
pub(crate) struct WordState {
    seed: u64,
    /// Xored into each pair's second word: the multiply gives 0 whatever
    /// the state when a factor is 0, which a fixed constant would let
    /// keys choose.
    pair: u64,
}

impl WordState {
    /// A state with a seed drawn from std's per-process randomness.
    pub(crate) fn random() -> WordState {
        let r = RandomState::new();
        WordState {
            seed: r.hash_one(0x5eed_u64),
            pair: r.hash_one(0x9a1f_u64) | 1,
        }
    }
}

impl BuildHasher for WordState {
    type Hasher = WordHasher;

    fn build_hasher(&self) -> WordHasher {
        WordHasher {
            h: self.seed,
            pair: self.pair,
        }
    }
}

pub(crate) struct WordHasher {
    h: u64,
    pair: u64,
}

impl Hasher for WordHasher {
    #[inline]
    fn write_u64(&mut self, w: u64) {
        self.h = folded_multiply(self.h ^ w, MULT);
    }

    #[inline]
    fn write_u128(&mut self, w: u128) {
        self.h = folded_multiply(self.h ^ w as u64, (w >> 64) as u64 ^ self.pair);
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    /// One more multiply: the state's top bits barely move with a pair's
    /// low bits.
    #[inline]
    fn finish(&self) -> u64 {
        folded_multiply(self.h, MULT)
    }
}

/// A key as a hash-table key: its words hashed two by two with
/// `write_u128`, an odd last one with `write_u64` (an array's own `Hash`
/// writes its length, then its words as bytes).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct Words<const W: usize>(pub [u64; W]);

impl<const W: usize> Hash for Words<W> {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        let pairs = self.0.chunks_exact(2);
        if let [last] = pairs.remainder() {
            state.write_u64(*last);
        }
        for p in pairs {
            state.write_u128(p[0] as u128 | (p[1] as u128) << 64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_keys_hash_equal_and_words_matter() {
        let s = WordState::random();
        let a = s.hash_one(Words([1, 2, 3]));
        assert_eq!(a, s.hash_one(Words([1, 2, 3])));
        assert_ne!(a, s.hash_one(Words([1, 2, 4])));
        assert_ne!(a, s.hash_one(Words([2, 1, 3])));
        assert_ne!(a, s.hash_one(Words([3, 2, 1])));
        let b = s.hash_one(Words([1, 2, 3, 4]));
        assert_ne!(b, s.hash_one(Words([3, 4, 1, 2])));
        assert_ne!(b, s.hash_one(Words([2, 1, 3, 4])));
        assert_ne!(s.hash_one(Words([0, 0])), s.hash_one(Words([0, 0, 0])));
    }

    #[test]
    fn low_and_high_bits_both_vary() {
        // hashbrown takes the bucket from the low bits and a tag from the
        // top seven: both must move when a few input bits do (without the
        // multiply in `finish`, the top bits stayed put for one seed in
        // ten when the low bits of one word counted up).
        let s = WordState::random();
        let hs: Vec<u64> = (0..64u64).map(|i| s.hash_one(Words([i, 0, 0]))).collect();
        let low: std::collections::HashSet<u64> = hs.iter().map(|h| h & 0xff).collect();
        let top: std::collections::HashSet<u64> = hs.iter().map(|h| h >> 57).collect();
        assert!(low.len() > 32, "{}", low.len());
        assert!(top.len() > 32, "{}", top.len());
    }
}
