//! Zeroed, never-moving storage for map values: programs hold raw pointers
//! into it, so it is only ever touched through its raw base pointer, and
//! never through a Rust reference that could outlive a copy.
//!
//! Several threads may run programs over one map, as the kernel's CPUs do:
//! the arena is written through `&self`. Accesses to one value from
//! several threads are as unsynchronised as in the kernel (programs use
//! atomic instructions, `bpf_spin_lock`, or per-CPU values); the map's own
//! bookkeeping (which slot is in use) is behind the map's locks.
//!
//! The memory is an anonymous mapping reserved without swap accounting
//! (`MAP_NORESERVE`): a page costs nothing until it is first written, so a
//! map that declares hundreds of megabytes and uses a few entries costs a
//! few pages. Walks over a whole map ask the kernel which pages were ever
//! written ([`Arena::touched`]) and skip the others, which read as zeros.

use std::ops::Range;

pub struct Arena {
    base: *mut u8,
    len: usize,
}

/// Arenas below this size are scanned whole: asking the kernel which of
/// their pages are in use costs more than reading them.
const SCAN_WHOLE: usize = 1 << 20;

/// The size of a memory page.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

// SAFETY: the arena is plain memory owned by one map; callers synchronise
// access the way the kernel's maps do (atomics or spin locks from
// programs, the map's locks around its slot bookkeeping).
unsafe impl Send for Arena {}
// SAFETY: see `Send`.
unsafe impl Sync for Arena {}

impl Arena {
    /// `len` zeroed bytes, page aligned: an anonymous private mapping
    /// without swap reservation, so untouched pages cost nothing.
    pub fn new(len: usize) -> Arena {
        if len == 0 {
            return Arena {
                base: std::ptr::NonNull::<u64>::dangling().as_ptr().cast(),
                len: 0,
            };
        }
        // Miri models anonymous private mappings but not MAP_NORESERVE,
        // which only changes swap accounting: without it there, the same
        // code runs under Miri.
        let noreserve = if cfg!(miri) { 0 } else { libc::MAP_NORESERVE };
        // SAFETY: a fresh anonymous mapping; no existing memory is named.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | noreserve,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let layout = std::alloc::Layout::from_size_align(len, 64)
                .expect("map sizes are validated before allocation");
            std::alloc::handle_alloc_error(layout);
        }
        Arena {
            base: base.cast(),
            len,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// Byte ranges (whole pages, clipped to the arena) that may hold
    /// something other than zeros: the pages the kernel has memory or swap
    /// for. Pages never written are left out without being read. Small
    /// arenas, or when the kernel cannot say, are one range.
    pub fn touched(&self) -> Vec<Range<usize>> {
        if self.len < SCAN_WHOLE {
            return if self.len == 0 {
                Vec::new()
            } else {
                std::iter::once(0..self.len).collect()
            };
        }
        self.touched_pages()
            .unwrap_or_else(|| std::iter::once(0..self.len).collect())
    }

    /// `/proc/self/pagemap`: one 64-bit word per page, bit 63 "present",
    /// bit 62 "swapped".
    fn touched_pages(&self) -> Option<Vec<Range<usize>>> {
        use std::os::unix::fs::FileExt;
        let page = page_size();
        let start = self.base as usize / page;
        let pages = (self.base as usize + self.len).div_ceil(page) - start;
        let file = std::fs::File::open("/proc/self/pagemap").ok()?;
        let mut out: Vec<Range<usize>> = Vec::new();
        let mut buf = vec![0u8; 8 * pages.min(64 * 1024)];
        let mut done = 0;
        while done < pages {
            let n = (pages - done).min(buf.len() / 8);
            let bytes = &mut buf[..8 * n];
            file.read_exact_at(bytes, 8 * (start + done) as u64).ok()?;
            for (i, w) in bytes.chunks_exact(8).enumerate() {
                let w = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                if w & (3 << 62) == 0 {
                    continue;
                }
                let lo = ((start + done + i) * page).saturating_sub(self.base as usize);
                let hi = ((start + done + i + 1) * page - self.base as usize).min(self.len);
                match out.last_mut() {
                    Some(r) if r.end == lo => r.end = hi,
                    _ => out.push(lo..hi),
                }
            }
            done += n;
        }
        Some(out)
    }

    /// Whether `len` bytes at `off` are all zeros (copied out a chunk at a
    /// time, as `read` does: no reference into the arena is made).
    pub fn is_zero(&self, off: usize, len: usize) -> bool {
        assert!(off + len <= self.len(), "arena read out of bounds");
        let mut buf = [0u8; 512];
        let mut at = 0;
        while at < len {
            let n = (len - at).min(buf.len());
            self.read_into(off + at, &mut buf[..n]);
            if buf[..n] != [0u8; 512][..n] {
                return false;
            }
            at += n;
        }
        true
    }

    /// Whether the bytes at `off` equal `other`.
    pub fn equals(&self, off: usize, other: &[u8]) -> bool {
        assert!(off + other.len() <= self.len(), "arena read out of bounds");
        let mut buf = [0u8; 512];
        other.chunks(buf.len()).enumerate().all(|(i, want)| {
            let got = &mut buf[..want.len()];
            self.read_into(off + i * 512, got);
            got == want
        })
    }

    /// Copies `out.len()` bytes at `off` into `out`.
    pub fn read_into(&self, off: usize, out: &mut [u8]) {
        assert!(off + out.len() <= self.len(), "arena read out of bounds");
        // SAFETY: as for `read`.
        unsafe { std::ptr::copy_nonoverlapping(self.base.add(off), out.as_mut_ptr(), out.len()) };
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

    /// The 4 bytes at `off` as an atomic word (a `bpf_spin_lock`, which
    /// programs take with atomics on the same memory).
    pub fn atomic_u32(&self, off: usize) -> &std::sync::atomic::AtomicU32 {
        assert!(off + 4 <= self.len(), "arena access out of bounds");
        assert!(off.is_multiple_of(4), "an atomic word is 4-byte aligned");
        // SAFETY: in bounds and aligned (asserted; the base is page
        // aligned) of an allocation that lives as long as `self`; every
        // concurrent access to the word is atomic (the lock helpers).
        unsafe { std::sync::atomic::AtomicU32::from_ptr(self.base.add(off).cast()) }
    }

    pub fn zero(&self, off: usize, len: usize) {
        assert!(off + len <= self.len(), "arena write out of bounds");
        // SAFETY: as for `write`.
        unsafe { std::ptr::write_bytes(self.base.add(off), 0, len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: mapped in `new` with this length; no program runs
            // over the map any more.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }
}
