//! [`PacketTable`]: a run's packets, one row each, in columns ready to be
//! handed on without a pass per row (the Python package makes them an
//! Arrow table): the pipeline's [`PacketLog`] with verdicts, redirect
//! targets and errors named as the report names them.

use std::collections::HashMap;

use pipeline::PacketLog;
use runtime::{Hook, Redirect, Verdict};

use crate::names::{REGIONS, redirect_name};

/// Memory accesses in one kind of region, per row (0 for an error).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionColumns {
    /// `stack`, `context`, `packet` or `map` (the keys of the report's
    /// `memory_per_packet`).
    pub region: &'static str,
    pub loads: Vec<u64>,
    pub stores: Vec<u64>,
}

/// Per packet, in the source's order; every column has one entry per row,
/// but for redirects and errors, which few packets have: those list the
/// rows that have one (a column of options would be the table's widest,
/// and its peak memory). Verdicts, redirect targets and errors are codes
/// into their name lists (dictionary-encoded), the names those of
/// [`RunReport`](crate::RunReport)'s `verdicts`, `redirects` and
/// `first_errors`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PacketTable {
    /// The packet's position in the source, from 1.
    pub index: Vec<u64>,
    /// When it was captured (generated, or given), ns since the epoch.
    pub timestamp_ns: Vec<u64>,
    /// Bytes the program saw.
    pub length: Vec<u32>,
    /// Per row, a code into [`PacketTable::verdict_names`].
    pub verdict: Vec<u8>,
    /// `PASS`, `DROP`, ...; `ERROR` for a run that stopped with an error.
    pub verdict_names: Vec<String>,
    /// The rows with a redirect, in order: the row and a code into
    /// [`PacketTable::redirect_names`].
    pub redirects: Vec<(usize, u16)>,
    /// `ifindex 3`, `cpu 1`, ... (as the report's `redirects` keys).
    pub redirect_names: Vec<String>,
    /// Instructions run (0 for an error).
    pub instructions: Vec<u64>,
    /// Helper calls made (0 for an error).
    pub helper_calls: Vec<u64>,
    /// Loads and stores per kind of region, when the hook counted memory
    /// accesses ([`HookSpec::count_memory`](crate::HookSpec)); empty
    /// otherwise.
    pub memory: Vec<RegionColumns>,
    /// The rows whose run stopped with an error, in order: the row and a
    /// code into [`PacketTable::error_messages`].
    pub errors: Vec<(usize, u32)>,
    /// The messages of the errors runs stopped with (as the report's
    /// `first_errors`).
    pub error_messages: Vec<String>,
}

/// Codes for the distinct values of a column (few: a program returns a
/// handful of verdicts), found by a linear scan.
struct Codes<K> {
    keys: Vec<K>,
    names: Vec<String>,
}

impl<K: PartialEq + Copy> Codes<K> {
    fn new() -> Self {
        Codes {
            keys: Vec::new(),
            names: Vec::new(),
        }
    }

    /// `key`'s code; `name` names it the first time it comes.
    fn code(&mut self, key: K, name: impl FnOnce() -> String) -> usize {
        match self.keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                self.keys.push(key);
                self.names.push(name());
                self.keys.len() - 1
            }
        }
    }
}

impl PacketTable {
    /// The table of `log`, recorded by a run of `hook`.
    pub(crate) fn new(log: PacketLog, hook: &Hook) -> PacketTable {
        let map_names: Vec<String> = hook.maps().iter().map(|m| m.name().to_string()).collect();
        let mut verdicts: Codes<Option<Verdict>> = Codes::new();
        let verdict = log
            .verdict
            .iter()
            .map(|v| {
                let name = || v.map_or("ERROR", |v| v.name()).to_string();
                u8::try_from(verdicts.code(*v, name)).unwrap_or(u8::MAX)
            })
            .collect();
        let mut targets: Codes<Redirect> = Codes::new();
        let redirects = rows_of(&log.seq, &log.redirects)
            .map(|(row, r)| {
                let code = targets.code(*r, || redirect_name(r, &map_names));
                (row, u16::try_from(code).unwrap_or(u16::MAX))
            })
            .collect();
        let (errors, error_messages) = errors(&log);
        let memory = if log.counts_memory && log.loads[0].len() == log.len() {
            let [l0, l1, l2, l3] = log.loads;
            let [s0, s1, s2, s3] = log.stores;
            [(l0, s0), (l1, s1), (l2, s2), (l3, s3)]
                .into_iter()
                .zip(REGIONS)
                .map(|((loads, stores), region)| RegionColumns {
                    region,
                    loads,
                    stores,
                })
                .collect()
        } else {
            Vec::new()
        };
        PacketTable {
            index: log.seq,
            timestamp_ns: log.timestamp_ns,
            length: log.length,
            verdict,
            verdict_names: verdicts.names,
            redirects,
            redirect_names: targets.names,
            instructions: log.insns,
            helper_calls: log.helper_calls,
            memory,
            errors,
            error_messages,
        }
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Row `i`'s verdict name.
    pub fn verdict_of(&self, i: usize) -> &str {
        &self.verdict_names[self.verdict[i] as usize]
    }

    /// Row `i`'s redirect target, if the program redirected it.
    pub fn redirect_of(&self, i: usize) -> Option<&str> {
        let at = self.redirects.binary_search_by_key(&i, |r| r.0).ok()?;
        Some(&self.redirect_names[self.redirects[at].1 as usize])
    }

    /// Row `i`'s error message, if its run stopped with one.
    pub fn error_of(&self, i: usize) -> Option<&str> {
        let at = self.errors.binary_search_by_key(&i, |e| e.0).ok()?;
        Some(&self.error_messages[self.errors[at].1 as usize])
    }
}

/// The rows of `sparse`'s entries (keyed by a packet's position in the
/// source, in order, as `seq` is): one pass over both; an entry of no
/// row is left out.
fn rows_of<'a, T>(
    seq: &'a [u64],
    sparse: &'a [(u64, T)],
) -> impl Iterator<Item = (usize, &'a T)> + 'a {
    let mut row = 0;
    sparse.iter().filter_map(move |(at, value)| {
        while row < seq.len() && seq[row] < *at {
            row += 1;
        }
        (row < seq.len() && seq[row] == *at).then_some((row, value))
    })
}

/// The rows with an error (row, code) and the messages, each once.
fn errors(log: &PacketLog) -> (Vec<(usize, u32)>, Vec<String>) {
    let mut messages = Vec::new();
    let mut codes: HashMap<&str, u32> = HashMap::new();
    let rows = rows_of(&log.seq, &log.errors)
        .map(|(row, message)| {
            let code = *codes.entry(message).or_insert_with(|| {
                messages.push(message.clone());
                u32::try_from(messages.len() - 1).unwrap_or(u32::MAX)
            });
            (row, code)
        })
        .collect();
    (rows, messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_land_on_their_rows_each_message_once() {
        let log = PacketLog {
            seq: vec![1, 2, 3, 5, 8],
            errors: vec![
                (2, "bad".into()),
                // No such row (a packet not logged): left out.
                (4, "lost".into()),
                (5, "worse".into()),
                (8, "bad".into()),
                (9, "lost".into()),
            ],
            ..PacketLog::default()
        };
        let (rows, messages) = errors(&log);
        assert_eq!(rows, [(1, 0), (3, 1), (4, 0)]);
        assert_eq!(messages, ["bad", "worse"]);
    }
}
