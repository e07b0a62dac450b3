//! Packet buffers in the lowest 4 GiB of the address space.
//!
//! `struct xdp_md` and `struct __sk_buff` give programs the packet's
//! addresses as 32-bit fields (`data`, `data_end`, `data_meta`) that the
//! kernel rewrites to 64-bit loads. Placing the packet below 4 GiB lets the
//! real address fit those fields, so the context is a plain struct and
//! programs run unmodified.

/// No room below 4 GiB for a buffer of `len` bytes (rounded to pages).
#[derive(Clone, Copy, PartialEq, Eq, Debug, thiserror::Error)]
#[error("cannot map {len} bytes below 4 GiB for packet buffers")]
pub struct LowBufError {
    pub len: usize,
}

/// An anonymous mapping below 4 GiB, zeroed.
pub struct LowBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: plain memory owned by one hook at a time.
unsafe impl Send for LowBuf {}

impl LowBuf {
    pub fn new(len: usize) -> Result<LowBuf, LowBufError> {
        let len = len.div_ceil(4096) * 4096;
        // SAFETY: anonymous private mapping; the result is checked.
        let map = |addr: *mut libc::c_void, extra: libc::c_int| unsafe {
            libc::mmap(
                addr,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | extra,
                -1,
                0,
            )
        };
        let fits =
            |p: *mut libc::c_void| p != libc::MAP_FAILED && (p as u64) + (len as u64) <= 1 << 32;
        #[cfg(target_arch = "x86_64")]
        {
            let p = map(std::ptr::null_mut(), libc::MAP_32BIT);
            if fits(p) {
                return Ok(LowBuf { ptr: p.cast(), len });
            }
        }
        // Elsewhere (or if MAP_32BIT is exhausted), try hints below 4 GiB.
        let mut hint = 0x1000_0000u64;
        while hint + len as u64 <= 1 << 32 {
            let p = map(hint as *mut libc::c_void, libc::MAP_FIXED_NOREPLACE);
            if fits(p) {
                return Ok(LowBuf { ptr: p.cast(), len });
            }
            if p != libc::MAP_FAILED {
                // SAFETY: the mapping we just made and will not use.
                unsafe { libc::munmap(p, len) };
            }
            hint += 0x1000_0000;
        }
        Err(LowBufError { len })
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: our live mapping of `len` bytes, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: our live mapping of `len` bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The 32-bit address of byte `off`.
    #[inline]
    pub fn addr32(&self, off: usize) -> u32 {
        u32::try_from(self.ptr as u64 + off as u64).expect("mapped below 4 GiB")
    }
}

impl Drop for LowBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
