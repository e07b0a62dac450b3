//! The socket file of a `punix:` endpoint: created mode 0600 (only its
//! owner, and root, may connect: the file's permissions decide who may
//! program the switch), a stale socket of a switch that is gone replaced
//! (only a socket, and only one nobody answers on), and removed when the
//! channel closes (only if it is still the one this switch made).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use super::error::ChannelError;

/// The mode of the socket file.
const SOCKET_MODE: u32 = 0o600;
/// The mode of directories made for it.
const DIR_MODE: u32 = 0o700;

/// A listening socket file, removed on drop.
pub(crate) struct SocketFile {
    pub(crate) listener: UnixListener,
    pub(crate) path: PathBuf,
    /// (device, inode) of the file made, to remove only that one.
    id: (u64, u64),
}

impl SocketFile {
    pub(crate) fn bind(path: &Path) -> Result<SocketFile, ChannelError> {
        let shown = path.display().to_string();
        let io = |source: io::Error| ChannelError::Io {
            endpoint: format!("punix:{shown}"),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(io)?;
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                if UnixStream::connect(path).is_ok() {
                    return Err(ChannelError::InUse(shown));
                }
                std::fs::remove_file(path).map_err(io)?;
            }
            Ok(_) => return Err(ChannelError::NotASocket(shown)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(e)),
        }
        let listener = listen(path, &shown)?.map_err(io)?;
        // The mode was the socket's before it had a name; say it again
        // on the file in case the kernel took the umask's instead.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE)).map_err(io)?;
        let m = std::fs::symlink_metadata(path).map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        Ok(SocketFile {
            listener,
            path: path.to_path_buf(),
            id: (m.dev(), m.ino()),
        })
    }
}

impl Drop for SocketFile {
    fn drop(&mut self) {
        if let Ok(m) = std::fs::symlink_metadata(&self.path)
            && (m.dev(), m.ino()) == self.id
        {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A unix stream socket given mode 0600 before it is bound, then bound
/// at `path` and listening: no moment when others may connect. The outer
/// error is a path no socket address holds, the inner the system's.
fn listen(path: &Path, shown: &str) -> Result<io::Result<UnixListener>, ChannelError> {
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.contains(&0) {
        return Err(ChannelError::BadPath(
            shown.into(),
            "a NUL byte in the path",
        ));
    }
    if bytes.len() >= addr.sun_path.len() {
        return Err(ChannelError::BadPath(
            shown.into(),
            "longer than a unix socket address holds (107 bytes)",
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + bytes.len() + 1;
    Ok(bind_private(&addr, len))
}

/// socket(2), fchmod(2) to 0600, bind(2) to `addr`, listen(2).
fn bind_private(addr: &libc::sockaddr_un, len: usize) -> io::Result<UnixListener> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a new descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fchmod on a descriptor this function owns.
    if unsafe { libc::fchmod(fd.as_raw_fd(), SOCKET_MODE) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: addr is a filled sockaddr_un; len is within it.
    let r = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            std::ptr::from_ref(addr).cast::<libc::sockaddr>(),
            len as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen on a bound socket this function owns.
    if unsafe { libc::listen(fd.as_raw_fd(), 128) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(UnixListener::from(fd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("sluice-punix-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn socket_file_is_private_replaced_when_stale_and_removed() {
        let d = dir("a");
        let p = d.join("sub/s.mgmt");
        let s = SocketFile::bind(&p).unwrap();
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(d.join("sub"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        // A second switch on the same path is refused while one answers.
        assert!(matches!(SocketFile::bind(&p), Err(ChannelError::InUse(_))));
        drop(s);
        assert!(!p.exists(), "removed at the end");
        // A stale socket (its listener gone without removing it) goes.
        let stale = std::os::unix::net::UnixListener::bind(&p).unwrap();
        drop(stale);
        assert!(p.exists());
        let s = SocketFile::bind(&p).unwrap();
        // Replaced under it: the other file is not removed.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, b"not ours").unwrap();
        drop(s);
        assert_eq!(std::fs::read(&p).unwrap(), b"not ours");
        // Not a socket: left alone, refused.
        let e = SocketFile::bind(&p).err().unwrap();
        assert!(matches!(e, ChannelError::NotASocket(_)), "{e}");
        assert!(e.to_string().contains("is not a socket"), "{e}");
        std::fs::remove_file(&p).unwrap();
        // Nor a symbolic link, wherever it points.
        std::os::unix::fs::symlink(d.join("elsewhere"), &p).unwrap();
        assert!(matches!(
            SocketFile::bind(&p),
            Err(ChannelError::NotASocket(_))
        ));
        assert!(!d.join("elsewhere").exists());
        let long = d.join("x".repeat(120));
        assert!(matches!(
            SocketFile::bind(&long),
            Err(ChannelError::BadPath(..))
        ));
        let _ = std::fs::remove_dir_all(&d);
    }
}
