//! The flow record an exporter sends: one direction of one flow, as sluice's
//! flow accounting closes it.

use std::fmt;
use std::net::IpAddr;

/// IP protocol numbers that carry ICMP type and code instead of ports.
pub const PROTO_ICMP: u8 = 1;
/// ICMP for IPv6.
pub const PROTO_ICMPV6: u8 = 58;

/// Why a flow was exported: the values of `flowEndReason` (IE 136, RFC 7012
/// section 5.11.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// No packet for the idle timeout (0x01).
    IdleTimeout,
    /// The flow lasted the active timeout; it goes on in a new record (0x02).
    ActiveTimeout,
    /// The end of the flow was seen: TCP FIN or RST (0x03).
    EndOfFlow,
    /// Forced end: the exporter shut down, the cache was flushed (0x04).
    ForcedEnd,
    /// Lack of resources: evicted from a full flow table (0x05).
    LackOfResources,
}

impl EndReason {
    /// The value on the wire.
    pub fn code(self) -> u8 {
        match self {
            EndReason::IdleTimeout => 1,
            EndReason::ActiveTimeout => 2,
            EndReason::EndOfFlow => 3,
            EndReason::ForcedEnd => 4,
            EndReason::LackOfResources => 5,
        }
    }

    /// The reason for a value on the wire, `None` for a value RFC 7012 does
    /// not define.
    pub fn from_code(code: u8) -> Option<EndReason> {
        Some(match code {
            1 => EndReason::IdleTimeout,
            2 => EndReason::ActiveTimeout,
            3 => EndReason::EndOfFlow,
            4 => EndReason::ForcedEnd,
            5 => EndReason::LackOfResources,
            _ => return None,
        })
    }

    /// Every reason, in wire order.
    pub const ALL: [EndReason; 5] = [
        EndReason::IdleTimeout,
        EndReason::ActiveTimeout,
        EndReason::EndOfFlow,
        EndReason::ForcedEnd,
        EndReason::LackOfResources,
    ];
}

impl fmt::Display for EndReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EndReason::IdleTimeout => "idle-timeout",
            EndReason::ActiveTimeout => "active-timeout",
            EndReason::EndOfFlow => "end-of-flow",
            EndReason::ForcedEnd => "forced-end",
            EndReason::LackOfResources => "lack-of-resources",
        })
    }
}

/// One flow record.
///
/// The counters are deltas: what the flow carried since its previous record
/// (its whole life when it is exported once). Times are UNIX epoch
/// nanoseconds; IPFIX carries them to the millisecond
/// (`flowStartMilliseconds`, `flowEndMilliseconds`), so a decoded record has
/// them truncated to whole milliseconds ([`Flow::to_millis`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Flow {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    pub protocol: u8,
    /// ICMP type * 256 + code, for ICMP over IPv4 or ICMPv6 over IPv6 only.
    pub icmp_type_code: Option<u16>,
    pub packets: u64,
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// The OR of the TCP flags of the flow's packets (0 for other protocols).
    pub tcp_flags: u8,
    pub end_reason: EndReason,
}

impl Flow {
    /// Whether the addresses are IPv6 (the IPv6 template).
    pub fn is_ipv6(&self) -> bool {
        self.src.is_ipv6()
    }

    /// The same record with its times truncated to whole milliseconds: what
    /// a collector receives.
    pub fn to_millis(&self) -> Flow {
        Flow {
            first_ns: self.first_ns / 1_000_000 * 1_000_000,
            last_ns: self.last_ns / 1_000_000 * 1_000_000,
            ..self.clone()
        }
    }

    /// Why this record cannot be exported, if it cannot.
    pub fn check(&self) -> Result<(), &'static str> {
        if self.src.is_ipv6() != self.dst.is_ipv6() {
            return Err("source and destination addresses are of different families");
        }
        if self.icmp_type_code.is_some() && self.protocol != self.icmp_protocol() {
            return Err("an ICMP type and code on a flow that is not ICMP of its IP version");
        }
        if self.last_ns < self.first_ns {
            return Err("the flow ends before it starts");
        }
        Ok(())
    }

    /// The ICMP protocol number of this flow's IP version.
    pub(crate) fn icmp_protocol(&self) -> u8 {
        if self.is_ipv6() {
            PROTO_ICMPV6
        } else {
            PROTO_ICMP
        }
    }
}

impl fmt::Display for Flow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (ms0, ms1) = (self.first_ns / 1_000_000, self.last_ns / 1_000_000);
        match self.icmp_type_code {
            Some(tc) => write!(
                f,
                "{} -> {} proto {} icmp {}/{}",
                self.src,
                self.dst,
                self.protocol,
                tc >> 8,
                tc & 0xff
            )?,
            None => write!(
                f,
                "{}:{} -> {}:{} proto {}",
                fmt_addr(self.src),
                self.src_port,
                fmt_addr(self.dst),
                self.dst_port,
                self.protocol
            )?,
        }
        write!(
            f,
            " packets {} bytes {} ms {}..{} flags {:#04x} end {}",
            self.packets, self.bytes, ms0, ms1, self.tcp_flags, self.end_reason
        )
    }
}

fn fmt_addr(a: IpAddr) -> String {
    match a {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}
