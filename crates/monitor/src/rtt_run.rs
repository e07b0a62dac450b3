//! Passive RTT over any packet source: *source -> engine -> samples*,
//! handed to the caller in batches as they come, the per-flow statistics
//! and counters at the end. Every engine sweeps (forgets SYNs and TSvals
//! past the maximum age) before the first packet a second or more after
//! the last sweep, by the packets' time, so that all keep the same state.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;

use pipeline::{PacketInfo, Source};
use xpf::XpfEngine;

use crate::drive::{Application, Drive, drive};
use crate::error::MonitorError;
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

/// A meter as the driver runs it.
struct Measuring {
    engine: Engine,
    clock: SweepClock,
    /// Packets that carried a TCP segment.
    tcp: u64,
}

impl Application for Measuring {
    type Record = RttSample;

    fn packet(
        &mut self,
        info: &PacketInfo,
        data: &[u8],
        out: &mut Vec<RttSample>,
    ) -> Result<(), MonitorError> {
        let now = info.timestamp_ns;
        let seg = segment(data);
        self.tcp += u64::from(seg.is_some());
        let sweep = self.clock.due(now);
        match &mut self.engine {
            Engine::Table(m) => {
                if sweep {
                    m.sweep(now);
                }
                let now = m.clock(now);
                if let Some(seg) = seg {
                    m.packet(&seg, now, out);
                }
                Ok(())
            }
            Engine::Ebpf(e) => {
                if sweep {
                    e.sweep(now)?;
                }
                e.packet(data, now, out)
            }
            Engine::Xpf(e) => {
                if sweep {
                    e.sweep(now);
                }
                e.packet(data, now, out)
            }
        }
    }
}

/// Measures every packet of `source`; `each` gets the samples; `progress`
/// counts the packets read.
pub fn measure_rtt(
    source: &mut dyn Source,
    opts: &RttOptions,
    progress: &AtomicU64,
    mut each: impl FnMut(&[RttSample]),
) -> Result<RttSummary, MonitorError> {
    let engine = match opts.engine {
        RttEngine::Table => Engine::Table(Box::new(RttMeter::new(opts.meter))),
        RttEngine::Ebpf => Engine::Ebpf(Box::new(EbpfRtt::new(&opts.meter)?)),
        RttEngine::Xpf(x) => Engine::Xpf(Box::new(XpfRtt::new(&opts.meter, x)?)),
    };
    let mut app = Measuring {
        engine,
        clock: SweepClock::default(),
        tcp: 0,
    };
    let how = Drive {
        limit: opts.limit,
        metrics: None,
        progress,
    };
    let mut samples = [0u64; 3];
    let driven = drive(source, &mut app, &how, |out| {
        for x in out {
            samples[usize::from(x.method.code())] += 1;
        }
        each(out);
    })?;
    let (flows, counters) = match &mut app.engine {
        Engine::Table(m) => (m.stats(), m.counters()),
        Engine::Ebpf(e) => (e.stats()?, e.counters()),
        Engine::Xpf(e) => (e.stats(), e.counters()?),
    };
    Ok(RttSummary {
        packets: driven.packets,
        tcp: app.tcp,
        samples,
        flows,
        counters,
        source_error: driven.source_error,
        order: driven.order,
    })
}
