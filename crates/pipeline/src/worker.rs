//! A worker: one hook running batches, counting what it sees and keeping
//! the packets each verdict routes to a sink until the batch is flushed.

use runtime::{PacketHook, PacketMeta};

use crate::batch::Batch;
use crate::counters::{ReplayCounters, Tally};
use crate::packet_log::{Entry, PacketLog};
use crate::sink::{Outputs, Route, SinkError, Sinks};

pub struct Worker<'h, H: PacketHook = runtime::Hook> {
    hook: &'h mut H,
    meta: PacketMeta,
    counters: ReplayCounters,
    outputs: Outputs,
    /// Which routes have a sink (others are only counted).
    wants: [bool; Route::ALL.len()],
}

impl<'h, H: PacketHook> Worker<'h, H> {
    /// A worker on `hook` for packets arriving on `ifindex`, keeping the
    /// packets of the routes `sinks` takes.
    pub fn new(hook: &'h mut H, sinks: &Sinks, ifindex: u32) -> Worker<'h, H> {
        Worker {
            hook,
            meta: PacketMeta {
                ifindex,
                ..PacketMeta::default()
            },
            counters: ReplayCounters::default(),
            outputs: Outputs::default(),
            wants: Route::ALL.map(|r| sinks.wants(r)),
        }
    }

    /// Keeps one record per packet from now on ([`ReplayCounters::log`]).
    pub fn log_packets(&mut self) {
        let counts_memory = self.hook.is_counting();
        self.counters.log.get_or_insert_with(|| PacketLog {
            counts_memory,
            ..PacketLog::default()
        });
    }

    /// Runs every packet of `batch`.
    pub fn run(&mut self, batch: &Batch) {
        let c = &mut self.counters;
        let counting = self.hook.is_counting();
        let (outputs, wants) = (&mut self.outputs, &self.wants);
        let packet = |i| (batch.data(i), batch.info(i).timestamp_ns);
        // Consecutive packets mostly share their link kind and verdict:
        // each is counted once per run of equal ones.
        let mut links = Run::default();
        let mut verdicts = Run::default();
        self.hook
            // Inlined where the hook hands out outcomes: the fields a
            // quiet packet's outcome has empty are then known empty here.
            .run_batch(
                batch.len(),
                packet,
                &mut self.meta,
                #[inline(always)]
                |i, result| {
                    let info = batch.info(i);
                    c.packets += 1;
                    links.add(info.link, &mut c.link_types);
                    match result {
                        // Most packets: a verdict and its costs, nothing more.
                        Ok(o)
                            if !counting
                                && c.log.is_none()
                                && o.trace.is_empty()
                                && o.redirect.is_none()
                                && o.clones.is_empty() =>
                        {
                            verdicts.add(o.verdict, &mut c.verdicts);
                            c.insns.record(o.stats.insns);
                            c.helper_calls += o.stats.helper_calls;
                            c.tail_calls += o.stats.tail_calls;
                            if let Some(route) = Route::of(o.verdict)
                                && wants[route as usize]
                            {
                                outputs.push(route, info.seq, o.packet, o.frags, info.timestamp_ns);
                            }
                        }
                        other => {
                            // Verdicts keep their order of first appearance.
                            verdicts.flush(&mut c.verdicts);
                            count(c, outputs, wants, counting, info, batch.data(i), other)
                        }
                    }
                },
            );
        links.flush(&mut c.link_types);
        verdicts.flush(&mut c.verdicts);
    }

    /// Whether the last batches left packets for the sinks.
    pub fn has_output(&self) -> bool {
        !self.outputs.is_empty()
    }

    /// Writes the packets kept so far to `sinks`.
    pub fn flush(&mut self, sinks: &mut Sinks) -> Result<(), SinkError> {
        self.outputs.flush(sinks)
    }

    /// Hands what the last batches routed to the merge of every worker's
    /// outputs, with the worker's mark (nothing more below it).
    pub(crate) fn deposit(
        &mut self,
        ordered: &crate::ordered::Ordered,
        w: usize,
        mark: u64,
    ) -> Result<(), SinkError> {
        ordered.deposit(w, &mut self.outputs, mark)
    }

    pub fn counters(&self) -> &ReplayCounters {
        &self.counters
    }

    /// The counts, with the hook's coverage counts when it keeps them.
    pub fn into_counters(mut self) -> ReplayCounters {
        self.counters.coverage = self.hook.take_coverage();
        self.counters
    }
}

/// A key and how many packets in a row had it, not yet in its tally.
struct Run<K> {
    key: Option<K>,
    n: u64,
}

impl<K> Default for Run<K> {
    fn default() -> Self {
        Run { key: None, n: 0 }
    }
}

impl<K: PartialEq + Copy> Run<K> {
    #[inline(always)]
    fn add(&mut self, key: K, tally: &mut Tally<K>) {
        if self.key == Some(key) {
            self.n += 1;
        } else {
            self.flush(tally);
            self.key = Some(key);
            self.n = 1;
        }
    }

    fn flush(&mut self, tally: &mut Tally<K>) {
        if let Some(k) = self.key.take() {
            tally.add(k, self.n);
        }
    }
}

/// What a packet's outcome adds to the counts and outputs, in full
/// (memory counts, trace lines, redirects, clones, the per-packet log, an
/// error); out of line, so the common case above stays small.
#[inline(never)]
fn count(
    c: &mut ReplayCounters,
    outputs: &mut Outputs,
    wants: &[bool; Route::ALL.len()],
    counting: bool,
    info: &crate::batch::PacketInfo,
    data: &[u8],
    result: Result<runtime::Outcome<'_>, vm::VmError>,
) {
    match result {
        Ok(o) => {
            c.verdicts.add(o.verdict, 1);
            c.insns.record(o.stats.insns);
            c.helper_calls += o.stats.helper_calls;
            c.tail_calls += o.stats.tail_calls;
            if counting {
                for k in 0..vm::RegionKind::COUNT {
                    c.loads[k] += o.stats.loads[k];
                    c.stores[k] += o.stats.stores[k];
                }
            }
            if !o.trace.is_empty() {
                c.trace(info.seq, o.trace);
            }
            if let Some(r) = o.redirect {
                c.redirects.add(r, 1);
            }
            if let Some(log) = &mut c.log {
                let e = Entry {
                    verdict: Some(o.verdict),
                    redirect: o.redirect,
                    insns: o.stats.insns,
                    helper_calls: o.stats.helper_calls,
                    memory: counting.then_some((o.stats.loads, o.stats.stores)),
                    error: None,
                };
                log.push(info, data.len(), e);
            }
            for clone in o.clones {
                c.clones.add((clone.ifindex, clone.ingress), 1);
                // Copies leave as redirected packets do.
                if wants[Route::Redirect as usize] {
                    let ts = info.timestamp_ns;
                    outputs.push(Route::Redirect, info.seq, &clone.packet, &[], ts);
                }
            }
            if let Some(route) = Route::of(o.verdict)
                && wants[route as usize]
            {
                outputs.push(route, info.seq, o.packet, o.frags, info.timestamp_ns);
            }
        }
        Err(e) => {
            if let Some(log) = &mut c.log {
                let none = [0; vm::RegionKind::COUNT];
                let entry = Entry {
                    verdict: None,
                    redirect: None,
                    insns: 0,
                    helper_calls: 0,
                    memory: counting.then_some((none, none)),
                    error: Some(e.to_string()),
                };
                log.push(info, data.len(), entry);
            }
            c.error(info.seq, e);
        }
    }
}
