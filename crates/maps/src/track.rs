//! Walks that skip what was never written, and change tracking: which
//! entries of a map changed since the last look, found by comparing the
//! value storage with a copy of the pages ever written and by the slot
//! tables' logs of inserted and removed keys (the differential tester
//! reads back only those entries from the kernel).

use std::collections::{BTreeSet, HashMap};

use crate::arena::page_size;
use crate::values::Values;
use crate::{Map, Store, lock};

/// `(key, user value)` pairs.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;

/// What changed in a map since the last look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Changes {
    /// These keys (in user layout) may have been added, removed or
    /// written; nothing else changed.
    Keys(Vec<Vec<u8>>),
    /// Something changed that is not told by key (LPM tries, reference
    /// maps): compare the whole map.
    All,
}

/// The state a map's changes are measured against ([`Map::track`]).
pub struct Tracker {
    /// Copies of the value pages ever written, by page number (a page not
    /// here was all zeros).
    shadow: HashMap<usize, Box<[u8]>>,
    page: usize,
}

impl Tracker {
    /// Brings the copy up to date; the slots whose bytes changed.
    fn refresh(&mut self, v: &Values) -> BTreeSet<u32> {
        let mut slots = BTreeSet::new();
        let page = self.page;
        let mut now = vec![0u8; page];
        // Compared as slices (memcmp), not byte by byte.
        let zeros = vec![0u8; page];
        for range in v.arena.touched() {
            let mut at = range.start / page * page;
            while at < range.end {
                let n = page.min(v.arena.len() - at);
                let now = &mut now[..n];
                v.arena.read_into(at, now);
                let idx = at / page;
                let same = match self.shadow.get(&idx) {
                    Some(old) => old[..] == now[..],
                    None => zeros[..n] == now[..],
                };
                if !same {
                    let old = self.shadow.get(&idx);
                    for (i, w) in now.chunks(8).enumerate() {
                        let was = old.map(|o| &o[i * 8..i * 8 + w.len()]);
                        let changed = match was {
                            Some(o) => o != w,
                            None => w.iter().any(|&b| b != 0),
                        };
                        if changed && let Some(s) = v.slot_at(at + i * 8) {
                            slots.insert(s);
                        }
                    }
                    self.shadow.insert(idx, now.to_vec().into_boxed_slice());
                }
                at += n;
            }
        }
        slots
    }
}

impl Map {
    /// Every entry whose value is not all zeros, as `(key, user value)` in
    /// `get_next_key` order, and how many entries were left out for being
    /// all zeros. Array entries in pages never written are not read, so
    /// this costs what the map holds rather than what it declares.
    pub fn entries_skipping_zeros(&self) -> (Entries, usize) {
        if let Store::Array(v) = &self.store {
            let out: Vec<_> = v
                .maybe_nonzero_slots()
                .into_iter()
                .filter_map(|s| {
                    let value = if v.copies > 1 {
                        v.get_all(s)
                    } else {
                        v.get(s, 0)
                    };
                    value
                        .iter()
                        .any(|&b| b != 0)
                        .then(|| (s.to_le_bytes().to_vec(), value))
                })
                .collect();
            let zeros = self.spec.max_entries as usize - out.len();
            return (out, zeros);
        }
        let all = self.entries();
        let n = all.len();
        let out: Vec<_> = all
            .into_iter()
            .filter(|(_, v)| v.iter().any(|&b| b != 0))
            .collect();
        let zeros = n - out.len();
        (out, zeros)
    }

    /// Starts tracking changes: what [`Map::changes`] reports is measured
    /// from now. `None` for maps without values in storage (queues, ring
    /// buffers, perf arrays, the kernel-object maps a replay keeps empty).
    pub fn track(&self) -> Option<Tracker> {
        let mut t = Tracker {
            shadow: HashMap::new(),
            page: page_size(),
        };
        match &self.store {
            Store::Array(v) | Store::RefArray { values: v, .. } => {
                t.refresh(v);
            }
            Store::Hash { table, values: v } | Store::RefHash { table, values: v } => {
                let mut table = lock(table);
                table.keep_log();
                t.refresh(v);
            }
            Store::Lpm { state, values: v } => {
                let mut st = lock(state);
                st.table.keep_log();
                t.refresh(v);
            }
            // (kernel-object maps a replay keeps empty have nothing to track)
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } | Store::Absent => {
                return None;
            }
        }
        Some(t)
    }

    /// What changed since `t` last looked (or was made), by programs or
    /// user space; `t` then looks from now.
    pub fn changes(&self, t: &mut Tracker) -> Changes {
        match &self.store {
            Store::Array(v) => Changes::Keys(
                t.refresh(v)
                    .into_iter()
                    .map(|s| s.to_le_bytes().to_vec())
                    .collect(),
            ),
            Store::Hash { table, values: v } | Store::RefHash { table, values: v } => {
                let mut table = lock(table);
                let mut keys: BTreeSet<Vec<u8>> =
                    table.take_log().into_iter().map(Vec::from).collect();
                for s in t.refresh(v) {
                    if let Some(k) = table.key_of(s) {
                        keys.insert(k.to_vec());
                    }
                }
                Changes::Keys(keys.into_iter().collect())
            }
            Store::Lpm { state, values: v } => {
                let mut st = lock(state);
                let log = st.table.take_log();
                if t.refresh(v).is_empty() && log.is_empty() {
                    Changes::Keys(Vec::new())
                } else {
                    Changes::All
                }
            }
            Store::RefArray { values: v, .. } => {
                if t.refresh(v).is_empty() {
                    Changes::Keys(Vec::new())
                } else {
                    Changes::All
                }
            }
            Store::Fifo { .. } | Store::Ring(_) | Store::Perf { .. } => Changes::All,
            Store::Absent => Changes::Keys(Vec::new()),
        }
    }
}
