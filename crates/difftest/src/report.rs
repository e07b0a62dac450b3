//! The totals of a differential run, as `sluice diff --json` prints them.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::compare::Difference;

/// A packet on which the VM and the kernel disagreed.
#[derive(Clone, Debug, Serialize)]
pub struct Divergence {
    /// Index of the packet in the input (from 0).
    pub packet: u64,
    pub len: usize,
    pub differences: Vec<Difference>,
    /// Set when a full comparison of the maps found the difference in an
    /// entry the VM did not change (see [`crate::Differ`]): the kernel's
    /// entry changed at one of the packets from this index on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since_packet: Option<u64>,
}

/// A packet that could not be compared, and why.
#[derive(Clone, Debug, Serialize)]
pub struct NotComparable {
    pub packet: u64,
    pub len: usize,
    pub reason: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct DiffSummary {
    pub packets: u64,
    pub compared: u64,
    pub divergences: u64,
    pub not_comparable: u64,
    /// The first divergences, in full.
    pub first: Vec<Divergence>,
    /// Not-comparable packets by reason.
    pub not_comparable_reasons: BTreeMap<String, u64>,
    pub first_not_comparable: Vec<NotComparable>,
    /// Maps whose contents are not compared, with the reason.
    pub maps_not_compared: BTreeMap<String, String>,
    /// Times every entry of every map was compared (the other packets
    /// compare the entries the VM changed).
    pub full_map_comparisons: u64,
    /// How the run differed from the plain one (e.g. programs left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl DiffSummary {
    /// Adds another run's totals (several captures, one report).
    pub fn absorb(&mut self, other: DiffSummary, keep: usize) {
        self.packets += other.packets;
        self.compared += other.compared;
        self.divergences += other.divergences;
        self.not_comparable += other.not_comparable;
        self.full_map_comparisons += other.full_map_comparisons;
        for d in other.first {
            if self.first.len() < keep {
                self.first.push(d);
            }
        }
        for (r, n) in other.not_comparable_reasons {
            *self.not_comparable_reasons.entry(r).or_default() += n;
        }
        for n in other.first_not_comparable {
            if self.first_not_comparable.len() < keep {
                self.first_not_comparable.push(n);
            }
        }
        self.maps_not_compared.extend(other.maps_not_compared);
        self.notes.extend(other.notes);
    }
}
