//! SIGINT and SIGTERM: the first asks the running command to stop cleanly
//! (a replay finishes its outputs and reports), a second ends the process
//! at once, as the signal's default action does.

use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(sig: libc::c_int) {
    if STOP.swap(true, Ordering::Relaxed) {
        // The second: the default action (the process dies by the signal).
        // SAFETY: signal(2) and raise(3) are async-signal-safe.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// The flag [`stop_on_signals`] sets, without installing the handlers:
/// readers look at it, and it stays clear while the signals keep their
/// default action (the process ends at once).
pub fn flag() -> &'static AtomicBool {
    &STOP
}

/// Whether a SIGINT or SIGTERM came since [`stop_on_signals`].
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Installs the handlers (once is enough; again is harmless) and returns
/// the flag the first SIGINT or SIGTERM sets. System calls a signal
/// interrupts are restarted (`SA_RESTART`): code waiting on a descriptor
/// looks at the flag between `poll`s of its own.
pub fn stop_on_signals() -> &'static AtomicBool {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only touches an
        // atomic and async-signal-safe calls.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
    &STOP
}
