//! The paper's Figure 3 as a discrete-event simulation: what a router's
//! processing delay does to a flow's round-trip time (Figure 5).
//!
//! ```text
//!   source --link--> router --link--> sink
//!          <--link--        <--link--
//! ```
//!
//! Deterministic (no randomness; events of the same nanosecond run in the
//! order they were scheduled) and in integer nanoseconds:
//!
//! - **Links**: every link direction serializes one packet at a time at
//!   `rate_bps` (`ceil(bytes * 8 / rate)` ns, the packet's bytes as given:
//!   no framing added) and delivers it `prop_ns` later. Each has a FIFO
//!   output queue; the router's two hold `buffer` packets waiting (the
//!   one on the wire not counted) and drop what arrives when they are
//!   full (drop tail); the hosts' are unbounded (the window bounds them).
//! - **Router**: one processor, one FIFO input queue of `buffer` packets
//!   for both directions: each packet is held for its processing delay
//!   ([`Router::data`] for data segments, [`Router::ack`] for ACKs),
//!   then queued for its outgoing link. A direction of
//!   [`ProcessingDelay::None`] does not use the processor (its packets go
//!   straight to their output queue); any other delay, even 0 ns, takes
//!   the processor in turn.
//! - **Flow**: one TCP-like transfer (see [`Window`]): numbered segments
//!   of `segment_sizes` bytes (used in turn), each acknowledged by a
//!   `ack_bytes`-byte ACK; an RTT sample per ACK.
//!
//! Left out: TCP's handshake and bytes (sequence numbers count segments),
//! delayed ACKs, SACK, framing overhead, other traffic, the hosts' own
//! processing, and any variation of the delay beyond the packet's length.

mod delay;
mod events;
mod net;
mod report;
mod tcp;

use serde::Serialize;

pub use delay::{ModelDelay, ModelFileError, ProcessingDelay};
pub use net::{QueueStats, RouterStats};
pub use report::{Compared, RouterComparison, SimResult, SimRttStats, compare};
pub use tcp::SenderStats;

/// How many segments the sender keeps in flight.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Window {
    /// At most this many, always.
    Fixed(u32),
    /// Reno's slow start and congestion avoidance, at most `rwnd` (the
    /// receive window, in segments).
    Reno { rwnd: u32 },
}

/// The network and the flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scenario {
    /// Every link, both directions, in bits per second.
    pub rate_bps: u64,
    /// Each link's one-way propagation delay, ns.
    pub prop_ns: u64,
    /// Packets each of the router's queues holds waiting.
    pub buffer: usize,
    /// Data segments' sizes in bytes on the wire, used in turn.
    pub segment_sizes: Vec<u32>,
    pub ack_bytes: u32,
    pub window: Window,
    /// Segments to deliver; `None`: until `until_ns`.
    pub segments: Option<u64>,
    /// Simulated time at most, ns.
    pub until_ns: Option<u64>,
}

/// A run stops after this much simulated time in any case (an hour).
pub const MAX_TIME_NS: u64 = 3_600_000_000_000;

/// The receive window of a 64 KiB TCP window without window scaling, in
/// 1500-byte segments.
pub const DEFAULT_RWND: u32 = 43;

impl Default for Scenario {
    /// 10 Mb/s links of 10 ms each way, 64-packet buffers, 1000 segments
    /// of 1500 bytes, 40-byte ACKs, Reno with a 43-segment window.
    fn default() -> Scenario {
        Scenario {
            rate_bps: 10_000_000,
            prop_ns: 10_000_000,
            buffer: 64,
            segment_sizes: vec![1500],
            ack_bytes: 40,
            window: Window::Reno { rwnd: DEFAULT_RWND },
            segments: Some(1000),
            until_ns: None,
        }
    }
}

impl Scenario {
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: &str| Err(SimError::Scenario(m.to_string()));
        if self.rate_bps == 0 {
            return bad("the link rate is 0");
        }
        if self.segment_sizes.is_empty() || self.segment_sizes.contains(&0) {
            return bad("segment sizes must be given and above 0 bytes");
        }
        if self.ack_bytes == 0 {
            return bad("ACKs must be above 0 bytes");
        }
        if matches!(self.window, Window::Fixed(0) | Window::Reno { rwnd: 0 }) {
            return bad("the window must be at least 1 segment");
        }
        if self.segments.is_none() && self.until_ns.is_none() {
            return bad("give a number of segments or a time to run");
        }
        if self.segments == Some(0) {
            return bad("no segments to send");
        }
        Ok(())
    }

    /// The round trip of one segment of `bytes` alone in the network, with
    /// no processing: both links' propagation both ways, the segment's
    /// serialization on both links and the ACK's.
    pub fn base_rtt_ns(&self, bytes: u32) -> u64 {
        4 * self.prop_ns
            + 2 * serialization_ns(bytes, self.rate_bps)
            + 2 * serialization_ns(self.ack_bytes, self.rate_bps)
    }
}

/// What the router spends per packet, by direction.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Router {
    /// On each data segment (source to sink).
    pub data: ProcessingDelay,
    /// On each ACK (sink to source).
    pub ack: ProcessingDelay,
}

impl Router {
    /// No processing delay.
    pub fn none() -> Router {
        Router::both(ProcessingDelay::None)
    }

    /// The same delay for data and ACKs.
    pub fn both(d: ProcessingDelay) -> Router {
        Router {
            data: d.clone(),
            ack: d,
        }
    }

    /// What one data segment of `bytes` and its ACK spend at the router:
    /// what a window of 1 adds to the round trip.
    pub fn round_trip_ns(&self, bytes: u32, ack_bytes: u32) -> u64 {
        self.data.ns(bytes) + self.ack.ns(ack_bytes)
    }
}

/// One RTT sample: when the ACK arrived, the round trip it measured, and
/// the segment it asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SimRttSample {
    pub at_ns: u64,
    pub rtt_ns: u64,
    pub ack: u64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("scenario: {0}")]
    Scenario(String),
}

/// `bytes` on a link of `rate_bps`, rounded up to the ns.
pub fn serialization_ns(bytes: u32, rate_bps: u64) -> u64 {
    let bits = u128::from(bytes) * 8 * 1_000_000_000;
    bits.div_ceil(u128::from(rate_bps)) as u64
}

/// Runs `s` through `r`.
pub fn simulate(s: &Scenario, r: &Router) -> Result<SimResult, SimError> {
    s.validate()?;
    let limit = s.until_ns.unwrap_or(MAX_TIME_NS).min(MAX_TIME_NS);
    let outcome = net::Net::new(s, r).run(limit);
    Ok(SimResult::from_outcome(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_rounds_up() {
        assert_eq!(serialization_ns(1500, 10_000_000), 1_200_000);
        assert_eq!(serialization_ns(40, 10_000_000), 32_000);
        assert_eq!(serialization_ns(1, 3), 2_666_666_667);
    }

    #[test]
    fn bad_scenarios_say_why() {
        let s = Scenario::default();
        for (bad, want) in [
            (
                Scenario {
                    rate_bps: 0,
                    ..s.clone()
                },
                "rate",
            ),
            (
                Scenario {
                    segment_sizes: vec![],
                    ..s.clone()
                },
                "segment sizes",
            ),
            (
                Scenario {
                    window: Window::Fixed(0),
                    ..s.clone()
                },
                "at least 1",
            ),
            (
                Scenario {
                    segments: None,
                    until_ns: None,
                    ..s.clone()
                },
                "number of segments or a time",
            ),
        ] {
            let e = simulate(&bad, &Router::none()).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
