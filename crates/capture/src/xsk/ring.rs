//! The four AF_XDP rings, mapped from the socket: a producer index, a
//! consumer index, a flags word and a power-of-two array of descriptors.
//! Each side keeps cached copies of both indices and reads the other
//! side's index (acquire) only when its cache says the ring is full or
//! empty; it publishes its own index with a release store after writing or
//! reading the descriptors, as the kernel's `xsk_queue.h` expects.

use std::marker::PhantomData;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU32, Ordering};

use super::XskError;

/// One RX/TX descriptor (`struct xdp_desc`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct XdpDesc {
    /// Offset of the packet in the UMEM.
    pub addr: u64,
    pub len: u32,
    pub options: u32,
}

/// A memory mapping, unmapped on drop.
pub(crate) struct Mapping {
    pub ptr: *mut u8,
    pub len: usize,
}

impl Mapping {
    /// Maps `len` bytes of `fd` at page offset `offset` (a ring), or
    /// anonymous memory when `fd` is `None` (a UMEM area).
    pub fn new(len: usize, fd: Option<(RawFd, u64)>, what: &str) -> Result<Mapping, XskError> {
        let (flags, fd, off) = match fd {
            Some((fd, off)) => (
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                off as libc::off_t,
            ),
            None => (
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            ),
        };
        // SAFETY: a fresh mapping; the kernel validates fd and offset.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                off,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(XskError::os(format!("mapping the {what}")));
        }
        Ok(Mapping {
            ptr: ptr.cast(),
            len,
        })
    }
}

// SAFETY: a mapping is an address range; who may touch which bytes is
// decided by its owners (a UMEM's frames belong to one queue at a time,
// handed over through the pools and rings), and unmapping needs the last
// reference.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned; nothing
        // borrows the mapping past its owner.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// A mapped ring of `T` (u64 frame addresses, or [`XdpDesc`]).
pub(crate) struct RingMap<T> {
    _map: Mapping,
    producer: *const AtomicU32,
    consumer: *const AtomicU32,
    flags: *const AtomicU32,
    descs: *mut T,
    size: u32,
}

impl<T: Copy> RingMap<T> {
    /// Maps the ring of `size` entries at `pgoff` with the kernel's
    /// offsets for it.
    pub fn map(
        fd: RawFd,
        pgoff: u64,
        off: &libc::xdp_ring_offset,
        size: u32,
        what: &str,
    ) -> Result<RingMap<T>, XskError> {
        let len = off.desc as usize + size as usize * size_of::<T>();
        let map = Mapping::new(len, Some((fd, pgoff)), what)?;
        let at = |o: u64| map.ptr.wrapping_add(o as usize);
        Ok(RingMap {
            producer: at(off.producer).cast(),
            consumer: at(off.consumer).cast(),
            flags: at(off.flags).cast(),
            descs: at(off.desc).cast(),
            size,
            _map: map,
        })
    }

    fn load(&self, index: *const AtomicU32) -> u32 {
        // SAFETY: the index words lie in the mapping this ring owns; the
        // kernel writes them concurrently, hence the atomic.
        unsafe { (*index).load(Ordering::Acquire) }
    }

    fn store(&self, index: *const AtomicU32, value: u32) {
        // SAFETY: as in `load`.
        unsafe { (*index).store(value, Ordering::Release) }
    }

    fn slot(&self, i: u32) -> *mut T {
        self.descs.wrapping_add((i & (self.size - 1)) as usize)
    }
}

/// The side of a ring this process fills (FILL, TX).
pub struct Producer<T> {
    ring: RingMap<T>,
    cached_prod: u32,
    /// The consumer index plus the ring size: the first index not free.
    cached_end: u32,
    _t: PhantomData<T>,
}

impl<T: Copy> Producer<T> {
    pub(crate) fn new(ring: RingMap<T>) -> Producer<T> {
        let prod = ring.load(ring.producer);
        let end = ring.load(ring.consumer).wrapping_add(ring.size);
        Producer {
            ring,
            cached_prod: prod,
            cached_end: end,
            _t: PhantomData,
        }
    }

    /// Free entries, at most `want` (reads the consumer index only when
    /// the cache has fewer).
    pub fn free(&mut self, want: u32) -> u32 {
        let mut free = self.cached_end.wrapping_sub(self.cached_prod);
        if free < want {
            self.cached_end = self
                .ring
                .load(self.ring.consumer)
                .wrapping_add(self.ring.size);
            free = self.cached_end.wrapping_sub(self.cached_prod);
        }
        free.min(want)
    }

    /// Writes entries (at most [`free`](Self::free)) and publishes them.
    pub fn produce(&mut self, items: impl IntoIterator<Item = T>) -> u32 {
        let mut n = 0;
        for item in items {
            debug_assert!(self.cached_end.wrapping_sub(self.cached_prod) > 0);
            // SAFETY: the slot is free (between the producer and the
            // consumer index plus size): the kernel does not read it until
            // the producer index moves past it.
            unsafe { self.ring.slot(self.cached_prod).write(item) };
            self.cached_prod = self.cached_prod.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            self.ring.store(self.ring.producer, self.cached_prod);
        }
        n
    }

    /// Entries written so far (a wrapping count).
    pub fn produced(&self) -> u32 {
        self.cached_prod
    }

    /// Entries written and not yet taken by the kernel.
    pub fn outstanding(&self) -> u32 {
        self.cached_prod
            .wrapping_sub(self.ring.load(self.ring.consumer))
    }

    /// Whether the kernel asks to be woken up (`XDP_USE_NEED_WAKEUP`).
    pub fn needs_wakeup(&self) -> bool {
        self.ring.load(self.ring.flags) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    /// Takes back into `out` the entries written and not taken by the
    /// kernel, and moves the producer index back over them. Only for a
    /// ring the kernel no longer reads (its socket unbound because the
    /// interface went away): otherwise it could be reading them now.
    pub fn reclaim_unread(&mut self, out: &mut Vec<T>) -> u32 {
        let cons = self.ring.load(self.ring.consumer);
        let n = self.cached_prod.wrapping_sub(cons).min(self.ring.size);
        for i in 0..n {
            // SAFETY: entries between the consumer and the producer index
            // were written by us; the kernel reads this ring no more.
            out.push(unsafe { self.ring.slot(cons.wrapping_add(i)).read() });
        }
        self.cached_prod = cons;
        self.cached_end = cons.wrapping_add(self.ring.size);
        self.ring.store(self.ring.producer, cons);
        n
    }

    pub fn size(&self) -> u32 {
        self.ring.size
    }
}

/// The side of a ring this process drains (RX, COMPLETION).
pub struct Consumer<T> {
    ring: RingMap<T>,
    cached_prod: u32,
    cached_cons: u32,
    _t: PhantomData<T>,
}

impl<T: Copy> Consumer<T> {
    pub(crate) fn new(ring: RingMap<T>) -> Consumer<T> {
        let cons = ring.load(ring.consumer);
        let prod = ring.load(ring.producer);
        Consumer {
            ring,
            cached_prod: prod,
            cached_cons: cons,
            _t: PhantomData,
        }
    }

    /// Takes up to `max` entries into `out` and gives their slots back to
    /// the kernel; returns how many.
    pub fn consume(&mut self, max: u32, out: &mut Vec<T>) -> u32 {
        let mut ready = self.cached_prod.wrapping_sub(self.cached_cons);
        if ready < max {
            self.cached_prod = self.ring.load(self.ring.producer);
            ready = self.cached_prod.wrapping_sub(self.cached_cons);
        }
        let n = ready.min(max);
        for i in 0..n {
            // SAFETY: entries between the consumer and the producer index
            // were published by the kernel (acquire above) and are ours
            // until the consumer index moves past them.
            out.push(unsafe { self.ring.slot(self.cached_cons.wrapping_add(i)).read() });
        }
        if n > 0 {
            self.cached_cons = self.cached_cons.wrapping_add(n);
            self.ring.store(self.ring.consumer, self.cached_cons);
        }
        n
    }

    /// Entries taken so far (a wrapping count).
    pub fn consumed(&self) -> u32 {
        self.cached_cons
    }

    pub fn needs_wakeup(&self) -> bool {
        self.ring.load(self.ring.flags) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

// SAFETY: a ring is used by one thread at a time (its owner); the shared
// words are accessed atomically.
unsafe impl<T: Send> Send for Producer<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for Consumer<T> {}
