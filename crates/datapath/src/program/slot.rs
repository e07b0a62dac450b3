//! A port's queue during a program run: open (its socket, UMEM and free
//! frames), or closed, with what it counted kept for the summary. A queue
//! is closed when its port's interface goes away (its socket and UMEM
//! freed at once, not at the end of a long run) or at the end.

use std::sync::atomic::Ordering;

use capture::xsk::{BoundMode, XskStats};

use super::QueueSummary;
use crate::queue::{self, Queue};

// One per queue, in place for the whole run, open most of it: boxing the
// queue would only add a pointer to follow on every poll.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Slot {
    Open(Queue),
    Closed(Closed),
}

/// What is left of a closed queue.
pub(crate) struct Closed {
    pub summary: QueueSummary,
    pub bind: BoundMode,
    /// The kernel's counters of its socket (zero if it could not say).
    pub kernel: XskStats,
    /// Frames of its UMEM.
    pub frames: u64,
    /// Frames neither free nor in the FILL ring once drained.
    pub unaccounted: u64,
}

impl Slot {
    /// Drains the queue and closes its socket and UMEM; returns how many
    /// frames it held to send that its socket, unbound, never took (lost).
    /// Nothing to do for a queue already closed.
    pub fn close(&mut self) -> u64 {
        let Slot::Open(q) = self else { return 0 };
        let unsent = q.drain();
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        let closed = Closed {
            summary: QueueSummary {
                queue: q.xsk.queue(),
                rx: get(&q.counters.rx),
                tx: get(&q.counters.tx),
                cycles: get(&q.counters.cycles),
            },
            bind: q.xsk.mode(),
            kernel: q.xsk.stats().unwrap_or_default(),
            frames: u64::from(q.xsk.config().frame_count),
            unaccounted: queue::unaccounted(std::slice::from_ref(q)),
        };
        *self = Slot::Closed(closed);
        unsent
    }

    /// The closed queue's record (None while open).
    pub fn closed(&self) -> Option<&Closed> {
        match self {
            Slot::Closed(c) => Some(c),
            Slot::Open(_) => None,
        }
    }
}

/// The kernel's counters of a port's closed queues, summed.
pub(crate) fn kernel_stats<'a>(closed: impl Iterator<Item = &'a Closed>) -> XskStats {
    let mut k = XskStats::default();
    for c in closed {
        let s = &c.kernel;
        k.rx_dropped += s.rx_dropped;
        k.rx_invalid_descs += s.rx_invalid_descs;
        k.tx_invalid_descs += s.tx_invalid_descs;
        k.rx_ring_full += s.rx_ring_full;
        k.rx_fill_ring_empty_descs += s.rx_fill_ring_empty_descs;
        k.tx_ring_empty_descs += s.tx_ring_empty_descs;
    }
    k
}
