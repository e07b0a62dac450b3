//! The event queue: a binary heap ordered by time in ns, then by a rank
//! the caller gives (departures before arrivals at the same instant), then
//! by the order the events were scheduled (so a run is the same every
//! time).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub(crate) struct Events<E> {
    heap: BinaryHeap<Entry<E>>,
    scheduled: u64,
}

struct Entry<E> {
    at: u64,
    rank: u8,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.rank, self.seq) == (other.at, other.rank, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // BinaryHeap pops the greatest: the earliest time, the lowest rank,
    // then the first scheduled.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.rank, other.seq).cmp(&(self.at, self.rank, self.seq))
    }
}

impl<E> Events<E> {
    pub fn new() -> Self {
        Events {
            heap: BinaryHeap::new(),
            scheduled: 0,
        }
    }

    pub fn schedule(&mut self, at: u64, rank: u8, event: E) {
        self.heap.push(Entry {
            at,
            rank,
            seq: self.scheduled,
            event,
        });
        self.scheduled += 1;
    }

    /// The next event and its time.
    pub fn pop(&mut self) -> Option<(u64, E)> {
        self.heap.pop().map(|e| (e.at, e.event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_then_by_rank_then_in_scheduling_order() {
        let mut q = Events::new();
        for (at, rank, e) in [
            (5, 0, 'a'),
            (1, 0, 'b'),
            (5, 0, 'c'),
            (0, 0, 'd'),
            (1, 0, 'e'),
            (1, 1, 'f'),
            (5, 0, 'g'),
        ] {
            q.schedule(at, rank, e);
        }
        let order: Vec<(u64, char)> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            [
                (0, 'd'),
                (1, 'b'),
                (1, 'e'),
                (1, 'f'),
                (5, 'a'),
                (5, 'c'),
                (5, 'g')
            ]
        );
    }
}
