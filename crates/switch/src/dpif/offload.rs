//! A cache below the datapath's: megaflows the datapath installs are
//! offered to it; those it takes, it forwards itself, and the packets it
//! forwards never reach the datapath. Their counts are pulled back into
//! the megaflows, so that statistics, idle expiry and the OpenFlow
//! entries' counters see every packet. The XDP fast path
//! (`xdp_offload.rs`) is one: it depends on this trait, never the other
//! way round.

use super::megaflow::{Counts, Megaflow};

/// A lower cache, shared by the datapaths of every packet thread.
pub trait Offload: Send + Sync {
    /// Takes `mf` if it can forward its packets exactly as the datapath
    /// would: its handle, and its counts at that moment (the base later
    /// counts are taken from). None leaves the megaflow to the datapath.
    fn install(&self, mf: &Megaflow) -> Option<(u32, Counts)>;

    /// The counts of `handle` now.
    fn counts(&self, handle: u32) -> Counts;

    /// Takes megaflow `mf` (installed as `handle`) out; its counts once
    /// no packet can reach it any more.
    fn remove(&self, handle: u32, mf: &Megaflow) -> Counts;
}
