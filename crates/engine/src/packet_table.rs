//! [`PacketTable`]: a run's packets, one row each, in columns ready to be
//! handed on without a pass per row (the Python package makes them an
//! Arrow table): the pipeline's [`PacketLog`] with verdicts, redirect
//! targets and errors named as the report names them.

use std::collections::HashMap;

use pipeline::PacketLog;
use runtime::{Hook, Redirect, Verdict};

use crate::report::{REGIONS, redirect_name};

/// Memory accesses in one kind of region, per row (0 for an error).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RegionColumns {
    /// `stack`, `context`, `packet` or `map` (the keys of the report's
    /// `memory_per_packet`).
    pub region: &'static str,
    pub loads: Vec<u64>,
    pub stores: Vec<u64>,
}

/// Per packet, in the source's order; every column has one entry per row.
/// Verdicts and redirect targets are codes into their name lists
/// (dictionary-encoded), the names those of [`RunReport`](crate::RunReport)'s
/// `verdicts` and `redirects`.
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
    /// Per row, a code into [`PacketTable::redirect_names`]; `None`
    /// without a redirect.
    pub redirect: Vec<Option<u16>>,
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
    /// Per row, a code into [`PacketTable::error_messages`]; `None` for a
    /// packet the program ran to its end.
    pub error: Vec<Option<u32>>,
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
        let mut redirects: Codes<Redirect> = Codes::new();
        let redirect = log
            .redirect
            .iter()
            .map(|r| {
                r.map(|r| {
                    let code = redirects.code(r, || redirect_name(&r, &map_names));
                    u16::try_from(code).unwrap_or(u16::MAX)
                })
            })
            .collect();
        let (error, error_messages) = errors(&log);
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
            redirect,
            redirect_names: redirects.names,
            instructions: log.insns,
            helper_calls: log.helper_calls,
            memory,
            error,
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

    /// Row `i`'s error message, if its run stopped with one.
    pub fn error_of(&self, i: usize) -> Option<&str> {
        self.error[i].map(|c| self.error_messages[c as usize].as_str())
    }
}

/// The error column of `log` (codes per row) and its messages, each once.
fn errors(log: &PacketLog) -> (Vec<Option<u32>>, Vec<String>) {
    let mut column = vec![None; log.len()];
    let mut messages = Vec::new();
    let mut codes: HashMap<&str, u32> = HashMap::new();
    // Both in the source's order: one pass.
    let mut row = 0;
    for (seq, message) in &log.errors {
        while row < log.seq.len() && log.seq[row] < *seq {
            row += 1;
        }
        if row == log.seq.len() {
            break;
        }
        let code = *codes.entry(message).or_insert_with(|| {
            messages.push(message.clone());
            u32::try_from(messages.len() - 1).unwrap_or(u32::MAX)
        });
        column[row] = Some(code);
    }
    (column, messages)
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
                (5, "worse".into()),
                (8, "bad".into()),
                // No such row: ignored.
                (9, "lost".into()),
            ],
            ..PacketLog::default()
        };
        let (column, messages) = errors(&log);
        assert_eq!(column, [None, Some(0), None, Some(1), Some(0)]);
        assert_eq!(messages, ["bad", "worse"]);
    }
}
