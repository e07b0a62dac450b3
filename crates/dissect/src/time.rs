//! The timestamp at the start of a line (tcpdump's `ts_format`): the
//! time of day in UTC, seconds since the epoch (`-tt`), none (`-t`) or the
//! time since the previous packet (`-ttt`), all to the microsecond
//! (nanosecond captures are truncated, as libpcap does for tcpdump).

use crate::TimeFormat;

/// The timestamp followed by a space, or nothing for `-t`.
pub(crate) fn format(form: TimeFormat, ts_ns: u64, prev_ts_ns: Option<u64>) -> String {
    let us = ts_ns / 1000;
    match form {
        TimeFormat::None => String::new(),
        TimeFormat::Default => hms(us % 86_400_000_000),
        TimeFormat::Epoch => format!("{}.{:06} ", us / 1_000_000, us % 1_000_000),
        TimeFormat::Delta => {
            // tcpdump takes a zero time as "no previous packet", signs a
            // step back in time, and prints the delta as a time of day.
            let prev = prev_ts_ns
                .map(|p| p / 1000)
                .filter(|&p| p != 0)
                .unwrap_or(us);
            let sign = if us < prev { '-' } else { ' ' };
            format!("{sign}{}", hms(us.abs_diff(prev) % 86_400_000_000))
        }
    }
}

fn hms(us: u64) -> String {
    let secs = us / 1_000_000;
    format!(
        "{:02}:{:02}:{:02}.{:06} ",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        us % 1_000_000
    )
}
