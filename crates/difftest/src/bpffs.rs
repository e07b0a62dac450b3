//! Where a differential run pins the maps an object pins by name: a
//! directory of its own under `/sys/fs/bpf`, or, when no BPF filesystem is
//! mounted there, a private one mounted for the run.

use std::path::{Path, PathBuf};

use crate::error::DiffError;

/// `BPF_FS_MAGIC`, the `f_type` `statfs` reports for a BPF filesystem.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// Whether `path` is on a BPF filesystem.
fn is_bpffs(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: statfs is plain data, written by the call.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a writable statfs.
    let r = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    r == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// A run's pin directory; removed (and a private mount undone) on drop.
pub struct PinRoot {
    pub path: PathBuf,
    /// The BPF filesystem mounted for this run, if any.
    mounted: Option<PathBuf>,
    /// What was done, for the report.
    pub note: Option<String>,
}

impl PinRoot {
    /// `name`: unique among this process's runs.
    pub fn new(name: &str) -> Result<PinRoot, DiffError> {
        let system = Path::new("/sys/fs/bpf");
        if is_bpffs(system) {
            return Ok(PinRoot {
                path: system.join(name),
                mounted: None,
                note: None,
            });
        }
        // A private mount namespace keeps the mount from the rest of the
        // system (only a single-threaded process can enter one: otherwise
        // the mount is made where the process is, and undone on drop).
        // SAFETY: unshare takes flags only.
        let private = unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0
            // SAFETY: constant C strings; changes propagation only, in the
            // namespace just entered.
            && unsafe {
                libc::mount(
                    c"none".as_ptr(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                )
            } == 0;
        let dir = std::env::temp_dir().join(format!("{name}-bpffs"));
        std::fs::create_dir_all(&dir).map_err(|source| DiffError::PinDir {
            path: dir.clone(),
            source,
        })?;
        let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| DiffError::NulInTempDir)?;
        // SAFETY: valid C strings; a new BPF filesystem instance.
        let r = unsafe {
            libc::mount(
                c"bpf".as_ptr(),
                c.as_ptr(),
                c"bpf".as_ptr(),
                0,
                std::ptr::null(),
            )
        };
        if r != 0 {
            let source = std::io::Error::last_os_error();
            let _ = std::fs::remove_dir(&dir);
            return Err(DiffError::NoBpfFs { dir, source });
        }
        Ok(PinRoot {
            path: dir.join(name),
            mounted: Some(dir.clone()),
            note: Some(format!(
                "no BPF filesystem is mounted on /sys/fs/bpf: maps pinned by name went to a \
                 private one mounted on {}{}",
                dir.display(),
                if private {
                    " in a mount namespace of the run's own"
                } else {
                    ""
                }
            )),
        })
    }
}

impl Drop for PinRoot {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
        if let Some(dir) = &self.mounted {
            if let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) {
                // SAFETY: a valid C string naming the mount made in `new`.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            }
            let _ = std::fs::remove_dir(dir);
        }
    }
}
