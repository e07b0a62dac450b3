//! The tuple-space search gives the linear reference's first match, always:
//! random rule sets over few and many masks (overlapping, at equal
//! priorities, with removals, replacements and re-insertions) and random
//! keys, half of them built to hit a rule. What a lookup says it looked at
//! decides its result, also when a miss is narrowed to the fields that
//! tell the key apart (`Tss::with_fields`): a key that agrees with the
//! looked-at bits and with any rule elsewhere finds the same match.

use proptest::prelude::*;
use tss::{FieldBits, Key, Linear, Rule, RuleId, Tss};

const W: usize = 4;

#[derive(Clone, Debug)]
enum Op {
    Insert {
        mask: usize,
        value: Key<W>,
        priority: u32,
    },
    Remove(usize),
    Replace {
        which: usize,
        mask: usize,
        value: Key<W>,
        priority: u32,
    },
    /// A removed rule inserted again (a new id, last among its equals).
    Reinsert(usize),
}

/// Words whose bytes are all one small number: values and keys agree
/// under any byte-aligned mask often enough to overlap.
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => (0u64..3).prop_map(|v| v * 0x0101_0101_0101_0101),
        1 => any::<u64>(),
    ]
}

fn key() -> impl Strategy<Value = Key<W>> {
    prop::array::uniform4(word())
}

fn mask_word() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0),
        Just(u64::MAX),
        Just(0xff),
        Just(0xffff_0000),
        Just(0xff00_0000_0000_0000),
        any::<u64>(),
    ]
}

fn masks() -> impl Strategy<Value = Vec<Key<W>>> {
    let mask = || prop::array::uniform4(mask_word());
    prop_oneof![
        prop::collection::vec(mask(), 1..=3),
        prop::collection::vec(mask(), 10..=40),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (any::<usize>(), key(), 0u32..6)
            .prop_map(|(mask, value, priority)| Op::Insert { mask, value, priority }),
        2 => any::<usize>().prop_map(Op::Remove),
        1 => (any::<usize>(), any::<usize>(), key(), 0u32..6).prop_map(
            |(which, mask, value, priority)| Op::Replace { which, mask, value, priority }
        ),
        1 => any::<usize>().prop_map(Op::Reinsert),
    ]
}

/// Probe keys: `(Some(i), noise)` hits the i-th live rule (its value, the
/// noise in its unmasked bits), `(None, k)` is `k` as it is.
fn probes() -> impl Strategy<Value = Vec<(Option<usize>, Key<W>)>> {
    prop::collection::vec((prop::option::of(any::<usize>()), key()), 16..=32)
}

struct Pair {
    tss: Tss<W, u32>,
    linear: Linear<W, u32>,
    live: Vec<RuleId>,
    removed: Vec<Rule<W>>,
    next_payload: u32,
}

impl Pair {
    /// `tss` (empty) beside an empty linear reference.
    fn over(tss: Tss<W, u32>) -> Pair {
        Pair {
            tss,
            linear: Linear::new(),
            live: Vec::new(),
            removed: Vec::new(),
            next_payload: 0,
        }
    }
}

impl Pair {
    fn insert(&mut self, rule: Rule<W>) {
        let p = self.next_payload;
        self.next_payload += 1;
        let id = self.tss.insert(rule, p);
        assert_eq!(self.linear.insert(rule, p), id);
        self.live.push(id);
    }

    fn apply(&mut self, op: &Op, masks: &[Key<W>]) {
        match *op {
            Op::Insert {
                mask,
                value,
                priority,
            } => {
                self.insert(Rule::new(masks[mask % masks.len()], value, priority));
            }
            Op::Remove(i) if !self.live.is_empty() => {
                let id = self.live.swap_remove(i % self.live.len());
                let rule = self.tss.get(id).expect("a live rule").rule;
                let p = self.tss.remove(id);
                assert!(p.is_some());
                assert_eq!(self.linear.remove(id), p);
                assert_eq!(self.tss.remove(id), None);
                self.removed.push(rule);
            }
            Op::Replace {
                which,
                mask,
                value,
                priority,
            } if !self.live.is_empty() => {
                let id = self.live[which % self.live.len()];
                let rule = Rule::new(masks[mask % masks.len()], value, priority);
                let p = self.next_payload;
                self.next_payload += 1;
                let old = self.tss.replace(id, rule, p);
                assert!(old.is_some());
                assert_eq!(self.linear.replace(id, rule, p), old);
            }
            Op::Reinsert(i) if !self.removed.is_empty() => {
                let rule = self.removed[i % self.removed.len()];
                self.insert(rule);
            }
            _ => {}
        }
    }

    fn check(&self, probes: &[(Option<usize>, Key<W>)]) {
        assert_eq!(self.tss.len(), self.linear.len());
        let a: Vec<_> = self.tss.iter().collect();
        let b: Vec<_> = self.linear.iter().collect();
        assert_eq!(a, b);
        for (hit, noise) in probes {
            let key = match hit {
                Some(i) if !self.live.is_empty() => {
                    let r = self.tss.get(self.live[i % self.live.len()]).unwrap().rule;
                    std::array::from_fn(|w| r.value[w] | (noise[w] & !r.mask[w]))
                }
                _ => *noise,
            };
            let (t, stats) = self.tss.lookup_stats(&key);
            let l = self.linear.lookup(&key);
            assert_eq!(t, l, "key {key:x?}");
            assert!(stats.probed <= self.tss.subtables());
            if hit.is_some() && !self.live.is_empty() {
                assert!(t.is_some(), "a key built from a rule matches");
            }
            // The bits the lookup saw decide it: the key with every other
            // bit flipped has the same first match.
            let mut seen = [0u64; W];
            assert_eq!(self.tss.lookup_masks(&key, &mut seen), t);
            let flipped: Key<W> = std::array::from_fn(|w| key[w] ^ !seen[w]);
            assert_eq!(self.tss.lookup(&flipped), t, "key {key:x?} seen {seen:x?}");
            // The hardest keys: equal under `seen`, a rule's value elsewhere.
            for r in self.linear.iter() {
                let like: Key<W> =
                    std::array::from_fn(|w| (key[w] & seen[w]) | (r.rule.value[w] & !seen[w]));
                assert_eq!(
                    self.tss.lookup(&like),
                    t,
                    "key {key:x?} seen {seen:x?} like {like:x?}"
                );
            }
        }
    }
}

/// Fields of the keys' words: whole words, halves or bytes, each a
/// prefix field or not.
fn fields() -> impl Strategy<Value = Vec<FieldBits>> {
    prop::collection::vec((0u8..3, any::<u8>()), W).prop_map(|words| {
        let mut out = Vec::new();
        for (word, (split, prefixes)) in words.into_iter().enumerate() {
            let parts: Vec<u64> = match split {
                0 => vec![u64::MAX],
                1 => vec![0xffff_ffff_0000_0000, 0xffff_ffff],
                _ => (0..8).map(|b| 0xffu64 << (8 * b)).collect(),
            };
            for (i, mask) in parts.into_iter().enumerate() {
                let prefix = (prefixes >> (i % 8)) & 1 == 1;
                out.push(FieldBits { word, mask, prefix });
            }
        }
        out
    })
}

proptest! {
    #[test]
    fn narrowed_misses_decide_the_match(
        fields in fields(),
        masks in masks(),
        ops in prop::collection::vec(op(), 1..60),
        probes in probes(),
    ) {
        let mut pair = Pair::over(Tss::with_fields(fields));
        for op in &ops {
            pair.apply(op, &masks);
            pair.check(&probes);
        }
    }

    #[test]
    fn tss_matches_linear(
        masks in masks(),
        ops in prop::collection::vec(op(), 1..80),
        probes in probes(),
    ) {
        let mut pair = Pair::over(Tss::new());
        for op in &ops {
            pair.apply(op, &masks);
            pair.check(&probes);
        }
        // Emptied, the classifier is as new.
        for id in std::mem::take(&mut pair.live) {
            pair.tss.remove(id);
            pair.linear.remove(id);
        }
        pair.check(&probes);
        prop_assert_eq!(pair.tss.subtables(), 0);
    }
}
