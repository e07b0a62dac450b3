//! A rule matches a key when the key's bits under its mask equal its value;
//! among the rules matching a key the first match is the one of lowest
//! priority number, then the one inserted first. [`Rank`] is that order.

/// A key: a fixed number `W` of 64-bit words (a flow key, a miniflow).
pub type Key<const W: usize> = [u64; W];

/// A field of the keys, for narrowing what a missed lookup looked at
/// ([`Tss::with_fields`](crate::Tss::with_fields)): its bits in word
/// `word`. A `prefix` field (an address, a port) may be told apart by its
/// high bits alone; any other field is looked at whole.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FieldBits {
    pub word: usize,
    pub mask: u64,
    pub prefix: bool,
}

/// Names a rule from its insertion until its removal; never reused by the
/// classifier that gave it. Ids are given in insertion order.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct RuleId(pub(crate) u64);

impl RuleId {
    /// The id as a number (0 for a classifier's first rule, then counting).
    pub fn get(self) -> u64 {
        self.0
    }
}

/// What a rule matches and how early.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub struct Rule<const W: usize> {
    pub mask: Key<W>,
    /// Only its bits under `mask` count; classifiers store it masked.
    pub value: Key<W>,
    /// Lower matches first (tc's pref; an OpenFlow priority `p`, where
    /// higher wins, is `u16::MAX - p`).
    pub priority: u32,
}

impl<const W: usize> Rule<W> {
    /// A rule with `value` masked by `mask`.
    pub fn new(mask: Key<W>, value: Key<W>, priority: u32) -> Rule<W> {
        Rule {
            mask,
            value: masked(&value, &mask),
            priority,
        }
    }

    /// Whether `key` under the mask equals the value.
    #[inline]
    pub fn matches(&self, key: &Key<W>) -> bool {
        (0..W).all(|i| key[i] & self.mask[i] == self.value[i] & self.mask[i])
    }

    pub(crate) fn normalized(mut self) -> Rule<W> {
        self.value = masked(&self.value, &self.mask);
        self
    }
}

#[inline]
pub(crate) fn masked<const W: usize>(key: &Key<W>, mask: &Key<W>) -> Key<W> {
    let mut m = [0u64; W];
    for i in 0..W {
        m[i] = key[i] & mask[i];
    }
    m
}

/// The first-match order: priority, then insertion (the rule's id). Ranks
/// of distinct rules differ; the smaller one matches first.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub(crate) struct Rank {
    pub priority: u32,
    pub seq: u64,
}

impl Rank {
    pub(crate) const LAST: Rank = Rank {
        priority: u32::MAX,
        seq: u64::MAX,
    };

    pub(crate) fn id(self) -> RuleId {
        RuleId(self.seq)
    }
}

/// A lookup's result: the first matching rule.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Match<'a, V> {
    pub id: RuleId,
    pub priority: u32,
    pub payload: &'a V,
}

/// A rule as [`get`](crate::Tss::get) and [`iter`](crate::Tss::iter) show
/// it (its value masked).
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct RuleRef<'a, const W: usize, V> {
    pub id: RuleId,
    pub rule: Rule<W>,
    pub payload: &'a V,
}

/// What one lookup did: for [`Tss`](crate::Tss) the subtables probed (one
/// hash probe each), for [`Linear`](crate::Linear) the rules tested.
#[derive(Copy, Clone, PartialEq, Eq, Default, Debug)]
pub struct LookupStats {
    pub probed: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rule_matches_under_its_mask_only() {
        let r = Rule::new([0xff00, 0], [0x12ff, 7], 1);
        assert_eq!(r.value, [0x1200, 0]);
        assert!(r.matches(&[0x1234, 99]));
        assert!(!r.matches(&[0x1334, 0]));
    }

    #[test]
    fn rank_orders_priority_then_insertion() {
        let a = Rank {
            priority: 1,
            seq: 9,
        };
        let b = Rank {
            priority: 2,
            seq: 0,
        };
        let c = Rank {
            priority: 2,
            seq: 1,
        };
        assert!(a < b && b < c && c < Rank::LAST);
    }
}
