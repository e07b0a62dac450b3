//! Packets: builders for common shapes (on etherparse) and the traffic
//! generator's specification.

mod build;

pub use build::{Builder, L4};
