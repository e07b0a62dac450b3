//! What the packet threads and the OpenFlow agent share: the OpenFlow
//! tables, the ports' counters, the packets buffered for the controller,
//! and the asynchronous messages (packet-ins, flow-removed, port-status)
//! waiting for the controllers' connections.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use openflow::{
    FlowRemoved, Match, Message, Oxm, PacketIn, Port, PortStats, PortStatus, port_bits,
};

use crate::dpif::{Datapath, Output, Shared, TierStats};
use crate::odp::ToController;
use crate::ofproto::{Ofproto, Removed};

/// Packets held for the controller (`buffer_id`s), oldest replaced first.
pub const N_BUFFERS: u32 = 256;

/// The name of the LOCAL port, as Open vSwitch names it after its bridge.
pub const BRIDGE_NAME: &str = "br0";

/// Messages waiting for the controllers before the oldest are dropped.
const MAX_EVENTS: usize = 4096;

/// An age in ns as OpenFlow's (`duration_sec`, `duration_nsec`) the way
/// Open vSwitch fills them: its clock counts milliseconds, so the
/// nanoseconds are whole milliseconds and `ovs-ofctl` prints `1.234s`.
pub fn ovs_duration(age_ns: u64) -> (u32, u32) {
    let ms = age_ns / 1_000_000;
    ((ms / 1000) as u32, (ms % 1000) as u32 * 1_000_000)
}

/// A port's counters, kept by whoever sends or receives on it.
#[derive(Debug, Default)]
pub struct SwitchPortCounters {
    pub rx_packets: AtomicU64,
    pub rx_bytes: AtomicU64,
    pub tx_packets: AtomicU64,
    pub tx_bytes: AtomicU64,
    pub tx_dropped: AtomicU64,
}

impl SwitchPortCounters {
    pub fn stats(&self, port_no: u32, age_ns: u64) -> PortStats {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let (duration_sec, duration_nsec) = ovs_duration(age_ns);
        PortStats {
            port_no,
            rx_packets: g(&self.rx_packets),
            tx_packets: g(&self.tx_packets),
            rx_bytes: g(&self.rx_bytes),
            tx_bytes: g(&self.tx_bytes),
            tx_dropped: g(&self.tx_dropped),
            duration_sec,
            duration_nsec,
            ..PortStats::default()
        }
    }
}

/// What a packet thread last published of its datapath.
#[derive(Clone, Debug, Default)]
pub struct PmdStats {
    pub id: usize,
    pub tiers: TierStats,
    /// Timestamp-counter cycles spent in the switch on its packets.
    pub cycles: u64,
    /// Its megaflows, as dpctl/dump-flows lines, as of the last dump
    /// asked for ([`Core::request_dump`]) or the thread's end.
    pub megaflows: Vec<String>,
    /// The dump request the megaflows answer.
    pub dump_epoch: u64,
    pub subtables: usize,
    pub emc_entries: usize,
}

/// Sends frames out of the switch's ports (one per packet thread).
pub trait Transmit: Send {
    /// Sends `frame` out of `port`; false when there is no such port or it
    /// could not take the frame.
    fn transmit(&mut self, port: u32, frame: &[u8]) -> bool;
}

#[derive(Default)]
struct Buffers {
    next: u32,
    held: BTreeMap<u32, (u32, Vec<u8>)>,
}

/// A port: what OpenFlow knows of it, its counters, when it was added.
type PortEntry = (Port, Arc<SwitchPortCounters>, u64);

pub struct Core {
    pub shared: Shared,
    pub datapath_id: u64,
    ports: Mutex<BTreeMap<u32, PortEntry>>,
    buffers: Mutex<Buffers>,
    events: Mutex<VecDeque<Message>>,
    pmds: Mutex<Vec<PmdStats>>,
    dump_epoch: AtomicU64,
    start: Instant,
    /// When set (a replay), the clock is the packets' time, mapped onto
    /// the switch clock.
    packet_clock: AtomicU64,
}

impl Core {
    /// A switch with no ports but LOCAL ([`local_port`]).
    pub fn new(datapath_id: u64) -> Core {
        let local = local_port(datapath_id);
        let mut of = Ofproto::new();
        of.set_port(local.clone());
        let ports = BTreeMap::from([(local.port_no, (local, Arc::default(), 0))]);
        Core {
            shared: Shared::new(of),
            datapath_id,
            ports: Mutex::new(ports),
            buffers: Mutex::new(Buffers::default()),
            events: Mutex::new(VecDeque::new()),
            pmds: Mutex::new(Vec::new()),
            dump_epoch: AtomicU64::new(0),
            start: Instant::now(),
            packet_clock: AtomicU64::new(0),
        }
    }

    /// The switch clock: ns since it started.
    pub fn now(&self) -> u64 {
        match self.packet_clock.load(Ordering::Relaxed) {
            0 => self.start.elapsed().as_nanos() as u64,
            t => t,
        }
    }

    /// From now on the clock reads `ns` (and what later calls set): a
    /// replay runs the switch's timers on its packets' time.
    pub fn set_clock(&self, ns: u64) {
        self.packet_clock.store(ns.max(1), Ordering::Relaxed);
    }

    /// Adds a port (announced to the controllers); its counters.
    pub fn add_port(&self, desc: Port) -> Arc<SwitchPortCounters> {
        let counters = Arc::new(SwitchPortCounters::default());
        let now = self.now();
        lock(&self.ports).insert(desc.port_no, (desc.clone(), counters.clone(), now));
        self.shared.with(|of| of.set_port(desc.clone()));
        self.event(Message::PortStatus(PortStatus {
            reason: openflow::port_reason::ADD,
            desc,
        }));
        counters
    }

    pub fn ports(&self) -> Vec<Port> {
        lock(&self.ports).values().map(|p| p.0.clone()).collect()
    }

    /// The ports' counters as they are now, for a packet thread to look
    /// up without the port map's lock.
    pub fn port_table(&self) -> PortTable {
        PortTable(
            lock(&self.ports)
                .iter()
                .map(|(n, p)| (*n, p.1.clone()))
                .collect(),
        )
    }

    /// Port stats of `port_no` (or every port for `OFPP_ANY`).
    pub fn port_stats(&self, port_no: u32) -> Vec<PortStats> {
        let now = self.now();
        lock(&self.ports)
            .iter()
            .filter(|(n, _)| port_no == openflow::port::ANY || **n == port_no)
            .map(|(n, p)| p.1.stats(*n, now - p.2))
            .collect()
    }

    /// Changes a port's config bits under `mask`; false for no such port.
    pub fn modify_port(
        &self,
        port_no: u32,
        hw_addr: [u8; 6],
        config: u32,
        mask: u32,
    ) -> Result<(), bool> {
        let mut ports = lock(&self.ports);
        let Some(p) = ports.get_mut(&port_no) else {
            return Err(false);
        };
        if p.0.hw_addr != hw_addr {
            return Err(true);
        }
        p.0.config = (p.0.config & !mask) | (config & mask);
        let desc = p.0.clone();
        drop(ports);
        self.shared.with(|of| of.set_port(desc.clone()));
        self.event(Message::PortStatus(PortStatus {
            reason: openflow::port_reason::MODIFY,
            desc,
        }));
        Ok(())
    }

    /// Sets a port's link state from its interface: `LINK_DOWN` without
    /// carrier, `LIVE` with carrier unless the port is configured down. A
    /// change is announced to the controllers (PORT_STATUS modify), as
    /// Open vSwitch announces a link going down or up.
    pub fn set_link(&self, port_no: u32, carrier: bool) {
        let mut ports = lock(&self.ports);
        let Some(p) = ports.get_mut(&port_no) else {
            return;
        };
        let state = match carrier {
            false => port_bits::STATE_LINK_DOWN,
            true if p.0.config & port_bits::CONFIG_PORT_DOWN != 0 => 0,
            true => port_bits::STATE_LIVE,
        };
        let kept = p.0.state & !(port_bits::STATE_LINK_DOWN | port_bits::STATE_LIVE);
        if p.0.state == kept | state {
            return;
        }
        p.0.state = kept | state;
        let desc = p.0.clone();
        drop(ports);
        self.shared.with(|of| of.set_port(desc.clone()));
        self.event(Message::PortStatus(PortStatus {
            reason: openflow::port_reason::MODIFY,
            desc,
        }));
    }

    /// Keeps what packet thread `stats.id` published; its megaflows stay
    /// those of its last dump unless `stats` answers a newer one.
    pub fn publish_pmd(&self, mut stats: PmdStats) {
        let mut pmds = lock(&self.pmds);
        match pmds.iter_mut().find(|p| p.id == stats.id) {
            Some(p) => {
                if stats.dump_epoch <= p.dump_epoch {
                    stats.megaflows = std::mem::take(&mut p.megaflows);
                    stats.dump_epoch = p.dump_epoch;
                }
                *p = stats;
            }
            None => {
                pmds.push(stats);
                pmds.sort_by_key(|p| p.id);
            }
        }
    }

    /// Asks every packet thread for its megaflows; the request's epoch.
    pub fn request_dump(&self) -> u64 {
        self.dump_epoch.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// The latest dump asked for.
    pub fn dump_requested(&self) -> u64 {
        self.dump_epoch.load(Ordering::Relaxed)
    }

    /// What each packet thread published last, by thread.
    pub fn pmd_stats(&self) -> Vec<PmdStats> {
        lock(&self.pmds).clone()
    }

    /// Queues an asynchronous message for the controllers.
    pub fn event(&self, m: Message) {
        let mut q = lock(&self.events);
        if q.len() >= MAX_EVENTS {
            q.pop_front();
        }
        q.push_back(m);
    }

    /// The queued asynchronous messages, oldest first.
    pub fn take_events(&self) -> Vec<Message> {
        lock(&self.events).drain(..).collect()
    }

    /// FLOW_REMOVED messages for the removed entries that asked for one.
    pub fn flows_removed(&self, removed: &[Removed]) {
        let now = self.now();
        for r in removed.iter().filter(|r| r.wants_message()) {
            let (duration_sec, duration_nsec) =
                ovs_duration(now.saturating_sub(r.entry.installed_ns));
            self.event(Message::FlowRemoved(FlowRemoved {
                cookie: r.entry.cookie,
                priority: r.entry.priority,
                reason: r.reason,
                table_id: r.table_id,
                duration_sec,
                duration_nsec,
                idle_timeout: r.entry.idle_timeout,
                hard_timeout: r.entry.hard_timeout,
                packet_count: r.entry.packets,
                byte_count: r.entry.bytes,
                matcher: r.entry.matcher.clone(),
            }));
        }
    }

    /// A buffered packet (its in port and bytes), taken out.
    pub fn take_buffer(&self, id: u32) -> Option<(u32, Vec<u8>)> {
        lock(&self.buffers).held.remove(&id)
    }

    /// A PACKET_IN for `frame`: the whole frame when `max_len` says
    /// `NO_BUFFER`, else the first `max_len` bytes and a buffer id.
    pub fn packet_in(&self, frame: &[u8], in_port: u32, why: &ToController) {
        let (buffer_id, data) = if why.max_len == openflow::CML_NO_BUFFER {
            (openflow::NO_BUFFER, frame.to_vec())
        } else {
            let mut b = lock(&self.buffers);
            let id = b.next % N_BUFFERS;
            b.next = b.next.wrapping_add(1);
            b.held.insert(id, (in_port, frame.to_vec()));
            let n = frame.len().min(usize::from(why.max_len));
            (id, frame[..n].to_vec())
        };
        let mut fields = vec![Oxm::exact(openflow::Field::InPort, u128::from(in_port))];
        if why.metadata != 0 {
            fields.push(Oxm::exact(
                openflow::Field::Metadata,
                u128::from(why.metadata),
            ));
        }
        self.event(Message::PacketIn(PacketIn {
            buffer_id,
            total_len: frame.len().min(usize::from(u16::MAX)) as u16,
            reason: why.reason,
            table_id: why.table_id,
            cookie: why.cookie,
            matcher: Match { fields },
            data,
        }));
    }

    /// Runs one frame received on `in_port` through `dp`, sending with
    /// `tx` and counting in `ports`.
    pub fn receive(
        &self,
        dp: &mut Datapath,
        ports: &PortTable,
        in_port: u32,
        frame: &[u8],
        tx: &mut dyn Transmit,
    ) {
        self.receive_at(dp, ports, in_port, frame, tx, self.now());
    }

    /// [`Core::receive`] with the clock read already (once per batch).
    pub fn receive_at(
        &self,
        dp: &mut Datapath,
        ports: &PortTable,
        in_port: u32,
        frame: &[u8],
        tx: &mut dyn Transmit,
        now: u64,
    ) {
        if let Some(c) = ports.get(in_port) {
            c.rx_packets.fetch_add(1, Ordering::Relaxed);
            c.rx_bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
        }
        let mut out = CoreOutput {
            core: self,
            ports,
            tx,
        };
        dp.process(frame, in_port, now, &self.shared, &mut out);
    }
}

/// OpenFlow's LOCAL port, as Open vSwitch has it for its bridge's own
/// interface: named after the bridge, the datapath id's 48 low bits as its
/// address (OVS derives the id from that address), up and live, no link
/// features. Sluice has no such interface: what is output to LOCAL is
/// counted as sent and goes nowhere, and nothing arrives from it.
pub fn local_port(datapath_id: u64) -> Port {
    let b = datapath_id.to_be_bytes();
    Port {
        port_no: openflow::port::LOCAL,
        hw_addr: [b[2], b[3], b[4], b[5], b[6], b[7]],
        name: BRIDGE_NAME.into(),
        state: openflow::port_bits::STATE_LIVE,
        ..Port::default()
    }
}

/// The counters of the switch's ports (a snapshot of the port map).
#[derive(Clone, Debug, Default)]
pub struct PortTable(Vec<(u32, Arc<SwitchPortCounters>)>);

impl PortTable {
    pub fn get(&self, port_no: u32) -> Option<&SwitchPortCounters> {
        self.0.iter().find(|p| p.0 == port_no).map(|p| &*p.1)
    }
}

/// The datapath's outputs: frames to ports (counted), packet-ins queued.
pub struct CoreOutput<'a> {
    pub core: &'a Core,
    pub ports: &'a PortTable,
    pub tx: &'a mut dyn Transmit,
}

impl Output for CoreOutput<'_> {
    fn send(&mut self, port: u32, frame: &[u8]) {
        // LOCAL has no interface behind it: sent, counted, gone.
        let sent = port == openflow::port::LOCAL || self.tx.transmit(port, frame);
        if let Some(c) = self.ports.get(port) {
            if sent {
                c.tx_packets.fetch_add(1, Ordering::Relaxed);
                c.tx_bytes.fetch_add(frame.len() as u64, Ordering::Relaxed);
            } else {
                c.tx_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn to_controller(&mut self, frame: &[u8], in_port: u32, why: &ToController) {
        self.core.packet_in(frame, in_port, why);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
