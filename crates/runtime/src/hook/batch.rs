//! Batches of packets through the VM's batch entry (`vm::batch`): each
//! packet copied once into a frame of its own in the hook's buffer
//! (headroom, the packet, tailroom: the layout a single run has), the
//! XDP context's fields per packet written by native code, Rust entered
//! once per batch and again only for helper calls.
//!
//! The environment's per-packet state (the packet's window, the clock,
//! what helpers record for the outcome) is set lazily, before a packet's
//! first helper call ([`sync`]). A packet that calls a helper outside
//! [`QUIET`] (a redirect, a trace line, a packet that moved or grew) is
//! finished here from the environment, as [`Hook::run`] finishes a run,
//! before the next packet runs. So every packet's outcome is the one a run
//! of its own gives; `crates/runtime/tests/batch.rs` checks it.

use vm::{BatchHooks, BatchPacket, BatchResult, BatchStop, HelperSet, Memory, Stats, VmError};

use super::{
    CtxKind, FRAME, HEADROOM, Hook, Outcome, PACKET_REGION, PacketMeta, TAILROOM, Verdict,
    XDP_LINEAR_MAX, XdpAction,
};
use crate::env::{Env, PacketView};
use crate::helpers;

/// Packets per entry into native code (frames of the hook's buffer).
pub(super) const SLOTS: usize = 64;

/// Helpers that leave nothing a packet's outcome is read from (maps, time,
/// random numbers, checksums, ring buffers, packet bytes in place).
const QUIET: &[&str] = &[
    "map_lookup_elem",
    "map_update_elem",
    "map_delete_elem",
    "map_push_elem",
    "map_pop_elem",
    "map_peek_elem",
    "ktime_get_ns",
    "ktime_get_boot_ns",
    "ktime_get_coarse_ns",
    "ktime_get_tai_ns",
    "get_prandom_u32",
    "get_smp_processor_id",
    "get_numa_node_id",
    "csum_diff",
    "ringbuf_output",
    "ringbuf_reserve",
    "ringbuf_submit",
    "ringbuf_discard",
    "ringbuf_query",
    "perf_event_output",
    "xdp_load_bytes",
    "xdp_store_bytes",
    "xdp_get_buff_len",
    "spin_lock",
    "spin_unlock",
    "fib_lookup",
];

/// A hook's batch descriptors and results, kept between batches.
#[derive(Default)]
pub(super) struct Slots {
    packets: Vec<BatchPacket>,
    results: Vec<BatchResult>,
    /// The stats of the outcome being handed out.
    stats: Stats,
    quiet: Option<HelperSet>,
}

fn quiet_helpers() -> HelperSet {
    let ids: Vec<u32> = QUIET.iter().filter_map(|n| isa::helper_id(n)).collect();
    HelperSet::new(&ids)
}

/// The environment's per-packet state for a batch's packet, as
/// `Hook::exec` sets it for a run of its own.
fn sync(env: &mut Env, mem: &mut Memory<'_>, p: &BatchPacket) {
    let (data, data_end) = (u64::from(p.ctx_head[0]), u64::from(p.ctx_head[1]));
    let hard_start = data - HEADROOM as u64;
    mem.set_window(PACKET_REGION, data, data_end - data);
    env.packet = PacketView {
        kind: CtxKind::Xdp,
        region: PACKET_REGION,
        hard_start,
        hard_end: hard_start + (FRAME - TAILROOM) as u64,
        meta: data,
        data,
        data_end,
        ctx: env.packet.ctx,
    };
    env.redirect = None;
    env.clones.clear();
    env.redirect_key = None;
    env.tunnel = None;
    env.trace.clear();
    env.unreproducible.clear();
    env.csum_unnecessary = None;
    env.frags.clear();
    if !env.iterations.is_empty() {
        env.iterations.clear();
    }
    env.headroom_low = u64::MAX;
    env.sim.clock_ns = env.sim.clock_ns.max(p.extra);
}

impl Hook {
    /// Whether [`Hook::run_batch`] enters native code once per batch: XDP
    /// programs, verified (trusted) and compiled, without counting or
    /// coverage. Other hooks run their packets one by one.
    pub fn batches_natively(&self) -> bool {
        self.ctx_kind == CtxKind::Xdp && !self.counting && self.vm.batch_ready().is_ok()
    }

    /// Runs packets `0..n` (`packet(i)`: its bytes and timestamp) in
    /// order, handing each outcome to `each` with the packet's index: the
    /// outcomes [`Hook::run`] gives, one packet at a time.
    pub fn run_batch<'p>(
        &mut self,
        n: usize,
        packet: impl Fn(usize) -> (&'p [u8], u64),
        meta: &mut PacketMeta,
        mut each: impl FnMut(usize, Result<Outcome<'_>, VmError>),
    ) {
        if !self.batches_natively() {
            for i in 0..n {
                let (data, ts) = packet(i);
                meta.timestamp_ns = ts;
                each(i, self.run(data, meta));
            }
            return;
        }
        if !self.mapped {
            self.map_regions();
        }
        let mut i = 0;
        while i < n {
            let (data, ts) = packet(i);
            if data.len() > XDP_LINEAR_MAX {
                // Fragments: a run of its own.
                meta.timestamp_ns = ts;
                each(i, self.run(data, meta));
                i += 1;
                continue;
            }
            let start = i;
            self.fill_slots(&mut i, n, &packet, meta);
            if let Err(fallback) = self.run_slots(start, &packet, meta, &mut each) {
                for j in fallback..i {
                    let (data, ts) = packet(j);
                    meta.timestamp_ns = ts;
                    each(j, self.run(data, meta));
                }
            }
        }
    }

    /// Copies packets from `*i` on into the frames (as many as fit, up to
    /// the first that needs fragments) and writes their descriptors.
    fn fill_slots<'p>(
        &mut self,
        i: &mut usize,
        n: usize,
        packet: &impl Fn(usize) -> (&'p [u8], u64),
        meta: &PacketMeta,
    ) {
        let base = self.buf.addr32(0);
        // Headroom a single run exposed is zeroed before frame 0 is reused.
        let low = self.env.headroom_low;
        if low < u64::from(base) + HEADROOM as u64 {
            let from = low.saturating_sub(u64::from(base)) as usize;
            self.buf.as_mut_slice()[from..HEADROOM].fill(0);
        }
        self.env.headroom_low = u64::MAX;
        let egress = if self.devmap { meta.egress_ifindex } else { 0 };
        self.ctx[16..20].copy_from_slice(&meta.rx_queue.to_le_bytes());
        self.ctx[20..24].copy_from_slice(&egress.to_le_bytes());
        let mut clock = self.env.sim.clock_ns;
        let buf = self.buf.as_mut_slice();
        self.batch.packets.clear();
        let start = *i;
        while *i < n && *i - start < SLOTS {
            let (data, ts) = packet(*i);
            if data.len() > XDP_LINEAR_MAX {
                break;
            }
            let at = (*i - start) * FRAME + HEADROOM;
            buf[at..at + data.len()].copy_from_slice(data);
            let d = base + at as u32;
            clock = clock.max(ts);
            self.batch.packets.push(BatchPacket {
                ctx_head: [d, d + data.len() as u32, d, meta.ifindex],
                extra: clock,
            });
            *i += 1;
        }
        // Results are read only where the batch wrote them: the array is
        // kept at its full size, not cleared per batch.
        if self.batch.results.len() < SLOTS {
            (self.batch.results).resize(SLOTS, BatchResult::default());
        }
    }

    /// Runs the packets [`Hook::fill_slots`] placed (the first is packet
    /// `start`). `Err(j)`: the VM cannot run batches, packets `j..` are
    /// not run yet.
    fn run_slots<'p>(
        &mut self,
        start: usize,
        packet: &impl Fn(usize) -> (&'p [u8], u64),
        meta: &mut PacketMeta,
        each: &mut impl FnMut(usize, Result<Outcome<'_>, VmError>),
    ) -> Result<(), usize> {
        let ctx = self.ctx.as_mut_ptr().expose_provenance() as u64;
        self.env.packet.ctx = ctx;
        self.env.packet.kind = CtxKind::Xdp;
        let hooks = BatchHooks {
            ctx,
            sync,
            quiet: *self.batch.quiet.get_or_insert_with(quiet_helpers),
        };
        let n = self.batch.packets.len();
        let mut from = 0;
        while from < n {
            let stop = self.vm.run_batch(
                &mut self.env,
                &mut self.mem,
                &hooks,
                &self.batch.packets[from..],
                &mut self.batch.results[from..n],
            );
            let (end, last) = match stop {
                Ok(BatchStop::Done) => (n, None),
                Ok(BatchStop::After(k)) => (from + k, Some(Ok(()))),
                Ok(BatchStop::Failed(k, e)) => (from + k, Some(Err(e))),
                Err(_) => return Err(start + from),
            };
            for j in from..end {
                each(start + j, Ok(self.quiet_outcome(j)));
            }
            let Some(last) = last else { break };
            meta.timestamp_ns = packet(start + end).1;
            self.finish_loud(end, last, meta, &mut |o| each(start + end, o));
            from = end + 1;
        }
        let clock = self.batch.packets[n - 1].extra;
        self.env.sim.clock_ns = self.env.sim.clock_ns.max(clock);
        Ok(())
    }

    /// The outcome of packet `j` of the batch, which called no helper the
    /// outcome depends on: its verdict from r0, its bytes where they are.
    #[inline(always)]
    fn quiet_outcome(&mut self, j: usize) -> Outcome<'_> {
        let r = self.batch.results[j];
        let [data, data_end, ..] = self.batch.packets[j].ctx_head;
        let base = self.buf.addr32(0);
        let (from, to) = ((data - base) as usize, (data_end - base) as usize);
        self.batch.stats.insns = r.insns;
        self.batch.stats.helper_calls = r.helper_calls;
        self.batch.stats.tail_calls = r.tail_calls;
        let buf = self.buf.as_slice();
        Outcome {
            r0: r.r0,
            verdict: Verdict::Xdp(XdpAction::from_r0(r.r0)),
            packet: &buf[from..to],
            meta: &buf[from..from],
            frags: &[],
            redirect: None,
            stats: &self.batch.stats,
            trace: &[],
            clones: &[],
            skb: None,
            followup: None,
        }
    }

    /// Packet `j` of the batch, which the environment now describes: its
    /// outcome (or error) as [`Hook::run`] makes it, then its frame's
    /// headroom zeroed where the run exposed it.
    fn finish_loud(
        &mut self,
        j: usize,
        last: Result<(), VmError>,
        meta: &PacketMeta,
        each: &mut impl FnMut(Result<Outcome<'_>, VmError>),
    ) {
        let low = self.env.headroom_low;
        match last {
            Ok(()) => {
                let first = self.exec_of(self.batch.results[j].r0);
                each(self.outcome(first, meta));
            }
            Err(e) => {
                // A run that failed inside a critical section must not
                // leave the other threads spinning.
                if self.env.spin_held.is_some() {
                    helpers::release_held_lock(&mut self.env, &mut self.mem);
                }
                each(Err(self.explain(e)));
            }
        }
        let frame = self.batch.packets[j].ctx_head[0] as u64 - HEADROOM as u64;
        if (frame..frame + HEADROOM as u64).contains(&low) {
            let base = u64::from(self.buf.addr32(0));
            let (from, to) = ((low - base) as usize, (frame - base) as usize + HEADROOM);
            self.buf.as_mut_slice()[from..to].fill(0);
            if self.env.headroom_low == low {
                self.env.headroom_low = u64::MAX;
            }
        }
    }
}
