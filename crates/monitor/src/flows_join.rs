//! Ranges' flow accounting ([`FlowsRange`]s of one capture, in order)
//! joined into what one read of the capture gives: the same ended flows,
//! in the same order, with the same summary. Each key's head is replayed
//! onto the flow carried from the ranges before; a flow carried past a
//! range in which its key has no packet ends idle if the range's clock
//! reached its idle time. What a range could not know (the clock entering
//! it, the table's fill) is checked, and a join that may differ from one
//! read says why ([`Joined::inexact`]), never silently.

use std::collections::HashMap;

use crate::error::MonitorError;
use crate::flows_range::{EndOrder, FlowsRange, HeadEnd, PartEnded, idle_by, step};
use crate::key::FlowKey;
use crate::table::{EndReason, Ended, FlowEntry, TableOptions};

/// The ranges joined so far.
#[derive(Debug)]
pub struct FlowsJoin {
    opts: TableOptions,
    carried: HashMap<FlowKey, FlowEntry>,
    clock_ns: u64,
    /// Packets of the ranges joined (the place of the next range's first).
    offset: u64,
    ranges: usize,
    accounted: u64,
    backwards: u64,
    ended: Vec<PartEnded>,
    inexact: Vec<String>,
}

/// One read's result, from its ranges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Joined {
    /// The ended flows, in the order the flow table gives them.
    pub ended: Vec<Ended>,
    /// Packets read.
    pub packets: u64,
    /// Packets that carried IP.
    pub accounted: u64,
    /// Flows ended per flowEndReason code (index 1 to 5).
    pub by_reason: [u64; 6],
    /// Packets earlier than a packet before them.
    pub backwards: u64,
    /// Why the join may differ from one read (empty: it is exact).
    pub inexact: Vec<String>,
}

impl FlowsJoin {
    /// A join of ranges accounted with `opts`.
    pub fn new(opts: TableOptions) -> FlowsJoin {
        FlowsJoin {
            opts,
            carried: HashMap::new(),
            clock_ns: 0,
            offset: 0,
            ranges: 0,
            accounted: 0,
            backwards: 0,
            ended: Vec::new(),
            inexact: Vec::new(),
        }
    }

    /// Joins the next range (ranges in the capture's order). A range
    /// accounted with other options is refused.
    pub fn add(&mut self, part: &FlowsRange) -> Result<(), MonitorError> {
        let opts = self.opts;
        if part.options != opts {
            return Err(MonitorError::Options(format!(
                "range {}: accounted with {}, not {} as the others",
                self.ranges,
                describe(&part.options),
                describe(&opts)
            )));
        }
        let index = self.ranges;
        self.ranges += 1;
        if let Some(first) = part.first_ns
            && first < self.clock_ns
        {
            self.inexact.push(format!(
                "range {index}: its first packet ({first} ns) is earlier than a packet of the \
                 ranges before it ({} ns), so the flow clock there is not the range's own",
                self.clock_ns
            ));
        }
        let most = self.carried.len() as u64 + part.peak;
        if most > opts.capacity as u64 {
            self.inexact.push(format!(
                "range {index}: {} flows carried in and up to {} of its own may exceed the \
                 table's capacity of {}: one read may have evicted flows",
                self.carried.len(),
                part.peak,
                opts.capacity
            ));
        }
        for kp in &part.keys {
            let mut flow = self.carried.remove(&kp.key);
            for p in &kp.head {
                step(
                    &opts,
                    kp.key,
                    &mut flow,
                    p,
                    self.offset + p.seq,
                    &mut self.ended,
                );
            }
            match kp.head_end {
                HeadEnd::Open => {}
                HeadEnd::Fin => {
                    if flow.is_some() {
                        return Err(MonitorError::record(format!(
                            "range {index}: a head that ends on FIN left its flow open"
                        )));
                    }
                }
                HeadEnd::Idle => {
                    if let Some(f) = flow.take() {
                        self.ended.push(idle(f, &opts));
                    }
                }
            }
            for e in &kp.ended {
                let mut e = *e;
                if e.order.class == 1 {
                    e.order.tie += self.offset;
                }
                self.ended.push(e);
            }
            if let Some(open) = kp.open {
                flow = Some(open);
            }
            if let Some(f) = flow {
                self.carried.insert(kp.key, f);
            }
        }
        self.clock_ns = self.clock_ns.max(part.clock_ns);
        let clock = self.clock_ns;
        let ended = &mut self.ended;
        self.carried.retain(|_, f| {
            let gone = idle_by(f.last_ns, clock, &opts);
            if gone {
                ended.push(idle(*f, &opts));
            }
            !gone
        });
        self.offset += part.packets;
        self.accounted += part.accounted;
        self.backwards += part.backwards;
        Ok(())
    }

    /// The end of the input: every flow still open ends (forced), and the
    /// flows come out in the flow table's order.
    pub fn finish(mut self) -> Result<Joined, MonitorError> {
        for f in self.carried.into_values() {
            self.ended.push(PartEnded {
                flow: f,
                reason: EndReason::ForcedEnd.code(),
                order: EndOrder::forced(&f),
            });
        }
        self.ended.sort_unstable_by_key(|e| (e.order, e.flow.key));
        let mut by_reason = [0u64; 6];
        let mut ended = Vec::with_capacity(self.ended.len());
        for e in &self.ended {
            let e = e.ended()?;
            by_reason[usize::from(e.reason.code())] += 1;
            ended.push(e);
        }
        Ok(Joined {
            ended,
            packets: self.offset,
            accounted: self.accounted,
            by_reason,
            backwards: self.backwards,
            inexact: self.inexact,
        })
    }
}

fn idle(flow: FlowEntry, opts: &TableOptions) -> PartEnded {
    PartEnded {
        flow,
        reason: EndReason::IdleTimeout.code(),
        order: EndOrder::idle(&flow, opts),
    }
}

fn describe(o: &TableOptions) -> String {
    format!(
        "capacity {}, idle {} ns, active {} ns",
        o.capacity, o.idle_timeout_ns, o.active_timeout_ns
    )
}
