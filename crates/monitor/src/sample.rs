//! Trajectory sampling (Duffield and Grossglauser, "Trajectory sampling for
//! direct traffic observation"; RFC 5475's hash-based selection): every
//! measurement point computes a hash `h(x)` over the part of a packet that
//! does not change in flight and samples the packet when
//! `h(x) mod A < B`, so every point samples the same packets, about `B/A`
//! of them. A second hash `g` over the packet's flow labels it: a sampled
//! packet is reported as a [`Sample`] (label, `h(x)`, time); the first time
//! a label is seen, a [`LabelFlow`] (label, 5-tuple) goes before it, so
//! user space can name the flow. Across points, a packet is identified by
//! (label, `h(x)`): 64 bits.
//!
//! This module is the reference; `programs/sample.c` (eBPF) and
//! `programs/xpf/sample.s` (xPF) follow the same rules word for word:
//!
//! - **Frames.** Ethernet, up to two VLAN tags (802.1Q, 802.1ad), then an
//!   IPv4 header (version 4, IHL at least 5, its 20 bytes in the frame) or
//!   an IPv6 header (version 6, its 40 bytes in the frame). Anything else is
//!   not hashed (and never sampled).
//! - **The datagram's end**: the IP header's start plus its length (IPv4:
//!   total length; IPv6: payload length + 40), or the frame's end when the
//!   field is 0 or reaches past the frame.
//! - **`h`'s words** (32-bit, big-endian, as classic BPF's `ld [k]` loads
//!   them). IPv4: word 0 masked `0xff00ffff` (no TOS: DSCP and ECN are
//!   rewritten in flight), word 1 whole (identification, flags, fragment
//!   offset), word 2 masked `0x00ff0000` (the protocol: no TTL, no
//!   checksum), source, destination; options are left out (routers may
//!   write them). IPv6: word 0 masked `0xf0000000` (the version: no traffic
//!   class, and no flow label, which RFC 6437 lets a router set), word 1
//!   masked `0xffffff00` (payload length and next header: no hop limit),
//!   source and destination (8 words). Then the first 16 bytes after the
//!   fixed header (IPv4: after `IHL * 4`; IPv6: after 40, extension headers
//!   included as bytes) that lie before the datagram's end, as words, a
//!   last partial word padded with zero bytes.
//! - **`g`'s words** (the flow): `family << 8 | protocol` (family 4 or 6;
//!   IPv6's next header of the fixed header, no extension header walked),
//!   source, destination (1 or 4 words each), then `sport << 16 | dport`
//!   for TCP, UDP, SCTP and UDP-Lite, `type << 8 | code` for ICMP and
//!   ICMPv6, when those bytes lie before the datagram's end and the packet
//!   is no later IPv4 fragment; 0 otherwise. These are also the flow
//!   record's fields.
//! - **The hash** of words `w`: `s = seed`; for each word
//!   `s = (s ^ w) * mul; s ^= s >> 15` (32-bit, wrapping); then murmur3's
//!   32-bit finalizer (`s ^= s >> 16; s *= 0x85ebca6b; s ^= s >> 13;
//!   s *= 0xc2b2ae35; s ^= s >> 16`). `h`: seed `0x243f6a88`, mul
//!   `0x9e3779b1`; `g`: seed `0xb7e15162`, mul `0x2545f491`. Only 32-bit
//!   xor, multiply and shifts: the same in C and in 32-bit classic BPF.
//! - **The label** is `g`, except that 0 becomes 1 (0 marks an empty slot
//!   of the xPF program's table).
//! - **Sampling**: when `h mod A < B` (`A` at least 1). A sampled packet
//!   whose label is not among the labels seen gets a flow record first.
//! - **The labels seen** are kept in a table of `slots` words (a power of
//!   two), the same in all three versions so they agree even when it
//!   fills: a label lives in one of the [`PROBES`] slots from
//!   `label & (slots - 1)` on (wrapping); a probe stops at the label (seen)
//!   or at an empty slot (0), where a new label is written. A label that
//!   finds neither in its slots is not remembered: the flow record is sent
//!   anyway and counted ([`SampleCounts::full`]), at every such packet:
//!   never silently. (The kernel's hash map could hold exactly `N` labels,
//!   but xPF can only mirror it with a loop over the table, which the
//!   verifiers cannot walk in reasonable time.)
//!
//! ```
//! use monitor::{SampleRecord, Sampler};
//! let mut frame = vec![0u8; 14 + 20 + 8];
//! frame[12..14].copy_from_slice(&[0x08, 0x00]);
//! frame[14] = 0x45; // IPv4, 20-byte header
//! frame[22] = 64; // TTL
//! frame[23] = 17; // UDP
//! let inv = monitor::invariants(&frame).unwrap();
//! frame[22] = 63; // one hop later
//! assert_eq!(monitor::invariants(&frame).unwrap(), inv);
//! let mut all = Sampler::new(1, 1, 16); // B/A = 1: every packet
//! let mut out = Vec::new();
//! all.packet(&frame, 5, &mut out);
//! all.packet(&frame, 6, &mut out);
//! assert!(matches!(out[..], [SampleRecord::Flow(_), SampleRecord::Sample(_), SampleRecord::Sample(_)]));
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::key::FlowKey;

/// `h`'s seed and multiplier.
pub const H_SEED: u32 = 0x243f_6a88;
pub const H_MUL: u32 = 0x9e37_79b1;
/// `g`'s seed and multiplier.
pub const G_SEED: u32 = 0xb7e1_5162;
pub const G_MUL: u32 = 0x2545_f491;
/// Bytes after the IP header that `h` covers.
pub const PAYLOAD_BYTES: usize = 16;
/// Slots a label may take in the table, from its first.
pub const PROBES: usize = 8;

/// One word into a hash's state.
pub fn hash_step(s: u32, w: u32, mul: u32) -> u32 {
    let s = (s ^ w).wrapping_mul(mul);
    s ^ (s >> 15)
}

/// The finalizer (murmur3's fmix32).
pub fn hash_finish(mut s: u32) -> u32 {
    s ^= s >> 16;
    s = s.wrapping_mul(0x85eb_ca6b);
    s ^= s >> 13;
    s = s.wrapping_mul(0xc2b2_ae35);
    s ^ (s >> 16)
}

/// The hash of `words` with a seed and multiplier.
pub fn hash_words(words: &[u32], seed: u32, mul: u32) -> u32 {
    hash_finish(words.iter().fold(seed, |s, &w| hash_step(s, w, mul)))
}

/// What sampling reads of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Invariant {
    /// `h(x)`: decides sampling; identifies the packet within its flow.
    pub hash: u32,
    /// The label (`g` of the flow, never 0).
    pub label: u32,
    /// The flow the label stands for.
    pub flow: FlowKey,
}

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86dd;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The invariant facts of an Ethernet frame (the module's rules); `None`
/// when it carries no IP header to hash.
pub fn invariants(frame: &[u8]) -> Option<Invariant> {
    let mut at = 12;
    let mut ethertype = be16(frame, at)?;
    for _ in 0..2 {
        if ethertype != 0x8100 && ethertype != 0x88a8 {
            break;
        }
        at += 4;
        ethertype = be16(frame, at)?;
    }
    let ip = frame.get(at + 2..)?;
    let mut words: Vec<u32> = Vec::with_capacity(16);
    let (l4, len, family, protocol, later_fragment, src, dst) = match ethertype {
        ETH_IPV4 => {
            if ip.len() < 20 || ip[0] >> 4 != 4 || ip[0] & 15 < 5 {
                return None;
            }
            words.extend([
                be32(ip, 0) & 0xff00_ffff,
                be32(ip, 4),
                be32(ip, 8) & 0x00ff_0000,
                be32(ip, 12),
                be32(ip, 16),
            ]);
            let len = usize::from(be16(ip, 2)?);
            let src: [u8; 4] = ip[12..16].try_into().expect("4");
            let dst: [u8; 4] = ip[16..20].try_into().expect("4");
            (
                usize::from(ip[0] & 15) * 4,
                len,
                4u8,
                ip[9],
                be16(ip, 6)? & 0x1fff != 0,
                IpAddr::V4(Ipv4Addr::from(src)),
                IpAddr::V4(Ipv4Addr::from(dst)),
            )
        }
        ETH_IPV6 => {
            if ip.len() < 40 || ip[0] >> 4 != 6 {
                return None;
            }
            words.push(be32(ip, 0) & 0xf000_0000);
            words.push(be32(ip, 4) & 0xffff_ff00);
            words.extend((8..40).step_by(4).map(|i| be32(ip, i)));
            let plen = usize::from(be16(ip, 4)?);
            let src: [u8; 16] = ip[8..24].try_into().expect("16");
            let dst: [u8; 16] = ip[24..40].try_into().expect("16");
            (
                40,
                if plen == 0 { 0 } else { plen + 40 },
                6u8,
                ip[6],
                false,
                IpAddr::V6(Ipv6Addr::from(src)),
                IpAddr::V6(Ipv6Addr::from(dst)),
            )
        }
        _ => return None,
    };
    let end = if len == 0 || len > ip.len() {
        ip.len()
    } else {
        len
    };
    let payload = ip.get(l4..end.max(l4)).unwrap_or(&[]);
    let head = &payload[..payload.len().min(PAYLOAD_BYTES)];
    for chunk in head.chunks(4) {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        words.push(u32::from_be_bytes(w));
    }
    let hash = hash_words(&words, H_SEED, H_MUL);
    let (mut src_port, mut dst_port) = (0, 0);
    if !later_fragment {
        match protocol {
            6 | 17 | 132 | 136 if payload.len() >= 4 => {
                src_port = be16(payload, 0)?;
                dst_port = be16(payload, 2)?;
            }
            1 | 58 if payload.len() >= 2 => dst_port = be16(payload, 0)?,
            _ => {}
        }
    }
    let flow = FlowKey {
        src,
        dst,
        protocol,
        src_port,
        dst_port,
    };
    Some(Invariant {
        hash,
        label: label(family, &flow),
        flow,
    })
}

/// The label of a flow (`g`, 0 made 1).
pub fn label(family: u8, flow: &FlowKey) -> u32 {
    let mut words = vec![u32::from(family) << 8 | u32::from(flow.protocol)];
    for a in [flow.src, flow.dst] {
        match a {
            IpAddr::V4(a) => words.push(u32::from(a)),
            IpAddr::V6(a) => {
                let b = a.octets();
                words.extend((0..16).step_by(4).map(|i| be32(&b, i)));
            }
        }
    }
    words.push(u32::from(flow.src_port) << 16 | u32::from(flow.dst_port));
    match hash_words(&words, G_SEED, G_MUL) {
        0 => 1,
        g => g,
    }
}

/// Whether `hash` is sampled at rate `b / a`.
pub fn sampled(hash: u32, a: u32, b: u32) -> bool {
    a != 0 && hash % a < b
}

/// A sampled packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sample {
    pub label: u32,
    pub hash: u32,
    /// When the packet arrived (nanoseconds; replays: the capture's time).
    pub time_ns: u64,
}

/// A label's flow, sent with the first sample of the label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LabelFlow {
    pub label: u32,
    pub flow: FlowKey,
}

/// What sampling hands to user space, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SampleRecord {
    Flow(LabelFlow),
    Sample(Sample),
}

/// What a sampler counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleCounts {
    /// IP packets hashed.
    pub hashed: u64,
    /// Packets sampled.
    pub sampled: u64,
    /// Flow records sent.
    pub flows: u64,
    /// Flow records sent for a label a full table could not remember.
    pub full: u64,
    /// Records lost on the way to user space (a full ring buffer or log).
    pub lost: u64,
}

/// The table's slots for a requested size: a power of two, at least
/// [`PROBES`].
pub fn table_slots(size: usize) -> usize {
    size.max(PROBES).next_power_of_two()
}

/// The reference sampler.
#[derive(Clone, Debug)]
pub struct Sampler {
    a: u32,
    b: u32,
    table: Vec<u32>,
    counts: SampleCounts,
}

/// Where a label is, or could go, in a table.
enum Slot {
    Seen,
    Empty(usize),
    Full,
}

fn probe(table: &[u32], label: u32) -> Slot {
    let mask = table.len() - 1;
    for i in 0..PROBES {
        let at = (label as usize).wrapping_add(i) & mask;
        match table[at] {
            l if l == label => return Slot::Seen,
            0 => return Slot::Empty(at),
            _ => {}
        }
    }
    Slot::Full
}

impl Sampler {
    /// Samples `b` of every `a` (by hash); keeps labels in a table of
    /// [`table_slots`]`(size)` slots.
    pub fn new(a: u32, b: u32, size: usize) -> Sampler {
        Sampler {
            a,
            b,
            table: vec![0; table_slots(size)],
            counts: SampleCounts::default(),
        }
    }

    /// One packet seen at `time_ns`; its records (if sampled) go to `out`.
    pub fn packet(&mut self, frame: &[u8], time_ns: u64, out: &mut Vec<SampleRecord>) {
        let Some(inv) = invariants(frame) else {
            return;
        };
        self.counts.hashed += 1;
        if !sampled(inv.hash, self.a, self.b) {
            return;
        }
        self.counts.sampled += 1;
        let slot = probe(&self.table, inv.label);
        if !matches!(slot, Slot::Seen) {
            match slot {
                Slot::Empty(at) => self.table[at] = inv.label,
                _ => self.counts.full += 1,
            }
            self.counts.flows += 1;
            out.push(SampleRecord::Flow(LabelFlow {
                label: inv.label,
                flow: inv.flow,
            }));
        }
        out.push(SampleRecord::Sample(Sample {
            label: inv.label,
            hash: inv.hash,
            time_ns,
        }));
    }

    pub fn counts(&self) -> SampleCounts {
        self.counts
    }
}
