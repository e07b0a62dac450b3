//! Network interfaces by name and index (in the caller's namespace).

use crate::error::{Error, ErrorKind, Result};

/// The index of interface `name`.
pub fn ifindex(name: &str) -> Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| Error::new(ErrorKind::Invalid, "interface name contains a NUL byte"))?;
    // SAFETY: `c` is a valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        let names: Vec<String> = interfaces().into_iter().map(|(_, n)| n).collect();
        return Err(Error::new(
            ErrorKind::NotFound,
            format!(
                "no such device `{name}` in this network namespace (there are: {})",
                names.join(", ")
            ),
        ));
    }
    Ok(i)
}

/// The name of interface `index`.
pub fn name(index: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `buf` has IF_NAMESIZE bytes as if_indextoname requires.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name into `buf`.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Some(s.to_string_lossy().into_owned())
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
