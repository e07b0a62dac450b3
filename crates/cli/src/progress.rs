//! A progress bar on long work that does not slow the work: the loop only
//! stores a count in an atomic; a ticker thread draws the bar.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Runs `work` with a counter it advances; while it runs, a bar on stderr
/// (when stderr is a terminal and `quiet` is false) shows the count against
/// `total` when known.
pub fn with_progress<T: Send>(
    total: Option<u64>,
    quiet: bool,
    work: impl FnOnce(&AtomicU64) -> T + Send,
) -> T {
    let count = AtomicU64::new(0);
    if quiet || !std::io::stderr().is_terminal() {
        return work(&count);
    }
    let bar = match total {
        Some(n) => ProgressBar::new(n).with_style(
            ProgressStyle::with_template(
                "{spinner} {bar:40} {pos}/{len} packets  {per_sec}  eta {eta}",
            )
            .expect("template"),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {pos} packets  {per_sec}").expect("template"),
        ),
    };
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                bar.set_position(count.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let out = work(&count);
        done.store(true, Ordering::Relaxed);
        out
    });
    bar.finish_and_clear();
    out
}
