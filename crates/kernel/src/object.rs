//! An object loaded into the kernel by libbpf (through libbpf-rs): libbpf is
//! the reference loader, so an object means in the kernel what it means for
//! every other libbpf tool.

use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::path::Path;

use libbpf_rs::{AsRawLibbpf, MapCore, ObjectBuilder};

use crate::clock::{BpfInsn, Clock, LoadAs};
use crate::error::{Error, ErrorKind, Result};
use crate::kmap::MapInfo;

/// How to load: what to put in global data and map sizes before the
/// kernel sees the object, and where pinned maps live.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Root for maps pinned by name (`LIBBPF_PIN_BY_NAME`); libbpf's
    /// default is `/sys/fs/bpf`.
    pub pin_root: Option<std::path::PathBuf>,
    /// Initial contents of global data maps, by section name (`.rodata`,
    /// `.data`, `.bss`, `.data.custom`...). sluice's own loader computes
    /// them (with `--set` applied), so both sides start from the same bytes.
    pub data: Vec<(String, Vec<u8>)>,
    /// `max_entries` overrides by map name.
    pub max_entries: Vec<(String, u32)>,
    /// Load only these programs (by function name); all when empty.
    pub only: Vec<String>,
    /// Program types by function name, for the programs libbpf cannot type
    /// from their section (`xdp_sock`, `from-netdev`, `2/0`) and those
    /// given a type by the user (`force`).
    pub prog_types: Vec<ProgType>,
}

/// How to load one program: `BPF_PROG_TYPE_*`, expected attach type and
/// program flags (`BPF_F_XDP_HAS_FRAGS`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgType {
    pub name: String,
    pub prog_type: u32,
    pub attach_type: u32,
    pub flags: u32,
    /// Set even where libbpf found a type in the section name.
    pub force: bool,
}

impl ProgType {
    /// How sluice's loader would load `program`: `None` for kinds it
    /// cannot run.
    pub fn of(program: &obj::Program) -> Option<ProgType> {
        let (prog_type, attach, flags) = crate::verify::load_type(&program.kind).ok()?;
        Some(ProgType {
            name: program.name.clone(),
            prog_type,
            attach_type: program.attach_type.unwrap_or(attach),
            flags,
            force: program.type_given,
        })
    }
}

/// A program of a loaded object.
#[derive(Clone, Debug)]
pub struct ProgInfo {
    /// The C function's name.
    pub name: String,
    pub section: String,
    pub fd: RawFd,
    /// `BPF_PROG_TYPE_*`.
    pub prog_type: u32,
}

/// An object in the kernel: its programs and maps stay loaded while this
/// value lives (and after, for what is attached or pinned).
pub struct KernelObject {
    obj: libbpf_rs::Object,
    /// Programs loaded again with the shared clock, or as plain XDP, by
    /// function name.
    replaced: Vec<(String, std::os::fd::OwnedFd)>,
    /// Load devmap and cpumap entry programs again as plain XDP
    /// ([`KernelObject::plain_xdp`]).
    plain_xdp: bool,
    /// The programs loaded again as plain XDP.
    plain_copies: Vec<String>,
}

/// libbpf names a global data map `<object name prefix><section>` for
/// `.data`, `.rodata`, `.bss` and `.kconfig`, and by the section name alone
/// (cut to 15 bytes) for custom sections such as `.rodata.str1.1`; sluice
/// names them by section.
pub fn same_map(libbpf_name: &str, sluice_name: &str) -> bool {
    if libbpf_name == sluice_name {
        return true;
    }
    let Some(rest) = sluice_name.strip_prefix('.') else {
        return false;
    };
    if rest.contains('.') {
        return sluice_name.len() > 15 && sluice_name.get(..15) == Some(libbpf_name);
    }
    libbpf_name
        .strip_suffix(sluice_name)
        .is_some_and(|prefix| !prefix.contains('.'))
}

/// bpffs refuses names with dots (`xdp_ddos.rodata`): they become `_`,
/// as bpftool does.
pub fn pin_name(name: &str) -> String {
    name.replace('.', "_")
}

impl KernelObject {
    /// Loads `bytes` (an ELF object) into the kernel. `name` names the
    /// object (libbpf uses it for global data map names).
    pub fn load(bytes: &[u8], name: &str, opts: &LoadOptions) -> Result<KernelObject> {
        crate::log::install();
        crate::log::take();
        let mut builder = ObjectBuilder::default();
        builder
            .name(name)
            .map_err(|e| Error::libbpf("naming the object", &e))?;
        if let Some(root) = &opts.pin_root {
            builder
                .pin_root_path(root)
                .map_err(|e| Error::libbpf("setting the pin directory", &e))?;
        }
        let mut open = builder.open_memory(bytes).map_err(|e| {
            Error::new(
                ErrorKind::Invalid,
                format!(
                    "libbpf cannot open the object: {e}\n{}",
                    crate::log::take().trim_end()
                ),
            )
        })?;
        for mut map in open.maps_mut() {
            let mname = map.name().to_string_lossy().into_owned();
            // Ring buffers declared with key or value sizes (some
            // toolchains do): the kernel refuses them, sluice's loader
            // drops the sizes, and so does this side.
            if map.map_type() == libbpf_rs::MapType::RingBuf
                && (map.key_size() != 0 || map.value_size() != 0)
            {
                map.set_key_size(0)
                    .and_then(|()| map.set_value_size(0))
                    .map_err(|e| Error::libbpf(&format!("map {mname}: ring buffer sizes"), &e))?;
            }
            if let Some((_, n)) = opts.max_entries.iter().find(|(m, _)| *m == mname) {
                map.set_max_entries(*n)
                    .map_err(|e| Error::libbpf(&format!("map {mname}: max_entries"), &e))?;
            }
            if let Some((_, data)) = opts.data.iter().find(|(s, _)| same_map(&mname, s))
                && let Some(init) = map.initial_value_mut()
            {
                if init.len() != data.len() {
                    return Err(Error::new(
                        ErrorKind::Invalid,
                        format!(
                            "map {mname}: libbpf sees {} bytes of global data, sluice {}",
                            init.len(),
                            data.len()
                        ),
                    ));
                }
                init.copy_from_slice(data);
            }
        }
        for p in open.progs_mut() {
            let Some(t) = opts.prog_types.iter().find(|t| *t.name == *p.name()) else {
                continue;
            };
            if !t.force && p.prog_type() != libbpf_rs::ProgramType::Unspec {
                continue;
            }
            let ptr = p.as_libbpf_object().as_ptr();
            // SAFETY: `ptr` is a program of the open object, not loaded yet.
            let rc = unsafe {
                let mut rc = libbpf_sys::bpf_program__set_type(ptr, t.prog_type);
                if rc == 0 {
                    rc = libbpf_sys::bpf_program__set_expected_attach_type(ptr, t.attach_type);
                }
                if rc == 0 {
                    rc = libbpf_sys::bpf_program__set_flags(
                        ptr,
                        libbpf_sys::bpf_program__flags(ptr) | t.flags,
                    );
                }
                rc
            };
            if rc != 0 {
                return Err(Error::new(
                    ErrorKind::Invalid,
                    format!("program {}: libbpf refused its type ({rc})", t.name),
                ));
            }
        }
        if !opts.only.is_empty() {
            for mut p in open.progs_mut() {
                let keep = opts.only.iter().any(|n| **n == *p.name());
                p.set_autoload(keep);
            }
        }
        let obj = open.load().map_err(|e| {
            let messages = crate::log::take();
            let log = crate::log::verifier_log(&messages);
            if messages.contains("BEGIN PROG LOAD LOG") {
                // The end says why; long logs are cut from the front.
                const SHOWN: usize = 60;
                let lines: Vec<&str> = log.trim_end().lines().collect();
                let cut = lines.len().saturating_sub(SHOWN);
                let mut text = String::new();
                if cut > 0 {
                    text.push_str(&format!("... ({cut} earlier lines)\n"));
                }
                text.push_str(&lines[cut..].join("\n"));
                Error::new(
                    ErrorKind::Verifier,
                    format!(
                        "the kernel verifier rejected the program: {e}\n--- kernel verifier log ---\n{text}"
                    ),
                )
            } else {
                let mut err = Error::libbpf("loading the object into the kernel", &e);
                if !messages.trim().is_empty() {
                    err.message = format!("{}\nlibbpf said:\n{}", err.message, messages.trim_end());
                }
                err
            }
        })?;
        Ok(KernelObject {
            obj,
            replaced: Vec::new(),
            plain_xdp: false,
            plain_copies: Vec::new(),
        })
    }

    /// The loaded programs (with the shared clock, when
    /// [`KernelObject::share_clock`] replaced them).
    pub fn programs(&self) -> Vec<ProgInfo> {
        self.obj
            .progs()
            .filter(|p| p.as_fd().as_raw_fd() >= 0)
            .map(|p| {
                let name = p.name().to_string_lossy().into_owned();
                let fd = self
                    .replaced
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or(p.as_fd().as_raw_fd(), |(_, fd)| fd.as_raw_fd());
                ProgInfo {
                    name,
                    section: p.section().to_string_lossy().into_owned(),
                    fd,
                    prog_type: p.prog_type() as u32,
                }
            })
            .collect()
    }

    /// Makes [`KernelObject::share_clock`] also load devmap and cpumap entry
    /// programs (`SEC("xdp/devmap")`, `SEC("xdp/cpumap")`) again as plain
    /// XDP programs: `BPF_PROG_TEST_RUN` refuses those attach types, and
    /// the same instructions run as plain XDP (a program reading
    /// `egress_ifindex`, which only devmap programs may, is then refused).
    pub fn plain_xdp(&mut self) {
        self.plain_xdp = true;
    }

    /// The programs [`KernelObject::share_clock`] loaded again as plain XDP.
    pub fn plain_xdp_copies(&self) -> &[String] {
        &self.plain_copies
    }

    /// Loads every program that reads the kernel's clock or random numbers
    /// again, reading them from a map instead (see [`crate::clock`]), and
    /// points program arrays at the new copies. Returns the clock, or
    /// `None` when no program reads one.
    pub fn share_clock(&mut self) -> Result<Option<Clock>> {
        let mut clock = None;
        let mut moved: Vec<(u32, RawFd)> = Vec::new();
        for p in self.obj.progs() {
            if p.as_fd().as_raw_fd() < 0 {
                continue;
            }
            let ptr = p.as_libbpf_object().as_ptr();
            // SAFETY: `ptr` is a loaded program of `self.obj`; libbpf keeps
            // its final instructions after load.
            let insns: Vec<BpfInsn> = unsafe {
                let n = libbpf_sys::bpf_program__insn_cnt(ptr) as usize;
                let at = libbpf_sys::bpf_program__insns(ptr);
                if at.is_null() {
                    continue;
                }
                std::slice::from_raw_parts(at.cast::<BpfInsn>(), n).to_vec()
            };
            // SAFETY: `ptr` is a live program of `self.obj`.
            let attach = unsafe { libbpf_sys::bpf_program__expected_attach_type(ptr) };
            let plain = self.plain_xdp
                && matches!(
                    attach,
                    libbpf_sys::BPF_XDP_DEVMAP | libbpf_sys::BPF_XDP_CPUMAP
                );
            let reads_clock = crate::clock::reads_clock(&insns);
            if !reads_clock && !plain {
                continue;
            }
            let name = p.name().to_string_lossy().into_owned();
            let original = insns.len();
            let insns = if reads_clock {
                if clock.is_none() {
                    clock = Some(Clock::create()?);
                }
                crate::clock::rewrite(&insns, clock.as_ref().expect("created above"))
            } else {
                insns
            };
            // SAFETY: `ptr` is a live program of `self.obj`.
            let func_info = unsafe { FuncInfo::of(&self.obj, ptr, &insns, original)? };
            // SAFETY: `ptr` is a live program of `self.obj`.
            let how = unsafe {
                LoadAs {
                    name: name.clone(),
                    prog_type: libbpf_sys::bpf_program__type(ptr),
                    expected_attach_type: if plain { libbpf_sys::BPF_XDP } else { attach },
                    flags: libbpf_sys::bpf_program__flags(ptr),
                    btf_fd: func_info.btf_fd,
                    func_info: func_info.records.clone(),
                }
            };
            let fd = crate::clock::load(&insns, &how).map_err(|mut e| {
                if plain {
                    e.message = format!("{name} as a plain XDP program: {}", e.message);
                }
                e
            })?;
            if plain {
                self.plain_copies.push(name.clone());
            }
            let old = crate::attach::prog_by_fd(p.as_fd().as_raw_fd())?.id;
            moved.push((old, fd.as_raw_fd()));
            self.replaced.push((name, fd));
        }
        for m in self.maps()? {
            if m.map_type != crate::kmap::types::PROG_ARRAY {
                continue;
            }
            for (key, value) in m.entries()? {
                let id = u32::from_le_bytes(value[..4].try_into().expect("4-byte value"));
                if let Some((_, fd)) = moved.iter().find(|(old, _)| *old == id) {
                    m.update(&key, &(*fd as u32).to_le_bytes(), 0)?;
                }
            }
        }
        Ok(clock)
    }

    /// The program whose function or section is `name`.
    pub fn program(&self, name: &str) -> Result<ProgInfo> {
        let all = self.programs();
        all.iter()
            .find(|p| p.name == name)
            .or_else(|| all.iter().find(|p| p.section == name))
            .cloned()
            .ok_or_else(|| {
                let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
                Error::new(
                    ErrorKind::NotFound,
                    format!(
                        "no program `{name}` in the object (programs: {})",
                        names.join(", ")
                    ),
                )
            })
    }

    /// Every map the kernel created for the object.
    pub fn maps(&self) -> Result<Vec<MapInfo>> {
        self.obj
            .maps()
            .filter(|m| m.autocreate())
            .map(|m| {
                let name = m.name().to_string_lossy().into_owned();
                let mut info = MapInfo::of_fd(m.as_fd().as_raw_fd())
                    .map_err(|e| Error::new(e.kind, format!("map {name}: {e}")))?;
                info.name = name;
                Ok(info)
            })
            .collect()
    }

    /// Pins every map as `dir/<map name>` (creating `dir`; dots in names
    /// become `_`).
    pub fn pin_maps(&mut self, dir: &Path) -> Result<Vec<std::path::PathBuf>> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::new(ErrorKind::Other, format!("{}: {e}", dir.display())))?;
        let mut pinned = Vec::new();
        for mut m in self.obj.maps_mut() {
            if !m.autocreate() {
                continue;
            }
            let path = dir.join(pin_name(&m.name().to_string_lossy()));
            if m.is_pinned() {
                // Pinned by name already (LIBBPF_PIN_BY_NAME): leave it.
                continue;
            }
            m.pin(&path)
                .map_err(|e| Error::libbpf(&format!("pinning {}", path.display()), &e))?;
            pinned.push(path);
        }
        Ok(pinned)
    }

    /// Pins every program as `dir/<function name>`.
    pub fn pin_programs(&mut self, dir: &Path) -> Result<Vec<std::path::PathBuf>> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::new(ErrorKind::Other, format!("{}: {e}", dir.display())))?;
        let mut pinned = Vec::new();
        for mut p in self.obj.progs_mut() {
            if p.as_fd().as_raw_fd() < 0 {
                continue;
            }
            let path = dir.join(pin_name(&p.name().to_string_lossy()));
            p.pin(&path)
                .map_err(|e| Error::libbpf(&format!("pinning {}", path.display()), &e))?;
            pinned.push(path);
        }
        Ok(pinned)
    }

    /// The mmap'ed contents of a global data map (for reading and writing
    /// variables without a system call), by section name.
    pub fn global_data(&mut self, section: &str) -> Option<&mut [u8]> {
        self.obj
            .maps_mut()
            .find(|m| same_map(&m.name().to_string_lossy(), section))
            .and_then(|m| {
                let mut size = 0u64;
                let map = m.as_libbpf_object().as_ptr();
                // SAFETY: `map` is a live bpf_map of `self.obj`; after load
                // libbpf returns its mmap'ed region, valid while the object
                // lives (and `self` is borrowed mutably for the slice's life).
                unsafe {
                    let p = libbpf_sys::bpf_map__initial_value(map, &mut size);
                    if p.is_null() {
                        return None;
                    }
                    Some(std::slice::from_raw_parts_mut(
                        p.cast::<u8>(),
                        size as usize,
                    ))
                }
            })
    }
}

/// The BTF function records a reloaded copy of a program needs: libbpf's
/// records of the program, and for readers of the shared clock appended
/// to it, a static function type in a copy of the object's BTF (freed on
/// drop, after the load).
struct FuncInfo {
    btf_fd: u32,
    records: Vec<libbpf_sys::bpf_func_info>,
    /// The copy of the object's BTF with the readers' type, if made.
    extended: *mut libbpf_sys::btf,
}

impl Drop for FuncInfo {
    fn drop(&mut self) {
        if !self.extended.is_null() {
            // SAFETY: made by `btf__new` in `of`, freed once.
            unsafe { libbpf_sys::btf__free(self.extended) };
        }
    }
}

impl FuncInfo {
    /// # Safety
    /// `prog` is a loaded program of `obj`.
    unsafe fn of(
        obj: &libbpf_rs::Object,
        prog: *const libbpf_sys::bpf_program,
        insns: &[BpfInsn],
        original: usize,
    ) -> Result<FuncInfo> {
        let mut info = FuncInfo {
            btf_fd: 0,
            records: Vec::new(),
            extended: std::ptr::null_mut(),
        };
        // SAFETY: libbpf keeps a loaded program's function records.
        let records = unsafe {
            let n = libbpf_sys::bpf_program__func_info_cnt(prog) as usize;
            let at = libbpf_sys::bpf_program__func_info(prog);
            if n == 0 || at.is_null() {
                return Ok(info);
            }
            std::slice::from_raw_parts(at, n).to_vec()
        };
        let raw = obj.as_libbpf_object().as_ptr();
        // SAFETY: a loaded object; its BTF lives as long as it does.
        let (btf, btf_fd) = unsafe {
            (
                libbpf_sys::bpf_object__btf(raw),
                libbpf_sys::bpf_object__btf_fd(raw),
            )
        };
        if btf.is_null() || btf_fd < 0 {
            return Ok(info);
        }
        info.records = records;
        info.btf_fd = btf_fd as u32;
        // The appended readers: targets of calls past the original code.
        let mut readers: Vec<u32> = insns
            .iter()
            .enumerate()
            .filter(|(_, i)| i.code == 0x85 && i.regs >> 4 == 1)
            .map(|(pc, i)| (pc as i64 + 1 + i64::from(i.imm)) as u32)
            .filter(|&t| t as usize >= original)
            .collect();
        readers.sort_unstable();
        readers.dedup();
        if readers.is_empty() {
            return Ok(info);
        }
        // SAFETY: `btf` is the object's; its raw bytes are copied by
        // `btf__new` into a BTF of our own, which is extended and loaded.
        unsafe {
            let mut size = 0u32;
            let data = libbpf_sys::btf__raw_data(btf, &mut size);
            let copy = libbpf_sys::btf__new(data, size);
            if libbpf_sys::libbpf_get_error(copy.cast()) != 0 || copy.is_null() {
                return Err(Error::new(
                    ErrorKind::Invalid,
                    "copying the object's BTF for the shared clock failed",
                ));
            }
            info.extended = copy;
            let proto = libbpf_sys::btf__add_func_proto(copy, 0);
            let func = if proto > 0 {
                libbpf_sys::btf__add_func(
                    copy,
                    c"sluice_clock".as_ptr(),
                    libbpf_sys::BTF_FUNC_STATIC,
                    proto,
                )
            } else {
                proto
            };
            if func <= 0 {
                return Err(Error::errno("adding the clock readers' BTF type", -func));
            }
            let r = libbpf_sys::btf__load_into_kernel(copy);
            if r < 0 {
                return Err(Error::errno("loading BTF for the shared clock", -r));
            }
            info.btf_fd = libbpf_sys::btf__fd(copy) as u32;
            for at in readers {
                info.records.push(libbpf_sys::bpf_func_info {
                    insn_off: at,
                    type_id: func as u32,
                });
            }
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::same_map;

    #[test]
    fn global_data_maps_match_by_section() {
        assert!(same_map("xdp_ddos.rodata", ".rodata"));
        assert!(same_map("counts", "counts"));
        assert!(same_map("cilium_.rodata", ".rodata"));
        assert!(!same_map("xdp_ddos.rodata", ".data"));
        assert!(!same_map("x.bss", ".rodata"));
        assert!(same_map(".rodata.str1.1", ".rodata.str1.1"));
        assert!(!same_map("xdp_ddos.rodata", ".rodata.str1.1"));
        assert!(!same_map("abcdefgh.rodata", ".rodata.cst16"));
        assert!(same_map(".rodata.cst16", ".rodata.cst16"));
        assert!(
            same_map(".data.a_long_na", ".data.a_long_name"),
            "cut to 15 bytes"
        );
    }
}
