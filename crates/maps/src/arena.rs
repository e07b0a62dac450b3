//! Zeroed, never-moving storage for map values: programs hold raw pointers
//! into it, so it is only ever touched through its raw base pointer, and
//! never through a Rust reference that could outlive a copy.
//!
//! Several threads may run programs over one map, as the kernel's CPUs do:
//! the arena is written through `&self`. Accesses to one value from
//! several threads are as unsynchronised as in the kernel (programs use
//! atomic instructions, `bpf_spin_lock`, or per-CPU values); the map's own
//! bookkeeping (which slot is in use) is behind the map's locks.

use std::alloc::{Layout, alloc_zeroed, dealloc};

pub struct Arena {
    base: *mut u8,
    layout: Option<Layout>,
}

// SAFETY: the arena is plain memory owned by one map; callers synchronise
// access the way the kernel's maps do (atomics or spin locks from
// programs, the map's locks around its slot bookkeeping).
unsafe impl Send for Arena {}
// SAFETY: see `Send`.
unsafe impl Sync for Arena {}

impl Arena {
    /// `len` zeroed bytes, 64-byte aligned (large arenas come from the
    /// allocator's `mmap`, so untouched pages cost nothing).
    pub fn new(len: usize) -> Arena {
        if len == 0 {
            return Arena {
                base: std::ptr::NonNull::<u64>::dangling().as_ptr().cast(),
                layout: None,
            };
        }
        let layout =
            Layout::from_size_align(len, 64).expect("map sizes are validated before allocation");
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        if base.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        Arena {
            base,
            layout: Some(layout),
        }
    }

    pub fn len(&self) -> usize {
        self.layout.map_or(0, |l| l.size())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Address of byte `off`, as a program sees it.
    pub fn addr(&self, off: usize) -> u64 {
        debug_assert!(off <= self.len());
        self.base.wrapping_add(off).expose_provenance() as u64
    }

    /// Offset of a program address inside the arena.
    pub fn offset_of(&self, addr: u64) -> Option<usize> {
        let off = addr.checked_sub(self.base as u64)? as usize;
        (off < self.len()).then_some(off)
    }

    /// A copy of `len` bytes at `off`.
    pub fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len(), "arena read out of bounds");
        let mut out = vec![0; len];
        // SAFETY: in bounds (asserted) of a live allocation; a byte copy
        // through the raw pointer, no reference into the arena is made.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(off), out.as_mut_ptr(), len) };
        out
    }

    /// The little-endian u32 at `off`.
    pub fn read_u32(&self, off: usize) -> u32 {
        assert!(off + 4 <= self.len(), "arena read out of bounds");
        // SAFETY: in bounds (asserted) of a live allocation.
        u32::from_le(unsafe { self.base.add(off).cast::<u32>().read_unaligned() })
    }

    pub fn write(&self, off: usize, bytes: &[u8]) {
        assert!(off + bytes.len() <= self.len(), "arena write out of bounds");
        // SAFETY: in bounds (asserted) of a live allocation, written through
        // the raw pointer (see the module's note on concurrent access).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.add(off), bytes.len()) }
    }

    pub fn zero(&self, off: usize, len: usize) {
        assert!(off + len <= self.len(), "arena write out of bounds");
        // SAFETY: as for `write`.
        unsafe { std::ptr::write_bytes(self.base.add(off), 0, len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if let Some(layout) = self.layout {
            // SAFETY: allocated in `new` with this layout.
            unsafe { dealloc(self.base, layout) }
        }
    }
}
