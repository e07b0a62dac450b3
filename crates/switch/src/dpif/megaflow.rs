//! A megaflow: a cached flow of the datapath (packets equal to its key
//! under its mask get its actions), with its counters, and where a lower
//! cache ([`super::Offload`]) forwards it, its handle there and the counts
//! already taken from it. Both the datapath and the lower caches use these;
//! neither is used here.

use crate::flow::{PackedKey, masked};
use crate::odp::DpAction;
use crate::ofproto::Touch;

/// A cached flow: packets equal to `key` under `mask` get `actions`.
#[derive(Clone, Debug)]
pub struct Megaflow {
    pub mask: PackedKey,
    /// Masked.
    pub key: PackedKey,
    /// The whole key of the packet that made it (for revalidation).
    pub first: PackedKey,
    pub actions: Vec<DpAction>,
    pub touched: Vec<Touch>,
    /// What its translation learned (flows, MACs): its packets learn it
    /// again when their counts are pushed.
    pub learned: crate::ofproto::Learned,
    pub created_ns: u64,
    pub used_ns: u64,
    pub packets: u64,
    pub bytes: u64,
    /// Counts not yet credited to the OpenFlow entries.
    pub(super) unpushed: (u64, u64),
    /// In the lower cache too.
    pub offloaded: Option<Offloaded>,
}

impl Megaflow {
    /// The megaflow for packets like `first` under `mask`, made at `now`.
    pub fn new(first: PackedKey, mask: PackedKey, actions: Vec<DpAction>, now: u64) -> Megaflow {
        Megaflow {
            mask,
            key: masked(&first, &mask),
            first,
            actions,
            touched: Vec::new(),
            learned: Default::default(),
            created_ns: now,
            used_ns: now,
            packets: 0,
            bytes: 0,
            unpushed: (0, 0),
            offloaded: None,
        }
    }
}

/// Packets and bytes a lower cache forwarded for one megaflow, since it
/// took it (cumulative).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub packets: u64,
    pub bytes: u64,
}

impl Counts {
    /// What came after `earlier`.
    pub fn since(self, earlier: Counts) -> Counts {
        Counts {
            packets: self.packets.wrapping_sub(earlier.packets),
            bytes: self.bytes.wrapping_sub(earlier.bytes),
        }
    }
}

/// A megaflow in a lower cache: its handle and the counts already taken
/// into the megaflow.
#[derive(Copy, Clone, Debug)]
pub struct Offloaded {
    pub handle: u32,
    pub seen: Counts,
}
