//! Tuple-space search: the rules are split by mask into subtables, one hash
//! table each, kept in order of the best rank they hold. A lookup probes
//! them in that order and stops at the first subtable whose best rank is
//! worse than the match found so far (priority pruning): no rule there can
//! match first.

use std::collections::HashMap;

use crate::bucket::Entry;
use crate::hash::{WordState, Words};
use crate::rule::{FieldBits, Key, LookupStats, Match, Rank, Rule, RuleId, RuleRef};
use crate::subtable::Subtable;

/// A tuple-space search classifier over keys of `W` words, with payloads
/// `V`: [`lookup`](Tss::lookup) returns the rule of lowest priority number
/// matching a key, the earliest inserted among equals.
pub struct Tss<const W: usize, V> {
    /// By best rank, ascending; none empty.
    subtables: Vec<Subtable<W, V>>,
    /// A subtable's place in `subtables`, by its sid (`u32::MAX` if free).
    place: Vec<u32>,
    free_sids: Vec<u32>,
    by_mask: HashMap<Words<W>, u32, WordState>,
    /// A rule's subtable (sid) and masked value, by its id.
    rules: HashMap<RuleId, (u32, Key<W>), WordState>,
    next_seq: u64,
    hasher: WordState,
    /// The keys' fields, when [`lookup_masks`](Tss::lookup_masks) narrows
    /// what a missed subtable adds ([`with_fields`](Tss::with_fields)).
    fields: Vec<FieldBits>,
}

impl<const W: usize, V> Default for Tss<W, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize, V> Tss<W, V> {
    pub fn new() -> Tss<W, V> {
        let hasher = WordState::random();
        Tss {
            subtables: Vec::new(),
            place: Vec::new(),
            free_sids: Vec::new(),
            by_mask: HashMap::with_hasher(hasher),
            rules: HashMap::with_hasher(hasher),
            next_seq: 0,
            hasher,
            fields: Vec::new(),
        }
    }

    /// A classifier whose [`lookup_masks`](Tss::lookup_masks) adds, for a
    /// subtable the key misses, only the bits that tell the key apart from
    /// that subtable's rules (whole `fields`, or the high bits of prefix
    /// ones), as Open vSwitch's staged lookup and prefix tries do: a port
    /// scan past a rule on one port then needs one megaflow, not one per
    /// port.
    pub fn with_fields(fields: Vec<FieldBits>) -> Tss<W, V> {
        Tss {
            fields,
            ..Tss::new()
        }
    }

    /// The number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The number of subtables (distinct masks).
    pub fn subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Adds a rule (its value masked) with its payload.
    pub fn insert(&mut self, rule: Rule<W>, payload: V) -> RuleId {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.insert_at(seq, rule.normalized(), payload);
        RuleId(seq)
    }

    /// Removes a rule, giving back its payload.
    pub fn remove(&mut self, id: RuleId) -> Option<V> {
        self.take(id).map(|(_, p)| p)
    }

    /// Replaces a rule and its payload, keeping its id and its place among
    /// rules of equal priority; gives back the old payload, or `None` (and
    /// drops `payload`) when there is no rule `id`.
    pub fn replace(&mut self, id: RuleId, rule: Rule<W>, payload: V) -> Option<V> {
        let (_, old) = self.take(id)?;
        self.insert_at(id.0, rule.normalized(), payload);
        Some(old)
    }

    pub fn get(&self, id: RuleId) -> Option<RuleRef<'_, W, V>> {
        let (sid, value) = self.rules.get(&id)?;
        let sub = &self.subtables[self.place[*sid as usize] as usize];
        let e = sub.find(value, id.0)?;
        Some(ref_of(&sub.mask, value, e))
    }

    pub fn get_mut(&mut self, id: RuleId) -> Option<&mut V> {
        let (sid, value) = self.rules.get(&id)?;
        let sub = &mut self.subtables[self.place[*sid as usize] as usize];
        Some(&mut sub.find_mut(value, id.0)?.payload)
    }

    /// Every rule, in first-match order (priority, then insertion).
    pub fn iter(&self) -> impl Iterator<Item = RuleRef<'_, W, V>> {
        let mut all: Vec<RuleRef<'_, W, V>> = self
            .subtables
            .iter()
            .flat_map(|s| s.iter().map(|(v, e)| ref_of(&s.mask, v, e)))
            .collect();
        all.sort_by_key(|r| (r.rule.priority, r.id));
        all.into_iter()
    }

    pub fn clear(&mut self) {
        self.subtables.clear();
        self.place.clear();
        self.free_sids.clear();
        self.by_mask.clear();
        self.rules.clear();
    }

    /// The first rule matching `key`.
    #[inline]
    pub fn lookup(&self, key: &Key<W>) -> Option<Match<'_, V>> {
        self.search(key).0
    }

    /// [`lookup`](Tss::lookup), and the number of subtables it probed.
    pub fn lookup_stats(&self, key: &Key<W>) -> (Option<Match<'_, V>>, LookupStats) {
        let (m, probed) = self.search(key);
        (m, LookupStats { probed })
    }

    /// [`lookup`](Tss::lookup), adding to `seen` what it looked at in
    /// every subtable it probed (the subtable's mask, or with
    /// [`with_fields`](Tss::with_fields) for a subtable the key missed the
    /// part of it that told the key apart): any key equal to `key` under
    /// `seen` has the same result (Open vSwitch's wildcard tracking, which
    /// makes a megaflow).
    pub fn lookup_masks(&self, key: &Key<W>, seen: &mut Key<W>) -> Option<Match<'_, V>> {
        self.search_with(key, |sub, hit| {
            let mask = match hit || self.fields.is_empty() {
                true => sub.mask,
                false => sub.miss_mask(key, &self.fields),
            };
            for i in 0..W {
                seen[i] |= mask[i];
            }
        })
        .0
    }

    #[inline]
    fn search(&self, key: &Key<W>) -> (Option<Match<'_, V>>, usize) {
        self.search_with(key, |_, _| {})
    }

    /// The search, telling `probed` of each subtable probed and whether
    /// the key matched a rule there.
    #[inline]
    fn search_with(
        &self,
        key: &Key<W>,
        mut probed_one: impl FnMut(&Subtable<W, V>, bool),
    ) -> (Option<Match<'_, V>>, usize) {
        let mut found: Option<&Entry<V>> = None;
        let mut probed = 0;
        for sub in &self.subtables {
            if let Some(f) = found
                && f.rank < sub.best
            {
                break;
            }
            probed += 1;
            let hit = sub.probe(key);
            probed_one(sub, hit.is_some());
            if let Some(e) = hit
                && found.is_none_or(|f| e.rank < f.rank)
            {
                found = Some(e);
            }
        }
        let m = found.map(|e| Match {
            id: e.rank.id(),
            priority: e.rank.priority,
            payload: &e.payload,
        });
        (m, probed)
    }

    fn insert_at(&mut self, seq: u64, rule: Rule<W>, payload: V) {
        let sid = match self.by_mask.get(&Words(rule.mask)) {
            Some(&sid) => sid,
            None => self.new_subtable(rule.mask),
        };
        let at = self.place[sid as usize] as usize;
        let rank = Rank {
            priority: rule.priority,
            seq,
        };
        if self.subtables[at].insert(rule.value, Entry { rank, payload }) {
            self.reorder(at);
        }
        self.rules.insert(RuleId(seq), (sid, rule.value));
    }

    fn take(&mut self, id: RuleId) -> Option<(Rank, V)> {
        let (sid, value) = self.rules.remove(&id)?;
        let at = self.place[sid as usize] as usize;
        let (e, changed) = self.subtables[at]
            .remove(&value, id.0)
            .expect("a rule is in its subtable");
        if self.subtables[at].is_empty() {
            let sub = self.subtables.remove(at);
            self.by_mask.remove(&Words(sub.mask));
            self.place[sid as usize] = u32::MAX;
            self.free_sids.push(sid);
            self.renumber(at, self.subtables.len());
        } else if changed {
            self.reorder(at);
        }
        Some((e.rank, e.payload))
    }

    /// An empty subtable for `mask`, last (until its first rule orders it).
    fn new_subtable(&mut self, mask: Key<W>) -> u32 {
        let sid = match self.free_sids.pop() {
            Some(sid) => sid,
            None => {
                self.place.push(u32::MAX);
                (self.place.len() - 1) as u32
            }
        };
        self.subtables.push(Subtable::new(mask, sid, self.hasher));
        self.place[sid as usize] = (self.subtables.len() - 1) as u32;
        self.by_mask.insert(Words(mask), sid);
        sid
    }

    /// Moves the subtable at `at`, whose best rank changed, to its place.
    fn reorder(&mut self, at: usize) {
        let sub = self.subtables.remove(at);
        let to = self.subtables.partition_point(|s| s.best < sub.best);
        self.subtables.insert(to, sub);
        self.renumber(at.min(to), at.max(to) + 1);
    }

    fn renumber(&mut self, from: usize, to: usize) {
        for i in from..to.min(self.subtables.len()) {
            self.place[self.subtables[i].sid as usize] = i as u32;
        }
    }
}

fn ref_of<'a, const W: usize, V>(
    mask: &Key<W>,
    value: &Key<W>,
    e: &'a Entry<V>,
) -> RuleRef<'a, W, V> {
    RuleRef {
        id: e.rank.id(),
        rule: Rule {
            mask: *mask,
            value: *value,
            priority: e.rank.priority,
        },
        payload: &e.payload,
    }
}
