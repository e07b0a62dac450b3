//! An OpenFlow 1.3 switch with Open vSwitch's datapath caches.
//!
//! Everything a user of the switch needs is here, at the crate root:
//!
//! - the switch itself, [`Core`]: its OpenFlow tables, ports and clock,
//!   shared by the packet threads and the OpenFlow agent; frames leave it
//!   through a [`Transmit`];
//! - its datapath, [`Datapath`]: an exact-match cache and a megaflow
//!   classifier in front of the tables ([`CacheOptions`], counted in
//!   [`TierStats`]), with an optional lower cache ([`Offload`], the XDP fast
//!   path [`XdpOffload`]);
//! - the OpenFlow [`Channel`] to controllers and clients ([`Endpoint`]s in
//!   Open vSwitch's syntax), and the [`ControlSocket`] a running switch
//!   answers `stats` and `dump-flows` on;
//! - two ways to run it: over captures ([`replay`] of [`PcapPort`]s, no root
//!   needed) and on interfaces ([`run_live`] on [`LivePort`]s);
//! - what it prints: the OpenFlow flows ([`dump_flows`]) and the megaflows
//!   ([`format_megaflow`], as `ovs-appctl dpctl/dump-flows`).
//!
//! The flow key (a packet's header fields at fixed places) is the public
//! module [`flow`]. Inside, the modules keep Open vSwitch's names (`dpif`,
//! `ofproto`, `odp`), for readers who know its source.
//!
//! ```
//! let core = switch::Core::new(0x51);
//! let ports = [switch::PcapPort {
//!     port_no: 1,
//!     name: "p1".into(),
//!     input: None,
//!     output: None,
//! }];
//! let report = switch::replay(&core, &ports, None, switch::CacheOptions::default()).unwrap();
//! assert_eq!(report.packets, 0);
//! ```

mod agent;
mod channel;
mod control;
mod core;
mod dpif;
mod error;
pub mod flow;
mod link;
mod live;
mod odp;
mod ofproto;
mod pmd;
mod replay;
mod xdp_offload;

pub use crate::core::{Core, PmdStats, PortTable, SwitchPortCounters, Transmit};
pub use agent::dump_flows;
pub use channel::{
    Channel, ChannelError, ChannelEvent, ChannelOptions, Endpoint, EndpointError, Limits, TlsFiles,
};
pub use control::ControlSocket;
pub use dpif::{
    CacheOptions, Counts, Datapath, Megaflow, Offload, Offloaded, Output, Shared, TierStats,
    execute, format_megaflow,
};
pub use error::{OfError, SwitchError};
pub use link::{interface_port, interface_state};
pub use live::{Backend, LiveOptions, LivePort, LiveReport, run_live};
pub use odp::{DpAction, ToController};
pub use ofproto::{Ofproto, PortVlan};
pub use pmd::PortRef;
pub use replay::{PcapPort, ReplayReport, replay};
pub use xdp_offload::{OffloadReport, XdpOffload, XdpPortCounts};

/// Datapath flows unused this long go (Open vSwitch's default max-idle).
pub const MEGAFLOW_IDLE_NS: u64 = 10_000_000_000;
