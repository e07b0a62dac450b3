//! [`TableError`]: why a table was not made or not written; its messages
//! name the file and what to do, as `sluice` prints them after `sluice: `.

use std::path::PathBuf;

/// An error making or writing a table.
#[derive(Debug, thiserror::Error)]
pub enum TableError {
    /// The file's name says no format this writes.
    #[error(
        "{path}: which table format? end the name in .parquet, .arrow, .feather, .ipc or .csv",
        path = path.display()
    )]
    Format { path: PathBuf },
    /// The file was not created or written.
    #[error("{path}: {source}", path = path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Arrow refused the columns (building a batch, or writing IPC or CSV).
    #[error("{0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The Parquet writer failed.
    #[error("{0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// Writing failed, in the file `path`.
    #[error("{path}: {source}", path = path.display())]
    Write {
        path: PathBuf,
        source: Box<TableError>,
    },
}
