//! [`PacketTable`]: a run's packets, one row each, in columns ready to be
//! handed on without a pass per row (the Python package makes them an
//! Arrow table): the pipeline's [`PacketLog`] with verdicts and redirect
//! targets named as the report names them.

use pipeline::PacketLog;
use runtime::{Hook, Redirect, Verdict};

use crate::report::redirect_name;

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
}
