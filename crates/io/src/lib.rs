//! Sources and sinks of packets. Sources and sinks never look inside
//! packets beyond their link layer.

mod frame;
mod pcap;
#[cfg(target_os = "linux")]
pub mod xsk;

pub use frame::{Frame, LinkKind, to_ethernet as to_ethernet_for_tests};
pub use pcap::{IoError, PcapSink, PcapSource, SinkFormat};
