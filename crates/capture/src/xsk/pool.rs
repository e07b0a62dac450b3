//! Free UMEM frames: the three designs the Open vSwitch AF_XDP paper
//! compares, behind one interface. A LIFO stack (the default: the frame
//! freed last is the one still in cache), a FIFO ring, and a linked list
//! threaded through an index array.

use std::str::FromStr;

/// Which free-frame pool to use.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum PoolKind {
    #[default]
    Stack,
    Ring,
    List,
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Stack => "stack",
            PoolKind::Ring => "ring",
            PoolKind::List => "list",
        }
    }
}

impl FromStr for PoolKind {
    type Err = String;
    fn from_str(s: &str) -> Result<PoolKind, String> {
        match s {
            "stack" => Ok(PoolKind::Stack),
            "ring" => Ok(PoolKind::Ring),
            "list" => Ok(PoolKind::List),
            _ => Err(format!("unknown pool {s:?}: stack, ring or list")),
        }
    }
}

/// Free frames of one UMEM, by frame address (a multiple of the frame
/// size). `put` never sees a frame that is already free.
pub enum FramePool {
    Stack(Vec<u64>),
    Ring(RingPool),
    List(ListPool),
}

impl FramePool {
    /// A pool holding every frame of a UMEM of `count` frames of
    /// `frame_size` bytes.
    pub fn full(kind: PoolKind, count: u32, frame_size: u32) -> FramePool {
        let frames = (0..u64::from(count)).map(|i| i * u64::from(frame_size));
        match kind {
            // Popped from the end: frame 0 first.
            PoolKind::Stack => FramePool::Stack(frames.rev().collect()),
            PoolKind::Ring => FramePool::Ring(RingPool::new(frames, count)),
            PoolKind::List => FramePool::List(ListPool::new(count, frame_size)),
        }
    }

    #[inline]
    pub fn get(&mut self) -> Option<u64> {
        match self {
            FramePool::Stack(v) => v.pop(),
            FramePool::Ring(r) => r.get(),
            FramePool::List(l) => l.get(),
        }
    }

    #[inline]
    pub fn put(&mut self, frame: u64) {
        match self {
            FramePool::Stack(v) => v.push(frame),
            FramePool::Ring(r) => r.put(frame),
            FramePool::List(l) => l.put(frame),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            FramePool::Stack(v) => v.len(),
            FramePool::Ring(r) => r.len(),
            FramePool::List(l) => l.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A FIFO of frame addresses in a power-of-two array.
pub struct RingPool {
    slots: Vec<u64>,
    head: usize,
    tail: usize,
}

impl RingPool {
    fn new(frames: impl Iterator<Item = u64>, count: u32) -> RingPool {
        let mut slots = vec![0; (count as usize).next_power_of_two().max(1)];
        let mut tail = 0;
        for f in frames {
            slots[tail] = f;
            tail += 1;
        }
        RingPool {
            slots,
            head: 0,
            tail,
        }
    }

    fn get(&mut self) -> Option<u64> {
        if self.head == self.tail {
            return None;
        }
        let f = self.slots[self.head & (self.slots.len() - 1)];
        self.head = self.head.wrapping_add(1);
        Some(f)
    }

    fn put(&mut self, frame: u64) {
        let mask = self.slots.len() - 1;
        debug_assert!(self.tail.wrapping_sub(self.head) < self.slots.len());
        self.slots[self.tail & mask] = frame;
        self.tail = self.tail.wrapping_add(1);
    }

    fn len(&self) -> usize {
        self.tail.wrapping_sub(self.head)
    }
}

/// A singly linked list of free frames: `next[i]` links frame `i`.
pub struct ListPool {
    next: Vec<u32>,
    head: u32,
    len: usize,
    shift: u32,
}

const NIL: u32 = u32::MAX;

impl ListPool {
    fn new(count: u32, frame_size: u32) -> ListPool {
        let next = (0..count)
            .map(|i| if i + 1 < count { i + 1 } else { NIL })
            .collect();
        ListPool {
            next,
            head: if count > 0 { 0 } else { NIL },
            len: count as usize,
            shift: frame_size.trailing_zeros(),
        }
    }

    fn get(&mut self) -> Option<u64> {
        if self.head == NIL {
            return None;
        }
        let i = self.head;
        self.head = self.next[i as usize];
        self.len -= 1;
        Some(u64::from(i) << self.shift)
    }

    fn put(&mut self, frame: u64) {
        let i = (frame >> self.shift) as u32;
        self.next[i as usize] = self.head;
        self.head = i;
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_hands_out_each_frame_once_and_takes_them_back() {
        for kind in [PoolKind::Stack, PoolKind::Ring, PoolKind::List] {
            let mut p = FramePool::full(kind, 8, 2048);
            let mut got: Vec<u64> = std::iter::from_fn(|| p.get()).collect();
            assert_eq!(p.len(), 0, "{kind:?}");
            got.sort_unstable();
            assert_eq!(
                got,
                (0..8).map(|i| i * 2048).collect::<Vec<_>>(),
                "{kind:?}"
            );
            for f in [4096, 0, 14336] {
                p.put(f);
            }
            assert_eq!(p.len(), 3);
            let first = p.get();
            match kind {
                PoolKind::Stack | PoolKind::List => assert_eq!(first, Some(14336), "LIFO"),
                PoolKind::Ring => assert_eq!(first, Some(4096), "FIFO"),
            }
        }
    }
}
