//! IPFIX export of flow records (RFC 7011, information elements of RFC 7012).
//!
//! A [`Flow`] is one direction of one flow as sluice's flow accounting
//! closes it. The [`Encoder`] packs flows into messages no longer than a
//! maximum size (records of a template share a set, sets are padded to four
//! bytes), numbers them (the sequence number counts the data records sent
//! before the message) and puts the templates ([`TEMPLATE_IPV4`],
//! [`TEMPLATE_IPV6`]) where the [`Refresh`] rule wants them. Exporters send
//! the messages: [`UdpExporter`] (templates again every N messages or T
//! seconds), [`TcpExporter`] and [`FileExporter`] (RFC 5655 files; templates
//! once). The [`Decoder`] reads messages back and refuses malformed ones.
//!
//! ```
//! use ipfix::{Decoder, EndReason, Encoder, Flow, Refresh};
//! use std::time::{Duration, UNIX_EPOCH};
//! let flow = Flow {
//!     src: "10.0.0.1".parse().unwrap(),
//!     dst: "10.0.0.2".parse().unwrap(),
//!     src_port: 40000,
//!     dst_port: 443,
//!     protocol: 6,
//!     icmp_type_code: None,
//!     packets: 12,
//!     bytes: 3400,
//!     first_ns: 1_700_000_000_000_000_000,
//!     last_ns: 1_700_000_001_500_000_000,
//!     tcp_flags: 0x1b,
//!     end_reason: EndReason::EndOfFlow,
//! };
//! let mut enc = Encoder::new(1, 1400, Refresh::Once).unwrap();
//! let now = UNIX_EPOCH + Duration::from_secs(1_700_000_002);
//! let msgs = enc.encode(std::slice::from_ref(&flow), now).unwrap();
//! let msg = Decoder::new().decode(&msgs[0]).unwrap();
//! assert_eq!(msg.flows, vec![flow]);
//! assert_eq!(enc.sequence(), 1);
//! ```

mod decode;
mod encode;
mod error;
mod export;
mod file;
mod flow;
mod ie;
pub mod nfdump;

pub use decode::{Decoder, Message};
pub use encode::{Encoder, MAX_MESSAGE, MIN_MESSAGE, Refresh};
pub use error::{DecodeError, Error};
pub use export::{Sent, TcpExporter, UdpExporter, UdpOptions};
pub use file::{FileExporter, Written};
pub use flow::{EndReason, Flow, PROTO_ICMP, PROTO_ICMPV6};
pub use ie::{Field, IPV4_FIELDS, IPV6_FIELDS, TEMPLATE_IPV4, TEMPLATE_IPV6, id};
