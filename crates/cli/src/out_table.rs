//! `--out-table FILE` (`sluice run`, `sluice monitor flows|rtt|sample`,
//! `sluice profile`): the command's records as a table file, in the
//! format the name says (the tables crate: Parquet, Arrow IPC, CSV).

use std::path::Path;

use tables::{RecordBatch, TableError};

/// Refuses, before the run, a name that says no format.
pub(crate) fn check(path: Option<&Path>) -> Result<(), String> {
    match path {
        Some(p) => tables::Format::of(p)
            .map(|_| ())
            .map_err(|e| format!("--out-table {e}")),
        None => Ok(()),
    }
}

/// Writes the table `batch` made to `path`.
pub(crate) fn write(path: &Path, batch: Result<RecordBatch, TableError>) -> Result<(), String> {
    batch
        .and_then(|b| tables::write(path, &b))
        .map(|_| ())
        .map_err(|e| format!("--out-table {e}"))
}
