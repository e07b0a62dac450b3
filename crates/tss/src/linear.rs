//! The reference classifier: the rules in one list in first-match order
//! (priority, then insertion), a lookup walks it to the first rule that
//! matches. Same API as [`Tss`](crate::Tss); what the tests check it
//! against and the benchmarks compare it with.

use crate::rule::{Key, LookupStats, Match, Rule, RuleId, RuleRef};

pub struct Linear<const W: usize, V> {
    /// In (priority, id) order.
    rules: Vec<(RuleId, Rule<W>, V)>,
    next_seq: u64,
}

impl<const W: usize, V> Default for Linear<W, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize, V> Linear<W, V> {
    pub fn new() -> Linear<W, V> {
        Linear {
            rules: Vec::new(),
            next_seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn insert(&mut self, rule: Rule<W>, payload: V) -> RuleId {
        let id = RuleId(self.next_seq);
        self.next_seq += 1;
        self.put(id, rule.normalized(), payload);
        id
    }

    pub fn remove(&mut self, id: RuleId) -> Option<V> {
        let at = self.rules.iter().position(|r| r.0 == id)?;
        Some(self.rules.remove(at).2)
    }

    /// As [`Tss::replace`](crate::Tss::replace).
    pub fn replace(&mut self, id: RuleId, rule: Rule<W>, payload: V) -> Option<V> {
        let old = self.remove(id)?;
        self.put(id, rule.normalized(), payload);
        Some(old)
    }

    pub fn get(&self, id: RuleId) -> Option<RuleRef<'_, W, V>> {
        self.rules.iter().find(|r| r.0 == id).map(ref_of)
    }

    pub fn get_mut(&mut self, id: RuleId) -> Option<&mut V> {
        self.rules.iter_mut().find(|r| r.0 == id).map(|r| &mut r.2)
    }

    /// Every rule, in first-match order.
    pub fn iter(&self) -> impl Iterator<Item = RuleRef<'_, W, V>> {
        self.rules.iter().map(ref_of)
    }

    pub fn clear(&mut self) {
        self.rules.clear();
    }

    pub fn lookup(&self, key: &Key<W>) -> Option<Match<'_, V>> {
        self.lookup_stats(key).0
    }

    /// [`lookup`](Linear::lookup), and the number of rules it tested.
    pub fn lookup_stats(&self, key: &Key<W>) -> (Option<Match<'_, V>>, LookupStats) {
        for (i, (id, rule, payload)) in self.rules.iter().enumerate() {
            if rule.matches(key) {
                let m = Match {
                    id: *id,
                    priority: rule.priority,
                    payload,
                };
                return (Some(m), LookupStats { probed: i + 1 });
            }
        }
        (
            None,
            LookupStats {
                probed: self.rules.len(),
            },
        )
    }

    fn put(&mut self, id: RuleId, rule: Rule<W>, payload: V) {
        let key = (rule.priority, id);
        let at = self.rules.partition_point(|r| (r.1.priority, r.0) < key);
        self.rules.insert(at, (id, rule, payload));
    }
}

fn ref_of<const W: usize, V>(r: &(RuleId, Rule<W>, V)) -> RuleRef<'_, W, V> {
    RuleRef {
        id: r.0,
        rule: r.1,
        payload: &r.2,
    }
}
