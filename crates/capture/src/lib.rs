//! Sources and sinks of packets. Sources and sinks never look inside
//! packets beyond their link layer. A capture list can be planned as
//! shards ([`plan`]), byte ranges of a file read on their own
//! ([`PcapSource::open_range`]) and proven exact ([`check`]).

mod error;
mod frame;
mod guess;
mod input;
mod ip_links;
mod juniper;
mod linktype;
mod pcap;
mod pcapng;
mod proof;
mod range;
mod shard;
mod sink;
mod whole;
mod wifi;
#[cfg(target_os = "linux")]
pub mod xsk;

pub use error::IoError;
pub use frame::{
    Frame, FrameInfo, LinkKind, RawFrame, to_ethernet, to_ethernet as to_ethernet_for_tests,
    to_ethernet_into,
};
pub use input::{STDIN, is_stdin, is_stream};
pub use linktype::{UnknownLinkType, describe_linktype, linktype_from_name, linktype_name};
pub use pcap::PcapSource;
pub use pcapng::Interface;
pub use proof::{Checked, Redo, check, read_checked};
pub use range::{Boundary, Position, RangeStart, ReaderState, WalkedRange};
pub use shard::{Shard, ShardError, parse_split, plan};
pub use sink::{PcapSink, SinkFormat, is_stdout};
pub use whole::{
    LIMIT_VAR, Limit, WholeFileError, WholeFileReason, effective_limit, read as read_whole,
    read_text as read_whole_text,
};
