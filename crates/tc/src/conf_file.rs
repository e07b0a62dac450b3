//! Where `sluice tc` keeps its configuration file and how it reads and
//! writes it safely (issue 41): the default is in the user's own state
//! directory, not the current one; a file is read only if it is a
//! regular file owned by the user or root and writable by nobody else
//! (as ssh takes its configuration); a symbolic link is never followed;
//! a new version is written whole to a temporary file beside the old one
//! (created exclusively, mode 0600), synced and renamed over it, so a
//! failed write (a full disk) leaves the old file as it was; and writers
//! of one directory take turns (`flock` on it).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The configuration's file name in the state directory.
pub const CONFIG_NAME: &str = "tc.conf";
/// root's state directory.
pub const ROOT_STATE_DIR: &str = "/var/lib/sluice";
/// How long a writer waits for another to finish.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// What is wrong with a configuration file, or with reading or writing it.
#[derive(Debug, thiserror::Error)]
pub enum ConfFileError {
    #[error(
        "{0}: is a symbolic link, which sluice tc does not follow (its target could be any file): \
         remove the link, or give the file itself with --config"
    )]
    Symlink(PathBuf),
    #[error("{0}: not a regular file")]
    NotRegular(PathBuf),
    #[error(
        "{path}: {size} bytes, over the {limit}-byte limit of a text file (SLUICE_MAX_FILE_SIZE \
         sets another)"
    )]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error(
        "{path}: owned by uid {owner}, neither you (uid {me}) nor root: its lines could be \
         anyone's; check them, then `chown {me} {path}` (or give another file with --config)"
    )]
    Owner { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "{path}: writable by its group or by everyone (mode {mode:04o}): its lines could be \
         anyone's; check them, then `chmod go-w {path}`"
    )]
    Writable { path: PathBuf, mode: u32 },
    #[error(
        "no state directory for the tc configuration: set XDG_STATE_HOME or HOME, or give \
         --config FILE"
    )]
    NoStateDir,
    #[error("{0}: another process is writing the configuration there (waited 10 s)")]
    Busy(PathBuf),
    #[error("{path}: {what}: {source}")]
    Io {
        path: PathBuf,
        what: &'static str,
        source: std::io::Error,
    },
}

fn io(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> ConfFileError {
    let path = path.to_path_buf();
    move |source| ConfFileError::Io { path, what, source }
}

fn euid() -> u32 {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() }
}

/// The default configuration: `/var/lib/sluice/tc.conf` for root,
/// `$XDG_STATE_HOME/sluice/tc.conf` (or `~/.local/state/sluice/tc.conf`)
/// for anyone else.
pub fn default_config_path() -> Result<PathBuf, ConfFileError> {
    if euid() == 0 {
        return Ok(Path::new(ROOT_STATE_DIR).join(CONFIG_NAME));
    }
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let state = std::env::var_os("XDG_STATE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".local/state"))
        })
        .ok_or(ConfFileError::NoStateDir)?;
    Ok(state.join("sluice").join(CONFIG_NAME))
}

/// Creates the directory of `path` (a default configuration) if missing,
/// only its owner may enter it (mode 0700).
pub fn create_state_dir(path: &Path) -> Result<(), ConfFileError> {
    let dir = parent(path);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io(dir, "creating the directory"))
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Refuses `meta` (of `path`) unless a regular file owned by the user
/// or root that only its owner may write.
fn trusted(path: &Path, meta: &std::fs::Metadata) -> Result<(), ConfFileError> {
    if meta.file_type().is_symlink() {
        return Err(ConfFileError::Symlink(path.to_path_buf()));
    }
    if !meta.is_file() {
        return Err(ConfFileError::NotRegular(path.to_path_buf()));
    }
    let me = euid();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(ConfFileError::Owner {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(ConfFileError::Writable {
            path: path.to_path_buf(),
            mode: meta.mode() & 0o7777,
        });
    }
    Ok(())
}

/// The configuration's text; a missing file is an empty configuration.
/// Refused: a symbolic link, anything but a regular file, a file owned by
/// another user than the caller or root, a file its group or everyone
/// may write.
pub fn read_config(path: &Path) -> Result<String, ConfFileError> {
    let file = OpenOptions::new()
        .read(true)
        // Not through a link; not blocking on a FIFO (refused below).
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path);
    let mut file = match file {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(String::new()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(ConfFileError::Symlink(path.to_path_buf()));
        }
        Err(e) => return Err(io(path, "opening")(e)),
    };
    let meta = file.metadata().map_err(io(path, "reading its status"))?;
    trusted(path, &meta)?;
    // Bounded as every text file sluice reads whole (`capture::Limit::TEXT`).
    let limit = capture::effective_limit(capture::Limit::TEXT)
        .unwrap_or(capture::Limit::TEXT)
        .bytes;
    if meta.len() > limit {
        return Err(ConfFileError::TooLarge {
            path: path.to_path_buf(),
            size: meta.len(),
            limit,
        });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(&mut file, limit), &mut text)
        .map_err(io(path, "reading"))?;
    Ok(text)
}

/// Replaces the configuration with `text`, whole or not at all: a new
/// file beside it (created exclusively, mode 0600, or the old file's
/// mode without group and world write), written, synced and renamed over
/// it. On an error the temporary file is removed and the old file is as
/// it was. A symbolic link at `path` is refused, not followed.
pub fn write_config(path: &Path, text: &str) -> Result<(), ConfFileError> {
    let mode = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(ConfFileError::Symlink(path.to_path_buf()));
        }
        Ok(meta) if !meta.is_file() => return Err(ConfFileError::NotRegular(path.to_path_buf())),
        Ok(meta) => (meta.mode() & 0o755) | 0o600,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0o600,
        Err(e) => return Err(io(path, "reading its status")(e)),
    };
    let (tmp, mut file) = temporary(path)?;
    let written = (|| {
        file.write_all(text.as_bytes())
            .map_err(io(path, "writing the new configuration"))?;
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(io(path, "setting the new configuration's mode"))?;
        file.sync_all()
            .map_err(io(path, "syncing the new configuration"))?;
        drop(file);
        std::fs::rename(&tmp, path).map_err(io(path, "renaming the new configuration over it"))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return written;
    }
    // The rename itself to disk; the new file is in place either way.
    if let Ok(dir) = File::open(parent(path)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// A new file beside `path`, `.NAME.PID.N.tmp`, created exclusively.
fn temporary(path: &Path) -> Result<(PathBuf, File), ConfFileError> {
    let name = path
        .file_name()
        .ok_or_else(|| ConfFileError::NotRegular(path.to_path_buf()))?
        .to_string_lossy()
        .into_owned();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    for n in 0..100u32 {
        let tmp = parent(path).join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            seed.wrapping_add(n)
        ));
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io(path, "creating the new configuration beside it")(e)),
        }
    }
    Err(io(path, "creating the new configuration beside it")(
        std::io::ErrorKind::AlreadyExists.into(),
    ))
}

/// A writer's turn at a configuration's directory (an exclusive `flock`
/// on it), until dropped.
pub struct ConfLock {
    _dir: File,
}

/// Waits (10 s at most) for the turn to change the configuration at
/// `path`: reading it, changing it and writing it back take this.
pub fn lock_config(path: &Path) -> Result<ConfLock, ConfFileError> {
    let dir = parent(path);
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
        .map_err(io(dir, "opening the directory"))?;
    let t0 = Instant::now();
    loop {
        // SAFETY: flock on a descriptor `file` owns; it changes no memory.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(ConfLock { _dir: file });
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(io(dir, "locking the directory")(e));
        }
        if t0.elapsed() > LOCK_WAIT {
            return Err(ConfFileError::Busy(dir.to_path_buf()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
