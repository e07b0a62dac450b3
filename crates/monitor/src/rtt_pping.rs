//! pping's own sample rules (Kathleen Nichols' passive ping, pollere/pping's
//! `pping.cpp`), for `sluice monitor rtt --pping`: the lines pping would
//! print for the same packets (issue 40; docs/monitor.md "Passive RTT").
//! sluice's [`crate::RttMeter`] measures by a cleaner variant of these
//! rules; this one follows pping's, quirks included:
//!
//! - Only the frames pping's default filter `tcp` passes: Ethernet with
//!   IPv4 or IPv6 right after the MAC addresses (no VLAN tag); for IPv6,
//!   TCP as the next header or right after a fragment header (libpcap's
//!   `ip6 proto tcp`). Then a TCP timestamp option is needed, and a
//!   segment with TSval 0, or TSecr 0 unless its flags are exactly SYN
//!   (libtins's 12 bits: AccECN's AE counts), is skipped.
//! - Time is the capture's, in microseconds (libpcap's), as seconds since
//!   the first such packet's second, in an `f64` (pping's `capTm`): never
//!   made monotonic.
//! - A flow (`src:port+dst:port`) is made at its first packet (at most
//!   10,001, pping's `flowCnt > maxFlows` test); TSvals are recorded only
//!   once the reverse flow has been seen, so the packets before that (a
//!   SYN) give nothing.
//! - The first packet with a (flow, TSval) records its time; the entry is
//!   never replaced. A packet whose TSecr is recorded, unused, for the
//!   reverse flow gives the sample `now - then` (negative too, if the
//!   capture steps back), and the entry is marked used by negating its
//!   time (so an entry of time 0.0 can never match, as in pping).
//! - Entries are forgotten only by the clean-up pass, run after a packet
//!   whenever `capTm` has reached the next clean-up time (then the next is
//!   `capTm + tsvalMaxAge`): entries whose |time| is more than
//!   `tsvalMaxAge` before `capTm`, flows idle more than 300 s (with their
//!   minimum and direction mark).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

use pipeline::{PacketInfo, Source};

use crate::drive::{Application, Drive, drive};
use crate::error::MonitorError;
use crate::key::FlowKey;
use crate::order::TimeOrder;
use crate::rtt::{SYN, reverse, segment};

/// pping's `maxFlows`.
const MAX_FLOWS: usize = 10_000;
/// pping's `flowMaxIdle` (seconds).
const FLOW_MAX_IDLE: f64 = 300.0;

/// One line pping prints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PpingSample {
    /// The echoing packet's flow (pping's `srcIP:port+dstIP:port`).
    pub key: FlowKey,
    /// The echoing packet's capture time, whole seconds (for `HH:MM:SS`).
    pub secs: i64,
    /// Its time as pping keeps it: seconds since the first usable
    /// packet's second (pping's `capTm`).
    pub cap_tm: f64,
    /// Seconds.
    pub rtt: f64,
    /// The flow's smallest RTT so far (seconds).
    pub min: f64,
}

struct Flow {
    last: f64,
    min: f64,
    both_ways: bool,
}

/// pping's state.
pub struct Pping {
    max_age: f64,
    flows: HashMap<FlowKey, Flow>,
    /// (flow, TSval) -> time (negated once used).
    tsvals: HashMap<(FlowKey, u32), f64>,
    offset: Option<i64>,
    cap_tm: f64,
    next_clean: f64,
}

/// Where the TCP header starts, if pping's default filter `tcp` passes
/// the Ethernet frame.
fn tcp_filter(frame: &[u8]) -> Option<usize> {
    match frame.get(12..14)? {
        [0x08, 0x00] if frame.get(23) == Some(&6) => Some(14 + usize::from(frame[14] & 0xf) * 4),
        [0x86, 0xdd] => match frame.get(20)? {
            6 => Some(54),
            44 if frame.get(54) == Some(&6) => Some(62),
            _ => None,
        },
        _ => None,
    }
}

impl Pping {
    /// `max_age`: pping's `tsvalMaxAge` in seconds (its default 10).
    pub fn new(max_age: f64) -> Pping {
        Pping {
            max_age,
            flows: HashMap::new(),
            tsvals: HashMap::new(),
            offset: None,
            cap_tm: 0.0,
            next_clean: 0.0,
        }
    }

    /// One frame captured at `ts_ns` (since the epoch); the line pping
    /// prints for it, if any.
    pub fn packet(&mut self, ts_ns: u64, frame: &[u8]) -> Option<PpingSample> {
        let tcp = tcp_filter(frame)?;
        let sample = self.process(ts_ns, frame, tcp);
        // pping's main loop, after every packet its filter passes.
        if self.cap_tm >= self.next_clean {
            self.clean_up(self.cap_tm);
            self.next_clean = self.cap_tm + self.max_age;
        }
        sample
    }

    fn process(&mut self, ts_ns: u64, frame: &[u8], tcp: usize) -> Option<PpingSample> {
        let seg = segment(frame)?;
        let (tsval, tsecr) = seg.ts?;
        // libtins's 12 flag bits: the 4 reserved (AccECN's AE) count too.
        let reserved = frame.get(tcp + 12).map_or(0, |b| b & 0xf);
        if tsval == 0 || (tsecr == 0 && (seg.flags != SYN || reserved != 0)) {
            return None;
        }
        let secs = (ts_ns / 1_000_000_000) as i64;
        let usecs = ((ts_ns % 1_000_000_000) / 1000) as f64;
        let offset = *self.offset.get_or_insert(secs);
        self.cap_tm = (secs - offset) as f64 + usecs * 1e-6;
        let now = self.cap_tm;
        let back = reverse(&seg.key);
        if !self.flows.contains_key(&seg.key) {
            if self.flows.len() > MAX_FLOWS {
                return None;
            }
            let both_ways = match self.flows.get_mut(&back) {
                Some(r) => {
                    r.both_ways = true;
                    true
                }
                None => false,
            };
            self.flows.insert(
                seg.key,
                Flow {
                    last: now,
                    min: 1e30,
                    both_ways,
                },
            );
        }
        let flow = self.flows.get_mut(&seg.key).expect("made above");
        flow.last = now;
        if !flow.both_ways {
            return None;
        }
        self.tsvals.entry((seg.key, tsval)).or_insert(now);
        let then = self.tsvals.get_mut(&(back, tsecr))?;
        if *then <= 0.0 {
            return None;
        }
        let rtt = now - *then;
        *then = -*then;
        flow.min = flow.min.min(rtt);
        Some(PpingSample {
            key: seg.key,
            secs,
            cap_tm: now,
            rtt,
            min: flow.min,
        })
    }

    fn clean_up(&mut self, now: f64) {
        let age = self.max_age;
        self.tsvals.retain(|_, t| now - t.abs() <= age);
        self.flows.retain(|_, f| now - f.last <= FLOW_MAX_IDLE);
    }
}

/// How a pping run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PpingRun {
    /// Packets read.
    pub packets: u64,
    /// Lines printed (samples).
    pub samples: u64,
    /// Flows pping knows at the end.
    pub flows: usize,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
    /// Packets earlier than a packet before them.
    pub order: TimeOrder,
}

impl Application for Pping {
    type Record = PpingSample;

    fn packet(
        &mut self,
        info: &PacketInfo,
        data: &[u8],
        out: &mut Vec<PpingSample>,
    ) -> Result<(), MonitorError> {
        out.extend(Pping::packet(self, info.timestamp_ns, data));
        Ok(())
    }
}

/// Runs pping's rules over `source` (at most `limit` packets); `each`
/// gets every sample in order; `progress` counts the packets read.
pub fn pping_samples(
    source: &mut dyn Source,
    max_age: f64,
    limit: Option<u64>,
    progress: &AtomicU64,
    mut each: impl FnMut(&PpingSample),
) -> Result<PpingRun, MonitorError> {
    let mut pping = Pping::new(max_age);
    let how = Drive {
        limit,
        metrics: None,
        progress,
    };
    let mut samples = 0;
    let driven = drive(source, &mut pping, &how, |out| {
        samples += out.len() as u64;
        out.iter().for_each(&mut each);
    })?;
    Ok(PpingRun {
        packets: driven.packets,
        samples,
        flows: pping.flows.len(),
        source_error: driven.source_error,
        order: driven.order,
    })
}

/// pping's `fmtTimeDiff`: µs under 1 ms, ms under 1 s, else s; two
/// decimals under 10, one under 100, none above (after a space); at most
/// 9 characters (its 10-byte buffer).
pub fn pping_delay(seconds: f64) -> String {
    let (v, unit) = if seconds < 1e-3 {
        (seconds * 1e6, "us")
    } else if seconds < 1.0 {
        (seconds * 1e3, "ms")
    } else {
        (seconds, "s")
    };
    let mut s = if v < 10.0 {
        format!("{v:.2}{unit}")
    } else if v < 100.0 {
        format!("{v:.1}{unit}")
    } else {
        format!(" {v:.0}{unit}")
    };
    s.truncate(9);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_print_as_pping_prints_them() {
        assert_eq!(pping_delay(12.345e-6), "12.3us");
        assert_eq!(pping_delay(2.5e-3), "2.50ms");
        assert_eq!(pping_delay(0.1234), " 123ms");
        assert_eq!(pping_delay(1.5), "1.50s");
        assert_eq!(pping_delay(123_456_789.0), " 12345678");
        assert_eq!(pping_delay(-0.005), "-5000.00u");
    }
}
