//! TCP conversations with known round-trip times, for checking passive RTT
//! estimation: `tcp-conv,flows=N,rtt=MS[..MS],count=N`.
//!
//! Each flow is a client (the source prefix's addresses from its second, one per flow, port
//! `sport`) talking to the server `dst:dport`, seen by a monitor next to
//! the client: the client's packets pass at the time it sends them, the
//! server's answers `rtt` later. A flow's conversation: SYN; SYN-ACK `rtt`
//! after it; then, over and over, a data segment from the client (`data`
//! bytes, default 100; the first completes the handshake) `think` after the
//! server's last packet (default 100 µs), and the server's data segment
//! answering it `rtt` later. Every segment carries a TCP timestamp
//! option (after two NOPs): TSval the sender's millisecond clock (each host
//! its own offset), TSecr the last TSval it received (0 on the SYN).
//!
//! So, at the monitor: the handshake takes `rtt + think`; a client's TSval
//! is echoed by the server `rtt` later; a server's TSval by the client
//! `think` later; tshark's ACK RTT of a client segment is `rtt`, of a
//! server segment `think`. RTTs run evenly from the first to the last value
//! over the flows (`rtt=10..50`), at least 1 ms (the TSval clock's tick),
//! rounded to a multiple of `flows` ns; flow `i` starts `i` ns after
//! `start`, and every time of flow `i` is `i` modulo `flows` ns, so no two
//! packets share a time. `count` is the number of packets in all.
//! Other fields: `v6`, `src=PREFIX`, `dst=ADDR`, `sport=`, `dport=`,
//! `start=NS`, `think=US`, `data=BYTES`.

use crate::GenSpecError;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::IpAddr;

use etherparse::{PacketBuilder, TcpOptionElement};

/// The spec of [`GenSpec`](crate::GenSpec) kind `tcp-conv`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conversation {
    pub flows: u32,
    /// The first and last flow's RTT (ns).
    pub rtt_ns: (u64, u64),
    /// The client's delay before answering (ns).
    pub think_ns: u64,
    /// Payload bytes of each data segment.
    pub data: usize,
    pub count: u64,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub sport: u16,
    pub dport: u16,
    pub start_ns: u64,
}

fn ms(v: &str) -> Option<u64> {
    let f: f64 = v.parse().ok()?;
    (1.0..1e7).contains(&f).then_some((f * 1e6) as u64)
}

/// The most flows a `tcp-conv` spec may ask for.
pub const MAX_FLOWS: u32 = 1 << 20;

impl Conversation {
    /// The conversation of `spec`, if it is of kind `tcp-conv` (the other
    /// fields already read into `base`: addresses, ports, count, start).
    pub fn parse(spec: &str, base: &crate::GenSpec) -> Result<Conversation, GenSpecError> {
        let mut c = Conversation {
            flows: base.flows,
            rtt_ns: (10_000_000, 10_000_000),
            think_ns: 100_000,
            data: 100,
            count: base.count,
            src: base.src.0,
            dst: base.dst,
            sport: base.sport,
            dport: base.dport,
            start_ns: base.start_ns,
        };
        for field in spec.split(',').map(str::trim) {
            let bad = |reason: &'static str| GenSpecError::Field {
                field: field.to_string(),
                reason,
            };
            match field.split_once('=') {
                Some(("rtt", v)) => {
                    let (a, b) = v.split_once("..").unwrap_or((v, v));
                    let (a, b) = (ms(a), ms(b));
                    c.rtt_ns = a
                        .zip(b)
                        .filter(|(a, b)| a <= b)
                        .ok_or_else(|| bad("RTTs in milliseconds, at least 1: MS or MS..MS"))?;
                }
                Some(("think", v)) => {
                    c.think_ns = v
                        .parse::<u64>()
                        .ok()
                        .filter(|&t| (1..=1_000_000).contains(&t))
                        .ok_or_else(|| bad("microseconds, 1 to 1000000"))?
                        * 1000;
                }
                Some(("data", v)) => {
                    c.data = v
                        .parse()
                        .ok()
                        .filter(|&d| (1..=1400).contains(&d))
                        .ok_or_else(|| bad("payload bytes, 1 to 1400"))?;
                }
                _ => {}
            }
        }
        // Every flow's state is made up front.
        if c.flows > MAX_FLOWS {
            return Err(GenSpecError::TooManyFlows {
                spec: spec.to_string(),
                max: MAX_FLOWS,
            });
        }
        // The last packet's time (no flow is further on than `count`
        // round trips and delays) must be a u64 of nanoseconds.
        let flows = u128::from(c.flows);
        let step = u128::from(c.rtt_ns.1) + u128::from(c.think_ns) + 2 * flows;
        if u128::from(c.start_ns) + flows + u128::from(c.count) * step > u128::from(u64::MAX) {
            return Err(GenSpecError::PastTime {
                spec: spec.to_string(),
            });
        }
        Ok(c)
    }

    /// Strips the fields only `tcp-conv` knows, for the common parser.
    pub(crate) fn common_fields(spec: &str) -> String {
        spec.split(',')
            .map(str::trim)
            .filter(|f| {
                !(*f == "tcp-conv"
                    || f.starts_with("rtt=")
                    || f.starts_with("think=")
                    || f.starts_with("data="))
            })
            .chain(["tcp"])
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Flow `i`'s RTT (ns).
    pub fn rtt(&self, i: u32) -> u64 {
        let (a, b) = self.rtt_ns;
        let raw = if self.flows <= 1 {
            a
        } else {
            a + (b - a) * u64::from(i) / u64::from(self.flows - 1)
        };
        let n = u64::from(self.flows);
        raw.div_ceil(n) * n
    }

    /// The client's delay, a multiple of `flows` ns.
    pub fn think(&self) -> u64 {
        let n = u64::from(self.flows);
        self.think_ns.div_ceil(n) * n
    }

    /// Flow `i`'s client address: the source prefix's `i + 1`th.
    pub fn client(&self, i: u32) -> IpAddr {
        let i = i.wrapping_add(1);
        match self.src {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a).wrapping_add(i)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a).wrapping_add(u128::from(i))).into()),
        }
    }

    pub fn packets(&self) -> ConvPackets {
        let mut heap = BinaryHeap::new();
        for i in 0..self.flows {
            heap.push(Reverse((self.start_ns + u64::from(i), i)));
        }
        ConvPackets {
            conv: self.clone(),
            state: vec![Flow::default(); self.flows as usize],
            heap,
            sent: 0,
        }
    }
}

/// Where a flow's conversation stands.
#[derive(Clone, Copy, Debug, Default)]
struct Flow {
    /// Packets sent so far.
    step: u64,
    /// Next sequence numbers, client and server.
    cseq: u32,
    sseq: u32,
    /// The last TSval each side sent.
    cts: u32,
    sts: u32,
}

/// The packets of a [`Conversation`], in time order.
pub struct ConvPackets {
    conv: Conversation,
    state: Vec<Flow>,
    /// (time of the flow's next packet, flow).
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    sent: u64,
}

impl ConvPackets {
    fn frame(
        &self,
        i: u32,
        from_client: bool,
        f: &Flow,
        flags: (bool, bool),
        payload: usize,
    ) -> Vec<u8> {
        let c = &self.conv;
        let (client, server) = (c.client(i), c.dst);
        let (s, d, sp, dp) = if from_client {
            (client, server, c.sport, c.dport)
        } else {
            (server, client, c.dport, c.sport)
        };
        let eth = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
        let ip = match (s, d) {
            (IpAddr::V4(s), IpAddr::V4(d)) => eth.ipv4(s.octets(), d.octets(), 64),
            (IpAddr::V6(s), IpAddr::V6(d)) => eth.ipv6(s.octets(), d.octets(), 64),
            _ => unreachable!("one family"),
        };
        let (seq, ack, tsval, tsecr) = if from_client {
            (f.cseq, f.sseq, f.cts, f.sts)
        } else {
            (f.sseq, f.cseq, f.sts, f.cts)
        };
        let mut t = ip.tcp(sp, dp, seq, 64240);
        let (syn, with_ack) = flags;
        if syn {
            t = t.syn();
        }
        if with_ack {
            t = t.ack(ack);
        }
        let t = t
            .options(&[
                TcpOptionElement::Noop,
                TcpOptionElement::Noop,
                TcpOptionElement::Timestamp(tsval, tsecr),
            ])
            .expect("12 bytes of options");
        let mut out = Vec::new();
        t.write(&mut out, &vec![0x5a; payload])
            .expect("writing into a Vec cannot fail");
        out
    }
}

impl Iterator for ConvPackets {
    type Item = (u64, Vec<u8>);
    fn next(&mut self) -> Option<(u64, Vec<u8>)> {
        if self.sent >= self.conv.count {
            return None;
        }
        let Reverse((now, i)) = self.heap.pop()?;
        let (rtt, think) = (self.conv.rtt(i), self.conv.think());
        let mut f = self.state[i as usize];
        // Each host's millisecond clock, with an offset of its own.
        let clock =
            |host: u32| ((now / 1_000_000) as u32).wrapping_add(host.wrapping_mul(7919) + 1);
        let data = self.conv.data;
        let (from_client, flags, payload, next) = match f.step {
            0 => {
                f.cseq = 1_000_000u32.wrapping_add(i.wrapping_mul(104_729));
                f.sseq = 3_000_000u32.wrapping_add(i.wrapping_mul(15_485_863));
                f.cts = clock(2 * i);
                f.sts = 0;
                (true, (true, false), 0, now + rtt)
            }
            1 => {
                f.sts = clock(2 * i + 1);
                (false, (true, true), 0, now + think)
            }
            s if s % 2 == 0 => {
                f.cts = clock(2 * i);
                (true, (false, true), data, now + rtt)
            }
            _ => {
                f.sts = clock(2 * i + 1);
                (false, (false, true), data, now + think)
            }
        };
        // The SYN's sequence number is the one before the handshake's.
        let frame = self.frame(i, from_client, &f, flags, payload);
        match f.step {
            0 => {
                f.cseq = f.cseq.wrapping_add(1);
            }
            1 => f.sseq = f.sseq.wrapping_add(1),
            _ if from_client => f.cseq = f.cseq.wrapping_add(data as u32),
            _ => f.sseq = f.sseq.wrapping_add(data as u32),
        }
        f.step += 1;
        self.state[i as usize] = f;
        self.heap.push(Reverse((next, i)));
        self.sent += 1;
        Some((now, frame))
    }
}

#[cfg(test)]
mod tests {
    use crate::{GenSpec, GenSpecError};

    #[test]
    fn conversations_parse_and_keep_time_order() {
        let g = GenSpec::parse("tcp-conv,flows=3,rtt=2..4,count=30").unwrap();
        let c = g.conv.clone().unwrap();
        assert_eq!(
            (c.rtt(0), c.rtt(1), c.rtt(2)),
            (2_000_001, 3_000_000, 4_000_002)
        );
        let p: Vec<(u64, Vec<u8>)> = g.packets().collect();
        assert_eq!(p.len(), 30);
        assert!(
            p.windows(2).all(|w| w[0].0 < w[1].0),
            "strictly in time order"
        );
        // Flow 0: SYN, then the SYN-ACK an RTT later.
        assert_eq!(p[0].1[47], 0x02);
        let synack = p.iter().find(|(_, f)| f[47] == 0x12 && f[33] == 1).unwrap();
        assert_eq!(synack.0 - p[0].0, c.rtt(0));
        assert!(GenSpec::parse("tcp-conv,rtt=0.5").is_err());
        assert!(GenSpec::parse("tcp-conv,rtt=5..2").is_err());
        assert!(GenSpec::parse("tcp-conv,v6,flows=2,count=8").is_ok());
    }

    /// Found by the `genspec` fuzz target: a flow count whose state does
    /// not fit memory, and times past 2^64 ns, are refused.
    #[test]
    fn specs_that_cannot_be_generated_are_refused() {
        let e = GenSpec::parse("flows=755758278,tcp-conv").unwrap_err();
        assert!(e.to_string().contains("at most 1048576 flows"), "{e}");
        assert!(GenSpec::parse("tcp-conv,flows=1048576").is_ok());
        for spec in [
            "tcp-conv,start=18446744073709551615",
            "udp,start=18446744073709551615,count=2",
            "udp,count=18446744073709551615,rate=1",
        ] {
            let e = GenSpec::parse(spec).unwrap_err();
            assert!(matches!(e, GenSpecError::PastTime { .. }), "{spec}: {e}");
        }
        let g = GenSpec::parse("udp,start=18446744073709551615,count=1").unwrap();
        assert_eq!(g.packets().next().unwrap().0, u64::MAX);
    }
}
