//! An OpenFlow 1.3 switch with Open vSwitch's datapath caches.

pub mod agent;
pub mod channel;
pub mod control;
pub mod core;
pub mod dpif;
mod error;
pub mod flow;
pub mod link;
pub mod live;
pub mod odp;
pub mod offload;
pub mod ofproto;
pub mod pmd;
pub mod replay;

pub use error::OfError;

/// Datapath flows unused this long go (Open vSwitch's default max-idle).
pub const MEGAFLOW_IDLE_NS: u64 = 10_000_000_000;
