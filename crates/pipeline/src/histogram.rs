//! A fixed-size histogram of per-packet counts: exact below 2048, within
//! 1/64 (about 1.6%) above, so percentiles take constant memory whatever
//! the number of packets. It serializes sparsely: the buckets in use.

use serde::{Deserialize, Serialize};

const EXACT: u64 = 2048;
/// Buckets per power of two above `EXACT`.
const SUB_BITS: u32 = 6;
const SUB: usize = 1 << SUB_BITS;
/// Powers of two from 2^11 to 2^63.
const OCTAVES: usize = 64 - 11;

#[derive(Clone)]
pub struct Histogram {
    exact: Box<[u64; EXACT as usize]>,
    coarse: Box<[[u64; SUB]; OCTAVES]>,
    count: u64,
    sum: u128,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            exact: Box::new([0; EXACT as usize]),
            coarse: Box::new([[0; SUB]; OCTAVES]),
            count: 0,
            sum: 0,
            max: 0,
        }
    }
}

/// The bucket of a value at or above `EXACT`: (octave, sub-bucket).
fn coarse_bucket(v: u64) -> (usize, usize) {
    let top = 63 - v.leading_zeros();
    let sub = (v >> (top - SUB_BITS)) as usize & (SUB - 1);
    (top as usize - 11, sub)
}

/// The smallest value of a coarse bucket.
fn coarse_floor(octave: usize, sub: usize) -> u64 {
    let top = octave as u32 + 11;
    (1u64 << top) | ((sub as u64) << (top - SUB_BITS))
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.count += 1;
        self.sum += u128::from(v);
        self.max = self.max.max(v);
        if v < EXACT {
            self.exact[v as usize] += 1;
        } else {
            let (o, s) = coarse_bucket(v);
            self.coarse[o][s] += 1;
        }
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.exact.iter_mut().zip(other.exact.iter()) {
            *a += b;
        }
        for (a, b) in self.coarse.iter_mut().zip(other.coarse.iter()) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
        self.count += other.count;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at quantile `q` (0..=1): the element of rank
    /// `round((count - 1) * q)` in sorted order, as sorting every value
    /// would give (exact below 2048, a bucket's floor above).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((self.count - 1) as f64 * q.clamp(0.0, 1.0)).round() as u64;
        if rank == self.count - 1 {
            return self.max;
        }
        let mut seen = 0u64;
        for (v, &n) in self.exact.iter().enumerate() {
            seen += n;
            if seen > rank {
                return v as u64;
            }
        }
        for (o, subs) in self.coarse.iter().enumerate() {
            for (s, &n) in subs.iter().enumerate() {
                seen += n;
                if seen > rank {
                    return coarse_floor(o, s).min(self.max);
                }
            }
        }
        self.max
    }
}

/// A histogram as it serializes: each bucket in use as (index, count),
/// the exact ones first, then the coarse ones by octave and sub-bucket.
#[derive(Serialize, Deserialize)]
struct Sparse {
    exact: Vec<(u32, u64)>,
    coarse: Vec<(u32, u64)>,
    count: u64,
    /// The sum's high and low 64 bits.
    sum: (u64, u64),
    max: u64,
}

impl Serialize for Histogram {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let used = |i: usize, &n: &u64| (n > 0).then_some((i as u32, n));
        Sparse {
            exact: self
                .exact
                .iter()
                .enumerate()
                .filter_map(|(i, n)| used(i, n))
                .collect(),
            coarse: self
                .coarse
                .iter()
                .flatten()
                .enumerate()
                .filter_map(|(i, n)| used(i, n))
                .collect(),
            count: self.count,
            sum: ((self.sum >> 64) as u64, self.sum as u64),
            max: self.max,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Histogram {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Histogram, D::Error> {
        use serde::de::Error;
        let sparse = Sparse::deserialize(d)?;
        let mut h = Histogram::default();
        for (i, n) in sparse.exact {
            *h.exact
                .get_mut(i as usize)
                .ok_or_else(|| D::Error::custom(format!("histogram: no exact bucket {i}")))? = n;
        }
        for (i, n) in sparse.coarse {
            let (o, sub) = (i as usize / SUB, i as usize % SUB);
            *h.coarse
                .get_mut(o)
                .map(|row| &mut row[sub])
                .ok_or_else(|| D::Error::custom(format!("histogram: no coarse bucket {i}")))? = n;
        }
        h.count = sparse.count;
        h.sum = (u128::from(sparse.sum.0) << 64) | u128::from(sparse.sum.1);
        h.max = sparse.max;
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_quantile(v: &mut [u64], q: f64) -> u64 {
        v.sort_unstable();
        v[((v.len() - 1) as f64 * q).round() as usize]
    }

    #[test]
    fn small_values_are_exact() {
        let mut h = Histogram::default();
        let mut all: Vec<u64> = (0..5000u64).map(|i| (i * 7919) % 2000).collect();
        for &v in &all {
            h.record(v);
        }
        for q in [0.0, 0.01, 0.5, 0.99, 1.0] {
            assert_eq!(h.quantile(q), sorted_quantile(&mut all, q), "q {q}");
        }
        assert_eq!(h.max(), *all.iter().max().unwrap());
        let mean = all.iter().sum::<u64>() as f64 / all.len() as f64;
        assert!((h.mean() - mean).abs() < 1e-9);
    }

    #[test]
    fn large_values_are_within_a_sixty_fourth() {
        let mut h = Histogram::default();
        let mut all: Vec<u64> = (0..10_000u64).map(|i| 1000 + i * i * 31).collect();
        for &v in &all {
            h.record(v);
        }
        for q in [0.1, 0.5, 0.9, 0.99] {
            let exact = sorted_quantile(&mut all, q);
            let got = h.quantile(q);
            assert!(
                got <= exact && exact - got <= exact / 64,
                "q {q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), h.max());
    }

    #[test]
    fn serializes_sparsely_and_back() {
        let mut h = Histogram::default();
        for v in [3u64, 3, 70, 5000, 1 << 40, 999_999] {
            h.record(v);
        }
        let json = serde_json::to_string(&h).unwrap();
        let back: Histogram = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (back.count(), back.max(), back.mean()),
            (h.count(), h.max(), h.mean())
        );
        for q in [0.0, 0.2, 0.5, 0.8, 1.0] {
            assert_eq!(back.quantile(q), h.quantile(q));
        }
        let bad = json.replace("[[3,2]", "[[99999,2]");
        assert!(serde_json::from_str::<Histogram>(&bad).is_err());
    }

    #[test]
    fn merging_is_adding() {
        let (mut a, mut b, mut both) = (
            Histogram::default(),
            Histogram::default(),
            Histogram::default(),
        );
        for v in 0..3000u64 {
            if v % 3 == 0 { &mut a } else { &mut b }.record(v * 5);
            both.record(v * 5);
        }
        a.merge(&b);
        assert_eq!(a.count(), both.count());
        for q in [0.25, 0.5, 0.75, 0.99] {
            assert_eq!(a.quantile(q), both.quantile(q));
        }
    }
}
