//! What the live runners share: the clocks that turn the kernel's
//! monotonic time into wall-clock time. (Their programs are attached
//! through bpf links of the process, `kernel::xdp_link`, detached however
//! a run ends.)

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
