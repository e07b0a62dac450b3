//! What can go wrong exporting and decoding.

use std::io;
use std::path::PathBuf;

/// An export that did not happen, and why.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The collector could not be resolved, reached or written to.
    #[error("IPFIX collector {collector}: {op}: {source}")]
    Collector {
        collector: String,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// The export file could not be created or written.
    #[error("IPFIX file {}: {op}: {source}", path.display())]
    File {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
    },
    /// Writing the export file failed (a full disk): the file was cut
    /// back to its last whole message and nothing more was written.
    #[error(
        "IPFIX file {}: {op}: {source}: {written} flows written in whole messages, {lost} lost (the file ends at its last whole message)",
        path.display()
    )]
    FileCut {
        path: PathBuf,
        op: &'static str,
        #[source]
        source: io::Error,
        written: u64,
        lost: u64,
    },
    /// A record that cannot be exported (nothing of the batch was sent).
    #[error("flow record {index} cannot be exported: {reason}")]
    InvalidFlow { index: usize, reason: &'static str },
    /// A message size the encoder cannot work with.
    #[error("maximum IPFIX message size {size} is out of range {min}..={max}")]
    MessageSize { size: usize, min: usize, max: usize },
    /// The clock is before 1970 or past 2106 (IPFIX's export time is
    /// 32-bit seconds).
    #[error("export time out of IPFIX's range (1970..2106): the system clock reads {0:?}")]
    Time(std::time::SystemTime),
}

/// A message the decoder refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Bytes that are not a well-formed IPFIX message.
    #[error("malformed IPFIX message at byte {offset}: {reason}")]
    Malformed { offset: usize, reason: String },
    /// A version number other than 10.
    #[error("not an IPFIX message: version {0} (IPFIX is 10)")]
    Version(u16),
    /// A data set whose template was never announced.
    #[error(
        "data set for template {template} of observation domain {domain}, which was never announced"
    )]
    UnknownTemplate { domain: u32, template: u16 },
    /// A record the decoder cannot turn into a [`crate::Flow`].
    #[error("record {record} of template {template}: {reason}")]
    Record {
        template: u16,
        record: usize,
        reason: String,
    },
}

pub(crate) fn malformed(offset: usize, reason: impl Into<String>) -> DecodeError {
    DecodeError::Malformed {
        offset,
        reason: reason.into(),
    }
}
