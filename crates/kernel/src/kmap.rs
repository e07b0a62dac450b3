//! Kernel maps through their file descriptors: info, iteration, lookup,
//! update and delete, with per-CPU values laid out as the kernel's user API
//! does (one 8-byte-aligned slot per possible CPU).

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::Path;

use maps::Entries;

use crate::error::{Error, ErrorKind, Result, check};

/// `BPF_MAP_TYPE_*` numbers the backend treats specially.
pub mod types {
    pub const PERCPU_HASH: u32 = 5;
    pub const PERCPU_ARRAY: u32 = 6;
    pub const PROG_ARRAY: u32 = 3;
    pub const PERF_EVENT_ARRAY: u32 = 4;
    pub const LRU_PERCPU_HASH: u32 = 10;
    pub const ARRAY_OF_MAPS: u32 = 12;
    pub const HASH_OF_MAPS: u32 = 13;
    pub const PERCPU_CGROUP_STORAGE: u32 = 21;
    pub const QUEUE: u32 = 22;
    pub const STACK: u32 = 23;
    pub const RINGBUF: u32 = 27;
    pub const BLOOM_FILTER: u32 = 30;
    pub const USER_RINGBUF: u32 = 31;
}

/// What the kernel says about a map.
#[derive(Clone, Debug, Default)]
pub struct MapInfo {
    pub name: String,
    pub fd: RawFd,
    pub id: u32,
    pub map_type: u32,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    pub flags: u32,
    /// The map's BTF (0: none) and its key and value types there.
    pub btf_id: u32,
    pub btf_key_type: u32,
    pub btf_value_type: u32,
}

/// Number of possible CPUs (the per-CPU value count of the user API).
pub fn possible_cpus() -> usize {
    // SAFETY: no arguments; returns a count or a negative errno.
    let n = unsafe { libbpf_sys::libbpf_num_possible_cpus() };
    n.max(1) as usize
}

impl MapInfo {
    pub fn of_fd(fd: RawFd) -> Result<MapInfo> {
        // SAFETY: bpf_map_info is plain old data; zero is a valid value.
        let mut info: libbpf_sys::bpf_map_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: `info` is writable for `len` bytes.
        let ret = unsafe { libbpf_sys::bpf_map_get_info_by_fd(fd, &mut info, &mut len) };
        check("reading map info", ret)?;
        Ok(MapInfo {
            name: crate::error::c_name(&info.name),
            fd,
            id: info.id,
            map_type: info.type_,
            key_size: info.key_size,
            value_size: info.value_size,
            max_entries: info.max_entries,
            flags: info.map_flags,
            btf_id: info.btf_id,
            btf_key_type: info.btf_key_type_id,
            btf_value_type: info.btf_value_type_id,
        })
    }

    pub fn is_percpu(&self) -> bool {
        matches!(
            self.map_type,
            types::PERCPU_HASH
                | types::PERCPU_ARRAY
                | types::LRU_PERCPU_HASH
                | types::PERCPU_CGROUP_STORAGE
        )
    }

    /// Bytes of a value as user space reads and writes it.
    pub fn user_value_len(&self) -> usize {
        if self.is_percpu() {
            (self.value_size as usize).next_multiple_of(8) * possible_cpus()
        } else {
            self.value_size as usize
        }
    }

    /// Whether the map holds keyed entries user space can list.
    pub fn has_entries(&self) -> bool {
        !matches!(
            self.map_type,
            types::QUEUE
                | types::STACK
                | types::RINGBUF
                | types::USER_RINGBUF
                | types::BLOOM_FILTER
                | types::PERF_EVENT_ARRAY
        ) && self.key_size > 0
    }

    /// Every key, in the kernel's iteration order.
    pub fn keys(&self) -> Result<Vec<Vec<u8>>> {
        let ks = self.key_size as usize;
        let mut keys = Vec::new();
        let mut cur: Option<Vec<u8>> = None;
        let mut next = vec![0u8; ks];
        loop {
            let prev = cur.as_ref().map_or(std::ptr::null(), |k| k.as_ptr());
            // SAFETY: `prev` is null or `ks` readable bytes; `next` has `ks`.
            let ret = unsafe {
                libbpf_sys::bpf_map_get_next_key(self.fd, prev.cast(), next.as_mut_ptr().cast())
            };
            if ret < 0 {
                if -ret == libc::ENOENT {
                    return Ok(keys);
                }
                return Err(Error::errno(
                    &format!("map {}: listing keys", self.name),
                    -ret,
                ));
            }
            keys.push(next.clone());
            if keys.len() > self.max_entries as usize + 1 {
                // A hash map being written concurrently can restart its walk.
                return Ok(keys);
            }
            cur = Some(next.clone());
        }
    }

    pub fn lookup(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.lookup_flags(key, 0)
    }

    /// `lookup` with the command's flags (`BPF_F_LOCK`: copied under the
    /// value's spin lock).
    pub fn lookup_flags(&self, key: &[u8], flags: u64) -> Result<Option<Vec<u8>>> {
        self.check_key(key)?;
        let mut value = vec![0u8; self.user_value_len()];
        // SAFETY: key has key_size bytes, value user_value_len bytes.
        let ret = unsafe {
            libbpf_sys::bpf_map_lookup_elem_flags(
                self.fd,
                key.as_ptr().cast(),
                value.as_mut_ptr().cast(),
                flags,
            )
        };
        if ret < 0 {
            if -ret == libc::ENOENT {
                return Ok(None);
            }
            return Err(Error::errno(&format!("map {}: lookup", self.name), -ret));
        }
        Ok(Some(value))
    }

    /// `flags`: `BPF_ANY` (0), `BPF_NOEXIST` (1), `BPF_EXIST` (2).
    pub fn update(&self, key: &[u8], value: &[u8], flags: u64) -> Result<()> {
        self.check_key(key)?;
        if value.len() != self.user_value_len() {
            return Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "map {}: values are {} bytes, got {}",
                    self.name,
                    self.user_value_len(),
                    value.len()
                ),
            ));
        }
        // SAFETY: both buffers have the sizes the kernel reads.
        let ret = unsafe {
            libbpf_sys::bpf_map_update_elem(
                self.fd,
                key.as_ptr().cast(),
                value.as_ptr().cast(),
                flags,
            )
        };
        check(&format!("map {}: update", self.name), ret).map(drop)
    }

    /// Deletes `key`; a missing key is not an error.
    pub fn delete(&self, key: &[u8]) -> Result<()> {
        self.check_key(key)?;
        // SAFETY: key has key_size bytes.
        let ret = unsafe { libbpf_sys::bpf_map_delete_elem(self.fd, key.as_ptr().cast()) };
        if ret < 0 && -ret != libc::ENOENT {
            return Err(Error::errno(&format!("map {}: delete", self.name), -ret));
        }
        Ok(())
    }

    /// Every (key, value) pair.
    pub fn entries(&self) -> Result<Entries> {
        if !self.has_entries() {
            return Ok(Vec::new());
        }
        if let Some(all) = self.entries_batched()? {
            return Ok(all);
        }
        let mut out = Vec::new();
        for k in self.keys()? {
            if let Some(v) = self.lookup(&k)? {
                out.push((k, v));
            }
        }
        Ok(out)
    }

    /// All entries with `BPF_MAP_LOOKUP_BATCH` (a few system calls instead
    /// of two per entry), for the map types that have it; `None` otherwise.
    fn entries_batched(&self) -> Result<Option<Entries>> {
        let (ks, vs) = (self.key_size as usize, self.user_value_len());
        let mut out = Vec::new();
        let walked = self.batched(|keys, values, n| {
            for i in 0..n {
                out.push((
                    keys[i * ks..(i + 1) * ks].to_vec(),
                    values[i * vs..(i + 1) * vs].to_vec(),
                ));
            }
        })?;
        Ok(walked.then_some(out))
    }

    /// An array's values, every index in order, as one buffer in the user
    /// layout (`None` for other map types): one comparison of two buffers
    /// instead of one per entry.
    pub fn array_values(&self) -> Result<Option<Vec<u8>>> {
        if !matches!(self.map_type, 2 | types::PERCPU_ARRAY) {
            return Ok(None);
        }
        let vs = self.user_value_len();
        let mut out = Vec::with_capacity(vs * self.max_entries as usize);
        let walked = self.batched(|_, values, n| out.extend_from_slice(&values[..n * vs]))?;
        Ok(walked.then_some(out))
    }

    /// Walks the map with `BPF_MAP_LOOKUP_BATCH`, handing each chunk's keys,
    /// values and count to `visit`; false when the map type has no batch
    /// operations.
    pub fn batched(&self, mut visit: impl FnMut(&[u8], &[u8], usize)) -> Result<bool> {
        const BATCHED: [u32; 6] = [
            1,
            2,
            types::PERCPU_HASH,
            types::PERCPU_ARRAY,
            9,
            types::LRU_PERCPU_HASH,
        ];
        if !BATCHED.contains(&self.map_type) || self.max_entries == 0 {
            return Ok(false);
        }
        let (ks, vs) = (self.key_size as usize, self.user_value_len());
        let chunk = self.max_entries.min(4096);
        let mut keys = vec![0u8; ks * chunk as usize];
        let mut values = vec![0u8; vs * chunk as usize];
        // The batch token: a bucket or index, at most the key's size or 8.
        let mut token_in = vec![0u8; ks.max(8)];
        let mut token_out = vec![0u8; ks.max(8)];
        let mut first = true;
        loop {
            let mut count = chunk;
            // SAFETY: plain old data; zero is valid.
            let mut opts: libbpf_sys::bpf_map_batch_opts = unsafe { std::mem::zeroed() };
            opts.sz = std::mem::size_of_val(&opts) as _;
            // SAFETY: keys/values hold `chunk` entries; the tokens are
            // large enough for any map's batch position.
            let ret = unsafe {
                libbpf_sys::bpf_map_lookup_batch(
                    self.fd,
                    if first {
                        std::ptr::null_mut()
                    } else {
                        token_in.as_mut_ptr().cast()
                    },
                    token_out.as_mut_ptr().cast(),
                    keys.as_mut_ptr().cast(),
                    values.as_mut_ptr().cast(),
                    &mut count,
                    &opts,
                )
            };
            let done = ret < 0 && -ret == libc::ENOENT;
            if ret < 0 && !done {
                if first && matches!(-ret, libc::EINVAL | libc::EOPNOTSUPP) {
                    return Ok(false);
                }
                return Err(Error::errno(
                    &format!("map {}: batch lookup", self.name),
                    -ret,
                ));
            }
            visit(&keys, &values, count.min(chunk) as usize);
            if done {
                return Ok(true);
            }
            token_in.copy_from_slice(&token_out);
            first = false;
        }
    }

    fn check_key(&self, key: &[u8]) -> Result<()> {
        if key.len() != self.key_size as usize {
            return Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "map {}: keys are {} bytes, got {}",
                    self.name,
                    self.key_size,
                    key.len()
                ),
            ));
        }
        Ok(())
    }
}

/// The raw bytes of BTF object `id` in the kernel (a map's or program's
/// types), for formatting keys and values.
pub fn btf_raw(id: u32) -> Result<Vec<u8>> {
    // SAFETY: returns an owned btf object or an error pointer.
    let btf = unsafe { libbpf_sys::btf__load_from_kernel_by_id(id) };
    // SAFETY: libbpf_get_error accepts any pointer libbpf returned.
    let err = unsafe { libbpf_sys::libbpf_get_error(btf.cast()) };
    if err != 0 || btf.is_null() {
        return Err(Error::errno(&format!("reading BTF id {id}"), (-err) as i32));
    }
    let mut size = 0u32;
    // SAFETY: `btf` is valid until freed below; the data is copied out.
    let bytes = unsafe {
        let p = libbpf_sys::btf__raw_data(btf, &mut size);
        let v = if p.is_null() {
            Vec::new()
        } else {
            std::slice::from_raw_parts(p.cast::<u8>(), size as usize).to_vec()
        };
        libbpf_sys::btf__free(btf);
        v
    };
    Ok(bytes)
}

/// A map opened from a bpffs pin; the descriptor closes on drop.
pub struct PinnedMap {
    _fd: OwnedFd,
    pub info: MapInfo,
}

impl PinnedMap {
    pub fn open(path: &Path) -> Result<PinnedMap> {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::new(ErrorKind::Invalid, "path contains a NUL byte"))?;
        // SAFETY: `c` is a valid C string.
        let fd = unsafe { libbpf_sys::bpf_obj_get(c.as_ptr()) };
        if fd < 0 {
            let mut e = Error::errno(&format!("opening pinned map {}", path.display()), -fd);
            if e.kind == ErrorKind::NotFound {
                e.message
                    .push_str(" (is bpffs mounted, and was the map pinned there?)");
            }
            return Err(e);
        }
        // SAFETY: bpf_obj_get returned a fresh descriptor we now own.
        let owned = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut info = MapInfo::of_fd(fd).map_err(|e| {
            Error::new(
                ErrorKind::Invalid,
                format!("{} is not a map: {e}", path.display()),
            )
        })?;
        if info.name.is_empty() {
            info.name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        Ok(PinnedMap { _fd: owned, info })
    }
}

/// Pins descriptor `fd` (a map or a program) at `path` in bpffs.
pub fn pin_fd(fd: RawFd, path: &Path) -> Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::new(ErrorKind::Invalid, "path contains a NUL byte"))?;
    // SAFETY: `c` is a valid C string; `fd` is the caller's descriptor.
    let ret = unsafe { libbpf_sys::bpf_obj_pin(fd, c.as_ptr()) };
    if ret < 0 {
        let mut e = Error::errno(&format!("pinning at {}", path.display()), -ret);
        if e.kind == ErrorKind::NotFound {
            e.message
                .push_str(" (is bpffs mounted there? mount -t bpf bpf /sys/fs/bpf)");
        }
        return Err(e);
    }
    Ok(())
}

/// Opens a pinned object (a map or a program) at `path`.
pub fn open_pin(path: &Path) -> Result<OwnedFd> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| Error::new(ErrorKind::Invalid, "path contains a NUL byte"))?;
    // SAFETY: `c` is a valid C string.
    let fd = unsafe { libbpf_sys::bpf_obj_get(c.as_ptr()) };
    if fd < 0 {
        return Err(Error::errno(&format!("opening {}", path.display()), -fd));
    }
    // SAFETY: bpf_obj_get returned a fresh descriptor we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
