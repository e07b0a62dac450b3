//! What a replay counts, per worker, merged at the end. Counting is a few
//! additions per packet: keys are small enums found by a linear scan (a
//! program returns a handful of distinct verdicts), nothing is formatted
//! or allocated per packet. The counts serialize (serde), to be summed
//! by another process: a run over one byte range of a capture is merged
//! with the others' (the engine's `merge_runs`).

use capture::LinkKind;
use runtime::{Redirect, Verdict};
use serde::{Deserialize, Serialize};
use vm::{RegionKind, VmError};

use crate::histogram::Histogram;
use crate::packet_log::PacketLog;

/// A packet whose run stopped with an error: what a report says of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PacketError {
    /// The packet's position in the source, from 1.
    pub seq: u64,
    /// The program (among the VM's) the failing instruction belongs to.
    pub program: usize,
    /// The failing instruction's slot.
    pub pc: usize,
    /// The error's text ([`VmError`]'s `Display`).
    pub message: String,
}

impl PacketError {
    pub fn new(seq: u64, error: &VmError) -> PacketError {
        PacketError {
            seq,
            program: error.program,
            pc: error.pc,
            message: error.to_string(),
        }
    }
}

/// Counts keyed by a small set of values.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tally<K>(Vec<(K, u64)>);

impl<K> Default for Tally<K> {
    fn default() -> Self {
        Tally(Vec::new())
    }
}

impl<K: PartialEq + Copy> Tally<K> {
    #[inline]
    pub fn add(&mut self, key: K, n: u64) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some((_, c)) => *c += n,
            None => self.0.push((key, n)),
        }
    }

    pub fn get(&self, key: K) -> u64 {
        self.0.iter().find(|(k, _)| *k == key).map_or(0, |e| e.1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (K, u64)> + '_ {
        self.0.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn merge(&mut self, other: &Tally<K>) {
        for &(k, n) in &other.0 {
            self.add(k, n);
        }
    }
}

/// Where a clone went: (ifindex, into its ingress).
pub type CloneTarget = (u32, bool);

/// The counts of a replay (or of one worker's share of it). The log and
/// the coverage counts are not serialized.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct ReplayCounters {
    pub packets: u64,
    pub verdicts: Tally<Verdict>,
    /// Runs that stopped with an error.
    pub errors: u64,
    /// The first errors, by packet order.
    pub first_errors: Vec<PacketError>,
    /// Instructions per packet.
    pub insns: Histogram,
    pub helper_calls: u64,
    pub tail_calls: u64,
    /// Loads and stores per region kind (with memory counting on).
    pub loads: [u64; RegionKind::COUNT],
    pub stores: [u64; RegionKind::COUNT],
    pub redirects: Tally<Redirect>,
    pub clones: Tally<CloneTarget>,
    pub link_types: Tally<LinkKind>,
    /// The first `bpf_trace_printk` lines, by packet order.
    pub trace: Vec<(u64, String)>,
    pub trace_lines: u64,
    /// One record per packet, when the replay keeps them
    /// ([`ReplayOptions::per_packet`](crate::ReplayOptions)).
    #[serde(skip)]
    pub log: Option<PacketLog>,
    /// How often each instruction ran and each conditional jump jumped,
    /// when the hook counts coverage ([`PacketHook::take_coverage`](runtime::PacketHook)).
    #[serde(skip)]
    pub coverage: Option<vm::Coverage>,
}

/// How many errors and trace lines a report keeps.
pub const FIRST_ERRORS: usize = 5;
pub const TRACE_LINES: usize = 100;

impl ReplayCounters {
    pub(crate) fn error(&mut self, seq: u64, error: VmError) {
        self.errors += 1;
        if self.first_errors.len() < FIRST_ERRORS {
            self.first_errors.push(PacketError::new(seq, &error));
        }
    }

    pub(crate) fn trace(&mut self, seq: u64, lines: &[String]) {
        self.trace_lines += lines.len() as u64;
        for l in lines {
            if self.trace.len() >= TRACE_LINES {
                break;
            }
            self.trace.push((seq, l.clone()));
        }
    }

    /// Adds another worker's counts.
    pub fn merge(&mut self, o: &ReplayCounters) {
        self.packets += o.packets;
        self.verdicts.merge(&o.verdicts);
        self.errors += o.errors;
        self.first_errors.extend(o.first_errors.iter().cloned());
        self.first_errors.sort_by_key(|e| e.seq);
        self.first_errors.truncate(FIRST_ERRORS);
        self.insns.merge(&o.insns);
        self.helper_calls += o.helper_calls;
        self.tail_calls += o.tail_calls;
        for k in 0..RegionKind::COUNT {
            self.loads[k] += o.loads[k];
            self.stores[k] += o.stores[k];
        }
        self.redirects.merge(&o.redirects);
        self.clones.merge(&o.clones);
        self.link_types.merge(&o.link_types);
        self.trace.extend(o.trace.iter().cloned());
        // Stable: one packet's lines stay in their order.
        self.trace.sort_by_key(|t| t.0);
        self.trace.truncate(TRACE_LINES);
        self.trace_lines += o.trace_lines;
        if let Some(log) = &o.log {
            self.log.get_or_insert_default().merge(log);
        }
        if let Some(cover) = &o.coverage {
            self.coverage.get_or_insert_default().merge(cover);
        }
    }
}
