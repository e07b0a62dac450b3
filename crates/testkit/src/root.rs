//! May this test use the kernel? When it may not, the skip is loud (a
//! `SKIPPED` line on standard error), and under `SLUICE_REQUIRE_KERNEL=1`
//! (CI, where every test must run) it is a failure.

/// Whether `SLUICE_REQUIRE_KERNEL=1` asks every test to run (a skip is a
/// failure then).
pub fn require_kernel() -> bool {
    std::env::var("SLUICE_REQUIRE_KERNEL").as_deref() == Ok("1")
}

/// Whether this test runs as root (namespaces, mounts, other users need
/// it). When not: `SKIPPED WHAT: needs root`, or a failure under
/// `SLUICE_REQUIRE_KERNEL=1`.
pub fn root_available(what: &str) -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("SKIPPED {what}: needs root");
        assert!(
            !require_kernel(),
            "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: not root"
        );
    }
    root
}

/// Whether this test may use the kernel's BPF (root, or CAP_BPF and
/// CAP_NET_ADMIN): the kernel crate's own check (`kernel::privileged`), so
/// that tests and `sluice` agree on what "privileged" is. When not:
/// `SKIPPED WHAT: needs root (or CAP_BPF and CAP_NET_ADMIN)`, or a failure
/// under `SLUICE_REQUIRE_KERNEL=1`.
#[cfg(feature = "kernel")]
pub fn kernel_available(what: &str) -> bool {
    let ok = kernel::privileged();
    if !ok {
        eprintln!("SKIPPED {what}: needs root (or CAP_BPF and CAP_NET_ADMIN)");
        assert!(
            !require_kernel(),
            "SLUICE_REQUIRE_KERNEL=1 but {what} cannot run: not privileged"
        );
    }
    ok
}
