//! A run of flower filters as one lookup: each rule's key is its masked
//! flow key and the filter's protocol; its priority its place in the
//! order the reference walk tries them (filters in order, a filter's rules
//! as [`Flower::rules`] gives them). `skip_sw` rules are left out (the
//! walk passes over them); a filter with a port-range mask is not
//! eligible (its lookup is a walk over ranges).

use tss::{Rule, Tss};

use super::{Found, protocol_mask};
use crate::classifier::Filter;
use crate::flower::{Flower, KEY_WORDS, dissect};
use crate::skb::Skb;

/// The flow key's words and the protocol.
const W: usize = KEY_WORDS + 1;

/// A compact key: the words some rule of the run masks (a 5-tuple run
/// masks 5 of the flow key's 18), so that a lookup masks, hashes and
/// compares those only.
const SMALL: usize = 8;

enum Table {
    /// Keys of the words at `words` (the protocol is index KEY_WORDS).
    Small {
        words: [usize; SMALL],
        tss: Tss<SMALL, (u32, u32)>,
    },
    Full(Tss<W, (u32, u32)>),
}

pub(super) struct FlowerRun {
    table: Table,
    end: usize,
}

/// Whether the filter's rules can all be looked up exactly.
pub(super) fn eligible(f: &Flower) -> bool {
    f.rules().all(|r| !r.range)
}

/// Picks `words` out of a full key.
fn compact(full: &[u64; W], words: &[usize; SMALL]) -> [u64; SMALL] {
    let mut k = [0u64; SMALL];
    for (out, &w) in k.iter_mut().zip(words) {
        *out = full[w];
    }
    k
}

impl FlowerRun {
    pub fn new(filters: &[Filter], start: usize, end: usize) -> FlowerRun {
        // Every rule's (mask, value, priority, payload), as full keys.
        let mut rules = Vec::new();
        let mut priority = 0u32;
        for (i, f) in filters.iter().enumerate().take(end).skip(start) {
            let fl = f
                .classifier
                .as_any()
                .downcast_ref::<Flower>()
                .expect("a flower run");
            for r in fl.rules().filter(|r| !r.skip_sw) {
                let mut mask = [0u64; W];
                let mut value = [0u64; W];
                mask[..KEY_WORDS].copy_from_slice(r.mask.as_words());
                value[..KEY_WORDS].copy_from_slice(r.key.as_words());
                mask[KEY_WORDS] = protocol_mask(f.protocol);
                value[KEY_WORDS] = u64::from(f.protocol);
                rules.push((mask, value, priority, (i as u32, r.handle)));
                priority += 1;
            }
        }
        let used: Vec<usize> = (0..W)
            .filter(|&w| rules.iter().any(|(m, ..)| m[w] != 0))
            .collect();
        let table = if used.len() <= SMALL {
            // Unused places repeat a used word (or word 0): masked out.
            let mut words = [used.first().copied().unwrap_or(0); SMALL];
            words[..used.len()].copy_from_slice(&used);
            let mut tss = Tss::new();
            for (mask, value, priority, payload) in rules {
                let mut m = compact(&mask, &words);
                m[used.len()..].fill(0);
                let v = compact(&value, &words);
                tss.insert(Rule::new(m, v, priority), payload);
            }
            Table::Small { words, tss }
        } else {
            let mut tss = Tss::new();
            for (mask, value, priority, payload) in rules {
                tss.insert(Rule::new(mask, value, priority), payload);
            }
            Table::Full(tss)
        };
        FlowerRun { table, end }
    }

    /// The run's first rule matching `skb`, and the subtables probed.
    #[inline]
    pub fn lookup(&self, skb: &Skb, protocol: u16) -> (Found, usize) {
        let k = dissect(skb);
        let mut key = [0u64; W];
        key[..KEY_WORDS].copy_from_slice(k.as_words());
        key[KEY_WORDS] = u64::from(protocol);
        let (payload, probed) = match &self.table {
            Table::Small { words, tss } => {
                let (m, stats) = tss.lookup_stats(&compact(&key, words));
                (m.map(|m| *m.payload), stats.probed)
            }
            Table::Full(tss) => {
                let (m, stats) = tss.lookup_stats(&key);
                (m.map(|m| *m.payload), stats.probed)
            }
        };
        let found = match payload {
            Some((filter, rule)) => Found::Hit {
                filter: filter as usize,
                rule,
            },
            None => Found::Miss { end: self.end },
        };
        (found, probed)
    }
}
