//! The flow table. The rules, as NetFlow/IPFIX meters keep them (RFC 5470,
//! softflowd), on the meter's clock (the latest packet time: a capture's
//! time that steps back does not turn it back): a packet updates its key's entry (packets, bytes, first
//! and last time, the OR of TCP flags), or starts one; a flow ends when it
//! has been idle for the idle timeout, when it has lasted the active
//! timeout (the next packet starts a new entry), after a packet with TCP
//! FIN or RST, and at the end of the input; when the table is full, the
//! flow seen least recently is evicted to make room. Every ended flow is
//! handed out with its reason; the evictions are also counted.

use std::collections::{BTreeSet, HashMap};

pub use ipfix::EndReason;

use crate::key::{FlowKey, Observed};

/// Size and timeouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TableOptions {
    /// Flows kept at once.
    pub capacity: usize,
    /// A flow without packets for this long ends (ns).
    pub idle_timeout_ns: u64,
    /// A flow ends when it has lasted this long (ns).
    pub active_timeout_ns: u64,
}

impl Default for TableOptions {
    /// 65,536 flows, 15 s idle, 30 min active (softflowd's and Cisco's).
    fn default() -> TableOptions {
        TableOptions {
            capacity: 65_536,
            idle_timeout_ns: 15_000_000_000,
            active_timeout_ns: 1_800_000_000_000,
        }
    }
}

/// One flow's totals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FlowEntry {
    pub key: FlowKey,
    pub packets: u64,
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub tcp_flags: u8,
}

/// A flow that ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ended {
    pub flow: FlowEntry,
    pub reason: EndReason,
}

impl Ended {
    /// The record IPFIX exports (ICMP's type and code as its own field).
    pub fn to_ipfix(&self) -> ipfix::Flow {
        let f = &self.flow;
        let icmp = matches!(
            (f.key.protocol, f.key.src),
            (1, std::net::IpAddr::V4(_)) | (58, std::net::IpAddr::V6(_))
        );
        ipfix::Flow {
            src: f.key.src,
            dst: f.key.dst,
            src_port: if icmp { 0 } else { f.key.src_port },
            dst_port: if icmp { 0 } else { f.key.dst_port },
            protocol: f.key.protocol,
            icmp_type_code: icmp.then_some(f.key.dst_port),
            packets: f.packets,
            bytes: f.bytes,
            first_ns: f.first_ns,
            last_ns: f.last_ns,
            tcp_flags: f.tcp_flags,
            end_reason: self.reason,
        }
    }
}

/// The flows being accounted.
#[derive(Debug)]
pub struct FlowTable {
    opts: TableOptions,
    flows: HashMap<FlowKey, FlowEntry>,
    /// (last seen, key): the least recently seen first.
    by_age: BTreeSet<(u64, FlowKey)>,
    evicted: u64,
    started: u64,
    /// The meter's clock: the latest packet time (a capture's time that
    /// steps back counts as the latest seen, as a meter's clock never runs
    /// backwards).
    clock_ns: u64,
}

const FIN: u8 = 0x01;
const RST: u8 = 0x04;

impl FlowTable {
    pub fn new(opts: TableOptions) -> FlowTable {
        FlowTable {
            opts: TableOptions {
                capacity: opts.capacity.max(1),
                ..opts
            },
            flows: HashMap::new(),
            by_age: BTreeSet::new(),
            evicted: 0,
            started: 0,
            clock_ns: 0,
        }
    }

    /// Flows in the table.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Flows evicted from a full table so far.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Flows started so far.
    pub fn started(&self) -> u64 {
        self.started
    }

    fn end(&mut self, key: &FlowKey, reason: EndReason, out: &mut Vec<Ended>) {
        if let Some(flow) = self.flows.remove(key) {
            self.by_age.remove(&(flow.last_ns, *key));
            out.push(Ended { flow, reason });
        }
    }

    /// Ends the flows idle for the idle timeout or longer at `now_ns`.
    pub fn expire(&mut self, now_ns: u64, out: &mut Vec<Ended>) {
        let horizon = now_ns.saturating_sub(self.opts.idle_timeout_ns);
        while let Some(&(last, key)) = self.by_age.first() {
            if last > horizon || now_ns < self.opts.idle_timeout_ns {
                break;
            }
            self.end(&key, EndReason::IdleTimeout, out);
        }
    }

    /// Moves the clock to a packet seen at `ts_ns` (any packet, IP or not:
    /// time passes) and ends the flows idle by then; the clock's time.
    pub fn tick(&mut self, ts_ns: u64, out: &mut Vec<Ended>) -> u64 {
        self.clock_ns = self.clock_ns.max(ts_ns);
        self.expire(self.clock_ns, out);
        self.clock_ns
    }

    /// Accounts one packet seen at `ts_ns`; flows it ends go to `out`.
    pub fn account(&mut self, o: &Observed, ts_ns: u64, out: &mut Vec<Ended>) {
        let ts_ns = self.tick(ts_ns, out);
        let key = o.key;
        if let Some(f) = self.flows.get(&key)
            && ts_ns.saturating_sub(f.first_ns) >= self.opts.active_timeout_ns
        {
            self.end(&key, EndReason::ActiveTimeout, out);
        }
        if !self.flows.contains_key(&key) && self.flows.len() >= self.opts.capacity {
            let &(_, oldest) = self.by_age.first().expect("a full table has flows");
            self.end(&oldest, EndReason::LackOfResources, out);
            self.evicted += 1;
        }
        let flow = self.flows.entry(key).or_insert_with(|| FlowEntry {
            key,
            packets: 0,
            bytes: 0,
            first_ns: ts_ns,
            last_ns: ts_ns,
            tcp_flags: 0,
        });
        if flow.packets == 0 {
            self.started += 1;
        } else {
            self.by_age.remove(&(flow.last_ns, key));
        }
        flow.packets += 1;
        flow.bytes += u64::from(o.bytes);
        flow.last_ns = ts_ns;
        flow.tcp_flags |= o.tcp_flags;
        self.by_age.insert((flow.last_ns, key));
        if o.key.protocol == 6 && o.tcp_flags & (FIN | RST) != 0 {
            self.end(&key, EndReason::EndOfFlow, out);
        }
    }

    /// Ends every flow (the input ended).
    pub fn flush(&mut self, out: &mut Vec<Ended>) {
        while let Some(&(_, key)) = self.by_age.first() {
            self.end(&key, EndReason::ForcedEnd, out);
        }
    }
}
