//! The flower classifier (the kernel's `cls_flower`): rules that match a
//! packet's flow key ([`FlowerKey`], filled by [`dissect`]) under a mask.
//! One flower filter (a `tcf_proto`) groups its rules by distinct mask,
//! one hash table per mask from masked key to rule; masks are kept in the
//! order they first appeared. Classifying dissects the packet once, then
//! for each mask in that order masks the key and looks it up; a mask with
//! port ranges instead walks its rules in the order they were added,
//! checks the packet's port against each rule's range and looks up the
//! key completed with that rule's range (`fl_lookup_range`). The first
//! hit that is not `skip_sw` runs its actions and ends the classifier
//! whatever they return: `continue` goes on to the next *filter*, not to
//! the next mask, as in the kernel.
//! Handles are the lowest free from 1 (the kernel's IDR) or the one
//! given. [`parse`] reads tc's words, [`change`] is `fl_set_key`, [`show`]
//! prints.

mod change;
mod dissect;
mod key;
mod parse;
mod show;
mod values;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::action::{ActionRef, Actions};
use crate::classifier::{Classifier, Cx, Match};
use crate::error::TcError;
use crate::protocol::ETH_P_ALL;
use crate::skb::Skb;

pub use dissect::dissect;
pub use key::{
    ADDR_V4, ADDR_V6, FIRST_FRAG, FRAG, FlowerKey, KEY_BYTES, KEY_WORDS, MPLS_MAX, lse_fields,
};
pub use parse::{Attrs, Lse, SKIP_HW, SKIP_SW};

/// One rule (`struct cls_fl_filter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowerRule {
    pub handle: u32,
    /// The key as given (what `show` prints).
    pub key: FlowerKey,
    /// The key under its mask (what lookups compare).
    pub mkey: FlowerKey,
    pub mask: FlowerKey,
    /// `classid`/`flowid` (0: none).
    pub classid: u32,
    pub flags: u32,
    pub indev: Option<String>,
    pub actions: Vec<ActionRef>,
}

/// The rules of one mask (`struct fl_flow_mask`).
#[derive(Clone, Debug)]
struct MaskGroup {
    mask: FlowerKey,
    /// The masked keys' rules.
    table: HashMap<FlowerKey, u32>,
    /// Its rules' handles in the order they were added.
    filters: Vec<u32>,
}

/// One rule as a fast path needs it: its handle, masked key and mask, and
/// its place in the order classification tries rules (no priority needed:
/// the first rule in this order whose masked key matches is the one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowerRuleRef<'a> {
    pub handle: u32,
    pub key: &'a FlowerKey,
    pub mask: &'a FlowerKey,
    pub order: usize,
    /// A `skip_sw` rule is passed over (the next mask is tried).
    pub skip_sw: bool,
    /// Whether the rule's mask checks port ranges (then `key` holds the
    /// range in `*_port_min`/`*_port_max`, compared as a range).
    pub range: bool,
}

/// A flower filter: its rules by handle and their masks in order.
#[derive(Clone, Debug)]
pub struct Flower {
    /// The filter's protocol (what tc puts in `eth_type`).
    protocol: u16,
    /// The rules by handle: hashed (by a fast hasher: handles are not
    /// chosen by an attacker), since the fast path finds a handle per
    /// packet and a tree of 100k rules costs a cache miss a level.
    rules: HashMap<u32, FlowerRule, foldhash::fast::RandomState>,
    /// The handles in order (for show and handle allocation).
    handles: BTreeSet<u32>,
    masks: Vec<MaskGroup>,
    /// Interface names `indev` may name.
    devices: BTreeMap<String, u32>,
}

impl Default for Flower {
    fn default() -> Self {
        Flower::new(ETH_P_ALL)
    }
}

impl Flower {
    /// An empty filter for `protocol` (the `protocol` of `tc filter add`).
    pub fn new(protocol: u16) -> Flower {
        Flower {
            protocol,
            rules: HashMap::default(),
            handles: BTreeSet::new(),
            masks: Vec::new(),
            devices: BTreeMap::new(),
        }
    }

    pub fn protocol(&self) -> u16 {
        self.protocol
    }

    /// Tells the filter an interface `indev` may name.
    pub fn set_device(&mut self, name: &str, ifindex: u32) {
        self.devices.insert(name.to_string(), ifindex);
    }

    pub fn rule(&self, handle: u32) -> Option<&FlowerRule> {
        self.rules.get(&handle)
    }

    /// The rules in handle order, as tc shows them.
    fn in_order(&self) -> impl Iterator<Item = &FlowerRule> {
        self.handles.iter().map(|h| &self.rules[h])
    }

    /// How many distinct masks the rules have.
    pub fn mask_count(&self) -> usize {
        self.masks.len()
    }

    /// Every rule in the order classification tries them (masks in order,
    /// a mask's rules in the order they were added).
    pub fn rules(&self) -> impl Iterator<Item = FlowerRuleRef<'_>> {
        self.masks
            .iter()
            .flat_map(|g| g.filters.iter().map(move |h| (g, h)))
            .enumerate()
            .map(|(order, (g, h))| {
                let r = &self.rules[h];
                FlowerRuleRef {
                    handle: r.handle,
                    key: &r.mkey,
                    mask: &r.mask,
                    order,
                    skip_sw: r.flags & SKIP_SW != 0,
                    range: g.mask.has_range(),
                }
            })
    }

    /// The handle the kernel gives a rule added without one: the lowest
    /// free from 1 (`idr_alloc_u32`). When handles 1..=n are all taken
    /// (the usual case: none given, none deleted) that is n + 1 without a
    /// walk, so adding 100k rules is not quadratic.
    fn lowest_free_handle(&self) -> Option<u32> {
        let max = i32::MAX as u32;
        let taken = self.handles.len() as u32;
        match self.handles.last() {
            None => Some(1),
            Some(&last) if last == taken => (last < max).then_some(last + 1),
            Some(_) => {
                let mut want = 1;
                for &h in &self.handles {
                    if h != want {
                        return Some(want);
                    }
                    want += 1;
                }
                (want <= max).then_some(want)
            }
        }
    }

    /// The kernel's part of adding (`fl_change` for a new handle): checks
    /// everything before changing anything.
    fn apply(&mut self, a: Attrs) -> Result<(), TcError> {
        if a.flags & SKIP_HW != 0 && a.flags & SKIP_SW != 0 {
            return Err(
                "RTNETLINK answers: Invalid argument (skip_hw and skip_sw together)".into(),
            );
        }
        if a.handle != 0 && self.rules.contains_key(&a.handle) {
            return Err("Error: Filter already exists.".into());
        }
        let ifindex = match &a.indev {
            Some(name) => *self
                .devices
                .get(name)
                .ok_or_else(|| format!("Error: Network device not found. (indev \"{name}\")"))?,
            None => 0,
        };
        let (key, mask) = change::set_key(&a, ifindex)?;
        let mkey = key.masked(&mask);
        let group = self.masks.iter().position(|g| g.mask == mask);
        if let Some(g) = group
            && self.masks[g].table.contains_key(&mkey)
        {
            return Err("RTNETLINK answers: File exists (a rule with this key and mask)".into());
        }
        let handle = if a.handle != 0 {
            a.handle
        } else {
            self.lowest_free_handle()
                .ok_or("RTNETLINK answers: No space left on device")?
        };
        let g = match group {
            Some(g) => g,
            None => {
                self.masks.push(MaskGroup {
                    mask,
                    table: HashMap::new(),
                    filters: Vec::new(),
                });
                self.masks.len() - 1
            }
        };
        self.masks[g].table.insert(mkey, handle);
        self.masks[g].filters.push(handle);
        self.handles.insert(handle);
        self.rules.insert(
            handle,
            FlowerRule {
                handle,
                key,
                mkey,
                mask,
                classid: a.classid.unwrap_or(0),
                flags: a.flags,
                indev: a.indev,
                actions: a.actions,
            },
        );
        Ok(())
    }

    /// The rule a packet's key finds under one mask (`fl_mask_lookup`).
    fn lookup(&self, g: &MaskGroup, key: &FlowerKey) -> Option<u32> {
        let mut mkey = key.masked(&g.mask);
        if !g.mask.has_range() {
            return g.table.get(&mkey).copied();
        }
        let m = &g.mask;
        for h in &g.filters {
            let r = &self.rules[h];
            if m.dst_port_min != 0 && m.dst_port_max != 0 {
                if key.dst_port < r.key.dst_port_min || key.dst_port > r.key.dst_port_max {
                    continue;
                }
                (mkey.dst_port_min, mkey.dst_port_max) = (r.mkey.dst_port_min, r.mkey.dst_port_max);
            }
            if m.src_port_min != 0 && m.src_port_max != 0 {
                if key.src_port < r.key.src_port_min || key.src_port > r.key.src_port_max {
                    continue;
                }
                (mkey.src_port_min, mkey.src_port_max) = (r.mkey.src_port_min, r.mkey.src_port_max);
            }
            if let Some(&f) = g.table.get(&mkey) {
                return Some(f);
            }
        }
        None
    }

    /// Runs rule `handle` as if classifying had found it first (the fast
    /// path's hit): its actions, its class; `None` if there is no such
    /// rule.
    pub fn run_rule(&mut self, handle: u32, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        let r = self.rules.get(&handle)?;
        let control = cx.exec(&r.actions, skb);
        Some(Match {
            classid: r.classid,
            control,
        })
    }

    /// The rule `fl_classify` picks for a key (its handle), if any.
    pub fn find(&self, key: &FlowerKey) -> Option<u32> {
        self.masks
            .iter()
            .filter_map(|g| self.lookup(g, key))
            .find(|h| self.rules[h].flags & SKIP_SW == 0)
    }
}

impl Classifier for Flower {
    fn kind(&self) -> &'static str {
        "flower"
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }

    fn add(
        &mut self,
        handle: Option<&str>,
        args: &[&str],
        actions: &mut Actions,
    ) -> Result<(), TcError> {
        let a = parse::parse(handle, self.protocol, args, actions)?;
        let refs = a.actions.clone();
        self.apply(a).inspect_err(|_| actions.release(&refs))
    }

    fn delete(&mut self, h: &str, actions: &mut Actions) -> Result<bool, TcError> {
        let handle = parse::parse_handle(h).ok_or("Illegal \"handle\"")?;
        let r = self
            .rules
            .remove(&handle)
            .ok_or("Error: Specified filter handle not found.")?;
        self.handles.remove(&handle);
        let g = self
            .masks
            .iter()
            .position(|g| g.mask == r.mask)
            .expect("a rule's mask is listed");
        self.masks[g].table.remove(&r.mkey);
        self.masks[g].filters.retain(|&f| f != handle);
        if self.masks[g].filters.is_empty() {
            self.masks.remove(g);
        }
        actions.release(&r.actions);
        Ok(self.rules.is_empty())
    }

    fn classify(&mut self, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        let key = dissect(skb);
        let h = self.find(&key)?;
        let r = &self.rules[&h];
        let control = cx.exec(&r.actions, skb);
        Some(Match {
            classid: r.classid,
            control,
        })
    }

    fn show(&self, actions: &Actions, stats: bool) -> Vec<String> {
        self.in_order()
            .map(|r| show::text(r, actions, stats))
            .collect()
    }

    fn json(&self, actions: &Actions, stats: bool) -> Vec<serde_json::Value> {
        self.in_order()
            .map(|r| show::json(r, actions, stats))
            .collect()
    }

    fn actions(&self) -> Vec<ActionRef> {
        self.in_order()
            .flat_map(|r| r.actions.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests;
