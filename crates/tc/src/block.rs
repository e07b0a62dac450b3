//! A filter block (one clsact hook, ingress or egress): chains of filters
//! in priority order, walked as the kernel's `tcf_classify` walks them.
//! A filter whose protocol is not the packet's (nor `all`) is passed over;
//! `reclassify` starts again from chain 0, `goto chain N` from chain N,
//! and 16 such restarts in one packet drop it; a result of `continue`
//! goes on to the next filter; the first other result is the verdict.
//! [`Block::classify`] takes the fast path ([`crate::fast`]) through runs
//! of flower and u32 filters; [`Block::classify_linear`] is the reference.

use std::collections::BTreeMap;

use runtime::TcAction;

use crate::action::{Actions, Emitted};
use crate::classifier::{Cx, Filter};
use crate::control::Control;
use crate::error::TcError;
use crate::fast::{FastStats, Found, Plan};
use crate::protocol::ETH_P_ALL;
use crate::skb::Skb;

/// The kernel's limit on reclassify and goto-chain restarts per packet.
const MAX_RESTARTS: u32 = 16;

/// What a block decided for a packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// `Unspec` when no filter matched (the packet goes on).
    pub verdict: TcAction,
    /// The matching rule's class (0 without one).
    pub classid: u32,
    /// Packets actions sent elsewhere (mirred).
    pub emitted: Vec<Emitted>,
}

/// Chains of filters (their actions live in the namespace's table,
/// [`Actions`], given to each call that runs or removes them).
#[derive(Debug, Default)]
pub struct Block {
    chains: BTreeMap<u32, Vec<Filter>>,
    fast: Plan,
}

impl Block {
    /// The filters of chain `chain`, in priority order.
    pub fn chain(&self, chain: u32) -> &[Filter] {
        self.chains.get(&chain).map_or(&[], Vec::as_slice)
    }

    pub fn chains(&self) -> impl Iterator<Item = (u32, &[Filter])> {
        self.chains.iter().map(|(c, f)| (*c, f.as_slice()))
    }

    /// The filter at (chain, prio), if any (the fast path is rebuilt
    /// after: the filter may change).
    pub fn filter_mut(&mut self, chain: u32, prio: u16) -> Option<&mut Filter> {
        self.fast.invalidate();
        let list = self.chains.get_mut(&chain)?;
        // Kept in priority order: a binary search (thousands of filters).
        let at = list.binary_search_by_key(&prio, |f| f.prio).ok()?;
        list.get_mut(at)
    }

    /// Adds a filter; a priority in use in the chain is refused (a new
    /// rule for an existing filter goes to [`Block::filter_mut`]).
    pub fn add(&mut self, chain: u32, filter: Filter) -> Result<(), TcError> {
        self.fast.invalidate();
        let list = self.chains.entry(chain).or_default();
        match list.binary_search_by_key(&filter.prio, |f| f.prio) {
            Ok(_) => {
                return Err(TcError::PrioInUse {
                    chain,
                    prio: filter.prio,
                });
            }
            Err(at) => list.insert(at, filter),
        }
        Ok(())
    }

    /// Removes the filter at (chain, prio) and releases its actions.
    pub fn remove(
        &mut self,
        chain: u32,
        prio: u16,
        actions: &mut Actions,
    ) -> Result<Filter, TcError> {
        self.fast.invalidate();
        let list = self.chains.get_mut(&chain).ok_or(TcError::NoChain(chain))?;
        let at = list
            .iter()
            .position(|f| f.prio == prio)
            .ok_or(TcError::NoFilter { chain, prio })?;
        let f = list.remove(at);
        if list.is_empty() {
            self.chains.remove(&chain);
        }
        actions.release(&f.classifier.actions());
        Ok(f)
    }

    /// Removes every filter of `chain`.
    pub fn clear_chain(&mut self, chain: u32, actions: &mut Actions) {
        self.fast.invalidate();
        for f in self.chains.remove(&chain).unwrap_or_default() {
            actions.release(&f.classifier.actions());
        }
    }

    /// Removes every filter.
    pub fn clear(&mut self, actions: &mut Actions) {
        let chains: Vec<u32> = self.chains.keys().copied().collect();
        for c in chains {
            self.clear_chain(c, actions);
        }
    }

    /// Whether [`Block::classify`] takes the fast path (it does unless
    /// told not to).
    pub fn set_fast(&mut self, on: bool) {
        self.fast.enabled = on;
    }

    /// What the fast path did so far.
    pub fn fast_stats(&self) -> FastStats {
        self.fast.stats
    }

    /// Classifies `skb`; `bytes` is what actions count for it. Runs of
    /// flower and u32 filters are looked up at once (unless the fast path
    /// is off); the result is the reference walk's.
    pub fn classify(&mut self, skb: &mut Skb, bytes: u64, actions: &mut Actions) -> Classification {
        let fast = self.fast.enabled;
        if fast {
            self.fast.refresh(&self.chains);
        }
        self.walk(skb, bytes, actions, fast)
    }

    /// The reference walk (`tcf_classify`), filter by filter: what
    /// [`Block::classify`] must agree with.
    pub fn classify_linear(
        &mut self,
        skb: &mut Skb,
        bytes: u64,
        actions: &mut Actions,
    ) -> Classification {
        self.walk(skb, bytes, actions, false)
    }

    fn walk(
        &mut self,
        skb: &mut Skb,
        bytes: u64,
        actions: &mut Actions,
        fast: bool,
    ) -> Classification {
        let mut emitted = Vec::new();
        let mut chain = 0;
        let mut restarts = 0;
        'restart: loop {
            let Some(filters) = self.chains.get_mut(&chain) else {
                return outcome(TcAction::Unspec, 0, emitted);
            };
            let protocol = skb.filter_protocol();
            let mut i = 0;
            while i < filters.len() {
                let mut hit = None;
                if fast {
                    match self.fast.lookup(chain, i, skb, protocol) {
                        Some(Found::Miss { end }) => {
                            i = end;
                            continue;
                        }
                        Some(Found::Hit { filter, rule }) => {
                            i = filter;
                            hit = Some(rule);
                        }
                        Some(Found::Fallback) | None => {}
                    }
                }
                let f = &mut filters[i];
                i += 1;
                if f.protocol != protocol && f.protocol != ETH_P_ALL {
                    continue;
                }
                let mut cx = Cx {
                    actions: &mut *actions,
                    emitted: &mut emitted,
                    bytes,
                };
                let m = match hit {
                    Some(rule) => crate::fast::run_rule(f.classifier.as_mut(), rule, skb, &mut cx),
                    None => f.classifier.classify(skb, &mut cx),
                };
                let Some(m) = m else {
                    continue;
                };
                let next = match m.control {
                    Control::Act(TcAction::Reclassify) => 0,
                    Control::GotoChain(n) => n,
                    Control::Act(TcAction::Unspec) => continue,
                    Control::Act(a) => return outcome(a, m.classid, emitted),
                    // A jump the action list could not resolve: a
                    // non-negative code the hook treats as `ok`.
                    Control::Jump(_) => return outcome(TcAction::Ok, m.classid, emitted),
                };
                restarts += 1;
                if restarts > MAX_RESTARTS {
                    return outcome(TcAction::Shot, m.classid, emitted);
                }
                chain = next;
                continue 'restart;
            }
            return outcome(TcAction::Unspec, 0, emitted);
        }
    }
}

impl Classification {
    /// Nothing matched: the packet goes on.
    pub fn unmatched() -> Classification {
        outcome(TcAction::Unspec, 0, Vec::new())
    }
}

fn outcome(verdict: TcAction, classid: u32, emitted: Vec<Emitted>) -> Classification {
    Classification {
        verdict,
        classid,
        emitted,
    }
}
