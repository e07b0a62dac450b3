//! The fast path for many rules: a run of consecutive filters of a chain
//! that a tuple-space classifier can decide (flower filters without port
//! ranges; u32 filters whose rules are exact value/mask keys on the first
//! bytes of the network header) is looked up as one [`tss::Tss`], priority
//! being the order the reference walk tries their rules in, and the match
//! (filter, rule) is then run by that filter's own code as if its
//! classify had found it. Everything else, and whatever follows a
//! `continue`, takes the reference walk ([`Block::classify_linear`]).
//! The plan is rebuilt lazily after the block changes.
//!
//! [`Block::classify_linear`]: crate::Block::classify_linear

mod flower;
mod u32;

use std::collections::BTreeMap;

use crate::classifier::{Classifier, Cx, Filter, Match};
use crate::skb::Skb;

use self::flower::FlowerRun;
use self::u32::U32Run;

/// What the fast path did, since the block was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastStats {
    /// Run lookups that found a rule.
    pub hits: u64,
    /// Run lookups that found none (the whole run passed over).
    pub misses: u64,
    /// Runs the packet had to take the reference walk through (a u32 run
    /// and a packet too short for its rules' offsets).
    pub fallbacks: u64,
    /// Subtables probed by all lookups.
    pub probed: u64,
    /// Times the plan was rebuilt.
    pub rebuilds: u64,
}

/// What a run's lookup says.
pub(crate) enum Found {
    /// The first rule of the run matching: its filter's place in the
    /// chain and the rule's name for that filter (a flower handle, a u32
    /// root rule's index).
    Hit { filter: usize, rule: u32 },
    /// No rule of the run matches: go on at the filter `end`.
    Miss { end: usize },
    /// The reference walk must decide, from the run's first filter.
    Fallback,
}

/// One run: consecutive filters of one kind, as one lookup.
enum Run {
    Flower(FlowerRun),
    U32(U32Run),
}

/// A chain's runs, by the place of their first filter.
#[derive(Default)]
struct ChainPlan {
    /// Per filter: 1 + the index of the run starting there, or 0.
    starts: Vec<u32>,
    runs: Vec<Run>,
}

/// The fast path's state for one block.
pub(crate) struct Plan {
    pub enabled: bool,
    dirty: bool,
    chains: BTreeMap<u32, ChainPlan>,
    pub stats: FastStats,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            enabled: true,
            dirty: true,
            chains: BTreeMap::new(),
            stats: FastStats::default(),
        }
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("enabled", &self.enabled)
            .field("dirty", &self.dirty)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Which kind of run a filter can join.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Flower,
    U32,
}

fn kind_of(f: &Filter) -> Option<Kind> {
    let any = f.classifier.as_any();
    if let Some(fl) = any.downcast_ref::<crate::flower::Flower>() {
        return flower::eligible(fl).then_some(Kind::Flower);
    }
    if let Some(u) = any.downcast_ref::<crate::u32::U32>() {
        return u32::eligible(u).then_some(Kind::U32);
    }
    None
}

impl Plan {
    /// The block changed: rebuild before the next lookup.
    pub fn invalidate(&mut self) {
        self.dirty = true;
        self.chains.clear();
    }

    /// Rebuilds the runs if the block changed since.
    pub fn refresh(&mut self, chains: &BTreeMap<u32, Vec<Filter>>) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        self.stats.rebuilds += 1;
        self.chains.clear();
        for (&chain, filters) in chains {
            let mut plan = ChainPlan {
                starts: vec![0; filters.len()],
                runs: Vec::new(),
            };
            let mut i = 0;
            while i < filters.len() {
                let Some(kind) = kind_of(&filters[i]) else {
                    i += 1;
                    continue;
                };
                let mut end = i + 1;
                while end < filters.len() && kind_of(&filters[end]) == Some(kind) {
                    end += 1;
                }
                let run = match kind {
                    Kind::Flower => Run::Flower(FlowerRun::new(filters, i, end)),
                    Kind::U32 => Run::U32(U32Run::new(filters, i, end)),
                };
                plan.runs.push(run);
                plan.starts[i] = plan.runs.len() as u32;
                i = end;
            }
            self.chains.insert(chain, plan);
        }
    }

    /// The lookup of the run starting at filter `at` of `chain`, if one
    /// does; `protocol` is the packet's filter protocol.
    #[inline]
    pub fn lookup(&mut self, chain: u32, at: usize, skb: &Skb, protocol: u16) -> Option<Found> {
        let plan = self.chains.get(&chain)?;
        let run = match *plan.starts.get(at)? {
            0 => return None,
            r => &plan.runs[r as usize - 1],
        };
        let (found, probed) = match run {
            Run::Flower(r) => r.lookup(skb, protocol),
            Run::U32(r) => r.lookup(skb, protocol),
        };
        self.stats.probed += probed as u64;
        match found {
            Found::Hit { .. } => self.stats.hits += 1,
            Found::Miss { .. } => self.stats.misses += 1,
            Found::Fallback => self.stats.fallbacks += 1,
        }
        Some(found)
    }
}

/// Runs the rule a lookup found in `classifier` as its classify would
/// have, had it found it first.
pub(crate) fn run_rule(
    classifier: &mut dyn Classifier,
    rule: u32,
    skb: &mut Skb,
    cx: &mut Cx<'_>,
) -> Option<Match> {
    let any = classifier
        .as_any_mut()
        .expect("a fast run holds only flower and u32 filters");
    if let Some(fl) = any.downcast_mut::<crate::flower::Flower>() {
        return fl.run_rule(rule, skb, cx);
    }
    let u = any
        .downcast_mut::<crate::u32::U32>()
        .expect("a fast run holds only flower and u32 filters");
    u.run_root_rule(rule as usize, skb, cx)
}

/// The protocol word of a run's key: the packet's filter protocol; a
/// filter's rules match it exactly unless the filter is for every
/// protocol.
fn protocol_mask(protocol: u16) -> u64 {
    if protocol == crate::protocol::ETH_P_ALL {
        0
    } else {
        0xffff
    }
}
