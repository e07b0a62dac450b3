//! The datapath (Open vSwitch's dpif-netdev): per thread, an exact-match
//! cache and a megaflow classifier in front of the OpenFlow tables; the
//! cached actions run on each packet.

mod datapath;
mod dpcls;
mod emc;
mod execute;
mod format;
mod offload;

pub use datapath::{CacheOptions, Datapath, Megaflow, Shared, TierStats};
pub use execute::{Output, execute};
pub use format::format_megaflow;
pub use offload::{Counts, Offload, Offloaded};
