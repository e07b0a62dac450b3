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

    /// The error whose text (`Display`) is `text`, of the file `path`:
    /// read back from a boundary sent between processes. The operation
    /// and the packet number are parsed out of the form this type
    /// writes; a text of another form is the reason whole.
    pub fn from_text(path: &Path, text: &str) -> IoError {
        const OPS: [&str; 3] = ["opening", "creating", "writing"];
        let shown = path.display().to_string();
        let mut op = None;
        let mut rest = text;
        for o in OPS {
            if let Some(r) = rest.strip_prefix(o).and_then(|r| r.strip_prefix(' '))
                && r.starts_with(&shown)
            {
                op = Some(o);
                rest = r;
            }
        }
        let whole = || IoError {
            path: path.to_path_buf(),
            packet: None,
            reason: text.to_string(),
            op: None,
        };
        let Some(rest) = rest.strip_prefix(&shown) else {
            return whole();
        };
        let (packet, rest) = match rest.strip_prefix(", packet ") {
            Some(r) => {
                let digits = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
                match r[..digits].parse::<usize>() {
                    Ok(n) => (Some(n), &r[digits..]),
                    Err(_) => return whole(),
                }
            }
            None => (None, rest),
        };
        match rest.strip_prefix(": ") {
            Some(reason) => IoError {
                path: path.to_path_buf(),
                packet,
                reason: reason.to_string(),
                op,
            },
            None => whole(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_reads_back() {
        let path = Path::new("/tmp/a b/x.pcap");
        let errors = [
            IoError {
                path: path.into(),
                packet: Some(17),
                reason: "truncated record: 12 of 60 bytes".into(),
                op: None,
            },
            IoError::reading(path, "no header: file: too short".into()),
            IoError::op("opening", path, "No such file or directory".into()),
        ];
        for e in errors {
            let back = IoError::from_text(path, &e.to_string());
            assert_eq!(back.to_string(), e.to_string());
            assert_eq!(
                (back.packet, back.op, &back.reason),
                (e.packet, e.op, &e.reason)
            );
        }
        // Another form: the text is the reason.
        let other = IoError::from_text(path, "something else");
        assert_eq!(other.reason, "something else");
        assert_eq!(other.packet, None);
    }
}
