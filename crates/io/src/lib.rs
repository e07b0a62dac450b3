//! Sources and sinks of packets. Sources and sinks never look inside
//! packets beyond their link layer.

mod frame;
mod pcap;
mod pcapng;
mod wifi;
#[cfg(target_os = "linux")]
pub mod xsk;

pub use frame::{
    Frame, FrameInfo, LinkKind, describe_linktype, linktype_name, to_ethernet,
    to_ethernet as to_ethernet_for_tests, to_ethernet_into,
};
pub use pcap::{IoError, PcapSink, PcapSource, RawFrame, SinkFormat};
