//! One OpenFlow flow table: flow entries by (match, priority) in a
//! tuple-space classifier, and the flow-mod commands' meaning on them
//! (OpenFlow 1.3 section 6.4): add replaces an identical entry, modify and
//! delete take every entry the request's match covers (strict: the one
//! with the same match and priority), filtered by cookie and out port.

use std::collections::HashMap;

use openflow::{Action, FlowMod, Instruction, Match, flow_flags};
use tss::{Rule, RuleId, Tss};

use crate::flow::{PIPELINE_WORDS, PipelineKey, covers, key_match, overlaps};

/// A flow entry: what OpenFlow said, and its counters.
#[derive(Clone, Debug)]
pub struct FlowEntry {
    pub matcher: Match,
    pub key_match: (PipelineKey, PipelineKey),
    pub priority: u16,
    pub cookie: u64,
    pub idle_timeout: u16,
    pub hard_timeout: u16,
    pub flags: u16,
    pub instructions: Vec<Instruction>,
    /// Install time, for durations and the hard timeout (ns, switch clock).
    pub installed_ns: u64,
    /// The last packet's time (ns), for the idle timeout.
    pub used_ns: u64,
    pub packets: u64,
    pub bytes: u64,
}

impl FlowEntry {
    /// Whether the entry has an idle or a hard timeout.
    pub fn times_out(&self) -> bool {
        self.idle_timeout != 0 || self.hard_timeout != 0
    }

    /// The table-miss entry: priority 0, every field wildcarded.
    pub fn is_table_miss(&self) -> bool {
        self.priority == 0 && self.matcher.fields.is_empty()
    }

    /// Whether any output of its instructions goes to `port`.
    fn outputs_to(&self, port: u32) -> bool {
        self.actions()
            .any(|a| matches!(a, Action::Output { port: p, .. } if *p == port))
    }

    fn uses_group(&self, group: u32) -> bool {
        self.groups().any(|g| g == group)
    }

    /// The groups its actions use.
    pub(crate) fn groups(&self) -> impl Iterator<Item = u32> + '_ {
        self.actions().filter_map(|a| match a {
            Action::Group(g) => Some(*g),
            _ => None,
        })
    }

    fn actions(&self) -> impl Iterator<Item = &Action> {
        self.instructions.iter().flat_map(|i| match i {
            Instruction::ApplyActions(a) | Instruction::WriteActions(a) => a.as_slice(),
            _ => &[],
        })
    }
}

/// Which entries a modify, delete or stats request names.
pub struct Selector {
    pub key_match: (PipelineKey, PipelineKey),
    /// Strict: the same match and this priority.
    pub strict: Option<u16>,
    pub cookie: u64,
    pub cookie_mask: u64,
    /// `OFPP_ANY` / `OFPG_ANY` for no filter.
    pub out_port: u32,
    pub out_group: u32,
}

impl Selector {
    fn selects(&self, e: &FlowEntry) -> bool {
        let by_match = match self.strict {
            Some(p) => e.priority == p && e.key_match == self.key_match,
            None => covers(&self.key_match, &e.key_match),
        };
        by_match
            && (e.cookie ^ self.cookie) & self.cookie_mask == 0
            && (self.out_port == openflow::port::ANY || e.outputs_to(self.out_port))
            && (self.out_group == openflow::group::ANY || e.uses_group(self.out_group))
    }
}

/// Why an entry left its table (`ofp_flow_removed_reason`).
pub type RemovedReason = u8;

pub struct Table {
    rules: Tss<PIPELINE_WORDS, FlowEntry>,
    /// (mask, value, priority) -> the entry, for strict requests and adds.
    exact: HashMap<(PipelineKey, PipelineKey, u16), RuleId>,
    /// Entries with an idle or hard timeout: without any, expiry has
    /// nothing to look at (a big table of permanent flows is not walked
    /// once a second under the lock the packet threads wait on).
    timed: usize,
    pub lookups: u64,
    pub matched: u64,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            // A miss looks at what tells the packet apart from the rules
            // only: megaflows as general as Open vSwitch's.
            rules: Tss::with_fields(crate::flow::classifier_fields()),
            exact: HashMap::default(),
            timed: 0,
            lookups: 0,
            matched: 0,
        }
    }
}

/// The priority order of the classifier: lower first, so OpenFlow's
/// higher priority wins.
fn rank(priority: u16) -> u32 {
    u32::from(u16::MAX - priority)
}

impl Table {
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The first entry matching `key`, adding what the lookup looked at to
    /// `seen`.
    pub fn lookup(
        &self,
        key: &PipelineKey,
        seen: &mut PipelineKey,
    ) -> Option<(RuleId, &FlowEntry)> {
        self.rules
            .lookup_masks(key, seen)
            .map(|m| (m.id, m.payload))
    }

    pub fn get_mut(&mut self, id: RuleId) -> Option<&mut FlowEntry> {
        self.rules.get_mut(id)
    }

    pub fn entries(&self) -> impl Iterator<Item = (RuleId, &FlowEntry)> {
        self.rules.iter().map(|r| (r.id, r.payload))
    }

    /// Adds `fm`'s entry at time `now`; an entry with the same match and
    /// priority is replaced (its counters kept unless `RESET_COUNTS`).
    /// Fails on an overlap when `CHECK_OVERLAP` asks.
    pub fn add(&mut self, fm: &FlowMod, now: u64) -> Result<(), crate::OfError> {
        let km = key_match(&fm.matcher)?;
        let exact = (km.0, km.1, fm.priority);
        if fm.flags & flow_flags::CHECK_OVERLAP != 0
            && self.rules.iter().any(|r| {
                r.payload.priority == fm.priority
                    && r.payload.key_match != km
                    && overlaps(&r.payload.key_match, &km)
            })
        {
            return Err(crate::OfError::new(
                openflow::error::FLOW_MOD_FAILED,
                openflow::error::FLOW_MOD_FAILED_OVERLAP,
                "the flow overlaps an entry of the same priority (check_overlap)",
            ));
        }
        let mut entry = FlowEntry {
            matcher: fm.matcher.clone(),
            key_match: km,
            priority: fm.priority,
            cookie: fm.cookie,
            idle_timeout: fm.idle_timeout,
            hard_timeout: fm.hard_timeout,
            flags: fm.flags,
            instructions: fm.instructions.clone(),
            installed_ns: now,
            used_ns: now,
            packets: 0,
            bytes: 0,
        };
        self.timed += usize::from(entry.times_out());
        match self.exact.get(&exact) {
            Some(&id) => {
                let old = self.rules.get_mut(id).expect("indexed entries exist");
                self.timed -= usize::from(old.times_out());
                if fm.flags & flow_flags::RESET_COUNTS == 0 {
                    entry.packets = old.packets;
                    entry.bytes = old.bytes;
                }
                *old = entry;
            }
            None => {
                let id = self
                    .rules
                    .insert(Rule::new(km.0, km.1, rank(fm.priority)), entry);
                self.exact.insert(exact, id);
            }
        }
        Ok(())
    }

    /// The entry with exactly `fm`'s match and priority, if its
    /// instructions are `fm`'s too: a `learn` that makes it again only
    /// refreshes it.
    pub fn same_entry(&mut self, fm: &FlowMod) -> Option<&mut FlowEntry> {
        let km = key_match(&fm.matcher).ok()?;
        let id = *self.exact.get(&(km.0, km.1, fm.priority))?;
        self.rules
            .get_mut(id)
            .filter(|e| e.instructions == fm.instructions)
    }

    /// Changes the instructions (and cookie) of the entries `sel` names;
    /// how many.
    pub fn modify(&mut self, sel: &Selector, fm: &FlowMod) -> usize {
        let ids: Vec<RuleId> = self
            .rules
            .iter()
            .filter(|r| sel.selects(r.payload))
            .map(|r| r.id)
            .collect();
        for &id in &ids {
            let e = self.rules.get_mut(id).expect("listed entries exist");
            e.instructions = fm.instructions.clone();
            if fm.flags & flow_flags::RESET_COUNTS != 0 {
                e.packets = 0;
                e.bytes = 0;
            }
        }
        ids.len()
    }

    /// Removes the entries `sel` names and returns them.
    pub fn delete(&mut self, sel: &Selector) -> Vec<FlowEntry> {
        let ids: Vec<RuleId> = self
            .rules
            .iter()
            .filter(|r| sel.selects(r.payload))
            .map(|r| r.id)
            .collect();
        ids.into_iter().filter_map(|id| self.remove(id)).collect()
    }

    /// The entries `sel` names.
    pub fn select<'a>(&'a self, sel: &'a Selector) -> impl Iterator<Item = &'a FlowEntry> {
        self.rules
            .iter()
            .map(|r| r.payload)
            .filter(|e| sel.selects(e))
    }

    pub fn remove(&mut self, id: RuleId) -> Option<FlowEntry> {
        let e = self.rules.remove(id)?;
        self.timed -= usize::from(e.times_out());
        self.exact
            .remove(&(e.key_match.0, e.key_match.1, e.priority));
        Some(e)
    }

    /// Removes the entries whose idle or hard timeout passed at `now`.
    pub fn expire(&mut self, now: u64) -> Vec<(FlowEntry, RemovedReason)> {
        const NS: u64 = 1_000_000_000;
        if self.timed == 0 {
            return Vec::new();
        }
        let due: Vec<(RuleId, RemovedReason)> = self
            .rules
            .iter()
            .filter_map(|r| {
                let e = r.payload;
                let hard =
                    e.hard_timeout != 0 && now >= e.installed_ns + u64::from(e.hard_timeout) * NS;
                let idle = e.idle_timeout != 0 && now >= e.used_ns + u64::from(e.idle_timeout) * NS;
                use openflow::flow_removed_reason::{HARD_TIMEOUT, IDLE_TIMEOUT};
                (hard || idle).then_some((r.id, if hard { HARD_TIMEOUT } else { IDLE_TIMEOUT }))
            })
            .collect();
        due.into_iter()
            .filter_map(|(id, why)| self.remove(id).map(|e| (e, why)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openflow::{FlowModCommand, Match, Oxm};

    const SEC: u64 = 1_000_000_000;

    fn flow(in_port: u32, idle: u16, hard: u16) -> FlowMod {
        FlowMod {
            cookie: u64::from(in_port),
            cookie_mask: 0,
            table_id: 0,
            command: FlowModCommand::Add,
            idle_timeout: idle,
            hard_timeout: hard,
            priority: 10,
            buffer_id: openflow::NO_BUFFER,
            out_port: openflow::port::ANY,
            out_group: openflow::group::ANY,
            flags: 0,
            matcher: Match {
                fields: vec![Oxm {
                    field: openflow::Field::InPort,
                    value: u128::from(in_port),
                    mask: None,
                }],
            },
            instructions: Vec::new(),
        }
    }

    fn cookies(removed: Vec<(FlowEntry, RemovedReason)>) -> Vec<u64> {
        let mut c: Vec<u64> = removed.iter().map(|(e, _)| e.cookie).collect();
        c.sort();
        c
    }

    #[test]
    fn expiry_follows_the_entries_with_timeouts_through_replace_and_remove() {
        let mut t = Table::default();
        t.add(&flow(1, 0, 5), 0).unwrap();
        t.add(&flow(2, 3, 0), 0).unwrap();
        t.add(&flow(3, 0, 0), 0).unwrap();
        // Entry 1 replaced by one without a timeout; 4 gets one.
        t.add(&flow(1, 0, 0), 0).unwrap();
        t.add(&flow(4, 0, 2), 0).unwrap();
        assert_eq!(t.timed, 2);
        assert_eq!(cookies(t.expire(2 * SEC)), [4]);
        assert_eq!(t.timed, 1);
        assert_eq!(cookies(t.expire(10 * SEC)), [2]);
        assert_eq!(t.timed, 0);
        assert!(t.expire(100 * SEC).is_empty());
        assert_eq!(t.len(), 2, "the permanent entries stay");
        // A timed entry back, then replaced by a timed one, then removed.
        t.add(&flow(5, 1, 0), 100 * SEC).unwrap();
        t.add(&flow(5, 0, 9), 100 * SEC).unwrap();
        assert_eq!(t.timed, 1);
        assert_eq!(cookies(t.expire(109 * SEC)), [5]);
        assert_eq!(t.timed, 0);
    }
}
