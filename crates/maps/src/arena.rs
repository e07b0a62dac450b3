//! Zeroed, never-moving storage for map values: programs hold raw pointers
//! into it, so it is only ever touched through its raw base pointer.

use std::alloc::{Layout, alloc_zeroed, dealloc};

pub struct Arena {
    base: *mut u8,
    layout: Option<Layout>,
}

// SAFETY: the arena is plain memory owned by one map; callers synchronise
// access the way the kernel's maps do (atomics from programs, the map's
// own `&mut self` for updates).
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

    pub fn read(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.len(), "arena read out of bounds");
        // SAFETY: in bounds (asserted) of a live allocation.
        unsafe { std::slice::from_raw_parts(self.base.add(off), len) }
    }

    pub fn write(&mut self, off: usize, bytes: &[u8]) {
        self.slice_mut(off, bytes.len()).copy_from_slice(bytes);
    }

    pub fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off + len <= self.len(), "arena write out of bounds");
        // SAFETY: in bounds (asserted) of a live allocation we own mutably.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(off), len) }
    }

    pub fn zero(&mut self, off: usize, len: usize) {
        self.slice_mut(off, len).fill(0);
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
