//! A packet thread of a live switch (a PMD thread in Open vSwitch): its
//! own datapath (caches) over the shared OpenFlow tables, the ports'
//! counters looked up without locks, and the thread's housekeeping: its
//! counts pushed to the OpenFlow entries after each batch, its megaflows
//! expired, its statistics published for `sluice switch stats`.
//!
//! A [`Pmd`] is also a [`PacketHook`]: the AF_XDP datapath runs it on
//! every frame of its queues as it runs a program, and sends the frames
//! the switch outputs as a hook's copies to the ports' egress.

use datapath::tsc;
use runtime::{Cloned, Outcome, PacketHook, PacketMeta, TcAction, Verdict};
use vm::{Stats, VmError};

use crate::core::{Core, PmdStats, PortTable, Transmit};
use crate::dpif::{CacheOptions, Datapath, Offload};
use std::sync::Arc;

/// How often a thread looks for megaflows to expire.
const EXPIRE_EVERY_NS: u64 = 1_000_000_000;

/// How often a busy thread pushes its counts to the OpenFlow entries and
/// publishes its statistics (an idle one does at once).
const PUSH_EVERY_NS: u64 = 1_000_000;

/// Idle polls between two looks at the clock of a spinning thread.
const IDLE_POLLS_PER_CHECK: u32 = 64;

/// A port as a packet thread knows it: its interface and OpenFlow number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRef {
    pub ifindex: u32,
    pub port_no: u32,
}

pub struct Pmd<'c> {
    core: &'c Core,
    id: usize,
    dp: Datapath,
    options: CacheOptions,
    offload: Option<Arc<dyn Offload>>,
    ports: Vec<PortRef>,
    table: PortTable,
    cycles: u64,
    /// The TSC when the current batch's first packet came.
    batch_tsc: Option<u64>,
    /// The switch clock, read once per batch (and now and then when idle).
    clock: u64,
    last_push: u64,
    /// The thread polls back to back (else it waits in `poll()` between
    /// batches, and every wake-up is worth a look at the clock).
    spinning: bool,
    idle_polls: u32,
    last_expire: u64,
    /// The last dump request answered.
    dumped: u64,
    // What a run hands the AF_XDP datapath: a copy per output, reused.
    outputs: Vec<Cloned>,
    used: usize,
    stats: Stats,
}

impl<'c> Pmd<'c> {
    /// Packet thread `id` on `ports`, its megaflows offered to `offload`
    /// (a kernel fast path) if there is one.
    pub fn new(
        core: &'c Core,
        id: usize,
        ports: Vec<PortRef>,
        options: CacheOptions,
        offload: Option<Arc<dyn Offload>>,
    ) -> Pmd<'c> {
        let mut dp = Datapath::new(options);
        if let Some(o) = &offload {
            dp = dp.with_offload(o.clone());
        }
        let mut pmd = Pmd {
            core,
            id,
            dp,
            options,
            offload,
            ports,
            table: core.port_table(),
            cycles: 0,
            batch_tsc: None,
            clock: core.now(),
            last_push: 0,
            spinning: true,
            idle_polls: 0,
            last_expire: core.now(),
            dumped: 0,
            outputs: Vec::new(),
            used: 0,
            stats: Stats::default(),
        };
        // Known from the start, also while no packet has come.
        pmd.publish(false);
        pmd
    }

    /// A thread that waits in `poll()` between batches instead of
    /// polling back to back (`spinning` false).
    pub fn spinning(mut self, spinning: bool) -> Self {
        self.spinning = spinning;
        self
    }

    /// Runs one frame received on `in_port` through the switch.
    pub fn receive(&mut self, in_port: u32, frame: &[u8], tx: &mut dyn Transmit) {
        self.begin_batch();
        self.core
            .receive_at(&mut self.dp, &self.table, in_port, frame, tx, self.clock);
    }

    /// The clock and the cycle count start with a batch's first packet
    /// (reading them per packet would cost more than an EMC hit).
    fn begin_batch(&mut self) {
        if self.batch_tsc.is_none() {
            self.batch_tsc = Some(tsc());
            self.clock = self.core.now();
        }
    }

    /// After a batch (or an idle wait): counts pushed to the OpenFlow
    /// entries, idle megaflows expired, statistics published, megaflows
    /// too when a dump was asked for.
    pub fn housekeeping(&mut self) {
        self.keep_house(false);
    }

    /// With `spinning` (a polling thread's idle polls, back to back) an
    /// idle poll looks at the clock only now and then.
    fn keep_house(&mut self, spinning: bool) {
        let worked = match self.batch_tsc.take() {
            Some(start) => {
                self.cycles += tsc().wrapping_sub(start);
                true
            }
            None => {
                self.idle_polls = self.idle_polls.wrapping_add(1);
                if spinning && !self.idle_polls.is_multiple_of(IDLE_POLLS_PER_CHECK) {
                    return;
                }
                self.clock = self.core.now();
                false
            }
        };
        let now = self.clock;
        let mut changed = false;
        if self.dp.has_unpushed() && (!worked || now >= self.last_push + PUSH_EVERY_NS) {
            self.dp.push_stats(&self.core.shared);
            self.last_push = now;
            changed = true;
        }
        if now >= self.last_expire + EXPIRE_EVERY_NS {
            self.last_expire = now;
            self.dp
                .expire(now, crate::MEGAFLOW_IDLE_NS, &self.core.shared);
            changed = true;
        }
        let dump = self.core.dump_requested() != self.dumped;
        if dump && self.dp.pull_offloaded(now) > 0 {
            self.dp.push_stats(&self.core.shared);
        }
        if changed || dump {
            self.publish(dump);
        }
    }

    /// Publishes the thread's statistics (and with `megaflows`, its
    /// megaflows, answering the latest dump request).
    fn publish(&mut self, megaflows: bool) {
        let now = self.core.now();
        let mut stats = PmdStats {
            id: self.id,
            tiers: self.dp.stats,
            cycles: self.cycles,
            megaflows: Vec::new(),
            dump_epoch: 0,
            subtables: self.dp.subtables(),
            emc_entries: self.dp.emc_entries(),
        };
        if megaflows {
            self.dumped = self.core.dump_requested();
            stats.dump_epoch = self.dumped;
            stats.megaflows = self
                .dp
                .megaflows()
                .map(|m| crate::dpif::format_megaflow(m, now))
                .collect();
        }
        self.core.publish_pmd(stats);
    }

    fn port_of(&self, ifindex: u32) -> Option<u32> {
        self.ports
            .iter()
            .find(|p| p.ifindex == ifindex)
            .map(|p| p.port_no)
    }
}

impl Drop for Pmd<'_> {
    /// The thread's last counts reach the tables and the statistics.
    fn drop(&mut self) {
        self.dp.pull_offloaded(self.core.now());
        self.dp.push_stats(&self.core.shared);
        self.core.request_dump();
        self.publish(true);
    }
}

/// The switch's outputs of one frame, as copies for the AF_XDP datapath.
struct Copies<'a> {
    ports: &'a [PortRef],
    outputs: &'a mut Vec<Cloned>,
    used: &'a mut usize,
}

impl Transmit for Copies<'_> {
    fn transmit(&mut self, port: u32, frame: &[u8]) -> bool {
        let Some(p) = self.ports.iter().find(|p| p.port_no == port) else {
            return false;
        };
        if *self.used == self.outputs.len() {
            self.outputs.push(Cloned {
                ifindex: 0,
                ingress: false,
                packet: Vec::new(),
            });
        }
        let c = &mut self.outputs[*self.used];
        c.ifindex = p.ifindex;
        c.packet.clear();
        c.packet.extend_from_slice(frame);
        *self.used += 1;
        true
    }
}

impl PacketHook for Pmd<'_> {
    /// The switch takes every frame (`stolen`): what it sends on leaves
    /// as copies to the ports' egress.
    fn run(&mut self, packet: &[u8], meta: &PacketMeta) -> Result<Outcome<'_>, VmError> {
        self.used = 0;
        if let Some(in_port) = self.port_of(meta.ifindex) {
            self.begin_batch();
            let mut copies = Copies {
                ports: &self.ports,
                outputs: &mut self.outputs,
                used: &mut self.used,
            };
            self.core.receive_at(
                &mut self.dp,
                &self.table,
                in_port,
                packet,
                &mut copies,
                self.clock,
            );
        }
        Ok(Outcome {
            r0: 0,
            verdict: Verdict::Tc(TcAction::Stolen),
            packet: &[],
            meta: &[],
            frags: &[],
            redirect: None,
            stats: &self.stats,
            trace: &[],
            clones: &self.outputs[..self.used],
            skb: None,
            followup: None,
        })
    }

    fn sibling(&self, cpu: u32) -> Result<Self, runtime::SiblingError> {
        Ok(Pmd::new(
            self.core,
            cpu as usize,
            self.ports.clone(),
            self.options,
            self.offload.clone(),
        )
        .spinning(self.spinning))
    }

    fn after_batch(&mut self, _idle: bool) {
        self.keep_house(self.spinning);
    }
}
