//! Passive round-trip-time estimation, the reference (issue 17;
//! docs/monitor.md "Passive RTT"). Two methods, per flow, on the monitor's
//! view of the packets (the RTT between the capture point and the far end
//! and back):
//!
//! - **Handshake** (the xPF paper's): a SYN (SYN set, ACK clear) records its
//!   sequence number and time for its flow (a later SYN of the same flow
//!   replaces it: the most recent SYN counts, as tshark's
//!   `tcp.analysis.initial_rtt` takes it); the first segment of the *same*
//!   flow with ACK set, SYN clear and the sequence number SYN + 1 (the
//!   client's ACK completing the 3-way handshake) gives the sample `its time
//!   - the SYN's`, and the SYN is forgotten.
//! - **Timestamp** (pping's): a segment with a TCP timestamp option whose
//!   TSval is 0, or whose TSecr is 0 unless it is a bare SYN (flags exactly
//!   SYN), is ignored, as pping ignores it. Otherwise its TSval is recorded
//!   for its flow with its time, unless that (flow, TSval) is recorded
//!   already (the first time a TSval is seen counts); then its TSecr is
//!   looked up for the reverse flow: recorded and not used yet, it gives the
//!   sample `its time - the TSval's time`, and the entry is marked used (it
//!   is kept, so that a later packet with the same TSval cannot record it
//!   again and match a late echo).
//!
//! The meter's clock is the packets' time made strictly monotonic, as
//! a kernel's clock read once per packet is (and sluice's VM's): each
//! packet, TCP or not, is seen at `max(its time, the previous packet's
//! + 1 ns)` ([`RttMeter::clock`]).
//!
//! Entries older than the maximum age (default 10 s, pping's `tsvalMaxAge`)
//! count as absent: a SYN that old is not matched, a TSval that old is
//! recorded afresh. A sample whose time is before its start (a capture whose
//! clock steps back) is dropped. A sample belongs to the flow of the packet
//! that completes it (for timestamps, the echoing direction: pping prints
//! that flow), and per flow and method the meter keeps the count, sum,
//! minimum, maximum and a log2 histogram of RTTs: bucket 0 holds RTTs under
//! 1 µs, bucket `k` (1 to 30) those in `[2^(k-1), 2^k)` µs, bucket 31 the
//! rest.
//!
//! The segments read: Ethernet, up to two VLAN tags, IPv4 (a header shorter
//! than 20 bytes or longer than its datagram is none; a fragment after the
//! first has no TCP header) or IPv6 (hop-by-hop, routing, destination-options
//! and fragment headers walked, at most eight), then TCP with its 20-byte
//! header in the capture and a data offset of at least 5. At most ten
//! options are walked (as pping's eBPF version does; a NOP is one), within
//! the header (and the capture): kind 0 ends them, kind 1 is one byte, any
//! other kind needs a length of at least 2 in the header; the first kind 8
//! of length 10 that fits is the timestamp option.
//!
//! The three tables have a size each; as in a hash map, a key not in a full
//! table cannot be added: the SYN, TSval or flow statistics are not kept
//! and the failure is counted, never silent. [`RttMeter::sweep`] removes
//! the entries past the maximum age (engines call it at the same points,
//! so they stay alike even when full).

use std::collections::{BTreeMap, HashMap};

use crate::key::FlowKey;

/// How a sample was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// SYN to the ACK completing the handshake (the xPF paper's).
    Handshake = 1,
    /// A TSval to its echo in the reverse direction (pping's).
    Timestamp = 2,
}

impl Method {
    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(c: u8) -> Option<Method> {
        match c {
            1 => Some(Method::Handshake),
            2 => Some(Method::Timestamp),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::Handshake => "handshake",
            Method::Timestamp => "timestamp",
        }
    }
}

/// One RTT measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RttSample {
    /// The flow of the packet that completed it.
    pub key: FlowKey,
    pub method: Method,
    pub rtt_ns: u64,
    /// The completing packet's time.
    pub time_ns: u64,
}

/// Log2 buckets of the histogram.
pub const BUCKETS: usize = 32;

/// The histogram bucket of an RTT: 0 under 1 µs, `k` for
/// `[2^(k-1), 2^k)` µs, 31 at 2^30 µs and over.
pub fn bucket(rtt_ns: u64) -> usize {
    let us = rtt_ns / 1000;
    ((64 - us.leading_zeros()) as usize).min(BUCKETS - 1)
}

/// One flow's RTTs by one method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttStats {
    pub count: u64,
    pub sum_ns: u64,
    pub min_ns: u64,
    pub max_ns: u64,
    /// Samples per [`bucket`].
    pub hist: [u32; BUCKETS],
}

impl Default for RttStats {
    fn default() -> RttStats {
        RttStats {
            count: 0,
            sum_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            hist: [0; BUCKETS],
        }
    }
}

impl RttStats {
    pub fn add(&mut self, rtt_ns: u64) {
        self.count += 1;
        self.sum_ns = self.sum_ns.wrapping_add(rtt_ns);
        self.min_ns = self.min_ns.min(rtt_ns);
        self.max_ns = self.max_ns.max(rtt_ns);
        let b = &mut self.hist[bucket(rtt_ns)];
        *b = b.wrapping_add(1);
    }

    /// The mean (0 without samples).
    pub fn avg_ns(&self) -> u64 {
        self.sum_ns.checked_div(self.count).unwrap_or(0)
    }
}

/// Table sizes and the maximum age.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeterOptions {
    /// SYNs awaiting their ACK.
    pub syn_capacity: usize,
    /// (flow, TSval) entries.
    pub ts_capacity: usize,
    /// Per-flow statistics (per flow and method).
    pub flow_capacity: usize,
    /// Entries older than this count as absent (ns).
    pub max_age_ns: u64,
}

impl Default for MeterOptions {
    /// 16,384 SYNs, 65,536 TSvals, 65,536 flows, 10 s.
    fn default() -> MeterOptions {
        MeterOptions {
            syn_capacity: 16_384,
            ts_capacity: 65_536,
            flow_capacity: 65_536,
            max_age_ns: 10_000_000_000,
        }
    }
}

/// Failures to keep state, by table, and records lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttCounters {
    /// SYNs a full SYN table could not keep.
    pub syn_full: u64,
    /// TSvals a full timestamp table could not keep.
    pub ts_full: u64,
    /// Samples a full flow table could not add to statistics.
    pub flows_full: u64,
    /// RttSample records lost on the way to user space (full ring buffer or log).
    pub lost: u64,
}

/// What a TCP segment tells the meter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub key: FlowKey,
    pub seq: u32,
    pub flags: u8,
    /// (TSval, TSecr).
    pub ts: Option<(u32, u32)>,
}

/// Options walked at most.
const MAX_OPTIONS: usize = 10;

pub(crate) const SYN: u8 = 0x02;
pub(crate) const ACK: u8 = 0x10;

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The TCP segment of an Ethernet frame, by the rules above.
pub fn segment(frame: &[u8]) -> Option<Segment> {
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
    let (src, dst, l4): (std::net::IpAddr, std::net::IpAddr, &[u8]) = match ethertype {
        0x0800 => {
            let hdr = ip.get(..20)?;
            let ihl = usize::from(hdr[0] & 0xf) * 4;
            if hdr[0] >> 4 != 4 || ihl < 20 {
                return None;
            }
            let len = usize::from(be16(hdr, 2)?);
            if (len != 0 && len < ihl) || hdr[9] != 6 || be16(hdr, 6)? & 0x1fff != 0 {
                return None;
            }
            let a = |i: usize| std::net::Ipv4Addr::new(hdr[i], hdr[i + 1], hdr[i + 2], hdr[i + 3]);
            (a(12).into(), a(16).into(), ip.get(ihl..)?)
        }
        0x86dd => {
            let hdr = ip.get(..40)?;
            if hdr[0] >> 4 != 6 {
                return None;
            }
            let a = |i: usize| {
                let b: [u8; 16] = hdr[i..i + 16].try_into().expect("16 bytes");
                std::net::Ipv6Addr::from(b)
            };
            let (mut next, mut at) = (hdr[6], 40);
            for _ in 0..8 {
                match next {
                    0 | 43 | 60 => {
                        let h = ip.get(at..at + 2)?;
                        next = h[0];
                        at += (usize::from(h[1]) + 1) * 8;
                    }
                    44 => {
                        let h = ip.get(at..at + 8)?;
                        if be16(h, 2)? >> 3 != 0 {
                            return None;
                        }
                        next = h[0];
                        at += 8;
                    }
                    _ => break,
                }
            }
            if next != 6 {
                return None;
            }
            (a(8).into(), a(24).into(), ip.get(at..)?)
        }
        _ => return None,
    };
    let tcp = l4.get(..20)?;
    let doff = usize::from(tcp[12] >> 4) * 4;
    if doff < 20 {
        return None;
    }
    let opts_end = doff.min(l4.len());
    let mut ts = None;
    let mut at = 20;
    for _ in 0..MAX_OPTIONS {
        if at >= opts_end {
            break;
        }
        match l4[at] {
            0 => break,
            1 => at += 1,
            kind => {
                if at + 1 >= opts_end {
                    break;
                }
                let len = usize::from(l4[at + 1]);
                if len < 2 {
                    break;
                }
                if kind == 8 && len == 10 && at + 10 <= opts_end {
                    ts = Some((be32(l4, at + 2)?, be32(l4, at + 6)?));
                    break;
                }
                at += len;
            }
        }
    }
    Some(Segment {
        key: FlowKey {
            src,
            dst,
            protocol: 6,
            src_port: be16(tcp, 0)?,
            dst_port: be16(tcp, 2)?,
        },
        seq: be32(tcp, 4)?,
        flags: tcp[13],
        ts,
    })
}

/// The flow of the other direction.
pub fn reverse(k: &FlowKey) -> FlowKey {
    FlowKey {
        src: k.dst,
        dst: k.src,
        protocol: k.protocol,
        src_port: k.dst_port,
        dst_port: k.src_port,
    }
}

/// The reference meter.
#[derive(Debug, Default)]
pub struct RttMeter {
    opts: MeterOptions,
    /// Flow -> (SYN's sequence number, time).
    syns: HashMap<FlowKey, (u32, u64)>,
    /// (flow, TSval) -> (time, used).
    tsvals: HashMap<(FlowKey, u32), (u64, bool)>,
    stats: HashMap<(FlowKey, Method), RttStats>,
    counters: RttCounters,
    /// The earliest time the next packet can be seen at.
    next_ns: u64,
}

impl RttMeter {
    pub fn new(opts: MeterOptions) -> RttMeter {
        RttMeter {
            opts,
            ..RttMeter::default()
        }
    }

    /// The time a packet of time `ts_ns` is seen at (every packet, TCP or
    /// not, moves the clock).
    pub fn clock(&mut self, ts_ns: u64) -> u64 {
        let now = ts_ns.max(self.next_ns);
        self.next_ns = now.wrapping_add(1);
        now
    }

    fn fresh(&self, then: u64, now: u64) -> bool {
        now.wrapping_sub(then) <= self.opts.max_age_ns
    }

    /// Runs one segment seen at `now` (from [`RttMeter::clock`]); its
    /// samples go to `out`.
    pub fn packet(&mut self, s: &Segment, now: u64, out: &mut Vec<RttSample>) {
        let mut sample = |m: &mut RttMeter, method: Method, then: u64| {
            if now < then {
                return;
            }
            let rtt_ns = now - then;
            let key = (s.key, method);
            if let Some(st) = m.stats.get_mut(&key) {
                st.add(rtt_ns);
            } else if m.stats.len() < m.opts.flow_capacity {
                m.stats.entry(key).or_default().add(rtt_ns);
            } else {
                m.counters.flows_full += 1;
            }
            out.push(RttSample {
                key: s.key,
                method,
                rtt_ns,
                time_ns: now,
            });
        };
        if s.flags & (SYN | ACK) == SYN {
            if self.syns.contains_key(&s.key) || self.syns.len() < self.opts.syn_capacity {
                self.syns.insert(s.key, (s.seq, now));
            } else {
                self.counters.syn_full += 1;
            }
        } else if s.flags & (SYN | ACK) == ACK
            && let Some(&(seq, then)) = self.syns.get(&s.key)
            && seq.wrapping_add(1) == s.seq
            && self.fresh(then, now)
        {
            self.syns.remove(&s.key);
            sample(self, Method::Handshake, then);
        }
        let Some((tsval, tsecr)) = s.ts else {
            return;
        };
        if tsval == 0 || (tsecr == 0 && s.flags != SYN) {
            return;
        }
        let k = (s.key, tsval);
        match self.tsvals.get(&k) {
            Some(&(then, _)) if self.fresh(then, now) => {}
            Some(_) => {
                self.tsvals.insert(k, (now, false));
            }
            None if self.tsvals.len() < self.opts.ts_capacity => {
                self.tsvals.insert(k, (now, false));
            }
            None => self.counters.ts_full += 1,
        }
        let echo = (reverse(&s.key), tsecr);
        if let Some(&(then, false)) = self.tsvals.get(&echo)
            && self.fresh(then, now)
        {
            self.tsvals.insert(echo, (then, true));
            sample(self, Method::Timestamp, then);
        }
    }

    /// Removes the SYNs and TSvals past the maximum age at `now`.
    pub fn sweep(&mut self, now: u64) {
        let age = self.opts.max_age_ns;
        self.syns.retain(|_, (_, t)| now.wrapping_sub(*t) <= age);
        self.tsvals.retain(|_, (t, _)| now.wrapping_sub(*t) <= age);
    }

    pub fn counters(&self) -> RttCounters {
        self.counters
    }

    /// The statistics per flow and method.
    pub fn stats(&self) -> BTreeMap<(FlowKey, Method), RttStats> {
        self.stats.iter().map(|(k, v)| (*k, *v)).collect()
    }
}

/// When the engines sweep: whenever the packets' time has moved a second
/// past the last sweep (the first packet starts the count).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SweepClock(Option<u64>);

impl SweepClock {
    /// Whether to sweep before the packet seen at `now`.
    pub(crate) fn due(&mut self, now: u64) -> bool {
        match self.0 {
            None => {
                self.0 = Some(now);
                false
            }
            Some(last) if now >= last.saturating_add(1_000_000_000) => {
                self.0 = Some(now);
                true
            }
            Some(_) => false,
        }
    }
}
