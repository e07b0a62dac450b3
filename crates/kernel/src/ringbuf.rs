//! Reading a `BPF_MAP_TYPE_RINGBUF` map from user space (libbpf's
//! `ring_buffer` consumer): records come out whole, in the order the
//! programs submitted them.

use std::os::fd::RawFd;

use crate::error::{Error, ErrorKind, Result};

/// A consumer of one ring buffer map.
pub struct RingReader {
    rb: *mut libbpf_sys::ring_buffer,
    /// Where the callback puts records; boxed so that its address, which
    /// libbpf holds, stays put when the reader moves.
    #[allow(clippy::box_collection)]
    records: Box<Vec<Vec<u8>>>,
}

// SAFETY: the consumer is used by one thread at a time (`&mut self`).
unsafe impl Send for RingReader {}

unsafe extern "C" fn keep(
    ctx: *mut std::ffi::c_void,
    data: *mut std::ffi::c_void,
    size: u64,
) -> i32 {
    // SAFETY: `ctx` is the `Vec` boxed in the reader, alive while libbpf
    // calls back (only inside `poll`); `data` holds `size` bytes.
    unsafe {
        let records = &mut *ctx.cast::<Vec<Vec<u8>>>();
        records.push(std::slice::from_raw_parts(data.cast::<u8>(), size as usize).to_vec());
    }
    0
}

impl RingReader {
    /// A reader of the ring buffer map `map_fd` (which must outlive it).
    pub fn new(map_fd: RawFd) -> Result<RingReader> {
        let mut records: Box<Vec<Vec<u8>>> = Box::default();
        let ctx = (&mut *records as *mut Vec<Vec<u8>>).cast();
        // SAFETY: a valid callback and context; null options are allowed.
        let rb = unsafe { libbpf_sys::ring_buffer__new(map_fd, Some(keep), ctx, std::ptr::null()) };
        if rb.is_null() {
            return Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "reading ring buffer map fd {map_fd}: {}",
                    std::io::Error::last_os_error()
                ),
            ));
        }
        Ok(RingReader { rb, records })
    }

    /// The records submitted since the last call, waiting up to
    /// `timeout_ms` for the first.
    pub fn poll(&mut self, timeout_ms: i32) -> Result<Vec<Vec<u8>>> {
        // SAFETY: our consumer; the callback writes into `records`.
        let n = unsafe { libbpf_sys::ring_buffer__poll(self.rb, timeout_ms) };
        if n < 0 && -n != libc::EINTR {
            return Err(Error::errno("polling a ring buffer", -n));
        }
        Ok(std::mem::take(&mut *self.records))
    }
}

impl Drop for RingReader {
    fn drop(&mut self) {
        // SAFETY: our consumer, freed once.
        unsafe { libbpf_sys::ring_buffer__free(self.rb) };
    }
}
