//! A subtable holds the rules of one mask in a hash table keyed by their
//! (masked) value: a key is looked up by masking it once and probing once.
//! It knows the best rank it holds, which orders subtables and prunes
//! lookups.

use std::collections::{BTreeSet, HashMap};

use crate::bucket::{Bucket, Entry};
use crate::hash::{WordState, Words};
use crate::rule::{FieldBits, Key, Rank, masked};

pub(crate) struct Subtable<const W: usize, V> {
    /// The smallest rank held ([`Rank::LAST`] when empty).
    pub best: Rank,
    pub mask: Key<W>,
    /// This subtable's stable name in [`crate::Tss`] (its place in the
    /// ordered list moves).
    pub sid: u32,
    map: HashMap<Words<W>, Bucket<V>, WordState>,
    ranks: BTreeSet<Rank>,
    /// The rules' distinct values in order (words first to last, each
    /// from its high bit): what a missed key is told apart from.
    values: BTreeSet<Key<W>>,
}

impl<const W: usize, V> Subtable<W, V> {
    pub fn new(mask: Key<W>, sid: u32, hasher: WordState) -> Subtable<W, V> {
        Subtable {
            best: Rank::LAST,
            mask,
            sid,
            map: HashMap::with_hasher(hasher),
            ranks: BTreeSet::new(),
            values: BTreeSet::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.ranks.is_empty()
    }

    /// The first rule of this subtable matching `key`.
    #[inline]
    pub fn probe(&self, key: &Key<W>) -> Option<&Entry<V>> {
        self.map
            .get(&Words(masked(key, &self.mask)))
            .map(|b| &b.first)
    }

    /// Adds a rule of (masked) `value`; whether the best rank changed.
    pub fn insert(&mut self, value: Key<W>, e: Entry<V>) -> bool {
        self.ranks.insert(e.rank);
        let better = e.rank < self.best;
        if better {
            self.best = e.rank;
        }
        match self.map.entry(Words(value)) {
            std::collections::hash_map::Entry::Occupied(mut o) => o.get_mut().insert(e),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Bucket::new(e));
                self.values.insert(value);
            }
        }
        better
    }

    /// Removes the rule `seq` of `value`, and says whether the best rank
    /// changed.
    pub fn remove(&mut self, value: &Key<W>, seq: u64) -> Option<(Entry<V>, bool)> {
        let k = Words(*value);
        let bucket = self.map.get_mut(&k)?;
        let e = if bucket.len() == 1 {
            if bucket.first.rank.seq != seq {
                return None;
            }
            self.values.remove(value);
            self.map.remove(&k)?.into_first()
        } else {
            bucket.remove(seq)?
        };
        self.ranks.remove(&e.rank);
        let changed = e.rank == self.best;
        if changed {
            self.best = self.ranks.first().copied().unwrap_or(Rank::LAST);
        }
        Some((e, changed))
    }

    /// The bits of this subtable's mask that tell `key` (matching none of
    /// its rules) apart from every rule: the mask's bits up to the first
    /// bit where `key` differs from the rule that agrees with it longest,
    /// in the order of the values (by the property of sorted strings, one
    /// of its two neighbours there), and the whole field holding that bit
    /// unless it is a prefix field. Every key equal to `key` under these
    /// bits misses this subtable too. The whole mask for a key that
    /// matches.
    pub fn miss_mask(&self, key: &Key<W>, fields: &[FieldBits]) -> Key<W> {
        let k = masked(key, &self.mask);
        let before = self.values.range(..k).next_back();
        let after = self.values.range(k..).next();
        if after == Some(&k) {
            return self.mask;
        }
        // (word, bit) of the first difference, the latest of the two.
        let Some((word, bit)) = [before, after]
            .into_iter()
            .flatten()
            .filter_map(|v| first_difference(&k, v))
            .max_by_key(|&(w, b)| (w, 63 - b))
        else {
            return self.mask;
        };
        let mut out = [0u64; W];
        out[..word].copy_from_slice(&self.mask[..word]);
        // The word's bits from its top down to the differing one.
        let from_top = !0u64 << bit;
        out[word] = self.mask[word] & from_top;
        let field = fields
            .iter()
            .find(|f| f.word == word && (f.mask >> bit) & 1 == 1);
        if let Some(f) = field.filter(|f| !f.prefix) {
            out[word] |= self.mask[word] & f.mask;
        }
        out
    }

    pub fn find(&self, value: &Key<W>, seq: u64) -> Option<&Entry<V>> {
        self.map.get(&Words(*value))?.find(seq)
    }

    pub fn find_mut(&mut self, value: &Key<W>, seq: u64) -> Option<&mut Entry<V>> {
        self.map.get_mut(&Words(*value))?.find_mut(seq)
    }

    /// Every rule: its value and entry, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key<W>, &Entry<V>)> {
        self.map
            .iter()
            .flat_map(|(k, b)| b.iter().map(move |e| (&k.0, e)))
    }
}

/// The first bit where `a` and `b` differ, in word order and from each
/// word's high bit: (word, bit number with 63 the high one).
fn first_difference<const W: usize>(a: &Key<W>, b: &Key<W>) -> Option<(usize, u32)> {
    (0..W).find_map(|i| {
        let x = a[i] ^ b[i];
        (x != 0).then(|| (i, 63 - x.leading_zeros()))
    })
}
