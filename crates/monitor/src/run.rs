//! Flow accounting over any packet source: *source -> observe -> flow
//! table -> ended flows*, handed to the caller in batches (to export or
//! print) as they end, and the rest at the end of the input.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::{Source, Step};

use xpf::XpfEngine;

use crate::ebpf::EbpfFlows;
use crate::key::observe;
use crate::metrics::Metrics;
use crate::table::{Ended, FlowTable, TableOptions};
use crate::xpf::XpfFlows;

/// Which flow accounting runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowEngine {
    /// sluice's own flow table (the reference).
    #[default]
    Table,
    /// `programs/flows.c` in sluice's VM.
    Ebpf,
    /// `programs/xpf/flows.s` on an xPF engine.
    Xpf(XpfEngine),
}

/// How to account.
#[derive(Clone, Debug, Default)]
pub struct FlowRunOptions {
    pub table: TableOptions,
    pub engine: FlowEngine,
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// Kept up to date (every [`GAUGE_EVERY`] packets and at the end):
    /// the flows held, and the drops.
    pub metrics: Option<Arc<Metrics>>,
}

/// How often (in packets) the metrics' gauges are brought up to date.
pub const GAUGE_EVERY: u64 = 1024;

enum Accountant {
    Table(FlowTable),
    Ebpf(Box<EbpfFlows>),
    Xpf(Box<XpfFlows>),
}

impl Accountant {
    /// Flows held now.
    fn held(&mut self) -> Result<u64, String> {
        Ok(match self {
            Accountant::Table(t) => t.len() as u64,
            Accountant::Ebpf(e) => e.held(),
            Accountant::Xpf(x) => x.held()?,
        })
    }

    /// A full table's toll (flows evicted by the table, packets not
    /// accounted by the programs) and records lost.
    fn dropped(&mut self) -> Result<(u64, u64), String> {
        Ok(match self {
            Accountant::Table(t) => (t.evicted(), 0),
            Accountant::Ebpf(e) => (e.lacked(), e.lost()),
            Accountant::Xpf(x) => (x.lacked()?, x.lost()?),
        })
    }

    fn gauge(&mut self, m: &Metrics) -> Result<(), String> {
        m.flows_active.store(self.held()?, Ordering::Relaxed);
        let (full, lost) = self.dropped()?;
        m.drops("flows", "table_full", full);
        m.drops("flows", "records_lost", lost);
        Ok(())
    }
}

/// How an accounting run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlowSummary {
    /// Packets read.
    pub packets: u64,
    /// Packets that carried IP (accounted).
    pub accounted: u64,
    /// Flows that ended (all of them, at the end of the input).
    pub flows: u64,
    /// Flows ended per flowEndReason code (index 1 to 5).
    pub by_reason: [u64; 6],
    /// Flows evicted from a full table (the table), or packets a full map
    /// could not account, each sent as its own record (eBPF, xPF).
    pub evicted: u64,
    /// Records the eBPF program lost to a full ring buffer (xPF: to a full
    /// log, or packets over its budget).
    pub lost: u64,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
    /// Packets earlier than a packet before them (flows then time out as
    /// they are read, not as they were on the wire).
    pub order: crate::TimeOrder,
}

/// Ended flows are handed out in batches of this many.
const BATCH: usize = 256;

/// Accounts every packet of `source`; `each` gets the ended flows;
/// `progress` counts the packets read (for a progress bar).
pub fn account_flows(
    source: &mut dyn Source,
    opts: &FlowRunOptions,
    progress: &AtomicU64,
    mut each: impl FnMut(&[Ended]),
) -> Result<FlowSummary, String> {
    let mut acc = match opts.engine {
        FlowEngine::Table => Accountant::Table(FlowTable::new(opts.table)),
        FlowEngine::Ebpf => Accountant::Ebpf(Box::new(EbpfFlows::new(&opts.table)?)),
        FlowEngine::Xpf(engine) => Accountant::Xpf(Box::new(XpfFlows::new(&opts.table, engine)?)),
    };
    let mut s = FlowSummary::default();
    let mut ended = Vec::with_capacity(BATCH);
    let mut failure = None;
    let mut hand_out = |ended: &mut Vec<Ended>, s: &mut FlowSummary| {
        for e in ended.iter() {
            s.flows += 1;
            s.by_reason[usize::from(e.reason.code())] += 1;
        }
        each(ended);
        ended.clear();
    };
    // What ended goes out at the end of each batch the source gives too
    // (`None`): a stream that pauses (a pipe between bursts) ends a batch,
    // and a scrape then sees every flow ended so far, not a batch still
    // filling.
    let read = pipeline::for_each_step(source, opts.limit, |step| {
        let Step::Packet(info, data) = step else {
            if !ended.is_empty() {
                hand_out(&mut ended, &mut s);
            }
            if let Some(m) = &opts.metrics
                && failure.is_none()
                && let Err(why) = acc.gauge(m)
            {
                failure = Some(why);
            }
            return;
        };
        if failure.is_some() {
            return;
        }
        s.packets += 1;
        s.order.see(info.seq, info.timestamp_ns);
        progress.store(s.packets, Ordering::Relaxed);
        match &mut acc {
            Accountant::Table(t) => {
                if let Some(o) = observe(data) {
                    s.accounted += 1;
                    t.account(&o, info.timestamp_ns, &mut ended);
                } else {
                    t.tick(info.timestamp_ns, &mut ended);
                }
            }
            Accountant::Ebpf(e) => {
                s.accounted += u64::from(observe(data).is_some());
                if let Err(why) = e.account(data, info.timestamp_ns, &mut ended) {
                    failure = Some(format!("packet {}: {why}", info.seq));
                }
            }
            Accountant::Xpf(x) => {
                s.accounted += u64::from(observe(data).is_some());
                if let Err(why) = x.account(data, info.timestamp_ns, &mut ended) {
                    failure = Some(format!("packet {}: {why}", info.seq));
                }
            }
        }
        if ended.len() >= BATCH {
            hand_out(&mut ended, &mut s);
        }
        if let Some(m) = &opts.metrics
            && s.packets % GAUGE_EVERY == 0
            && let Err(why) = acc.gauge(m)
        {
            failure = Some(why);
        }
    });
    if let Some(f) = failure {
        return Err(f);
    }
    if let Err(e) = read {
        s.source_error = Some(e.to_string());
    }
    match &mut acc {
        Accountant::Table(t) => {
            t.flush(&mut ended);
            s.evicted = t.evicted();
        }
        Accountant::Ebpf(e) => {
            e.flush(&mut ended)?;
            s.evicted = e.lacked();
            s.lost = e.lost();
        }
        Accountant::Xpf(x) => {
            x.flush(&mut ended)?;
            s.evicted = x.lacked()?;
            s.lost = x.lost()?;
        }
    }
    hand_out(&mut ended, &mut s);
    if let Some(m) = &opts.metrics {
        acc.gauge(m)?;
    }
    Ok(s)
}
