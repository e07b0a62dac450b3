//! The rules of one subtable that share a masked value, in rank order: the
//! first (the one a lookup wants) kept inline in the hash table's slot, the
//! others (rarer: overlapping rules at several priorities) behind it.

use crate::rule::Rank;

pub(crate) struct Entry<V> {
    pub rank: Rank,
    pub payload: V,
}

pub(crate) struct Bucket<V> {
    pub first: Entry<V>,
    /// In rank order, all after `first`.
    rest: Vec<Entry<V>>,
}

impl<V> Bucket<V> {
    pub fn new(e: Entry<V>) -> Bucket<V> {
        Bucket {
            first: e,
            rest: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        1 + self.rest.len()
    }

    pub fn insert(&mut self, mut e: Entry<V>) {
        if e.rank < self.first.rank {
            std::mem::swap(&mut e, &mut self.first);
        }
        let at = self.rest.partition_point(|x| x.rank < e.rank);
        self.rest.insert(at, e);
    }

    /// Removes the entry of `seq` from a bucket of two or more.
    pub fn remove(&mut self, seq: u64) -> Option<Entry<V>> {
        debug_assert!(!self.rest.is_empty());
        if self.first.rank.seq == seq {
            let next = self.rest.remove(0);
            return Some(std::mem::replace(&mut self.first, next));
        }
        let at = self.rest.iter().position(|x| x.rank.seq == seq)?;
        Some(self.rest.remove(at))
    }

    pub fn find(&self, seq: u64) -> Option<&Entry<V>> {
        self.iter().find(|e| e.rank.seq == seq)
    }

    pub fn find_mut(&mut self, seq: u64) -> Option<&mut Entry<V>> {
        std::iter::once(&mut self.first)
            .chain(self.rest.iter_mut())
            .find(|e| e.rank.seq == seq)
    }

    pub fn into_first(self) -> Entry<V> {
        self.first
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry<V>> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(priority: u32, seq: u64) -> Entry<()> {
        Entry {
            rank: Rank { priority, seq },
            payload: (),
        }
    }

    #[test]
    fn the_best_rank_is_first_whatever_the_insertion_order() {
        let mut b = Bucket::new(e(5, 0));
        b.insert(e(3, 1));
        b.insert(e(5, 2));
        b.insert(e(1, 3));
        let seqs: Vec<u64> = b.iter().map(|x| x.rank.seq).collect();
        assert_eq!(seqs, [3, 1, 0, 2]);
        assert_eq!(b.remove(3).map(|x| x.rank.seq), Some(3));
        assert_eq!(b.first.rank.seq, 1);
        assert_eq!(b.remove(2).map(|x| x.rank.seq), Some(2));
        assert!(b.remove(7).is_none());
        assert_eq!(b.len(), 2);
    }
}
