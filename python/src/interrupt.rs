//! Ctrl-C during a run: [`run`] does the work on a thread of its own with
//! the GIL released, while the calling thread wakes every 50 ms to let
//! Python run its signal handlers (`py.check_signals()`). A handler that
//! raises (SIGINT's default raises `KeyboardInterrupt`) sets the engine's
//! stop flag: the run ends after the packets it read, its outputs
//! finished, and the caller gets its result with the exception, to raise
//! with the partial result attached ([`errors::finish`](crate::errors::finish)).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use pyo3::prelude::*;

/// How often the waiting thread looks at Python's signals.
const POLL: Duration = Duration::from_millis(50);

/// Stop flags no run holds: the engine takes `&'static` flags, so each
/// is made once and reused, never freed.
static FREE: Mutex<Vec<&'static AtomicBool>> = Mutex::new(Vec::new());

/// A stop flag held for one run, given back (cleared) after it.
struct Flag(&'static AtomicBool);

impl Flag {
    fn take() -> Flag {
        let free = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let flag = free.unwrap_or_else(|| Box::leak(Box::new(AtomicBool::new(false))));
        flag.store(false, Ordering::Relaxed);
        Flag(flag)
    }
}

impl Drop for Flag {
    fn drop(&mut self) {
        FREE.lock().unwrap_or_else(|e| e.into_inner()).push(self.0);
    }
}

/// Runs `work` (given the stop flag) on a worker thread, the GIL released,
/// and returns what it gave, with the exception a signal handler raised
/// while it ran (`None`: not interrupted). A panic in `work` is resumed
/// here (PyO3 makes it a `PanicException`).
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    work: impl FnOnce(&'static AtomicBool) -> T + Send,
) -> (T, Option<PyErr>) {
    let flag = Flag::take();
    let stop = flag.0;
    py.detach(|| {
        std::thread::scope(|s| {
            let (done, finished) = channel::<()>();
            let worker = std::thread::Builder::new()
                .name("sluice-run".into())
                .spawn_scoped(s, move || {
                    let out = work(stop);
                    let _ = done.send(());
                    out
                })
                .expect("a thread for the run");
            let mut interrupt = None;
            loop {
                match finished.recv_timeout(POLL) {
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    Err(RecvTimeoutError::Timeout) if interrupt.is_none() => {
                        if let Err(e) = Python::attach(|py| py.check_signals()) {
                            stop.store(true, Ordering::Relaxed);
                            interrupt = Some(e);
                        }
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                }
            }
            let out = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (out, interrupt)
        })
    })
}
