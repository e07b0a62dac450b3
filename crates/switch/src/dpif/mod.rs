//! The datapath (Open vSwitch's dpif-netdev): per thread, an exact-match
//! cache and a megaflow classifier in front of the OpenFlow tables; the
//! cached actions run on each packet.

mod datapath;
mod dpcls;
mod emc;
mod execute;
mod format;
mod megaflow;
mod offload;

pub use datapath::{CacheOptions, Datapath, Shared, TierStats};
pub use execute::{Output, execute};
pub use format::format_megaflow;
pub use megaflow::{Counts, Megaflow, Offloaded};
pub use offload::Offload;
