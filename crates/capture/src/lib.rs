//! Sources and sinks of packets. Sources and sinks never look inside
//! packets beyond their link layer.

mod error;
mod frame;
mod input;
mod ip_links;
mod juniper;
mod linktype;
mod pcap;
mod pcapng;
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
pub use sink::{PcapSink, SinkFormat, is_stdout};
pub use whole::{
    LIMIT_VAR, Limit, WholeFileError, WholeFileReason, effective_limit, read as read_whole,
    read_text as read_whole_text,
};
