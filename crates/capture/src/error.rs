//! Errors of captures read or written, naming the file and the cause.

use std::path::{Path, PathBuf};

/// A capture that cannot be read or written, with where: `writing o.pcap:
/// No space left on device (...)`, `in.pcap, packet 7: truncated record`.
#[derive(Clone, Debug, thiserror::Error)]
#[error(
    "{}{}{}: {reason}",
    op.map(|o| format!("{o} ")).unwrap_or_default(),
    path.display(),
    packet.map(|p| format!(", packet {p}")).unwrap_or_default()
)]
pub struct IoError {
    pub path: PathBuf,
    /// 1-based index of the packet at fault.
    pub packet: Option<usize>,
    pub reason: String,
    /// What was being done to the file (`writing`, `creating`, `opening`),
    /// when the reason alone does not say.
    pub op: Option<&'static str>,
}

impl IoError {
    /// An error of `op` on the file `path` as a whole.
    pub(crate) fn op(op: &'static str, path: &Path, reason: String) -> IoError {
        IoError {
            path: path.to_path_buf(),
            packet: None,
            reason,
            op: Some(op),
        }
    }

    /// An error reading the file `path`, before or between packets.
    pub(crate) fn reading(path: &Path, reason: String) -> IoError {
        IoError {
            path: path.to_path_buf(),
            packet: None,
            reason,
            op: None,
        }
    }
}

/// The system's words for an I/O error, without Rust's `(os error N)`.
pub(crate) fn cause(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" (os error ") {
        Some(i) if text.ends_with(')') => text[..i].to_string(),
        _ => text,
    }
}
