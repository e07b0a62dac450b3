//! One packet-processing thread's datapath (a PMD's in Open vSwitch): a
//! packet's key is looked up in the exact-match cache, then in the
//! megaflow classifier, and on a miss the OpenFlow tables translate it
//! (an upcall) and the result is cached as a new megaflow.
//!
//! The OpenFlow side is shared by every datapath ([`Shared`]); its
//! version tells a datapath when a flow-mod may have made cached megaflows
//! wrong: it then revalidates them (translates each one's first packet
//! again; one whose actions changed, or that now needs more bits, goes).
//! Packet counts reach the OpenFlow entries when stats are pushed.
//!
//! With a lower cache ([`Offload`]), each new megaflow is offered to it;
//! the counts of the packets it forwards are pulled into the megaflows
//! ([`Datapath::pull_offloaded`]) and go on from there as the datapath's
//! own do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::dpcls::Dpcls;
use super::emc::Emc;
use super::execute::{Output, execute};
use super::megaflow::{Counts, Megaflow, Offloaded};
use super::offload::Offload;
use crate::flow::{PackedKey, WORDS, extract};
use crate::odp::DpAction;
use crate::ofproto::{Ofproto, Touch, Translation};

/// The OpenFlow tables shared by datapaths, and their version readable
/// without the lock.
pub struct Shared {
    of: Mutex<Ofproto>,
    version: AtomicU64,
}

impl Shared {
    pub fn new(of: Ofproto) -> Shared {
        let v = of.version;
        Shared {
            of: Mutex::new(of),
            version: AtomicU64::new(v),
        }
    }

    /// Runs `f` on the OpenFlow side, publishing its version after.
    pub fn with<R>(&self, f: impl FnOnce(&mut Ofproto) -> R) -> R {
        let mut of = self.of.lock().unwrap_or_else(|p| p.into_inner());
        let r = f(&mut of);
        self.version.store(of.version, Ordering::Release);
        r
    }

    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

/// What the datapath did, per tier (as `pmd-perf-show` shows it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TierStats {
    pub packets: u64,
    pub emc_hits: u64,
    pub megaflow_hits: u64,
    /// Misses translated by the OpenFlow tables.
    pub upcalls: u64,
    /// Subtables probed by megaflow lookups.
    pub subtable_probes: u64,
    pub megaflows_added: u64,
    pub megaflows_revalidated_away: u64,
    pub megaflows_expired: u64,
    /// Megaflows the lower cache took.
    pub megaflows_offloaded: u64,
    /// Packets the lower cache forwarded (never seen by this datapath).
    pub offload_hits: u64,
}

impl std::ops::AddAssign for TierStats {
    fn add_assign(&mut self, o: TierStats) {
        self.packets += o.packets;
        self.emc_hits += o.emc_hits;
        self.megaflow_hits += o.megaflow_hits;
        self.upcalls += o.upcalls;
        self.subtable_probes += o.subtable_probes;
        self.megaflows_added += o.megaflows_added;
        self.megaflows_revalidated_away += o.megaflows_revalidated_away;
        self.megaflows_expired += o.megaflows_expired;
        self.megaflows_offloaded += o.megaflows_offloaded;
        self.offload_hits += o.offload_hits;
    }
}

/// Which caches a datapath uses (both, in Open vSwitch).
#[derive(Copy, Clone, Debug)]
pub struct CacheOptions {
    pub emc: bool,
    pub megaflows: bool,
}

impl Default for CacheOptions {
    fn default() -> CacheOptions {
        CacheOptions {
            emc: true,
            megaflows: true,
        }
    }
}

pub struct Datapath {
    flows: Vec<Option<Megaflow>>,
    /// Bumped when a slot's megaflow goes, so EMC entries naming it miss.
    generations: Vec<u32>,
    free: Vec<u32>,
    dpcls: Dpcls,
    emc: Emc,
    version: u64,
    options: CacheOptions,
    pub stats: TierStats,
    scratch: Vec<u8>,
    /// Slots that may have counts not yet pushed (a push visits only
    /// these, not every megaflow).
    dirty: Vec<u32>,
    offload: Option<Arc<dyn Offload>>,
    /// Counts of removed megaflows that the lower cache forwarded last,
    /// for the next push: (entries, packets, bytes, when).
    orphans: Vec<(Vec<Touch>, u64, u64, u64)>,
}

impl Datapath {
    pub fn new(options: CacheOptions) -> Datapath {
        Datapath {
            flows: Vec::new(),
            generations: Vec::new(),
            free: Vec::new(),
            dpcls: Dpcls::default(),
            emc: Emc::default(),
            version: 0,
            options,
            stats: TierStats::default(),
            scratch: Vec::new(),
            dirty: Vec::new(),
            offload: None,
            orphans: Vec::new(),
        }
    }

    /// Offers every megaflow installed from now on to `offload`.
    pub fn with_offload(mut self, offload: Arc<dyn Offload>) -> Datapath {
        self.offload = Some(offload);
        self
    }

    /// Runs `frame`, arrived on `in_port` at `now` (ns), to `out`.
    pub fn process(
        &mut self,
        frame: &[u8],
        in_port: u32,
        now: u64,
        shared: &Shared,
        out: &mut dyn Output,
    ) {
        if shared.version() != self.version {
            self.revalidate(shared, now);
        }
        self.stats.packets += 1;
        let (key, layout) = extract(frame, in_port);
        let slot = match self.cached(&key) {
            Some(slot) => slot,
            None => {
                self.stats.upcalls += 1;
                // Flows `learn` made go in now, as the packet passes.
                let t = shared.with(|of| {
                    let t = of.translate(&key);
                    of.learn(&t.learned, now);
                    t
                });
                if !self.options.megaflows {
                    // No cache: the translation's counts go straight in.
                    shared.with(|of| of.credit(&t.touched, 1, frame.len() as u64, now));
                    self.run(frame, layout, in_port, &t.actions, out);
                    return;
                }
                self.install(key, t, now)
            }
        };
        self.count(slot, 1, frame.len() as u64, now);
        let mf = self.flows[slot as usize]
            .as_mut()
            .expect("a cached slot holds a megaflow");
        let actions = std::mem::take(&mut mf.actions);
        self.run(frame, layout, in_port, &actions, out);
        if let Some(mf) = self.flows[slot as usize].as_mut() {
            mf.actions = actions;
        }
    }

    /// Counts `packets` of megaflow `slot`, used at `now`.
    fn count(&mut self, slot: u32, packets: u64, bytes: u64, now: u64) {
        let Some(mf) = self.flows[slot as usize].as_mut() else {
            return;
        };
        mf.packets += packets;
        mf.bytes += bytes;
        if mf.unpushed.0 == 0 {
            self.dirty.push(slot);
        }
        mf.unpushed.0 += packets;
        mf.unpushed.1 += bytes;
        mf.used_ns = mf.used_ns.max(now);
    }

    fn run(
        &mut self,
        frame: &[u8],
        layout: crate::flow::FrameLayout,
        in_port: u32,
        actions: &[DpAction],
        out: &mut dyn Output,
    ) {
        self.scratch.clear();
        self.scratch.extend_from_slice(frame);
        execute(&mut self.scratch, layout, in_port, actions, out);
    }

    /// The megaflow slot for `key` from the caches, counting the tier.
    fn cached(&mut self, key: &PackedKey) -> Option<u32> {
        if !self.options.megaflows {
            return None;
        }
        let hash = if self.options.emc {
            let h = self.emc.hash(key);
            if let Some((slot, generation)) = self.emc.lookup(key, h)
                && self.generations[slot as usize] == generation
            {
                self.stats.emc_hits += 1;
                return Some(slot);
            }
            Some(h)
        } else {
            None
        };
        let (found, probed) = self.dpcls.lookup(key);
        self.stats.subtable_probes += probed as u64;
        let slot = found?;
        self.stats.megaflow_hits += 1;
        if let Some(h) = hash {
            self.emc
                .insert(key, h, slot, self.generations[slot as usize]);
        }
        Some(slot)
    }

    fn install(&mut self, key: PackedKey, t: Translation, now: u64) -> u32 {
        let mask = t.mask;
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.flows.push(None);
                self.generations.push(0);
                (self.flows.len() - 1) as u32
            }
        };
        let mut mf = Megaflow::new(key, mask, t.actions, now);
        mf.touched = t.touched;
        mf.learned = t.learned;
        self.dpcls.insert(&mask, &mf.key, slot);
        if let Some(o) = &self.offload {
            mf.offloaded = o
                .install(&mf)
                .map(|(handle, seen)| Offloaded { handle, seen });
            self.stats.megaflows_offloaded += u64::from(mf.offloaded.is_some());
        }
        self.flows[slot as usize] = Some(mf);
        self.stats.megaflows_added += 1;
        if self.options.emc {
            let h = self.emc.hash(&key);
            self.emc
                .insert(&key, h, slot, self.generations[slot as usize]);
        }
        slot
    }

    fn remove(&mut self, slot: u32) -> Option<Megaflow> {
        let mf = self.flows[slot as usize].take()?;
        if let (Some(o), Some(off)) = (&self.offload, mf.offloaded) {
            // What the lower cache forwarded since the last pull.
            let last = o.remove(off.handle, &mf).since(off.seen);
            if last.packets > 0 {
                self.stats.offload_hits += last.packets;
                self.orphans
                    .push((mf.touched.clone(), last.packets, last.bytes, mf.used_ns));
            }
        }
        self.dpcls.remove(&mf.mask, &mf.key, slot);
        self.generations[slot as usize] = self.generations[slot as usize].wrapping_add(1);
        self.free.push(slot);
        Some(mf)
    }

    /// Credits the OpenFlow entries with the packets of every megaflow
    /// since the last push.
    pub fn push_stats(&mut self, shared: &Shared) {
        shared.with(|of| self.push_locked(of));
    }

    /// Whether some megaflow has counts not yet pushed.
    pub fn has_unpushed(&self) -> bool {
        !self.dirty.is_empty() || !self.orphans.is_empty()
    }

    /// Takes what the lower cache forwarded since the last pull into the
    /// megaflows (used at `now` if it forwarded any); the packets pulled.
    pub fn pull_offloaded(&mut self, now: u64) -> u64 {
        let Some(o) = self.offload.clone() else {
            return 0;
        };
        let mut pulled = 0;
        for slot in 0..self.flows.len() as u32 {
            let Some(off) = self.flows[slot as usize].as_ref().and_then(|m| m.offloaded) else {
                continue;
            };
            let now_counts = o.counts(off.handle);
            let new: Counts = now_counts.since(off.seen);
            if new.packets == 0 {
                continue;
            }
            if let Some(mf) = self.flows[slot as usize].as_mut() {
                mf.offloaded = Some(Offloaded {
                    seen: now_counts,
                    ..off
                });
            }
            self.count(slot, new.packets, new.bytes, now);
            pulled += new.packets;
        }
        self.stats.offload_hits += pulled;
        pulled
    }

    fn push_locked(&mut self, of: &mut Ofproto) {
        for (touched, packets, bytes, used) in self.orphans.drain(..) {
            of.credit(&touched, packets, bytes, used);
        }
        // (A slot freed and reused since it was marked is harmless: its
        // megaflow's counts are either due or zero.)
        for slot in self.dirty.drain(..) {
            if let Some(mf) = self.flows[slot as usize].as_mut()
                && mf.unpushed.0 != 0
            {
                of.credit(&mf.touched, mf.unpushed.0, mf.unpushed.1, mf.used_ns);
                // Its packets learn again: the learned flows stay fresh
                // (Open vSwitch's revalidators do the same).
                of.learn(&mf.learned, mf.used_ns);
                mf.unpushed = (0, 0);
            }
        }
    }

    /// Checks every megaflow against the OpenFlow tables as they are now
    /// (`now`: the time of the packet that noticed the change).
    pub fn revalidate(&mut self, shared: &Shared, now: u64) {
        self.pull_offloaded(now);
        let mut gone = Vec::new();
        shared.with(|of| {
            self.push_locked(of);
            self.version = of.version;
            for (slot, mf) in self.flows.iter_mut().enumerate() {
                let Some(mf) = mf else { continue };
                let t = of.translate(&mf.first);
                let narrower = (0..WORDS).all(|i| t.mask[i] & !mf.mask[i] == 0);
                if t.actions == mf.actions && narrower {
                    mf.touched = t.touched;
                } else {
                    gone.push(slot as u32);
                }
            }
        });
        for slot in gone {
            self.remove(slot);
            self.stats.megaflows_revalidated_away += 1;
        }
        if !self.orphans.is_empty() {
            self.push_stats(shared);
        }
    }

    /// Removes megaflows unused for `idle_ns` at `now` (their counts
    /// pushed). What the lower cache forwarded is pulled first: a megaflow
    /// busy there is not idle.
    pub fn expire(&mut self, now: u64, idle_ns: u64, shared: &Shared) {
        self.pull_offloaded(now);
        let due: Vec<u32> = self
            .flows
            .iter()
            .enumerate()
            .filter_map(|(i, m)| {
                m.as_ref()
                    .filter(|m| now.saturating_sub(m.used_ns) >= idle_ns)
                    .map(|_| i as u32)
            })
            .collect();
        if due.is_empty() {
            return;
        }
        self.push_stats(shared);
        for slot in due {
            self.remove(slot);
            self.stats.megaflows_expired += 1;
        }
        if !self.orphans.is_empty() {
            self.push_stats(shared);
        }
    }

    /// The cached megaflows.
    pub fn megaflows(&self) -> impl Iterator<Item = &Megaflow> {
        self.flows.iter().flatten()
    }

    pub fn subtables(&self) -> usize {
        self.dpcls.subtables()
    }

    pub fn emc_entries(&self) -> usize {
        self.emc.len()
    }
}
