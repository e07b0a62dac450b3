//! The flow: a sender of numbered segments under a window, and a sink
//! that acknowledges every segment it receives with the next segment it
//! expects (cumulative ACKs, no delayed ACKs, out-of-order segments kept).
//!
//! The sender is a simplified NewReno (RFC 5681, 6582, 6298), counted in
//! segments rather than bytes:
//!
//! - [`Window::Reno`]: slow start from 2 segments (cwnd + 1 per ACK of new
//!   data) up to `ssthresh`, then congestion avoidance (cwnd + 1/cwnd per
//!   ACK), never more than the receive window `rwnd` (nor growing past it);
//! - [`Window::Fixed`]: always `w` segments in flight at most;
//! - both recover losses the same way: the third duplicate ACK retransmits
//!   the first unacknowledged segment and starts a recovery that lasts
//!   until everything sent before it is acknowledged, each partial ACK
//!   retransmitting the next hole (Reno halves the window to
//!   `max(flight / 2, 2)`; no window inflation); a retransmission timeout
//!   (RTO from RFC 6298, at least 200 ms, 1 s before the first sample,
//!   doubled on each expiry up to 60 s) goes back to the first
//!   unacknowledged segment (Reno: a window of 1).
//!
//! Every segment and ACK carries a time stamp: a data segment the time it
//! was handed to the source's output queue, its ACK that time echoed. An
//! RTT sample is the ACK's arrival less the echoed time: the network's
//! round trip for that segment, including the wait in the source's queue.

use std::collections::BTreeSet;

use serde::Serialize;

use super::Window;

/// What travels: a data segment or an ACK.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Packet {
    Data { seq: u64, bytes: u32, sent_ns: u64 },
    Ack { next: u64, bytes: u32, echo_ns: u64 },
}

impl Packet {
    pub fn bytes(&self) -> u32 {
        match self {
            Packet::Data { bytes, .. } | Packet::Ack { bytes, .. } => *bytes,
        }
    }

    pub fn is_data(&self) -> bool {
        matches!(self, Packet::Data { .. })
    }
}

const MIN_RTO_NS: u64 = 200_000_000;
const INITIAL_RTO_NS: u64 = 1_000_000_000;
const MAX_RTO_NS: u64 = 60_000_000_000;
/// The clock granularity term of RFC 6298's RTO.
const GRANULARITY_NS: f64 = 1e6;
const INITIAL_CWND: f64 = 2.0;

/// What the sender did, over the run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SenderStats {
    /// Data segments handed to the link, retransmissions included.
    pub sent: u64,
    pub retransmits: u64,
    pub fast_retransmits: u64,
    pub timeouts: u64,
    /// The congestion window at the end, in segments (the fixed window with `Window::Fixed`).
    pub final_window: f64,
}

pub(crate) struct Sender {
    window: Window,
    sizes: Vec<u32>,
    total: Option<u64>,
    /// The first segment not yet acknowledged.
    una: u64,
    /// The next segment to send.
    nxt: u64,
    /// One past the highest segment ever sent.
    high: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    /// In recovery until this segment is acknowledged.
    recovery: Option<u64>,
    /// No fast retransmit for duplicate ACKs below this (after a timeout).
    guard: u64,
    srtt: Option<f64>,
    rttvar: f64,
    rto: u64,
    /// When the retransmission timer expires, and which arming it is.
    pub timer: Option<u64>,
    pub timer_gen: u64,
    pub stats: SenderStats,
}

impl Sender {
    pub fn new(window: Window, sizes: Vec<u32>, total: Option<u64>) -> Sender {
        let ssthresh = match window {
            Window::Reno { rwnd } => f64::from(rwnd),
            Window::Fixed(w) => f64::from(w),
        };
        Sender {
            window,
            sizes,
            total,
            una: 0,
            nxt: 0,
            high: 0,
            cwnd: INITIAL_CWND,
            ssthresh,
            dupacks: 0,
            recovery: None,
            guard: 0,
            srtt: None,
            rttvar: 0.0,
            rto: INITIAL_RTO_NS,
            timer: None,
            timer_gen: 0,
            stats: SenderStats::default(),
        }
    }

    fn reno(&self) -> bool {
        matches!(self.window, Window::Reno { .. })
    }

    /// Segments allowed in flight.
    fn allowed(&self) -> u64 {
        match self.window {
            Window::Fixed(w) => u64::from(w),
            Window::Reno { rwnd } => (self.cwnd.floor() as u64).clamp(1, u64::from(rwnd)),
        }
    }

    /// Every segment is acknowledged (never, without a segment count).
    pub fn done(&self) -> bool {
        self.total.is_some_and(|t| self.una >= t)
    }

    pub fn finish(&mut self) {
        self.stats.final_window = match self.window {
            Window::Fixed(w) => f64::from(w),
            Window::Reno { .. } => self.cwnd,
        };
    }

    fn arm(&mut self, now: u64) {
        self.timer = Some(now + self.rto);
        self.timer_gen += 1;
    }

    fn send(&mut self, now: u64, seq: u64, out: &mut Vec<Packet>) {
        let bytes = self.sizes[(seq % self.sizes.len() as u64) as usize];
        out.push(Packet::Data {
            seq,
            bytes,
            sent_ns: now,
        });
        self.stats.sent += 1;
        if seq < self.high {
            self.stats.retransmits += 1;
        }
        self.high = self.high.max(seq + 1);
        if self.timer.is_none() {
            self.arm(now);
        }
    }

    /// Sends what the window allows.
    pub fn fill(&mut self, now: u64, out: &mut Vec<Packet>) {
        while self.total.is_none_or(|t| self.nxt < t) && self.nxt < self.una + self.allowed() {
            self.send(now, self.nxt, out);
            self.nxt += 1;
        }
    }

    /// An ACK arrived: `next` is the segment the sink expects, `rtt` the
    /// sample it gives.
    pub fn on_ack(&mut self, now: u64, next: u64, rtt: u64, out: &mut Vec<Packet>) {
        if next > self.una {
            self.una = next;
            self.nxt = self.nxt.max(next);
            self.dupacks = 0;
            self.estimate(rtt);
            match self.recovery {
                Some(recover) if next < recover => self.send(now, next, out),
                Some(_) => {
                    self.recovery = None;
                    if self.reno() {
                        self.cwnd = self.ssthresh;
                    }
                }
                // Growing past the receive window would not let more out.
                None if let Window::Reno { rwnd } = self.window => {
                    self.cwnd += if self.cwnd < self.ssthresh {
                        1.0
                    } else {
                        1.0 / self.cwnd
                    };
                    self.cwnd = self.cwnd.min(f64::from(rwnd));
                }
                None => {}
            }
            if self.una < self.nxt {
                self.arm(now);
            } else {
                self.timer = None;
            }
        } else if next == self.una && self.una < self.nxt {
            self.dupacks += 1;
            if self.dupacks == 3 && self.recovery.is_none() && next >= self.guard {
                if self.reno() {
                    let flight = (self.nxt - self.una) as f64;
                    self.ssthresh = (flight / 2.0).max(2.0);
                    self.cwnd = self.ssthresh;
                }
                self.recovery = Some(self.nxt);
                self.stats.fast_retransmits += 1;
                self.send(now, self.una, out);
                self.arm(now);
            }
        }
        self.fill(now, out);
    }

    /// The retransmission timer expired.
    pub fn on_timeout(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.stats.timeouts += 1;
        if self.reno() {
            let flight = (self.nxt - self.una) as f64;
            self.ssthresh = (flight / 2.0).max(2.0);
            self.cwnd = 1.0;
        }
        self.guard = self.high;
        self.recovery = None;
        self.dupacks = 0;
        self.nxt = self.una;
        self.rto = (self.rto * 2).min(MAX_RTO_NS);
        self.timer = None;
        self.fill(now, out);
    }

    /// RFC 6298's smoothed RTT and RTO.
    fn estimate(&mut self, rtt: u64) {
        let r = rtt as f64;
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2.0;
            }
            Some(s) => {
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - r).abs();
                self.srtt = Some(0.875 * s + 0.125 * r);
            }
        }
        let rto = self.srtt.unwrap_or(r) + (4.0 * self.rttvar).max(GRANULARITY_NS);
        self.rto = (rto.ceil() as u64).clamp(MIN_RTO_NS, MAX_RTO_NS);
    }
}

/// The sink: delivers in order, keeps what arrives early.
pub(crate) struct Receiver {
    sizes: Vec<u32>,
    ack_bytes: u32,
    /// The next segment expected.
    next: u64,
    held: BTreeSet<u64>,
    pub delivered: u64,
    pub delivered_bytes: u64,
    /// The first delivery: its time and bytes.
    pub first: Option<(u64, u32)>,
    pub last_ns: u64,
    pub duplicates: u64,
}

impl Receiver {
    pub fn new(sizes: Vec<u32>, ack_bytes: u32) -> Receiver {
        Receiver {
            sizes,
            ack_bytes,
            next: 0,
            held: BTreeSet::new(),
            delivered: 0,
            delivered_bytes: 0,
            first: None,
            last_ns: 0,
            duplicates: 0,
        }
    }

    /// A data segment arrived: the ACK to send back.
    pub fn on_data(&mut self, now: u64, seq: u64, sent_ns: u64) -> Packet {
        if seq < self.next || !self.held.insert(seq) {
            self.duplicates += 1;
        }
        while self.held.remove(&self.next) {
            let bytes = self.sizes[(self.next % self.sizes.len() as u64) as usize];
            self.delivered += 1;
            self.delivered_bytes += u64::from(bytes);
            self.first.get_or_insert((now, bytes));
            self.last_ns = now;
            self.next += 1;
        }
        Packet::Ack {
            next: self.next,
            bytes: self.ack_bytes,
            echo_ns: sent_ns,
        }
    }
}
