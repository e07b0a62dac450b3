//! Whole files read into memory (objects, bytecode, flows files, route
//! tables, tc configurations), never more than a limit suited to their
//! format: a regular file larger than the limit is refused before a byte is
//! read, a FIFO, a pipe or standard input (`-`) is read up to the limit and
//! refused past it, and a device (`/dev/zero`), a socket or a directory is
//! refused by name. `SLUICE_MAX_FILE_SIZE` (bytes, or with a K, M or G
//! suffix) replaces every limit. Given a stop flag, the reader looks at it
//! between reads and while a FIFO waits for a writer, and fails once it is
//! set.

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::cause;
use crate::input::{Opened, display_name, is_stdin, open_stream_aware, wait_readable};

/// The environment variable that replaces every [`Limit`].
pub const LIMIT_VAR: &str = "SLUICE_MAX_FILE_SIZE";

/// The largest file of one format read whole, and the format's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    pub bytes: u64,
    /// What the file holds, for errors: `an ELF object or bytecode`.
    pub what: &'static str,
}

impl Limit {
    /// ELF objects and raw bytecode (and BTF): the largest real BPF objects
    /// are a few MiB (a kernel's BTF about 6 MiB).
    pub const OBJECT: Limit = Limit {
        bytes: 256 << 20,
        what: "an ELF object or bytecode",
    };
    /// Text tables (OpenFlow flows, route tables, tc configurations and
    /// batches, FIB files, assembly): a full BGP table in `ip route` form
    /// is about 80 MiB, a million OpenFlow flows about 100 MiB.
    pub const TEXT: Limit = Limit {
        bytes: 256 << 20,
        what: "a text file",
    };
}

/// A file not read whole: which, and why.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {reason}", path = path.display())]
pub struct WholeFileError {
    pub path: PathBuf,
    pub reason: WholeFileReason,
}

/// Why a file was not read whole.
#[derive(Debug, thiserror::Error)]
pub enum WholeFileReason {
    #[error("{cause}")]
    Io {
        cause: String,
        kind: std::io::ErrorKind,
    },
    #[error("a {kind}, not a file (give a regular file, a FIFO or - for standard input)")]
    Special { kind: &'static str },
    #[error(
        "{size}larger than {limit} bytes ({mib} MiB), the limit for {what} (set {LIMIT_VAR}=BYTES to change it)",
        size = size.map(|s| format!("{s} bytes, ")).unwrap_or_default(),
        mib = limit >> 20
    )]
    TooLarge {
        /// The file's size, when known before reading (a regular file).
        size: Option<u64>,
        limit: u64,
        what: &'static str,
    },
    #[error("reading stopped by a signal")]
    Stopped,
    #[error("not UTF-8 text (byte {at})")]
    NotText { at: usize },
    #[error("{LIMIT_VAR}={value}: not a size (bytes, or a number with K, M or G)")]
    BadLimit { value: String },
}

impl WholeFileError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(&self.reason, WholeFileReason::Io { kind, .. } if *kind == std::io::ErrorKind::NotFound)
    }
}

/// The limit in force for `limit`'s format: `SLUICE_MAX_FILE_SIZE` when
/// set, else the format's own.
pub fn effective_limit(limit: Limit) -> Result<Limit, WholeFileReason> {
    match std::env::var(LIMIT_VAR) {
        Ok(v) => Ok(Limit {
            bytes: parse_size(&v).ok_or(WholeFileReason::BadLimit { value: v })?,
            what: limit.what,
        }),
        Err(_) => Ok(limit),
    }
}

/// `123`, `64K`, `256M`, `1G` (binary multiples).
pub(crate) fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (digits, shift) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 10),
        (i, 'm' | 'M') => (&s[..i], 20),
        (i, 'g' | 'G') => (&s[..i], 30),
        _ => (s, 0),
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// The bytes of `path` (`-`: standard input), at most `limit` of them.
pub fn read(
    path: &Path,
    limit: Limit,
    stop: Option<&'static AtomicBool>,
) -> Result<Vec<u8>, WholeFileError> {
    read_reason(path, limit, stop).map_err(|reason| WholeFileError {
        path: display_name(path),
        reason,
    })
}

/// [`read`], as UTF-8 text.
pub fn read_text(
    path: &Path,
    limit: Limit,
    stop: Option<&'static AtomicBool>,
) -> Result<String, WholeFileError> {
    let bytes = read(path, limit, stop)?;
    String::from_utf8(bytes).map_err(|e| WholeFileError {
        path: display_name(path),
        reason: WholeFileReason::NotText {
            at: e.utf8_error().valid_up_to(),
        },
    })
}

fn read_reason(
    path: &Path,
    limit: Limit,
    stop: Option<&'static AtomicBool>,
) -> Result<Vec<u8>, WholeFileReason> {
    let limit = effective_limit(limit)?;
    let io = |e: std::io::Error| WholeFileReason::Io {
        cause: cause(&e),
        kind: e.kind(),
    };
    if !is_stdin(path) {
        let meta = std::fs::metadata(path).map_err(io)?;
        refuse_special(&meta.file_type())?;
        if meta.is_file() && meta.len() > limit.bytes {
            return Err(too_large(Some(meta.len()), limit));
        }
    }
    let opened = open_stream_aware(path, stop).map_err(io)?;
    refuse_special(&opened.file.metadata().map_err(io)?.file_type())?;
    read_bounded(&opened, limit, stop).map_err(|e| match e {
        Bounded::Io(e) => io(e),
        Bounded::TooLarge => too_large(None, limit),
        Bounded::Stopped => WholeFileReason::Stopped,
    })
}

fn too_large(size: Option<u64>, limit: Limit) -> WholeFileReason {
    WholeFileReason::TooLarge {
        size,
        limit: limit.bytes,
        what: limit.what,
    }
}

/// Devices, sockets and directories are not read whole.
fn refuse_special(t: &std::fs::FileType) -> Result<(), WholeFileReason> {
    let kind = if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else if t.is_dir() {
        "directory"
    } else {
        return Ok(());
    };
    Err(WholeFileReason::Special { kind })
}

enum Bounded {
    Io(std::io::Error),
    TooLarge,
    Stopped,
}

/// Reads to the end, in pieces of 1 MiB, failing past `limit` bytes or
/// once `stop` is set (a stream is polled for it while its writer is
/// silent).
fn read_bounded(
    opened: &Opened,
    limit: Limit,
    stop: Option<&'static AtomicBool>,
) -> Result<Vec<u8>, Bounded> {
    const PIECE: usize = 1 << 20;
    let mut out = Vec::new();
    // One byte past the limit tells a file of exactly the limit from a
    // larger one.
    let mut rest = (&opened.file).take(limit.bytes.saturating_add(1));
    loop {
        let go_on = match stop {
            Some(stop) if opened.stream => {
                wait_readable(&opened.file, stop).map_err(Bounded::Io)?
            }
            Some(stop) => !stop.load(Ordering::Relaxed),
            None => true,
        };
        if !go_on {
            return Err(Bounded::Stopped);
        }
        let start = out.len();
        out.resize(start + PIECE, 0);
        match rest.read(&mut out[start..]) {
            Ok(0) => {
                out.truncate(start);
                break;
            }
            Ok(n) => out.truncate(start + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => out.truncate(start),
            Err(e) => return Err(Bounded::Io(e)),
        }
        if out.len() as u64 > limit.bytes {
            return Err(Bounded::TooLarge);
        }
    }
    out.shrink_to_fit();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("123"), Some(123));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("256m"), Some(256 << 20));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999G"), None);
    }

    #[test]
    fn a_file_over_the_limit_is_refused_before_reading_and_one_at_it_is_read() {
        let dir = std::env::temp_dir().join(format!("io-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("ten");
        std::fs::write(&f, [7u8; 10]).unwrap();
        let ten = Limit {
            bytes: 10,
            what: "a test file",
        };
        assert_eq!(read(&f, ten, None).unwrap(), vec![7u8; 10]);
        let nine = Limit { bytes: 9, ..ten };
        let e = read(&f, nine, None).unwrap_err().to_string();
        assert!(e.contains("10 bytes, larger than 9 bytes"), "{e}");
        assert!(e.contains("the limit for a test file"), "{e}");
        assert!(e.contains(LIMIT_VAR), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn devices_and_directories_are_refused_by_name() {
        let e = read(Path::new("/dev/zero"), Limit::OBJECT, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero: a character device, not a file (give a regular file, a FIFO or - for standard input)"
        );
        let e = read_text(Path::new("/"), Limit::TEXT, None).unwrap_err();
        assert!(e.to_string().starts_with("/: a directory"), "{e}");
    }
}
