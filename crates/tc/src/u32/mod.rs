//! The u32 classifier (the kernel's `cls_u32`): rules ("key nodes") of
//! 32-bit value/mask keys in hash tables; the root table `800:` has one
//! bucket; `divisor N` makes a table of N buckets, a rule's `link` descends
//! into one, its `hashkey` choosing the bucket; `ht` places a rule in a
//! table's bucket. Handles and orders are allocated as the kernel does
//! (first node `800`, then the lowest free from `800`, tables `801:` on
//! cyclically), and its checks refuse what it refuses, with its messages.
//! [`walk`] classifies, [`show`] prints, [`parse`] reads tc's words.
//!
//! The u32 filters of one qdisc (both hooks of a clsact) draw their table
//! ids from one [`Common`], as the kernel's `tc_u_common`: the first
//! filter's root is `800:`, a second priority's `801:`, and so on. One
//! difference of scope: the kernel also lets a rule of one priority name
//! (`ht`, `link`) a table of another; here each [`U32`] owns its tables,
//! and such a rule is refused as naming a table the filter lacks.

mod change;
mod handle;
mod parse;
mod sel;
mod show;
mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::action::{ActionRef, Actions};
use crate::classifier::{Classifier, Cx, Match};
use crate::error::TcError;
use crate::skb::Skb;

pub use handle::{format as format_handle, parse as parse_handle};
pub use parse::{SKIP_HW, SKIP_SW, Spec};
pub use sel::{Key, Sel, TERMINAL};
pub use walk::MAX_DEPTH;

/// A rule (`struct tc_u_knode`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knode {
    pub handle: u32,
    pub sel: Sel,
    /// `classid`/`flowid` (0: none).
    pub classid: u32,
    /// The table it links to.
    pub link: Option<u32>,
    /// `indev`: its name and ifindex (0: any).
    pub indev: Option<String>,
    pub ifindex: u32,
    /// `mark VAL MASK` (0, 0: none) and how many packets passed it.
    pub mark: (u32, u32),
    pub mark_success: u64,
    pub flags: u32,
    pub actions: Vec<ActionRef>,
}

/// A hash table (`struct tc_u_hnode`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hnode {
    pub handle: u32,
    /// Buckets - 1 (the mask the hash is and-ed with).
    pub divisor: u32,
    pub buckets: Vec<Vec<Knode>>,
    /// 1 + the links to it.
    pub refcnt: u32,
    pub flags: u32,
}

/// The table ids of the u32 filters of one qdisc (`tc_u_common`):
/// shared by each filter made [`in`](U32::in_common) it.
#[derive(Clone, Debug, Default)]
pub struct Common(Arc<Mutex<TableIds>>);

#[derive(Debug, Default)]
struct TableIds {
    /// Ids in use (`handle_idr`).
    ids: BTreeSet<u32>,
    /// The cyclic cursor (0: not started, as 1).
    next_id: u32,
}

impl Common {
    fn lock(&self) -> MutexGuard<'_, TableIds> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A u32 filter: its tables and rules.
#[derive(Debug)]
pub struct U32 {
    tables: BTreeMap<u32, Hnode>,
    /// Table handles newest first (the kernel's list; `show` order).
    order: Vec<u32>,
    root: u32,
    /// Table ids, shared with the qdisc's other u32 filters.
    common: Common,
    /// Interface names `indev` may name.
    devices: BTreeMap<String, u32>,
    /// Whether `mark` is matched (the kernel's CONFIG_CLS_U32_MARK).
    mark: bool,
    /// Nodes examined by classification so far.
    pub visits: u64,
}

impl Default for U32 {
    fn default() -> Self {
        U32::new()
    }
}

/// `gen_new_htid`: the next free id from the cursor, 1 to 0x7fe,
/// wrapping once; (id, table handle).
fn new_htid(t: &TableIds) -> Option<(u32, u32)> {
    // Every id taken: say so at once, not after 2,046 searches (each
    // priority past the 2,046th would cost them: square time for a large
    // file). Ids outside 1..0x7ff (tables of handles given without the
    // top bit) are few.
    let outside = t.ids.range(..1).count() + t.ids.range(0x7ff..).count();
    if t.ids.len() - outside >= 0x7fe {
        return None;
    }
    let free = |id: &u32| !t.ids.contains(id);
    let next = t.next_id.max(1);
    let id = (next..0x7ff)
        .find(free)
        .or_else(|| (1..next.min(0x7ff)).find(free))?;
    Some((id, (id | 0x800) << 20))
}

/// The lowest node id from `from` (below 0x1000) no rule of `bucket` (sorted
/// by node id) has, as the kernel's `idr_alloc_u32` finds it: a binary
/// search for the first place where the ids from `from` stop running on
/// without a gap (so entering n rules costs n log n, not n squared).
fn lowest_free_node(bucket: &[Knode], from: u32) -> Option<u32> {
    let run = &bucket[bucket.partition_point(|k| handle::node(k.handle) < from)..];
    let (mut lo, mut hi) = (0, run.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if handle::node(run[mid].handle) == from + mid as u32 {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let id = from + lo as u32;
    (id < 0x1000).then_some(id)
}

impl Drop for U32 {
    /// The filter's table ids are free again.
    fn drop(&mut self) {
        let mut t = self.common.lock();
        for h in self.tables.keys() {
            t.ids.remove(&handle2id(*h));
        }
    }
}

/// The kernel's `handle2id`: a table handle's id in the common table ids.
fn handle2id(h: u32) -> u32 {
    if h & 0x8000_0000 != 0 {
        (h >> 20) & 0x7ff
    } else {
        h
    }
}

impl U32 {
    /// A new filter on its own, with its root table `800:`.
    pub fn new() -> U32 {
        U32::in_common(Common::default())
    }

    /// A new filter among the qdisc's others (`u32_init`): its root is
    /// `800:` when no other u32 filter holds `common` (only the qdisc does),
    /// else the next free table id, as the kernel allocates it.
    pub fn in_common(common: Common) -> U32 {
        let alone = Arc::strong_count(&common.0) <= 2;
        let root = {
            let mut t = common.lock();
            if alone {
                *t = TableIds::default();
                handle::FIRST_ROOT
            } else {
                match new_htid(&t) {
                    Some((id, h)) => {
                        t.ids.insert(id);
                        t.next_id = id + 1;
                        h
                    }
                    // The kernel's root would be handle 0; 800: is the
                    // nearest it prints.
                    None => handle::FIRST_ROOT,
                }
            }
        };
        let mut u = U32 {
            tables: BTreeMap::new(),
            order: Vec::new(),
            root,
            common,
            devices: BTreeMap::new(),
            mark: true,
            visits: 0,
        };
        u.insert_table(root, 0, 0);
        u
    }

    /// As a kernel built without CONFIG_CLS_U32_MARK: `match mark` is
    /// accepted but neither matched nor shown.
    pub fn without_mark(mut self) -> U32 {
        self.mark = false;
        self
    }

    /// Tells the filter an interface `indev` may name.
    pub fn set_device(&mut self, name: &str, ifindex: u32) {
        self.devices.insert(name.to_string(), ifindex);
    }

    /// Whether `match mark` is matched (see [`U32::without_mark`]).
    pub fn matches_mark(&self) -> bool {
        self.mark
    }

    pub fn root(&self) -> u32 {
        self.root
    }

    pub fn table(&self, handle: u32) -> Option<&Hnode> {
        self.tables.get(&handle)
    }

    /// Every rule, in `show` order.
    pub fn knodes(&self) -> impl Iterator<Item = &Knode> {
        self.order
            .iter()
            .flat_map(|h| self.tables[h].buckets.iter().flatten())
    }

    fn insert_table(&mut self, handle: u32, divisor: u32, flags: u32) {
        self.tables.insert(
            handle,
            Hnode {
                handle,
                divisor,
                buckets: vec![Vec::new(); divisor as usize + 1],
                refcnt: 1,
                flags,
            },
        );
        self.order.insert(0, handle);
    }

    /// `u32_get`: the table or rule a handle names.
    fn get(&self, h: u32) -> Option<(u32, Option<usize>)> {
        let ht = if handle::htid(h) == handle::ROOT {
            self.root
        } else {
            handle::htid(h)
        };
        let t = self.tables.get(&ht)?;
        if handle::key(h) == 0 {
            return Some((ht, None));
        }
        let b = handle::bucket(h) as usize;
        let i = t.buckets.get(b)?.iter().position(|n| n.handle == h)?;
        Some((ht, Some(i)))
    }

    /// The kernel's part of adding (`u32_change` for a new handle): checks
    /// everything before changing anything.
    fn apply(&mut self, spec: Spec) -> Result<(), TcError> {
        let mut h = spec.handle;
        if spec.empty {
            if h != 0 {
                return Err("Error: cls_u32: Filter handle requires options.".into());
            }
            return Ok(());
        }
        if h != 0 && self.get(h).is_some() {
            return Err("Error: Filter already exists.".into());
        }
        if let Some(d) = spec.divisor {
            if handle::key(h) != 0 {
                return Err("Error: cls_u32: Divisor can only be used on a hash table.".into());
            }
            let mut t = self.common.lock();
            let id = if h == 0 {
                let (id, handle) = new_htid(&t).ok_or("Error: cls_u32: no free hash table id.")?;
                h = handle;
                t.next_id = id + 1;
                id
            } else {
                let id = handle2id(h);
                if t.ids.contains(&id) {
                    return Err(
                        "RTNETLINK answers: No space left on device (table id in use)".into(),
                    );
                }
                id
            };
            t.ids.insert(id);
            drop(t);
            self.insert_table(h, d - 1, spec.flags);
            return Ok(());
        }
        let (ht, htid) = if spec.htid != 0 {
            if handle::htid(spec.htid) == handle::ROOT {
                (self.root, self.root)
            } else {
                let ht = handle::htid(spec.htid);
                if !self.tables.contains_key(&ht) {
                    return Err("Error: cls_u32: Specified hash table not found.".into());
                }
                (ht, spec.htid)
            }
        } else {
            (self.root, self.root)
        };
        let table = &self.tables[&ht];
        if table.divisor < handle::bucket(htid) {
            return Err(
                "Error: cls_u32: Specified hash table buckets exceed configured value.".into(),
            );
        }
        let bucket = &table.buckets[handle::bucket(htid) as usize];
        // A bucket is kept sorted by node id: a lookup is a binary search.
        let used = |n: u32| {
            bucket
                .binary_search_by_key(&n, |k| handle::node(k.handle))
                .is_ok()
        };
        let node = if h != 0 {
            if handle::htid(h) != 0 && handle::htid(h ^ htid) != 0 {
                return Err("Error: cls_u32: Handle specified hash table address mismatch.".into());
            }
            match handle::node(h) {
                0 => None,
                n if used(n) => {
                    return Err(
                        "RTNETLINK answers: No space left on device (node id in use)".into(),
                    );
                }
                n => Some(n),
            }
        } else {
            None
        };
        let node = match node {
            Some(n) => n,
            None => lowest_free_node(bucket, 0x800)
                .or_else(|| lowest_free_node(bucket, 1))
                .ok_or("Error: cls_u32: Hash table node ID pool exhausted.")?,
        };
        let handle = (htid & 0xffff_f000) | node;
        let Some(sel) = spec.sel else {
            return Err("Error: cls_u32: Selector not specified.".into());
        };
        let ifindex = match &spec.indev {
            Some(name) => *self
                .devices
                .get(name)
                .ok_or_else(|| format!("Error: Network device not found. (indev \"{name}\")"))?,
            None => 0,
        };
        if let Some(l) = spec.link.filter(|&l| l != 0) {
            if handle::key(l) != 0 {
                return Err("Error: cls_u32: u32 Link handle must be a hash table.".into());
            }
            if !self.tables.contains_key(&l) {
                return Err(format!(
                    "Error: cls_u32: Link hash table not found. (link {})",
                    handle::format(l)
                )
                .into());
            }
            if l == self.root {
                return Err("Error: cls_u32: Not linking to root node.".into());
            }
        }
        let link = spec.link.filter(|&l| l != 0);
        if let Some(l) = link {
            self.tables.get_mut(&l).expect("checked").refcnt += 1;
        }
        let n = Knode {
            handle,
            sel,
            classid: spec.classid.unwrap_or(0),
            link,
            indev: spec.indev,
            ifindex,
            mark: spec.mark.unwrap_or((0, 0)),
            mark_success: 0,
            flags: spec.flags,
            actions: spec.actions,
        };
        let list = &mut self.tables.get_mut(&ht).expect("checked").buckets
            [handle::bucket(handle) as usize];
        let at = list.partition_point(|k| handle::node(k.handle) < node);
        list.insert(at, n);
        Ok(())
    }

    fn knode_count(&self) -> usize {
        self.knodes().count()
    }

    /// Removes a rule, releasing its actions and its link.
    fn remove_knode(&mut self, ht: u32, bucket: usize, i: usize, actions: &mut Actions) {
        let n = self.tables.get_mut(&ht).expect("present").buckets[bucket].remove(i);
        actions.release(&n.actions);
        if let Some(t) = n.link.and_then(|l| self.tables.get_mut(&l)) {
            t.refcnt -= 1;
        }
    }
}

impl Classifier for U32 {
    fn kind(&self) -> &'static str {
        "u32"
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
        let spec = parse::parse(handle, args, actions)?;
        let refs = spec.actions.clone();
        self.apply(spec).inspect_err(|_| actions.release(&refs))
    }

    fn change(
        &mut self,
        handle: Option<&str>,
        args: &[&str],
        actions: &mut Actions,
        create: bool,
    ) -> Option<Result<(), TcError>> {
        self.change_rule(handle, args, actions, create)
    }

    fn delete(&mut self, h: &str, actions: &mut Actions) -> Result<bool, TcError> {
        let handle = handle::parse(h).ok_or_else(|| format!("Illegal filter ID \"{h}\""))?;
        let (ht, i) = self
            .get(handle)
            .ok_or_else(|| format!("Error: Filter with specified handle {h} not found."))?;
        match i {
            Some(i) => self.remove_knode(ht, handle::bucket(handle) as usize, i, actions),
            None => {
                if ht == self.root {
                    return Err("Error: cls_u32: Not allowed to delete root node.".into());
                }
                if self.tables[&ht].refcnt > 1 {
                    return Err("Error: cls_u32: Can not delete in-use filter.".into());
                }
                let buckets = self.tables[&ht].buckets.len();
                for b in 0..buckets {
                    while !self.tables[&ht].buckets[b].is_empty() {
                        self.remove_knode(ht, b, 0, actions);
                    }
                }
                self.tables.remove(&ht);
                self.order.retain(|&t| t != ht);
                self.common.lock().ids.remove(&handle2id(ht));
            }
        }
        Ok(self.knode_count() == 0)
    }

    fn classify(&mut self, skb: &mut Skb, cx: &mut Cx<'_>) -> Option<Match> {
        self.walk(skb, cx)
    }

    fn show(&self, actions: &Actions, stats: bool) -> Vec<String> {
        let mut out = Vec::new();
        for h in &self.order {
            let t = &self.tables[h];
            out.push(show::table_text(t));
            for n in t.buckets.iter().flatten() {
                out.push(show::knode_text(n, actions, stats, self.mark));
            }
        }
        out
    }

    fn json(&self, actions: &Actions, stats: bool) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        for h in &self.order {
            let t = &self.tables[h];
            out.push(show::table_json(t));
            for n in t.buckets.iter().flatten() {
                out.push(show::knode_json(n, actions, stats, self.mark));
            }
        }
        out
    }

    fn set_devices(&mut self, devices: &crate::devices::Devices) {
        for (name, ifindex) in devices.iter() {
            self.set_device(name, ifindex);
        }
    }

    fn actions(&self) -> Vec<ActionRef> {
        self.knodes()
            .flat_map(|n| n.actions.iter().cloned())
            .collect()
    }
}

#[cfg(test)]
mod tests;
