//! The megaflow classifier (Open vSwitch's dpcls): megaflows grouped by
//! mask into subtables, each a hash table of masked keys. Megaflows do not
//! need priorities: any two that match a packet give it the same actions
//! (each is its translation's exact wildcard), so a lookup stops at the
//! first hit, and subtables are ranked by how often they hit, busiest
//! first, re-ranked every [`RANK_EVERY`] lookups.

use std::collections::HashMap;

use crate::flow::{PackedKey, masked};

/// Lookups between re-rankings of the subtables.
pub const RANK_EVERY: u32 = 1 << 16;

struct Subtable {
    mask: PackedKey,
    flows: HashMap<PackedKey, u32, foldhash::fast::RandomState>,
    hits: u64,
}

/// Megaflows (by their slot number in the datapath) under their masks.
#[derive(Default)]
pub struct Dpcls {
    subtables: Vec<Subtable>,
    lookups: u32,
}

impl Dpcls {
    /// The megaflow matching `key`, and how many subtables were probed.
    #[inline]
    pub fn lookup(&mut self, key: &PackedKey) -> (Option<u32>, usize) {
        self.lookups += 1;
        if self.lookups >= RANK_EVERY {
            self.rank();
        }
        for (i, sub) in self.subtables.iter_mut().enumerate() {
            if let Some(&slot) = sub.flows.get(&masked(key, &sub.mask)) {
                sub.hits += 1;
                return (Some(slot), i + 1);
            }
        }
        (None, self.subtables.len())
    }

    /// Adds megaflow `slot` for (mask, masked key).
    pub fn insert(&mut self, mask: &PackedKey, key: &PackedKey, slot: u32) {
        let at = match self.subtables.iter().position(|s| s.mask == *mask) {
            Some(at) => at,
            None => {
                self.subtables.push(Subtable {
                    mask: *mask,
                    flows: HashMap::default(),
                    hits: 0,
                });
                self.subtables.len() - 1
            }
        };
        self.subtables[at].flows.insert(masked(key, mask), slot);
    }

    /// Removes the megaflow of (mask, masked key), if it is `slot`.
    pub fn remove(&mut self, mask: &PackedKey, key: &PackedKey, slot: u32) {
        if let Some(at) = self.subtables.iter().position(|s| s.mask == *mask) {
            let sub = &mut self.subtables[at];
            let k = masked(key, mask);
            if sub.flows.get(&k) == Some(&slot) {
                sub.flows.remove(&k);
            }
            if sub.flows.is_empty() {
                self.subtables.remove(at);
            }
        }
    }

    pub fn subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Busiest subtables first; counts halve so that the ranking follows
    /// the traffic.
    fn rank(&mut self) {
        self.lookups = 0;
        self.subtables.sort_by_key(|s| std::cmp::Reverse(s.hits));
        for s in &mut self.subtables {
            s.hits /= 2;
        }
    }
}
