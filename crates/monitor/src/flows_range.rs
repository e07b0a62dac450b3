//! Flow accounting over one byte range of a capture, to be joined with the
//! ranges before and after it into what one read of the whole capture
//! gives ([`FlowsJoin`](crate::FlowsJoin); the argument in docs/shards.md,
//! "Flows across ranges").
//!
//! A key's records depend only on its own packets (their times on the
//! meter's clock, lengths and TCP flags) and on the flow it had open when
//! the range began. That flow ends, whatever it was, at the key's first
//! idle gap in the range (a packet at least the idle timeout after the
//! key's packet before it) or at its first packet with TCP FIN or RST. So
//! a range gives, per key: its **head**, the packets up to that point,
//! raw (to be replayed onto the carried flow by the join), and after it
//! the records it ended and the flow it holds open at the range's end,
//! exactly as one read would.
//!
//! Two things no range can know are checked by the join: the meter's clock
//! (the latest time seen) entering the range must not be later than the
//! range's first packet, and the table must not have overflowed (the
//! range's peak of open flows plus the flows carried in must fit).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use pipeline::{PacketInfo, Source};
use serde::{Deserialize, Serialize};

use crate::drive::{Application, Drive, drive};
use crate::error::MonitorError;
use crate::key::{FlowKey, Observed, observe};
use crate::table::{EndReason, Ended, FlowEntry, TableOptions};

const FIN: u8 = 0x01;
const RST: u8 = 0x04;

/// Where an ended flow comes in one read's output: the order of ends the
/// flow table gives, computed from the record alone. A flow ended idle
/// comes out at the first packet whose clock reaches `last + idle`
/// (`class` 0, `at_ns` that time, `tie` its last time); one ended by a
/// packet (active timeout, `phase` 0; FIN or RST, `phase` 1) at that
/// packet (`class` 1, `at_ns` its clock, `tie` its place in the stream);
/// the rest at the end (`class` 2). Sorted with the key after it, this
/// is the table's order (docs/shards.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EndOrder {
    pub at_ns: u64,
    pub class: u8,
    pub tie: u64,
    pub phase: u8,
}

impl EndOrder {
    /// A flow that ended idle.
    pub(crate) fn idle(flow: &FlowEntry, opts: &TableOptions) -> EndOrder {
        EndOrder {
            at_ns: flow.last_ns.saturating_add(opts.idle_timeout_ns),
            class: 0,
            tie: flow.last_ns,
            phase: 0,
        }
    }

    /// A flow ended by the packet at `seq` (in the range, from 1).
    fn packet(clock_ns: u64, seq: u64, phase: u8) -> EndOrder {
        EndOrder {
            at_ns: clock_ns,
            class: 1,
            tie: seq,
            phase,
        }
    }

    /// A flow still open at the end of the input.
    pub(crate) fn forced(flow: &FlowEntry) -> EndOrder {
        EndOrder {
            at_ns: u64::MAX,
            class: 2,
            tie: flow.last_ns,
            phase: 0,
        }
    }
}

/// An ended flow, its reason as `flowEndReason`'s code, and its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartEnded {
    pub flow: FlowEntry,
    pub reason: u8,
    pub order: EndOrder,
}

impl PartEnded {
    /// The flow table's record.
    pub fn ended(&self) -> Result<Ended, MonitorError> {
        let reason = EndReason::from_code(self.reason).ok_or_else(|| {
            MonitorError::record(format!("a flow's end reason {} is none", self.reason))
        })?;
        Ok(Ended {
            flow: self.flow,
            reason,
        })
    }
}

/// What the table reads of one packet: its time on the meter's clock,
/// its place in the range (from 1), its IP length and TCP flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadPacket {
    pub clock_ns: u64,
    pub seq: u64,
    pub bytes: u32,
    pub tcp_flags: u8,
}

/// How a key's head ended in its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeadEnd {
    /// The range ended within it: the flow goes on into the next range.
    Open,
    /// The flow went idle within the range after the head's last packet.
    Idle,
    /// Its last packet carried TCP FIN or RST.
    Fin,
}

/// One key's share of a range: its head, and after it the flows it ended
/// and the one it holds open at the range's end.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyPart {
    pub key: FlowKey,
    pub head: Vec<HeadPacket>,
    pub head_end: HeadEnd,
    pub ended: Vec<PartEnded>,
    pub open: Option<FlowEntry>,
}

/// A range's flow accounting, to be joined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowsRange {
    pub options: TableOptions,
    /// Packets read.
    pub packets: u64,
    /// Packets that carried IP.
    pub accounted: u64,
    /// The first packet's time, if any.
    pub first_ns: Option<u64>,
    /// The meter's clock at the range's end (its latest time; 0 for none).
    pub clock_ns: u64,
    /// The most flows open at once (the range's own).
    pub peak: u64,
    /// Packets earlier than one before them in the range.
    pub backwards: u64,
    /// Per key, in key order.
    pub keys: Vec<KeyPart>,
}

/// One key while the range is read.
struct KeyState {
    part: KeyPart,
    in_head: bool,
}

/// A range's accounting as the driver runs it.
struct RangeAccounting {
    opts: TableOptions,
    keys: HashMap<FlowKey, KeyState>,
    /// (last seen, key) of the keys with a flow open (or a head not ended).
    by_age: BTreeSet<(u64, FlowKey)>,
    clock_ns: u64,
    first_ns: Option<u64>,
    seq: u64,
    accounted: u64,
    peak: usize,
}

/// Whether a flow last seen at `last_ns` has ended idle by `now_ns` (the
/// flow table's rule).
pub(crate) fn idle_by(last_ns: u64, now_ns: u64, opts: &TableOptions) -> bool {
    now_ns >= opts.idle_timeout_ns && last_ns <= now_ns - opts.idle_timeout_ns
}

/// One packet of `key` onto its open flow `flow`, as the flow table
/// accounts it (the clock already moved): the flows it ends go to `out`,
/// their order's `tie` the packet's `seq`.
pub(crate) fn step(
    opts: &TableOptions,
    key: FlowKey,
    flow: &mut Option<FlowEntry>,
    p: &HeadPacket,
    seq: u64,
    out: &mut Vec<PartEnded>,
) {
    if let Some(f) = flow.take_if(|f| idle_by(f.last_ns, p.clock_ns, opts)) {
        out.push(PartEnded {
            flow: f,
            reason: EndReason::IdleTimeout.code(),
            order: EndOrder::idle(&f, opts),
        });
    }
    if let Some(f) =
        flow.take_if(|f| p.clock_ns.saturating_sub(f.first_ns) >= opts.active_timeout_ns)
    {
        out.push(PartEnded {
            flow: f,
            reason: EndReason::ActiveTimeout.code(),
            order: EndOrder::packet(p.clock_ns, seq, 0),
        });
    }
    let f = flow.get_or_insert(FlowEntry {
        key,
        packets: 0,
        bytes: 0,
        first_ns: p.clock_ns,
        last_ns: p.clock_ns,
        tcp_flags: 0,
    });
    f.packets += 1;
    f.bytes += u64::from(p.bytes);
    f.last_ns = p.clock_ns;
    f.tcp_flags |= p.tcp_flags;
    if key.protocol == 6 && p.tcp_flags & (FIN | RST) != 0 {
        let f = flow.take().expect("just accounted");
        out.push(PartEnded {
            flow: f,
            reason: EndReason::EndOfFlow.code(),
            order: EndOrder::packet(p.clock_ns, seq, 1),
        });
    }
}

impl RangeAccounting {
    fn new(opts: TableOptions) -> RangeAccounting {
        RangeAccounting {
            opts,
            keys: HashMap::new(),
            by_age: BTreeSet::new(),
            clock_ns: 0,
            first_ns: None,
            seq: 0,
            accounted: 0,
            peak: 0,
        }
    }

    /// Ends what is idle by the clock: a head, or a flow after it.
    fn sweep(&mut self) {
        while let Some(&(last, key)) = self.by_age.first() {
            if !idle_by(last, self.clock_ns, &self.opts) {
                break;
            }
            self.by_age.pop_first();
            let st = self.keys.get_mut(&key).expect("a key with an age");
            if st.in_head {
                st.in_head = false;
                st.part.head_end = HeadEnd::Idle;
            } else if let Some(f) = st.part.open.take() {
                st.part.ended.push(PartEnded {
                    flow: f,
                    reason: EndReason::IdleTimeout.code(),
                    order: EndOrder::idle(&f, &self.opts),
                });
            }
        }
    }

    fn account(&mut self, o: Option<Observed>, ts_ns: u64) {
        self.seq += 1;
        self.first_ns.get_or_insert(ts_ns);
        self.clock_ns = self.clock_ns.max(ts_ns);
        self.sweep();
        let Some(o) = o else { return };
        self.accounted += 1;
        let key = o.key;
        let p = HeadPacket {
            clock_ns: self.clock_ns,
            seq: self.seq,
            bytes: o.bytes,
            tcp_flags: o.tcp_flags,
        };
        let fin = key.protocol == 6 && o.tcp_flags & (FIN | RST) != 0;
        let st = self.keys.entry(key).or_insert_with(|| KeyState {
            part: KeyPart {
                key,
                head: Vec::new(),
                head_end: HeadEnd::Open,
                ended: Vec::new(),
                open: None,
            },
            in_head: true,
        });
        let before = match st.in_head {
            true => st.part.head.last().map(|h| h.clock_ns),
            false => st.part.open.map(|f| f.last_ns),
        };
        if let Some(last) = before {
            self.by_age.remove(&(last, key));
        }
        let open = if st.in_head {
            st.part.head.push(p);
            if fin {
                st.in_head = false;
                st.part.head_end = HeadEnd::Fin;
            }
            !fin
        } else {
            step(
                &self.opts,
                key,
                &mut st.part.open,
                &p,
                p.seq,
                &mut st.part.ended,
            );
            st.part.open.is_some()
        };
        if open {
            self.by_age.insert((self.clock_ns, key));
        }
        // The table's size once the packet is in (before a FIN ends it).
        self.peak = self.peak.max(self.by_age.len() + usize::from(!open));
    }
}

impl Application for RangeAccounting {
    type Record = ();

    fn packet(
        &mut self,
        info: &PacketInfo,
        data: &[u8],
        _: &mut Vec<()>,
    ) -> Result<(), MonitorError> {
        self.account(observe(data), info.timestamp_ns);
        Ok(())
    }
}

/// Accounts every packet of `source` (one range of a capture) with the
/// table's options `opts`: the range's part, and why the source stopped
/// early, if it did. `progress` counts the packets read.
pub fn account_range(
    source: &mut dyn Source,
    opts: &TableOptions,
    progress: &AtomicU64,
) -> Result<(FlowsRange, Option<String>), MonitorError> {
    let mut app = RangeAccounting::new(*opts);
    let how = Drive {
        limit: None,
        metrics: None,
        progress,
    };
    let driven = drive(source, &mut app, &how, |_| {})?;
    progress.store(driven.packets, Ordering::Relaxed);
    let mut keys: Vec<KeyPart> = app.keys.into_values().map(|s| s.part).collect();
    keys.sort_unstable_by_key(|k| k.key);
    let range = FlowsRange {
        options: *opts,
        packets: app.seq,
        accounted: app.accounted,
        first_ns: app.first_ns,
        clock_ns: app.clock_ns,
        peak: app.peak as u64,
        backwards: driven.order.backwards,
        keys,
    };
    Ok((range, driven.source_error))
}
