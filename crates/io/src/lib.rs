//! Sources and sinks of packets. Sources and sinks never look inside
//! packets beyond their link layer.

mod error;
mod frame;
mod input;
mod ip_links;
mod juniper;
mod pcap;
mod pcapng;
mod sink;
mod wifi;
#[cfg(target_os = "linux")]
pub mod xsk;

pub use error::IoError;
pub use frame::{
    Frame, FrameInfo, LinkKind, RawFrame, describe_linktype, linktype_name, to_ethernet,
    to_ethernet as to_ethernet_for_tests, to_ethernet_into,
};
pub use input::{STDIN, is_stdin, is_stream};
pub use pcap::PcapSource;
pub use sink::{PcapSink, SinkFormat, is_stdout};
