//! Passive RTT over any packet source: *source -> engine -> samples*,
//! handed to the caller in batches as they come, the per-flow statistics
//! and counters at the end. Every engine sweeps (forgets SYNs and TSvals
//! past the maximum age) before the first packet a second or more after
//! the last sweep, by the packets' time, so that all keep the same state.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::{Source, for_each_packet};
use xpf::XpfEngine;

use crate::key::FlowKey;
use crate::order::TimeOrder;
use crate::rtt::{
    MeterOptions, Method, RttCounters, RttMeter, RttSample, RttStats, SweepClock, segment,
};
use crate::rtt_ebpf::EbpfRtt;
use crate::rtt_xpf::XpfRtt;

/// Which implementation measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RttEngine {
    /// sluice's reference meter (`monitor::RttMeter`).
    #[default]
    Table,
    /// `programs/rtt.c` in sluice's VM.
    Ebpf,
    /// `programs/xpf/rtt.s` on an xPF engine (its tables at most
    /// `XPF_MAX_SYNS` and `XPF_MAX_TSVALS` slots).
    Xpf(XpfEngine),
}

/// How to measure.
#[derive(Clone, Copy, Debug, Default)]
pub struct RttOptions {
    pub meter: MeterOptions,
    pub engine: RttEngine,
    /// Stop after this many packets.
    pub limit: Option<u64>,
}

/// How a run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RttSummary {
    /// Packets read.
    pub packets: u64,
    /// Packets that carried a TCP segment the meter reads.
    pub tcp: u64,
    /// Samples per method (index 1 handshake, 2 timestamp).
    pub samples: [u64; 3],
    /// Statistics per flow (of the completing packets) and method.
    pub flows: BTreeMap<(FlowKey, Method), RttStats>,
    pub counters: RttCounters,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
    /// Packets earlier than a packet before them (a capture out of time
    /// order: the meter takes packets in capture order, so a reply read
    /// before its request gives no sample or a wrong one).
    pub order: TimeOrder,
}

enum Engine {
    Table(Box<RttMeter>),
    Ebpf(Box<EbpfRtt>),
    Xpf(Box<XpfRtt>),
}

/// Samples are handed out in batches of this many.
const BATCH: usize = 256;

/// Measures every packet of `source`; `each` gets the samples; `progress`
/// counts the packets read.
pub fn measure_rtt(
    source: &mut dyn Source,
    opts: &RttOptions,
    progress: &AtomicU64,
    mut each: impl FnMut(&[RttSample]),
) -> Result<RttSummary, String> {
    let mut engine = match opts.engine {
        RttEngine::Table => Engine::Table(Box::new(RttMeter::new(opts.meter))),
        RttEngine::Ebpf => Engine::Ebpf(Box::new(EbpfRtt::new(&opts.meter)?)),
        RttEngine::Xpf(x) => Engine::Xpf(Box::new(XpfRtt::new(&opts.meter, x)?)),
    };
    let mut s = RttSummary::default();
    let mut out = Vec::with_capacity(BATCH);
    let mut failure = None;
    let mut clock = SweepClock::default();
    let mut hand_out = |out: &mut Vec<RttSample>, s: &mut RttSummary| {
        for x in out.iter() {
            s.samples[usize::from(x.method.code())] += 1;
        }
        each(out);
        out.clear();
    };
    let read = for_each_packet(source, opts.limit, |info, data| {
        if failure.is_some() {
            return;
        }
        s.packets += 1;
        progress.store(s.packets, Ordering::Relaxed);
        let now = info.timestamp_ns;
        s.order.see(info.seq, now);
        let seg = segment(data);
        s.tcp += u64::from(seg.is_some());
        let sweep = clock.due(now);
        let r = match &mut engine {
            Engine::Table(m) => {
                if sweep {
                    m.sweep(now);
                }
                let now = m.clock(now);
                if let Some(seg) = seg {
                    m.packet(&seg, now, &mut out);
                }
                Ok(())
            }
            Engine::Ebpf(e) => (|| {
                if sweep {
                    e.sweep(now)?;
                }
                e.packet(data, now, &mut out)
            })(),
            Engine::Xpf(e) => {
                if sweep {
                    e.sweep(now);
                }
                e.packet(data, now, &mut out)
            }
        };
        if let Err(why) = r {
            failure = Some(format!("packet {}: {why}", info.seq));
        }
        if out.len() >= BATCH {
            hand_out(&mut out, &mut s);
        }
    });
    if let Some(f) = failure {
        return Err(f);
    }
    if let Err(e) = read {
        s.source_error = Some(e.to_string());
    }
    hand_out(&mut out, &mut s);
    match &mut engine {
        Engine::Table(m) => {
            s.flows = m.stats();
            s.counters = m.counters();
        }
        Engine::Ebpf(e) => {
            s.flows = e.stats()?;
            s.counters = e.counters();
        }
        Engine::Xpf(e) => {
            s.flows = e.stats();
            s.counters = e.counters()?;
        }
    }
    Ok(s)
}
