//! Flow accounting over any packet source: *source -> observe -> flow
//! table -> ended flows*, handed to the caller in batches (to export or
//! print) as they end, and the rest at the end of the input.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::{PacketInfo, Source};

use xpf::XpfEngine;

use crate::drive::{Application, Drive, drive};
use crate::ebpf::EbpfFlows;
use crate::error::MonitorError;
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
    /// Kept up to date (every 1024 packets, at the end of each batch the
    /// source gives, and at the end): the flows held, and the drops.
    pub metrics: Option<Arc<Metrics>>,
}

enum Accountant {
    Table(FlowTable),
    Ebpf(Box<EbpfFlows>),
    Xpf(Box<XpfFlows>),
}

impl Accountant {
    /// Flows held now.
    fn held(&mut self) -> Result<u64, MonitorError> {
        Ok(match self {
            Accountant::Table(t) => t.len() as u64,
            Accountant::Ebpf(e) => e.held(),
            Accountant::Xpf(x) => x.held()?,
        })
    }

    /// A full table's toll (flows evicted by the table, packets not
    /// accounted by the programs) and records lost.
    fn dropped(&mut self) -> Result<(u64, u64), MonitorError> {
        Ok(match self {
            Accountant::Table(t) => (t.evicted(), 0),
            Accountant::Ebpf(e) => (e.lacked(), e.lost()),
            Accountant::Xpf(x) => (x.lacked()?, x.lost()?),
        })
    }

    fn gauge(&mut self, m: &Metrics) -> Result<(), MonitorError> {
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

/// The flow accounting as the driver runs it.
struct Accounting {
    acc: Accountant,
    /// Packets that carried IP.
    accounted: u64,
}

impl Application for Accounting {
    type Record = Ended;

    fn packet(
        &mut self,
        info: &PacketInfo,
        data: &[u8],
        out: &mut Vec<Ended>,
    ) -> Result<(), MonitorError> {
        let observed = observe(data);
        self.accounted += u64::from(observed.is_some());
        match &mut self.acc {
            Accountant::Table(t) => match observed {
                Some(o) => t.account(&o, info.timestamp_ns, out),
                None => {
                    t.tick(info.timestamp_ns, out);
                }
            },
            Accountant::Ebpf(e) => e.account(data, info.timestamp_ns, out)?,
            Accountant::Xpf(x) => x.account(data, info.timestamp_ns, out)?,
        }
        Ok(())
    }

    fn gauge(&mut self, m: &Metrics) -> Result<(), MonitorError> {
        self.acc.gauge(m)
    }

    /// Every flow still held ends (the end of the input).
    fn finish(&mut self, out: &mut Vec<Ended>) -> Result<(), MonitorError> {
        match &mut self.acc {
            Accountant::Table(t) => t.flush(out),
            Accountant::Ebpf(e) => e.flush(out)?,
            Accountant::Xpf(x) => x.flush(out)?,
        }
        Ok(())
    }
}

/// Accounts every packet of `source`; `each` gets the ended flows;
/// `progress` counts the packets read (for a progress bar).
pub fn account_flows(
    source: &mut dyn Source,
    opts: &FlowRunOptions,
    progress: &AtomicU64,
    mut each: impl FnMut(&[Ended]),
) -> Result<FlowSummary, MonitorError> {
    let acc = match opts.engine {
        FlowEngine::Table => Accountant::Table(FlowTable::new(opts.table)),
        FlowEngine::Ebpf => Accountant::Ebpf(Box::new(EbpfFlows::new(&opts.table)?)),
        FlowEngine::Xpf(engine) => Accountant::Xpf(Box::new(XpfFlows::new(&opts.table, engine)?)),
    };
    let mut app = Accounting { acc, accounted: 0 };
    let how = Drive {
        limit: opts.limit,
        metrics: opts.metrics.as_deref(),
        progress,
    };
    let (mut flows, mut by_reason) = (0, [0u64; 6]);
    let driven = drive(source, &mut app, &how, |ended| {
        for e in ended {
            flows += 1;
            by_reason[usize::from(e.reason.code())] += 1;
        }
        each(ended);
    })?;
    let (evicted, lost) = match &mut app.acc {
        Accountant::Table(t) => (t.evicted(), 0),
        Accountant::Ebpf(e) => (e.lacked(), e.lost()),
        Accountant::Xpf(x) => (x.lacked()?, x.lost()?),
    };
    Ok(FlowSummary {
        packets: driven.packets,
        accounted: app.accounted,
        flows,
        by_reason,
        evicted,
        lost,
        source_error: driven.source_error,
        order: driven.order,
    })
}
