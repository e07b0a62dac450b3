//! What the xPF applications share with user space, word by word: an
//! address of either family in four words (IPv4 in the first, the rest
//! 0), reads and writes of the active block of persistent memory, and
//! the log: a word counting the records pending, the records at the log's
//! place; user space takes them after each packet and writes 0 back.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::MonitorError;
use xpf::XpfRunner;

/// The address of `family` (4 or 6) in the four words at `w[at..]`.
pub(crate) fn address(family: u32, w: &[u32], at: usize) -> Result<IpAddr, MonitorError> {
    Ok(match family {
        4 => IpAddr::V4(Ipv4Addr::from(w[at])),
        6 => IpAddr::V6(Ipv6Addr::from(
            (u128::from(w[at]) << 96)
                | (u128::from(w[at + 1]) << 64)
                | (u128::from(w[at + 2]) << 32)
                | u128::from(w[at + 3]),
        )),
        f => {
            return Err(MonitorError::record(format!(
                "an address of family {f} in xPF memory"
            )));
        }
    })
}

/// `n` words at `at` of the runner's active block.
pub(crate) fn read(runner: &mut XpfRunner, at: u32, n: usize) -> Result<Vec<u32>, MonitorError> {
    let m = runner.memory();
    Ok(m.mread(m.active(), at, n)?)
}

/// Writes `words` at `at` of the runner's active block.
pub(crate) fn write(runner: &mut XpfRunner, at: u32, words: &[u32]) -> Result<(), MonitorError> {
    let m = runner.memory();
    Ok(m.mwrite(m.active(), at, words)?)
}

/// The log's pending records (at most `capacity`, each `words` long) as
/// one run of words, the pending count set back to 0.
pub(crate) fn take_log(
    runner: &mut XpfRunner,
    pending_at: u32,
    log_at: u32,
    capacity: u32,
    words: u32,
) -> Result<Vec<u32>, MonitorError> {
    let pending = read(runner, pending_at, 1)?[0];
    if pending == 0 {
        return Ok(Vec::new());
    }
    let records = read(runner, log_at, (pending.min(capacity) * words) as usize)?;
    write(runner, pending_at, &[0])?;
    Ok(records)
}
