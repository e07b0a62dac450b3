//! A subtable holds the rules of one mask in a hash table keyed by their
//! (masked) value: a key is looked up by masking it once and probing once.
//! It knows the best rank it holds, which orders subtables and prunes
//! lookups.

use std::collections::{BTreeSet, HashMap};

use crate::bucket::{Bucket, Entry};
use crate::hash::{WordState, Words};
use crate::rule::{Key, Rank, masked};

pub(crate) struct Subtable<const W: usize, V> {
    /// The smallest rank held ([`Rank::LAST`] when empty).
    pub best: Rank,
    pub mask: Key<W>,
    /// This subtable's stable name in [`crate::Tss`] (its place in the
    /// ordered list moves).
    pub sid: u32,
    map: HashMap<Words<W>, Bucket<V>, WordState>,
    ranks: BTreeSet<Rank>,
}

impl<const W: usize, V> Subtable<W, V> {
    pub fn new(mask: Key<W>, sid: u32, hasher: WordState) -> Subtable<W, V> {
        Subtable {
            best: Rank::LAST,
            mask,
            sid,
            map: HashMap::with_hasher(hasher),
            ranks: BTreeSet::new(),
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
