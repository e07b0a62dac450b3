//! An OpenFlow 1.3 switch with Open vSwitch's datapath caches.

pub mod agent;
pub mod channel;
pub mod core;
pub mod dpif;
mod error;
pub mod flow;
pub mod odp;
pub mod ofproto;

pub use error::OfError;
