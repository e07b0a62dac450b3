//! The workers' outputs merged back into the source's order: with several
//! threads every output (a capture file, an interface) gets its packets
//! in the order one thread would have written them.
//!
//! The rule: each worker runs its packets in source order, and after each
//! batch it publishes a *mark*, a sequence number below which it will
//! output nothing more. A packet's outputs are written once every worker's
//! mark is above its sequence number; until then they are held, merged
//! from the workers' queues by sequence number. A worker that holds more
//! than [`HELD_LIMIT`] bytes waits for the others (forked sources), or asks
//! the dispatcher to tell every worker how far it has read (sharded
//! sources, where waiting could block the dispatcher itself). The worker
//! with the lowest mark can always write everything it holds, so some
//! worker always moves on.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::sink::{Outputs, SinkError, Sinks};

/// Bytes of packets one worker may hold before it waits for the others.
pub(crate) const HELD_LIMIT: usize = 4 << 20;

/// What the workers share: the sinks, each worker's held outputs and mark.
pub(crate) struct Ordered {
    state: Mutex<State>,
    moved: Condvar,
    /// A worker holds too much and the dispatcher should send every worker
    /// a batch (empty if need be) carrying how far it has read.
    wants_marks: AtomicBool,
    /// Whether a worker over the limit waits (forked sources) rather than
    /// asking the dispatcher (sharded sources).
    waits: bool,
}

struct State {
    sinks: Sinks,
    held: Vec<VecDeque<Outputs>>,
    held_bytes: Vec<usize>,
    /// Per worker: no more outputs below this sequence number.
    marks: Vec<u64>,
    /// Emptied outputs, given back to the workers.
    spare: Vec<Outputs>,
    /// The first sink error; every later deposit returns it.
    failed: Option<SinkError>,
}

impl Ordered {
    pub(crate) fn new(sinks: Sinks, workers: usize, waits: bool) -> Ordered {
        Ordered {
            state: Mutex::new(State {
                sinks,
                held: (0..workers).map(|_| VecDeque::new()).collect(),
                held_bytes: vec![0; workers],
                marks: vec![0; workers],
                spare: Vec::new(),
                failed: None,
            }),
            moved: Condvar::new(),
            wants_marks: AtomicBool::new(false),
            waits,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A worker that panicked holding the lock left consistent state:
        // every change below is made before anything can panic.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Worker `w` hands over what its last batches routed (taken from
    /// `outputs`, which comes back empty) and says it will output nothing
    /// more below `mark`; whatever every worker has now passed is written.
    pub(crate) fn deposit(
        &self,
        w: usize,
        outputs: &mut Outputs,
        mark: u64,
    ) -> Result<(), SinkError> {
        let mut st = self.lock();
        if !outputs.is_empty() {
            let fresh = st.spare.pop().unwrap_or_default();
            let full = std::mem::replace(outputs, fresh);
            st.held_bytes[w] += full.byte_len();
            st.held[w].push_back(full);
        }
        st.marks[w] = st.marks[w].max(mark);
        let wrote = st.write_ready();
        if wrote {
            self.moved.notify_all();
        }
        while st.failed.is_none() && st.held_bytes[w] > HELD_LIMIT {
            if !self.waits {
                self.wants_marks.store(true, Ordering::Relaxed);
                break;
            }
            st = self.moved.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        match &st.failed {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Worker `w` is done (or gone): nothing of it holds the others back.
    pub(crate) fn done(&self, w: usize) {
        let mut st = self.lock();
        st.marks[w] = u64::MAX;
        st.write_ready();
        drop(st);
        self.moved.notify_all();
    }

    /// Whether a worker asked for every worker's mark (and clears it).
    pub(crate) fn take_mark_request(&self) -> bool {
        self.wants_marks.swap(false, Ordering::Relaxed)
    }

    /// The sinks, once every worker is done; anything still held (a worker
    /// that failed) is written first.
    pub(crate) fn into_sinks(self) -> (Sinks, Result<(), SinkError>) {
        let mut st = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        st.marks.iter_mut().for_each(|m| *m = u64::MAX);
        st.write_ready();
        let result = match st.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        };
        (st.sinks, result)
    }
}

impl State {
    /// Writes, in sequence order, every held packet below every worker's
    /// mark; true if anything was written.
    fn write_ready(&mut self) -> bool {
        if self.failed.is_some() {
            return false;
        }
        let floor = self.marks.iter().copied().min().unwrap_or(u64::MAX);
        let mut wrote = false;
        loop {
            // The held packet with the lowest sequence number below the floor.
            let next = self
                .held
                .iter()
                .enumerate()
                .filter_map(|(w, q)| q.front().and_then(|o| o.next_seq()).map(|s| (s, w)))
                .filter(|&(s, _)| s < floor)
                .min();
            let Some((_, w)) = next else { break };
            let front = self.held[w]
                .front_mut()
                .expect("a queue with a next packet");
            let written = front.write_next(&mut self.sinks);
            wrote = true;
            if let Err(e) = written {
                self.failed = Some(e);
                return true;
            }
            if front.next_seq().is_none() {
                let mut used = self.held[w].pop_front().expect("its front");
                self.held_bytes[w] -= used.byte_len();
                used.clear();
                self.spare.push(used);
            }
        }
        if wrote && let Err(e) = self.sinks.flush() {
            self.failed = Some(e);
        }
        wrote
    }
}

/// Marks the worker done when it ends, however it ends (a panic too), so
/// that the others never wait for it.
pub(crate) struct DoneOnDrop<'a> {
    pub(crate) ordered: Option<&'a Ordered>,
    pub(crate) worker: usize,
}

impl Drop for DoneOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(o) = self.ordered {
            o.done(self.worker);
        }
    }
}
