//! Network interfaces by name and index (in the caller's namespace): the
//! one lookup of sluice ([`Interface`]); the live sockets of `pipeline`
//! and the attach calls here both use it.

use std::ffi::CString;

use crate::error::{Error, ErrorKind, Result};

/// A network interface of the calling thread's network namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub index: u32,
}

/// Why an interface was not found. Its words list the interfaces the
/// namespace has (`name (index)`).
#[derive(Debug, thiserror::Error)]
pub enum InterfaceError {
    #[error("interface `{}`: the name has a NUL byte", .0.escape_debug())]
    NulInName(String),
    #[error("interface `{name}`: {source}; this network namespace has: {}", listed(.known))]
    NoName {
        name: String,
        source: std::io::Error,
        /// Every interface of the namespace: (index, name).
        known: Vec<(u32, String)>,
    },
    #[error("interface index {index}: {source}; this network namespace has: {}", listed(.known))]
    NoIndex {
        index: u32,
        source: std::io::Error,
        /// Every interface of the namespace: (index, name).
        known: Vec<(u32, String)>,
    },
}

/// `name (index), ...`.
fn listed(known: &[(u32, String)]) -> String {
    let names: Vec<String> = known.iter().map(|(i, n)| format!("{n} ({i})")).collect();
    names.join(", ")
}

impl Interface {
    /// The interface named `name`.
    pub fn by_name(name: &str) -> std::result::Result<Interface, InterfaceError> {
        let c = CString::new(name).map_err(|_| InterfaceError::NulInName(name.to_string()))?;
        // SAFETY: `c` is a valid NUL-terminated string.
        let index = unsafe { libc::if_nametoindex(c.as_ptr()) };
        if index == 0 {
            let source = std::io::Error::last_os_error();
            return Err(InterfaceError::NoName {
                name: name.to_string(),
                source,
                known: interfaces(),
            });
        }
        Ok(Interface {
            name: name.to_string(),
            index,
        })
    }

    /// The interface whose index is `index`.
    pub fn by_index(index: u32) -> std::result::Result<Interface, InterfaceError> {
        match name_of(index) {
            Ok(name) => Ok(Interface { name, index }),
            Err(source) => Err(InterfaceError::NoIndex {
                index,
                source,
                known: interfaces(),
            }),
        }
    }

    /// A name, or else a number taken as an interface index.
    pub fn lookup(name_or_index: &str) -> std::result::Result<Interface, InterfaceError> {
        match Interface::by_name(name_or_index) {
            Ok(i) => Ok(i),
            Err(e) => match name_or_index.parse::<u32>() {
                Ok(index) if index > 0 => Interface::by_index(index),
                _ => Err(e),
            },
        }
    }
}

/// The index of interface `name`, with the attach commands' words when
/// there is none (`no such device `NAME` in this network namespace (there
/// are: ...)`).
pub fn ifindex(name: &str) -> Result<u32> {
    match Interface::by_name(name) {
        Ok(i) => Ok(i.index),
        Err(InterfaceError::NoName { known, .. }) => {
            let names: Vec<String> = known.into_iter().map(|(_, n)| n).collect();
            Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "no such device `{name}` in this network namespace (there are: {})",
                    names.join(", ")
                ),
            ))
        }
        Err(_) => Err(Error::new(
            ErrorKind::Invalid,
            "interface name contains a NUL byte",
        )),
    }
}

/// The name of interface `index`.
pub fn name(index: u32) -> Option<String> {
    name_of(index).ok()
}

/// The name of interface `index`, or why there is none.
fn name_of(index: u32) -> std::io::Result<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` has IF_NAMESIZE bytes as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into `buf`.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// Every interface: (index, name), by index.
pub fn interfaces() -> Vec<(u32, String)> {
    let mut out = Vec::new();
    // SAFETY: returns an array terminated by a zero entry, or null.
    let list = unsafe { libc::if_nameindex() };
    if list.is_null() {
        return out;
    }
    let mut p = list;
    // SAFETY: we walk the array up to its terminating entry and free it once.
    unsafe {
        while (*p).if_index != 0 {
            let name = std::ffi::CStr::from_ptr((*p).if_name)
                .to_string_lossy()
                .into_owned();
            out.push(((*p).if_index, name));
            p = p.add(1);
        }
        libc::if_freenameindex(list);
    }
    out.sort();
    out
}

/// Moves the calling thread into network namespace `name` (as created by
/// `ip netns add`, under /run/netns), like `ip -n NAME`: interfaces,
/// attachments and test runs then happen there, while bpffs pins stay in
/// the caller's mount namespace.
pub fn enter_netns(name: &str) -> Result<()> {
    let path = if name.contains('/') {
        std::path::PathBuf::from(name)
    } else {
        std::path::Path::new("/run/netns").join(name)
    };
    let f = std::fs::File::open(&path).map_err(|e| {
        Error::new(
            ErrorKind::NotFound,
            format!("network namespace {name}: {}: {e}", path.display()),
        )
    })?;
    use std::os::fd::AsRawFd;
    // SAFETY: `f` is an open namespace file; setns only reads the descriptor.
    let ret = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if ret != 0 {
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return Err(Error::errno(
            &format!("entering network namespace {name}"),
            errno,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_found_by_name_index_and_lookup() {
        let lo = Interface::by_name("lo").unwrap();
        assert_eq!(Interface::by_index(lo.index).unwrap(), lo);
        assert_eq!(Interface::lookup("lo").unwrap(), lo);
        assert_eq!(Interface::lookup(&lo.index.to_string()).unwrap(), lo);
        assert_eq!(ifindex("lo").unwrap(), lo.index);
        assert_eq!(name(lo.index).as_deref(), Some("lo"));
    }

    #[test]
    fn a_missing_interface_is_named_with_those_there_are() {
        let e = Interface::lookup("nosuchif0").unwrap_err().to_string();
        assert!(
            e.starts_with("interface `nosuchif0`: No such device"),
            "{e}"
        );
        assert!(
            e.contains("; this network namespace has: ") && e.contains("lo ("),
            "{e}"
        );
        let e = Interface::by_index(u32::MAX).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("interface index {}: ", u32::MAX)),
            "{e}"
        );
        let e = ifindex("nosuchif0").unwrap_err();
        assert_eq!(e.kind, ErrorKind::NotFound);
        assert!(
            e.message
                .starts_with("no such device `nosuchif0` in this network namespace (there are: "),
            "{e}"
        );
        assert!(matches!(
            Interface::by_name("a\0b"),
            Err(InterfaceError::NulInName(_))
        ));
        assert_eq!(ifindex("a\0b").unwrap_err().kind, ErrorKind::Invalid);
    }
}
