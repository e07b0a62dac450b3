//! `BPF_MAP_TYPE_RINGBUF`: records reserved in a byte ring (8-byte header,
//! data rounded up to 8), made visible on submit, consumed in order by user
//! space; a record still reserved blocks the ones after it, as in the kernel.

use std::collections::VecDeque;

use crate::Errno;
use crate::arena::Arena;

pub const HDR: usize = 8;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    Busy,
    Committed,
    Discarded,
}

struct Record {
    /// Absolute position of the header (monotonic; `% size` in the arena).
    start: usize,
    len: usize,
    state: State,
}

pub struct RingBuf {
    pub arena: Arena,
    size: usize,
    /// Records in production order, oldest first.
    records: VecDeque<Record>,
    /// Next byte to hand out (monotonic; `% size` is the position).
    producer: usize,
    /// First byte still owned by an unconsumed record.
    consumer: usize,
    /// Records dropped because the ring was full.
    pub dropped: u64,
}

impl RingBuf {
    pub fn new(size: usize) -> RingBuf {
        RingBuf {
            arena: Arena::new(size),
            size,
            records: VecDeque::new(),
            producer: 0,
            consumer: 0,
            dropped: 0,
        }
    }

    /// Reserves room for `len` bytes; returns the data's arena offset.
    pub fn reserve(&mut self, len: usize) -> Option<usize> {
        let need = HDR + len.div_ceil(8) * 8;
        if need > self.size {
            self.dropped += 1;
            return None;
        }
        let mut start = self.producer;
        // Records never wrap: skip to the ring's start when the tail is short.
        let pos = start % self.size;
        if pos + need > self.size {
            start += self.size - pos;
        }
        if start + need - self.consumer > self.size {
            self.dropped += 1;
            return None;
        }
        self.producer = start + need;
        self.records.push_back(Record {
            start,
            len,
            state: State::Busy,
        });
        Some(start % self.size + HDR)
    }

    /// Commits or discards the record whose data starts at arena offset `data_off`.
    pub fn finish(&mut self, data_off: usize, discard: bool) -> Result<(), Errno> {
        let size = self.size;
        let rec = self
            .records
            .iter_mut()
            .find(|r| r.start % size + HDR == data_off && r.state == State::Busy)
            .ok_or(Errno::EINVAL)?;
        rec.state = if discard {
            State::Discarded
        } else {
            State::Committed
        };
        Ok(())
    }

    /// Copies `data` in as one committed record.
    pub fn output(&mut self, data: &[u8]) -> Result<(), Errno> {
        let off = self.reserve(data.len()).ok_or(Errno::EAGAIN)?;
        self.arena.write(off, data);
        self.finish(off, false)
    }

    /// Takes every committed record up to the first busy one.
    pub fn consume(&mut self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(r) = self.records.front() {
            match r.state {
                State::Busy => break,
                State::Committed => out.push(self.arena.read(r.start % self.size + HDR, r.len)),
                State::Discarded => {}
            }
            self.records.pop_front();
        }
        self.consumer = self.records.front().map_or(self.producer, |r| r.start);
        out
    }

    /// Bytes produced but not yet consumed.
    pub fn pending(&self) -> usize {
        self.producer - self.consumer
    }

    pub fn size(&self) -> usize {
        self.size
    }
}
