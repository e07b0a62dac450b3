//! The memory a program may touch: a small table of host regions (stack,
//! context, packet, map values) checked on every access.
//!
//! Registers hold real host addresses, as in the kernel, so the same program
//! image can later run in a JIT with plain loads once the verifier has
//! proved its accesses; until then every access is checked here.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

/// What a region holds; access counters are kept per kind.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug)]
pub enum RegionKind {
    Stack,
    Context,
    Packet,
    Map,
}

impl RegionKind {
    pub const COUNT: usize = 4;
    pub const ALL: [RegionKind; 4] = [
        RegionKind::Stack,
        RegionKind::Context,
        RegionKind::Packet,
        RegionKind::Map,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RegionKind::Stack => "stack",
            RegionKind::Context => "context",
            RegionKind::Packet => "packet",
            RegionKind::Map => "map",
        }
    }
}

impl fmt::Display for RegionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A contiguous range of host memory the program may access.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub struct Region {
    pub start: u64,
    pub len: u64,
    pub kind: RegionKind,
    pub writable: bool,
    /// The buffer the region may move within (`set_window`), and whether
    /// helpers may write it even when programs may not.
    extent: (u64, u64),
    helper_writable: bool,
}

impl Region {
    /// Whether `[addr, addr + size)` lies inside the region.
    #[inline(always)]
    pub fn contains(&self, addr: u64, size: u64) -> bool {
        let off = addr.wrapping_sub(self.start);
        off < self.len && self.len - off >= size
    }

    pub fn end(&self) -> u64 {
        self.start + self.len
    }
}

/// Read or write.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum Access {
    Read,
    Write,
}

/// An access that no region permits.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct MemFault {
    pub access: Access,
    pub addr: u64,
    pub size: u64,
    /// The region the access falls in when it was a write to read-only
    /// memory, else the nearest region.
    pub region: Option<Region>,
    pub read_only: bool,
}

impl fmt::Display for MemFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.access {
            Access::Read => "read",
            Access::Write => "write",
        };
        write!(f, "{what} of {} bytes at {:#x}", self.size, self.addr)?;
        match self.region {
            Some(r) if self.read_only => write!(f, " into read-only {} memory", r.kind),
            Some(r) => {
                let (rel, dist) = if self.addr < r.start {
                    ("before the start of", r.start - self.addr)
                } else if self.addr >= r.end() {
                    ("past the end of", self.addr - r.end())
                } else {
                    ("runs off the end of", self.addr + self.size - r.end())
                };
                write!(
                    f,
                    " is outside every region: {dist} bytes {rel} the {} ({} bytes at {:#x})",
                    r.kind, r.len, r.start
                )
            }
            None => write!(f, " is outside every region (none is mapped)"),
        }
    }
}

/// The regions of one run, borrowed from the embedder for `'a`.
///
/// The VM adds its own stack for the duration of a run.
pub struct Memory<'a> {
    regions: Vec<Region>,
    pub(crate) stack: Region,
    /// What helpers read and wrote through this table since the last
    /// [`Memory::reset_helper_tally`] (`read`, `write`, `helper_write`).
    helper_tally: Cell<HelperTally>,
    _borrow: PhantomData<&'a mut [u8]>,
}

/// The accesses helpers made to program memory: one per call of the
/// memory interface (a key read, a value copied), with its bytes.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct HelperTally {
    pub reads: u64,
    pub read_bytes: u64,
    pub writes: u64,
    pub write_bytes: u64,
}

impl Default for Memory<'_> {
    fn default() -> Self {
        Memory::new()
    }
}

impl<'a> Memory<'a> {
    pub fn new() -> Memory<'a> {
        Memory {
            regions: Vec::new(),
            stack: Region {
                start: 0,
                len: 0,
                kind: RegionKind::Stack,
                writable: true,
                extent: (0, 0),
                helper_writable: true,
            },
            helper_tally: Cell::new(HelperTally::default()),
            _borrow: PhantomData,
        }
    }

    /// A `Memory` on the region list of an earlier one (emptied), so that
    /// a run per packet does not allocate.
    pub fn recycle(mut regions: Vec<Region>) -> Memory<'a> {
        regions.clear();
        Memory {
            regions,
            ..Memory::new()
        }
    }

    /// The region list, for [`Memory::recycle`].
    pub fn into_regions(self) -> Vec<Region> {
        self.regions
    }

    /// Maps a writable buffer; returns its address for the program.
    pub fn add(&mut self, kind: RegionKind, buf: &'a mut [u8]) -> u64 {
        let start = buf.as_mut_ptr().expose_provenance() as u64;
        self.push(start, buf.len() as u64, kind, true, true)
    }

    /// Maps a read-only buffer; returns its address for the program.
    pub fn add_readonly(&mut self, kind: RegionKind, buf: &'a [u8]) -> u64 {
        let start = buf.as_ptr().expose_provenance() as u64;
        self.push(start, buf.len() as u64, kind, false, false)
    }

    /// Maps a buffer programs may only read but helpers may update (a
    /// context whose fields the kernel keeps read-only).
    pub fn add_protected(&mut self, kind: RegionKind, buf: &'a mut [u8]) -> u64 {
        let start = buf.as_mut_ptr().expose_provenance() as u64;
        self.push(start, buf.len() as u64, kind, false, true)
    }

    /// Maps the part `window` of `buf`; helpers may later move the window
    /// inside `buf` with [`Memory::set_window`] (packet head and tail
    /// adjustments). Returns the region's index.
    pub fn add_window(
        &mut self,
        kind: RegionKind,
        buf: &'a mut [u8],
        window: std::ops::Range<usize>,
        writable: bool,
    ) -> usize {
        assert!(
            window.start <= window.end && window.end <= buf.len(),
            "window inside the buffer"
        );
        let base = buf.as_mut_ptr().expose_provenance() as u64;
        self.push(base, buf.len() as u64, kind, writable, true);
        let idx = self.regions.len() - 1;
        self.set_window(
            idx,
            base + window.start as u64,
            (window.end - window.start) as u64,
        );
        idx
    }

    /// Maps memory the caller owns by address.
    ///
    /// # Safety
    /// `[start, start + len)` must stay valid (and, if `writable`, writable)
    /// for as long as this `Memory` is used, and nothing may hold a Rust
    /// reference to it while a program runs.
    pub unsafe fn add_raw(
        &mut self,
        kind: RegionKind,
        start: u64,
        len: u64,
        writable: bool,
    ) -> usize {
        self.push(start, len, kind, writable, writable);
        self.regions.len() - 1
    }

    /// Like [`Memory::add_raw`] for memory programs may only read but
    /// helpers may write (a context whose fields the kernel keeps
    /// read-only).
    ///
    /// # Safety
    /// As for [`Memory::add_raw`], with the memory writable.
    pub unsafe fn add_raw_protected(&mut self, kind: RegionKind, start: u64, len: u64) -> usize {
        self.push(start, len, kind, false, true);
        self.regions.len() - 1
    }

    fn push(
        &mut self,
        start: u64,
        len: u64,
        kind: RegionKind,
        writable: bool,
        helper_writable: bool,
    ) -> u64 {
        self.regions.push(Region {
            start,
            len,
            kind,
            writable,
            extent: (start, start + len),
            helper_writable,
        });
        start
    }

    /// Moves region `idx`'s window to `[start, start + len)`, which must lie
    /// within the buffer it was mapped from.
    #[inline]
    pub fn set_window(&mut self, idx: usize, start: u64, len: u64) {
        let r = &mut self.regions[idx];
        assert!(
            start >= r.extent.0 && start.checked_add(len).is_some_and(|e| e <= r.extent.1),
            "a window stays inside its buffer"
        );
        r.start = start;
        r.len = len;
    }

    /// Index of the first region of `kind`.
    pub fn index_of(&self, kind: RegionKind) -> Option<usize> {
        self.regions.iter().position(|r| r.kind == kind)
    }

    /// Forgets every region (to reuse the allocation for another run).
    pub fn clear(&mut self) {
        self.regions.clear();
    }

    /// The embedder's regions (the stack is not listed).
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The first packet region, for the legacy packet loads.
    pub fn packet(&self) -> Option<Region> {
        self.regions
            .iter()
            .copied()
            .find(|r| r.kind == RegionKind::Packet)
    }

    /// The kind of region that holds `[addr, addr + size)` for this access,
    /// or `None` (then [`Memory::fault`] explains why).
    #[inline(always)]
    pub(crate) fn find(&self, addr: u64, size: u64, access: Access) -> Option<RegionKind> {
        if self.stack.contains(addr, size) {
            return Some(RegionKind::Stack);
        }
        for r in &self.regions {
            if r.contains(addr, size) {
                return (access == Access::Read || r.writable).then_some(r.kind);
            }
        }
        None
    }

    /// Like [`Memory::find`], with where: 0 for the stack, `i + 1` for
    /// region `i` (the index [`crate::Vm::last_region_accesses`] uses).
    #[inline(always)]
    pub(crate) fn find_at(
        &self,
        addr: u64,
        size: u64,
        access: Access,
    ) -> Option<(RegionKind, usize)> {
        if self.stack.contains(addr, size) {
            return Some((RegionKind::Stack, 0));
        }
        for (i, r) in self.regions.iter().enumerate() {
            if r.contains(addr, size) {
                return (access == Access::Read || r.writable).then_some((r.kind, i + 1));
            }
        }
        None
    }

    /// What helpers read and wrote since the last reset.
    pub fn helper_tally(&self) -> HelperTally {
        self.helper_tally.get()
    }

    pub fn reset_helper_tally(&self) {
        self.helper_tally.set(HelperTally::default());
    }

    fn tally(&self, access: Access, len: usize) {
        if len == 0 {
            return;
        }
        let mut t = self.helper_tally.get();
        match access {
            Access::Read => {
                t.reads += 1;
                t.read_bytes += len as u64;
            }
            Access::Write => {
                t.writes += 1;
                t.write_bytes += len as u64;
            }
        }
        self.helper_tally.set(t);
    }

    /// Like [`Memory::find`], with the reason on failure.
    pub(crate) fn check(
        &self,
        addr: u64,
        size: u64,
        access: Access,
    ) -> Result<RegionKind, MemFault> {
        self.find(addr, size, access)
            .ok_or_else(|| self.fault(addr, size, access))
    }

    /// Why an access that [`Memory::find`] refused is refused.
    #[cold]
    #[inline(never)]
    pub(crate) fn fault(&self, addr: u64, size: u64, access: Access) -> MemFault {
        let all = || {
            std::iter::once(&self.stack)
                .chain(&self.regions)
                .filter(|r| r.len > 0)
        };
        if let Some(r) = all().find(|r| r.contains(addr, size)) {
            return MemFault {
                access,
                addr,
                size,
                region: Some(*r),
                read_only: true,
            };
        }
        let distance = |r: &&Region| {
            if addr < r.start {
                r.start - addr
            } else {
                addr.saturating_sub(r.end().saturating_sub(1))
            }
        };
        MemFault {
            access,
            addr,
            size,
            region: all().min_by_key(distance).copied(),
            read_only: false,
        }
    }

    /// Checked view of program memory for helpers (e.g. a key on the stack).
    pub fn read(&self, addr: u64, len: usize) -> Result<&[u8], MemFault> {
        self.tally(Access::Read, len);
        self.read_untallied(addr, len)
    }

    /// [`Memory::read`] for the VM's own use (legacy packet loads), which
    /// the VM counts as the program's.
    pub(crate) fn read_untallied(&self, addr: u64, len: usize) -> Result<&[u8], MemFault> {
        if len == 0 {
            return Ok(&[]);
        }
        self.check(addr, len as u64, Access::Read)?;
        let ptr = std::ptr::with_exposed_provenance::<u8>(addr as usize);
        // SAFETY: `check` proved [addr, addr+len) lies in a region borrowed
        // for 'a (or in the VM's stack), and no other reference to it is live
        // while the program or a helper runs.
        Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
    }

    /// Checked mutable view of program memory for helpers.
    pub fn write(&mut self, addr: u64, len: usize) -> Result<&mut [u8], MemFault> {
        self.tally(Access::Write, len);
        if len == 0 {
            return Ok(&mut []);
        }
        self.check(addr, len as u64, Access::Write)?;
        self.write_unchecked_kind(addr, len)
    }

    /// Like [`Memory::write`], but also into regions only helpers may write
    /// (a context's fields).
    pub fn helper_write(&mut self, addr: u64, len: usize) -> Result<&mut [u8], MemFault> {
        self.tally(Access::Write, len);
        if len == 0 {
            return Ok(&mut []);
        }
        let ok = self.stack.contains(addr, len as u64)
            || self
                .regions
                .iter()
                .any(|r| r.helper_writable && r.contains(addr, len as u64));
        if !ok {
            return Err(self.fault(addr, len as u64, Access::Write));
        }
        self.write_unchecked_kind(addr, len)
    }

    fn write_unchecked_kind(&mut self, addr: u64, len: usize) -> Result<&mut [u8], MemFault> {
        let ptr = std::ptr::with_exposed_provenance_mut::<u8>(addr as usize);
        // SAFETY: the callers checked that the bytes lie in a region mapped
        // from a mutable borrow (or raw, under `add_raw`'s contract, or the
        // VM's stack); `&mut self` prevents a second view through this table.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr, len) })
    }
}

// The region table's pointer handling, small enough for Miri
// (`./dev.sh sanitize` runs `cargo miri test -p vm --lib`): every access
// goes from an address back to a pointer through exposed provenance, as
// programs' registers hold host addresses.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_read_and_write_buffers_through_their_addresses() {
        let mut ctx = [0u8; 16];
        let packet = [7u8; 8];
        {
            let mut mem = Memory::new();
            let c = mem.add(RegionKind::Context, &mut ctx);
            let p = mem.add_readonly(RegionKind::Packet, &packet);
            mem.write(c + 4, 4).unwrap().copy_from_slice(&[1, 2, 3, 4]);
            assert_eq!(mem.read(c + 3, 6).unwrap(), [0, 1, 2, 3, 4, 0]);
            assert_eq!(mem.read(p, 8).unwrap(), [7; 8]);
            assert_eq!(mem.packet().unwrap().start, p);
            let t = mem.helper_tally();
            assert_eq!(
                (t.reads, t.read_bytes, t.writes, t.write_bytes),
                (2, 14, 1, 4)
            );
        }
        assert_eq!(ctx[4..8], [1, 2, 3, 4]);
    }

    #[test]
    fn accesses_outside_or_across_regions_fault() {
        // Two regions side by side in one buffer: an access across both
        // lies in neither.
        let mut buf = [0u8; 16];
        let (a, b) = buf.split_at_mut(8);
        let mut mem = Memory::new();
        let pa = mem.add(RegionKind::Context, a);
        let pb = mem.add_readonly(RegionKind::Map, b);
        assert_eq!(pb, pa + 8);
        assert!(mem.read(pa + 5, 4).is_err(), "across two regions");
        assert!(mem.read(pb + 5, 4).is_err(), "runs off the end");
        assert!(mem.read(pa.wrapping_sub(1), 1).is_err(), "before the start");
        assert!(mem.read(u64::MAX, 2).is_err(), "wraps around");
        let f = mem.write(pb, 1).unwrap_err();
        assert!(
            f.read_only && f.region.unwrap().kind == RegionKind::Map,
            "{f}"
        );
        assert!(mem.helper_write(pb, 1).is_err());
        assert_eq!(mem.read(pb + 7, 1).unwrap(), [0]);
    }

    #[test]
    fn protected_regions_are_written_by_helpers_only() {
        let mut ctx = [0u8; 8];
        {
            let mut mem = Memory::new();
            let c = mem.add_protected(RegionKind::Context, &mut ctx);
            assert!(mem.write(c, 4).unwrap_err().read_only);
            mem.helper_write(c, 4).unwrap().fill(9);
        }
        assert_eq!(ctx, [9, 9, 9, 9, 0, 0, 0, 0]);
    }

    #[test]
    fn windows_move_inside_their_buffer() {
        let mut buf = [0u8; 32];
        let base = buf.as_ptr().expose_provenance() as u64;
        let mut mem = Memory::new();
        let i = mem.add_window(RegionKind::Packet, &mut buf, 8..16, true);
        assert!(mem.read(base + 7, 1).is_err());
        mem.write(base + 8, 8).unwrap().fill(1);
        assert!(mem.read(base + 16, 1).is_err());
        mem.set_window(i, base, 32);
        mem.write(base + 24, 8).unwrap().fill(2);
        assert_eq!(mem.read(base + 4, 8).unwrap(), [0, 0, 0, 0, 1, 1, 1, 1]);
        let moved = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            mem.set_window(i, base + 8, 32)
        }));
        assert!(moved.is_err(), "a window stays inside its buffer");
    }

    /// Memory mapped by address, as map values are (an arena the maps
    /// crate owns): a program stores and loads through it, and the owner
    /// sees the bytes.
    #[test]
    fn programs_use_raw_regions_by_address() {
        let values: *mut [u64; 4] = Box::into_raw(Box::new([0u64; 4]));
        let addr = values.expose_provenance() as u64;
        let prog = isa::assemble(
            "stdw [%r1+8], 5\nldxdw %r0, [%r1+8]\nadd %r0, 1\nstxdw [%r1+24], %r0\nexit",
        )
        .unwrap();
        let mut helpers = crate::HelperTable::new();
        crate::register_basic(&mut helpers);
        let mut vm = crate::Vm::new(crate::Program::new(prog).unwrap(), &helpers).unwrap();
        let mut mem = Memory::new();
        // SAFETY: the box lives until after the run, and nothing else
        // refers to it meanwhile.
        unsafe { mem.add_raw(RegionKind::Map, addr, 32, true) };
        let r = vm
            .run(&mut crate::SimEnv::default(), &mut mem, [addr, 0, 0, 0, 0])
            .unwrap();
        assert_eq!(r.r0, 6);
        assert!(mem.read(addr + 32, 1).is_err());
        drop(mem);
        // SAFETY: made by `Box::into_raw` above; the run is over.
        let values = unsafe { Box::from_raw(values) };
        assert_eq!(*values, [0, 5, 0, 6]);
    }
}
