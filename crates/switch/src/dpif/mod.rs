//! The datapath (Open vSwitch's dpif-netdev): packets run cached actions;
//! a miss asks the OpenFlow tables.

mod execute;

pub use execute::{Output, execute};
