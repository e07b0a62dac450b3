//! Packets: builders for common shapes (on etherparse) and the traffic
//! generator.

mod build;
mod conversation;
mod generate;

pub use build::{Builder, L4};
pub use conversation::{ConvPackets, Conversation};
pub use generate::{GenSpec, GenSpecError, Generator, Proto, merge};
