//! A run of flower filters as one lookup: each rule's key is its masked
//! flow key and the filter's protocol; its priority its place in the
//! order the reference walk tries them (filters in order, a filter's rules
//! as [`Flower::rules`] gives them). `skip_sw` rules are left out (the
//! walk passes over them); a filter with a port-range mask is not
//! eligible (its lookup is a walk over ranges).

use tss::{Rule, Tss};

use super::{Found, protocol_mask};
use crate::block::Filter;
use crate::flower::{Flower, KEY_WORDS, dissect};
use crate::skb::Skb;

/// The flow key's words and the protocol.
const W: usize = KEY_WORDS + 1;

pub(super) struct FlowerRun {
    tss: Tss<W, (u32, u32)>,
    end: usize,
}

/// Whether the filter's rules can all be looked up exactly.
pub(super) fn eligible(f: &Flower) -> bool {
    f.rules().all(|r| !r.range)
}

impl FlowerRun {
    pub fn new(filters: &[Filter], start: usize, end: usize) -> FlowerRun {
        let mut tss = Tss::new();
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
                tss.insert(Rule::new(mask, value, priority), (i as u32, r.handle));
                priority += 1;
            }
        }
        FlowerRun { tss, end }
    }

    /// The run's first rule matching `skb`, and the subtables probed.
    #[inline]
    pub fn lookup(&self, skb: &Skb, protocol: u16) -> (Found, usize) {
        let k = dissect(skb);
        let mut key = [0u64; W];
        key[..KEY_WORDS].copy_from_slice(k.as_words());
        key[KEY_WORDS] = u64::from(protocol);
        let (m, stats) = self.tss.lookup_stats(&key);
        let found = match m {
            Some(m) => Found::Hit {
                filter: m.payload.0 as usize,
                rule: m.payload.1,
            },
            None => Found::Miss { end: self.end },
        };
        (found, stats.probed)
    }
}
