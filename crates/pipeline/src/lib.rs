//! One packet pipeline for every front end: *source -> batch -> hook ->
//! verdict -> sink*.
//!
//! A [`Source`] (a capture, the generator, packets in memory, a live
//! interface: [`Live`]) fills [`Batch`]es of up to [`BATCH`] packets in
//! one reused buffer; a hook (a program of an object, [`runtime::Hook`])
//! runs them; each verdict takes its [`Route`] to the sinks the [`Sinks`]
//! table names (pcap writers, memory, an interface: [`InterfaceSink`]);
//! [`ReplayCounters`] gather verdicts, costs, redirects and errors where the
//! work is done, and, when asked, one record per packet ([`PacketLog`]).
//! [`replay`] runs the loop on the caller's thread, or on
//! several workers, each with its own hook on the same maps: over byte
//! ranges of a capture file, each record read once
//! ([`ReplayOptions::ranges`]), or sharded by flow ([`Sharding`]).

mod batch;
mod counters;
mod filtered;
mod histogram;
mod live;
mod ordered;
mod packet_log;
mod ranges;
mod record;
mod replay;
mod replay_shared;
mod shard;
mod sink;
mod source;
mod worker;

pub use batch::{BATCH, Batch, PacketInfo};
pub use counters::{CloneTarget, FIRST_ERRORS, PacketError, ReplayCounters, TRACE_LINES, Tally};
pub use filtered::Filtered;
pub use histogram::Histogram;
pub use kernel::netdev::{Interface, InterfaceError};
pub use live::{Direction, InterfaceSink, Live, LiveStats, PortCounts};
pub use packet_log::PacketLog;
pub use ranges::{RANGE_BYTES, RangesRead, range_count};
pub use record::{Recorded, record};
pub use replay::{ReplaySummary, replay};
pub use replay_shared::{ReplayError, ReplayOptions};
pub use shard::{Sharding, UnknownSharding, flow_hash};
pub use sink::{Collect, Collected, PcapWriter, Route, Sink, SinkError, Sinks};
pub use source::{
    Capture, Foreign, Generated, Packets, Source, SourceError, Step, for_each_packet, for_each_step,
};
pub use worker::Worker;
