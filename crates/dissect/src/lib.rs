//! tcpdump-style packet lines: one line per packet in the form
//! `TZ=UTC tcpdump -n` (4.99) prints, for Ethernet (LINKTYPE 1) frames
//! carrying 802.1Q, ARP, IPv4, IPv6, TCP, UDP, ICMP and ICMPv6, with the
//! flags `-e`, `-t`/`-tt`/`-ttt`, `-v` (the IPv4/IPv6
//! header with its options, TCP/UDP/ICMP checksums) and `-x`/`-X`/`-A`.
//!
//! Not decoded (the line stops where tcpdump would hand over to a decoder
//! we do not have): application protocols on TCP/UDP ports (DNS, NTP,
//! HTTP, BGP...; a UDP datagram prints `UDP, length N`, a TCP segment ends
//! at `length N`), IPv6 extension headers other than hop-by-hop, IP
//! protocols other than TCP/UDP/ICMP/ICMPv6 (printed as `ip-proto-N N`),
//! MPTCP and TCP-AO options, ICMP/ICMPv6 types other than echo,
//! unreachable, time exceeded and neighbour discovery, and `-v` beyond
//! the IP header and checksums. Timestamps are printed in UTC (tcpdump's
//! local time when `TZ=UTC`). Link types other than Ethernet print
//! `[|linktype N]` and are left to a later step.

mod addr;
mod checksum;
mod cursor;
mod hex;
mod icmp;
mod ip;
mod ipopt;
mod link;
mod time;
mod transport;

use std::collections::HashMap;

/// How the timestamp at the start of a line is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeFormat {
    /// `HH:MM:SS.micro` in UTC (tcpdump's default with `TZ=UTC`).
    #[default]
    Default,
    /// No timestamp (`-t`).
    None,
    /// Seconds since the epoch (`-tt`).
    Epoch,
    /// Time since the previous packet (`-ttt`).
    Delta,
}

/// Which dump of the packet follows its line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hex {
    /// No dump.
    #[default]
    None,
    /// Hex (`-x`).
    X,
    /// Hex and ASCII (`-X`).
    XAscii,
    /// ASCII only (`-A`).
    Ascii,
}

/// tcpdump's printing flags that the printer honours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintOptions {
    /// `-n`: addresses and ports as numbers (the only form for now).
    pub numeric: bool,
    /// `-e`: print the link-level header.
    pub link: bool,
    /// `-t`, `-tt`, `-ttt`.
    pub time: TimeFormat,
    /// `-v` count.
    pub verbose: u8,
    /// `-x`, `-X`, `-A`.
    pub hex: Hex,
}

impl Default for PrintOptions {
    fn default() -> Self {
        PrintOptions {
            numeric: true,
            link: false,
            time: TimeFormat::Default,
            verbose: 0,
            hex: Hex::None,
        }
    }
}

/// The Ethernet link type in pcap files.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// One TCP conversation's base sequence numbers, for tcpdump's relative
/// `seq`/`ack` (keyed like tcpdump: the endpoint with the lower port first).
#[derive(Clone, Copy)]
pub(crate) struct SeqBase {
    pub(crate) seq: u32,
    pub(crate) ack: u32,
}

/// Prints packets one after another; keeps what tcpdump keeps between
/// packets (the previous timestamp for `-ttt`, the TCP sequence bases).
pub struct Printer {
    opts: PrintOptions,
    prev_ts_ns: Option<u64>,
    pub(crate) tcp_seqs: HashMap<Vec<u8>, SeqBase>,
}

impl Printer {
    /// A printer with no packet seen yet.
    pub fn new(opts: PrintOptions) -> Printer {
        Printer {
            opts,
            prev_ts_ns: None,
            tcp_seqs: HashMap::new(),
        }
    }

    /// The line (and, with `-x`/`-X`/`-A`, the dump lines) for one packet,
    /// without the final newline: `frame` is the captured bytes,
    /// `wire_len` the packet's length on the wire, `ts_ns` its time.
    pub fn line(&mut self, frame: &[u8], wire_len: u32, linktype: u32, ts_ns: u64) -> String {
        let mut p = cursor::Out::new(frame.len());
        p.push(&time::format(self.opts.time, ts_ns, self.prev_ts_ns));
        self.prev_ts_ns = Some(ts_ns);
        let opts = self.opts;
        let hdrlen = if linktype == LINKTYPE_ETHERNET {
            link::ether(&mut p, self, frame, wire_len, &opts)
        } else {
            p.text.push_str(&format!("[|linktype {linktype}]"));
            0
        };
        let from = if p.ran_off { 0 } else { hdrlen };
        hex::dump(&mut p.text, opts.hex, frame.get(from..).unwrap_or(&[]));
        p.text
    }
}
