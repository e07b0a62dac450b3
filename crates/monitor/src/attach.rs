//! What the live runners share: the program detached however a run ends,
//! and the clocks that turn the kernel's monotonic time into wall-clock
//! time.

/// Detaches the XDP program from the interface when dropped.
pub(crate) struct Attached<'a>(pub &'a str);

impl Drop for Attached<'_> {
    fn drop(&mut self) {
        let _ = kernel::attach::xdp_detach(self.0);
    }
}

/// Nanoseconds on clock `id`.
pub(crate) fn clock(id: libc::clockid_t) -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a writable timespec.
    unsafe { libc::clock_gettime(id, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}
