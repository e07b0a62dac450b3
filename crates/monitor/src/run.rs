//! Flow accounting over any packet source: *source -> observe -> flow
//! table -> ended flows*, handed to the caller in batches (to export or
//! print) as they end, and the rest at the end of the input.

use pipeline::{Source, for_each_packet};

use crate::key::observe;
use crate::table::{Ended, FlowTable, TableOptions};

/// How to account.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowRunOptions {
    pub table: TableOptions,
    /// Stop after this many packets.
    pub limit: Option<u64>,
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
    /// Flows evicted from a full table.
    pub evicted: u64,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
}

/// Ended flows are handed out in batches of this many.
const BATCH: usize = 256;

/// Accounts every packet of `source`; `each` gets the ended flows.
pub fn account_flows(
    source: &mut dyn Source,
    opts: &FlowRunOptions,
    mut each: impl FnMut(&[Ended]),
) -> FlowSummary {
    let mut table = FlowTable::new(opts.table);
    let mut s = FlowSummary::default();
    let mut ended = Vec::with_capacity(BATCH);
    let mut hand_out = |ended: &mut Vec<Ended>, s: &mut FlowSummary| {
        for e in ended.iter() {
            s.flows += 1;
            s.by_reason[usize::from(e.reason.code())] += 1;
        }
        each(ended);
        ended.clear();
    };
    let read = for_each_packet(source, opts.limit, |info, data| {
        s.packets += 1;
        if let Some(o) = observe(data) {
            s.accounted += 1;
            table.account(&o, info.timestamp_ns, &mut ended);
            if ended.len() >= BATCH {
                hand_out(&mut ended, &mut s);
            }
        }
    });
    if let Err(e) = read {
        s.source_error = Some(e.to_string());
    }
    table.flush(&mut ended);
    hand_out(&mut ended, &mut s);
    s.evicted = table.evicted();
    s
}
