//! Errors of the kernel backend, phrased for the person at the terminal:
//! each names what failed and, for the common causes, what to do.

use std::fmt;

/// What went wrong, coarsely, so callers can react (tests skip on
/// `Permission`, the CLI offers `--mode skb` on `NotSupported`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not root, or CAP_BPF / CAP_NET_ADMIN missing.
    Permission,
    /// No such interface, program, map or pinned path.
    NotFound,
    /// The kernel or driver cannot do this (e.g. native XDP on the device).
    NotSupported,
    /// Something is already there (a program attached to the interface).
    Busy,
    /// The kernel verifier rejected a program; the message carries its log.
    Verifier,
    /// Bad input from the user (a malformed object, a wrong key size).
    Invalid,
    /// Anything else the kernel answered.
    Other,
}

#[derive(Debug, thiserror::Error)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }

    /// An error from a failed system call: `what` is what we tried to do.
    pub fn errno(what: &str, errno: i32) -> Error {
        let text = std::io::Error::from_raw_os_error(errno);
        let (kind, hint) = match errno {
            libc::EPERM | libc::EACCES => (
                ErrorKind::Permission,
                " (run as root, or grant CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)",
            ),
            libc::ENOENT | libc::ENODEV | libc::ENXIO => (ErrorKind::NotFound, ""),
            libc::EOPNOTSUPP | 524 => (ErrorKind::NotSupported, ""),
            libc::EBUSY | libc::EEXIST => (ErrorKind::Busy, ""),
            libc::EINVAL | libc::E2BIG => (ErrorKind::Invalid, ""),
            _ => (ErrorKind::Other, ""),
        };
        // ENOTSUPP (524) is kernel-internal and has no libc text.
        let text = if errno == 524 {
            "operation not supported by the kernel (ENOTSUPP)".to_string()
        } else {
            text.to_string()
        };
        Error::new(kind, format!("{what}: {text}{hint}"))
    }

    /// From libbpf-rs, keeping the errno's meaning.
    pub fn libbpf(what: &str, e: &libbpf_rs::Error) -> Error {
        match errno_of(e) {
            Some(n) => Error::errno(what, n),
            None => Error::new(ErrorKind::Other, format!("{what}: {e}")),
        }
    }
}

/// The positive errno behind a libbpf-rs error, when it has one: the
/// capture::Error at the end of its chain, else its kind.
fn errno_of(e: &libbpf_rs::Error) -> Option<i32> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(n) = err
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(n.abs());
        }
        cur = err.source();
    }
    use libbpf_rs::ErrorKind as K;
    Some(match e.kind() {
        K::NotFound => libc::ENOENT,
        K::PermissionDenied => libc::EPERM,
        K::AlreadyExists => libc::EEXIST,
        K::InvalidInput => libc::EINVAL,
        K::Unsupported => libc::EOPNOTSUPP,
        K::TooBig => libc::E2BIG,
        _ => return None,
    })
}

/// Turns a libbpf-style return (negative errno on failure) into a Result.
pub fn check(what: &str, ret: i32) -> Result<i32> {
    if ret < 0 {
        Err(Error::errno(what, -ret))
    } else {
        Ok(ret)
    }
}

/// Whether this process may use the kernel backend at all (effective
/// root, or CAP_BPF + CAP_NET_ADMIN), for tests that skip loudly.
pub fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_NET_ADMIN: u64 = 12;
    const CAP_BPF: u64 = 39;
    eff & (1 << CAP_NET_ADMIN) != 0 && eff & (1 << CAP_BPF) != 0
}

/// A NUL-terminated name from a kernel info struct.
pub fn c_name(raw: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
