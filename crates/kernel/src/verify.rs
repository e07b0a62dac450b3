//! The kernel's verdict on one program as sluice's loader linked it: its
//! maps created (`BPF_MAP_CREATE`) with their key and value types from the
//! object's BTF as libbpf creates them, map references patched to their
//! descriptors, the instructions given to `BPF_PROG_LOAD`. The verifier
//! issue compares sluice's verifier with this, and `sluice verify` shows
//! the kernel's figures beside its own.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use std::collections::HashMap;

use isa::{Insn, Lddw};
use maps::MapType;
use obj::{Btf, BtfKind, MapDef, MapOrigin, Program, ProgramKind, TypeId, XdpAttach};

use crate::error::{Error, ErrorKind, Result};

/// What the kernel said.
#[derive(Clone, Debug)]
pub struct Ruling {
    pub accepted: bool,
    /// The verifier log (statistics when accepted; the walk up to the
    /// error when refused).
    pub log: String,
    /// `verification time N usec` from the statistics, when accepted.
    pub micros: Option<u64>,
    /// `processed N insns`, when the log says.
    pub insns_processed: Option<u64>,
}

impl Ruling {
    /// The kernel's reason: the last log line before its statistics.
    pub fn reason(&self) -> &str {
        self.log
            .lines()
            .rev()
            .find(|l| {
                !l.is_empty() && !l.starts_with("processed ") && !l.starts_with("verification time")
            })
            .unwrap_or("")
    }
}

fn check(what: &str, ret: i32) -> Result<i32> {
    if ret < 0 {
        Err(Error::errno(what, -ret))
    } else {
        Ok(ret)
    }
}

/// A map name the kernel takes: at most 15 of `[A-Za-z0-9_.]`.
fn kernel_name(name: &str) -> std::ffi::CString {
    let n: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(15)
        .collect();
    std::ffi::CString::new(n).expect("no NUL")
}

fn create_map(def: &MapDef, data: Option<&[u8]>, btf: Option<&MapBtf>) -> Result<OwnedFd> {
    let inner = match &def.inner {
        Some(t) => Some(create_map(t, None, None)?),
        None => None,
    };
    let spec = &def.spec;
    let mut flags = spec.flags;
    let readonly = matches!(def.origin, MapOrigin::Data { readonly: true, .. });
    if readonly {
        flags |= libbpf_sys::BPF_F_RDONLY_PROG;
    }
    let mut max_entries = spec.max_entries;
    if max_entries == 0 && spec.map_type == MapType::PerfEventArray {
        max_entries = crate::possible_cpus() as u32;
    }
    // Socket storage maps need BTF for their key (an int) and value, which
    // the kernel takes from a type of its own when the object has none.
    let storage = if spec.map_type == MapType::SkStorage {
        Some(storage_btf(spec.value_size)?)
    } else {
        None
    };
    let mut opts = libbpf_sys::bpf_map_create_opts {
        sz: std::mem::size_of::<libbpf_sys::bpf_map_create_opts>() as _,
        map_flags: flags,
        inner_map_fd: inner.as_ref().map_or(0, |f| f.as_raw_fd() as u32),
        btf_fd: storage.as_ref().map_or(0, |f| f.as_raw_fd() as u32),
        btf_key_type_id: if storage.is_some() { 1 } else { 0 },
        btf_value_type_id: if storage.is_some() { 3 } else { 0 },
        ..Default::default()
    };
    let name = kernel_name(def.name());
    let create = |opts: &libbpf_sys::bpf_map_create_opts| {
        // SAFETY: the name is a C string and `opts` is sized and lives
        // across the call.
        unsafe {
            libbpf_sys::bpf_map_create(
                spec.map_type as u32,
                name.as_ptr(),
                spec.key_size,
                spec.value_size,
                max_entries,
                opts,
            )
        }
    };
    // The key and value types, as libbpf gives them: the kernel finds a
    // `bpf_spin_lock` (timers, ...) in a value only through its BTF. Like
    // libbpf, a map the kernel refuses with BTF is created without.
    let mut fd = -1;
    if let Some(b) = btf
        && let Some(value) = def.value_type.and_then(|t| b.ids.get(&t))
    {
        opts.btf_fd = b.fd.as_raw_fd() as u32;
        opts.btf_key_type_id = def.key_type.and_then(|t| b.ids.get(&t)).map_or(0, |&k| k);
        opts.btf_value_type_id = *value;
        fd = create(&opts);
        opts.btf_fd = storage.as_ref().map_or(0, |f| f.as_raw_fd() as u32);
        opts.btf_key_type_id = if storage.is_some() { 1 } else { 0 };
        opts.btf_value_type_id = if storage.is_some() { 3 } else { 0 };
    }
    if fd < 0 {
        fd = create(&opts);
    }
    let fd = check(&format!("creating map {}", def.name()), fd)?;
    // SAFETY: a fresh descriptor we now own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if let Some(data) = data.or(def.data.as_deref()) {
        let mut value = data.to_vec();
        value.resize(spec.value_size as usize, 0);
        let key = 0u32;
        // SAFETY: key and value buffers have the map's key and value sizes.
        let r = unsafe {
            libbpf_sys::bpf_map_update_elem(
                fd.as_raw_fd(),
                (&key as *const u32).cast(),
                value.as_ptr().cast(),
                0,
            )
        };
        check(&format!("initialising map {}", def.name()), r)?;
        if readonly {
            // SAFETY: a map descriptor we own.
            check("freezing a read-only map", unsafe {
                libbpf_sys::bpf_map_freeze(fd.as_raw_fd())
            })?;
        }
    }
    Ok(fd)
}

/// The kernel program type, expected attach type and flags of a kind.
pub(crate) fn load_type(kind: &ProgramKind) -> Result<(u32, u32, u32)> {
    Ok(match kind {
        ProgramKind::Xdp { attach, frags } => (
            libbpf_sys::BPF_PROG_TYPE_XDP,
            match attach {
                XdpAttach::Device => 0,
                XdpAttach::Devmap => libbpf_sys::BPF_XDP_DEVMAP,
                XdpAttach::Cpumap => libbpf_sys::BPF_XDP_CPUMAP,
            },
            if *frags {
                libbpf_sys::BPF_F_XDP_HAS_FRAGS
            } else {
                0
            },
        ),
        ProgramKind::SchedCls => (libbpf_sys::BPF_PROG_TYPE_SCHED_CLS, 0, 0),
        ProgramKind::SchedAct => (libbpf_sys::BPF_PROG_TYPE_SCHED_ACT, 0, 0),
        ProgramKind::SocketFilter => (libbpf_sys::BPF_PROG_TYPE_SOCKET_FILTER, 0, 0),
        ProgramKind::Unsupported(why) => return Err(Error::new(ErrorKind::Invalid, why.clone())),
    })
}

/// Loads `program` (linked by sluice's loader, map references by index
/// into `maps`) into the kernel and unloads it again: the verifier's
/// verdict. `data` gives a global data map's contents after `--set`.
/// `btf` is the object's (`Object::btf`), whose key and value types the
/// maps are created with, as libbpf creates them.
pub fn verify_program(
    program: &Program,
    maps: &[MapDef],
    btf: Option<&Btf>,
    data: &dyn Fn(usize) -> Option<Vec<u8>>,
) -> Result<Ruling> {
    Ok(load_program(program, maps, btf, data)?.ruling)
}

/// A program [`load_program`] loaded, with the maps it made.
#[derive(Debug)]
pub struct Loaded {
    pub ruling: Ruling,
    /// The program, when the kernel accepted it (unloaded when dropped).
    pub program: Option<OwnedFd>,
    /// The maps, in the object's order.
    pub maps: Vec<OwnedFd>,
}

/// [`verify_program`], keeping the program and its maps loaded: for test
/// runs, and for reading and writing the maps as it runs.
pub fn load_program(
    program: &Program,
    maps: &[MapDef],
    btf: Option<&Btf>,
    data: &dyn Fn(usize) -> Option<Vec<u8>>,
) -> Result<Loaded> {
    let map_btf = btf.and_then(|b| MapBtf::load(b, maps));
    let mut fds = Vec::with_capacity(maps.len());
    for (i, def) in maps.iter().enumerate() {
        fds.push(create_map(def, data(i).as_deref(), map_btf.as_ref())?);
    }
    let fd_of = |i: i32| -> Result<i32> {
        fds.get(i as usize).map(|f| f.as_raw_fd()).ok_or_else(|| {
            Error::new(
                ErrorKind::Invalid,
                format!("reference to map {i}, which the object does not have"),
            )
        })
    };
    let insns = program
        .insns
        .iter()
        .map(|insn| {
            Ok(match *insn {
                Insn::Lddw {
                    dst,
                    value: Lddw::MapIdx(i),
                } => Insn::Lddw {
                    dst,
                    value: Lddw::MapFd(fd_of(i)?),
                },
                Insn::Lddw {
                    dst,
                    value: Lddw::MapIdxValue { idx, off },
                } => Insn::Lddw {
                    dst,
                    value: Lddw::MapValue {
                        fd: fd_of(idx)?,
                        off,
                    },
                },
                other => other,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let (prog_type, attach, flags) = load_type(&program.kind)?;
    let attach = program.attach_type.unwrap_or(attach);
    // The kernel takes a function's address (a callback) only from a
    // program with BTF function info; give it a minimal one.
    let takes_address = (program.insns.iter()).any(|i| {
        matches!(
            i,
            Insn::Lddw {
                value: Lddw::Func(_),
                ..
            }
        )
    });
    let funcs = if takes_address {
        Some(FuncInfo::load(&function_starts(&insns))?)
    } else {
        None
    };
    let (ruling, fd) = load_with(
        &isa::encode(&insns),
        &program.name,
        (prog_type, attach, flags),
        funcs.as_ref(),
    )?;
    Ok(Loaded {
        ruling,
        program: fd,
        maps: fds,
    })
}

/// The slots where the program's functions start: the entry, local call
/// targets and functions whose address is taken.
fn function_starts(insns: &[Insn]) -> Vec<u32> {
    let mut starts = vec![0i64];
    let mut slot = 0i64;
    for insn in insns {
        match *insn {
            Insn::Call(isa::CallTarget::Local(off))
            | Insn::Lddw {
                value: Lddw::Func(off),
                ..
            } => starts.push(slot + 1 + i64::from(off)),
            _ => {}
        }
        slot += insn.slots() as i64;
    }
    starts.retain(|&s| (0..slot).contains(&s));
    starts.sort_unstable();
    starts.dedup();
    starts.into_iter().map(|s| s as u32).collect()
}

/// The types of the maps' keys and values (and every type they refer to)
/// from the object's BTF, loaded into the kernel; `ids` gives each object
/// type's id there.
struct MapBtf {
    fd: OwnedFd,
    ids: HashMap<TypeId, u32>,
}

impl MapBtf {
    /// `None` when no map has a value type or the kernel refuses the types
    /// (the maps are then created without, as libbpf does).
    fn load(btf: &Btf, maps: &[MapDef]) -> Option<MapBtf> {
        let roots: Vec<TypeId> = maps
            .iter()
            .filter(|d| d.value_type.is_some())
            .flat_map(|d| [d.key_type, d.value_type])
            .flatten()
            .collect();
        if roots.is_empty() {
            return None;
        }
        let (blob, ids) = encode_types(btf, &roots)?;
        // SAFETY: the blob is a complete BTF image of the given size; no
        // options are passed.
        let fd = unsafe {
            libbpf_sys::bpf_btf_load(blob.as_ptr().cast(), blob.len() as _, std::ptr::null_mut())
        };
        if fd < 0 {
            return None;
        }
        Some(MapBtf {
            // SAFETY: a fresh descriptor we own.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            ids,
        })
    }
}

/// A BTF image of the types `roots` reach, numbered from 1 in the order
/// found; `None` if they reach a kind a map's types have no use for
/// (functions, variables, sections).
fn encode_types(btf: &Btf, roots: &[TypeId]) -> Option<(Vec<u8>, HashMap<TypeId, u32>)> {
    // A global data map's value is its section (a lock in `.data.A` is
    // found through it), so variables and sections are walked too.
    let refs = |k: &BtfKind| match k {
        BtfKind::Func { .. } | BtfKind::DeclTag { .. } => None,
        _ => Some(k.refs()),
    };
    let mut ids: HashMap<TypeId, u32> = HashMap::new();
    let mut order = Vec::new();
    let mut todo: Vec<TypeId> = roots.iter().rev().copied().collect();
    while let Some(t) = todo.pop() {
        if t == 0 || ids.contains_key(&t) {
            continue;
        }
        ids.insert(t, order.len() as u32 + 1);
        order.push(t);
        todo.extend(refs(&btf.get(t)?.kind)?.into_iter().rev());
    }
    let mut strings = vec![0u8];
    let mut names: HashMap<String, u32> = HashMap::new();
    let mut name = |n: &str| -> u32 {
        if n.is_empty() {
            return 0;
        }
        *names.entry(n.to_string()).or_insert_with(|| {
            let at = strings.len() as u32;
            strings.extend(n.bytes());
            strings.push(0);
            at
        })
    };
    let id = |t: TypeId| if t == 0 { 0 } else { ids[&t] };
    let mut w: Vec<u32> = Vec::new();
    let info =
        |kind: u32, vlen: usize, flag: bool| (u32::from(flag) << 31) | (kind << 24) | vlen as u32;
    for &t in &order {
        let ty = btf.get(t)?;
        let n = name(&ty.name);
        match &ty.kind {
            BtfKind::Int {
                size,
                signed,
                bits,
                offset,
            } => w.extend([
                n,
                info(1, 0, false),
                *size,
                (u32::from(*signed) << 24) | (offset << 16) | bits,
            ]),
            BtfKind::Ptr(r) => w.extend([n, info(2, 0, false), id(*r)]),
            BtfKind::Array {
                elem,
                index,
                nelems,
            } => w.extend([n, info(3, 0, false), 0, id(*elem), id(*index), *nelems]),
            BtfKind::Struct { size, members } | BtfKind::Union { size, members } => {
                let union = matches!(ty.kind, BtfKind::Union { .. });
                let bitfields = members.iter().any(|m| m.bitfield_size != 0);
                w.extend([
                    n,
                    info(if union { 5 } else { 4 }, members.len(), bitfields),
                    *size,
                ]);
                for m in members {
                    let off = if bitfields {
                        (m.bitfield_size << 24) | m.bit_offset
                    } else {
                        m.bit_offset
                    };
                    w.extend([name(&m.name), id(m.ty), off]);
                }
            }
            BtfKind::Enum {
                size,
                signed,
                values,
            } => {
                let small = values.iter().all(|(_, v)| i32::try_from(*v).is_ok());
                w.extend([
                    n,
                    info(if small { 6 } else { 19 }, values.len(), *signed),
                    *size,
                ]);
                for (vn, v) in values {
                    w.push(name(vn));
                    if small {
                        w.push(*v as i32 as u32);
                    } else {
                        w.extend([*v as u32, (*v >> 32) as u32]);
                    }
                }
            }
            BtfKind::Fwd { union } => w.extend([n, info(7, 0, *union), 0]),
            BtfKind::Typedef(r) => w.extend([n, info(8, 0, false), id(*r)]),
            BtfKind::Volatile(r) => w.extend([n, info(9, 0, false), id(*r)]),
            BtfKind::Const(r) => w.extend([n, info(10, 0, false), id(*r)]),
            BtfKind::Restrict(r) => w.extend([n, info(11, 0, false), id(*r)]),
            BtfKind::FuncProto { ret, params } => {
                w.extend([n, info(13, params.len(), false), id(*ret)]);
                for (pn, pt) in params {
                    w.extend([name(pn), id(*pt)]);
                }
            }
            BtfKind::Var { ty, linkage } => w.extend([n, info(14, 0, false), id(*ty), *linkage]),
            BtfKind::Datasec { size, vars } => {
                w.extend([n, info(15, vars.len(), false), *size]);
                for v in vars {
                    w.extend([id(v.ty), v.offset, v.size]);
                }
            }
            BtfKind::Float { size } => w.extend([n, info(16, 0, false), *size]),
            BtfKind::TypeTag(r) => w.extend([n, info(18, 0, false), id(*r)]),
            _ => return None,
        }
    }
    let type_len = (w.len() * 4) as u32;
    let mut blob = Vec::new();
    blob.extend(0xeb9f_u16.to_le_bytes());
    blob.extend([1u8, 0]);
    for v in [24, 0, type_len, type_len, strings.len() as u32] {
        blob.extend(u32::to_le_bytes(v));
    }
    blob.extend(w.iter().flat_map(|v| v.to_le_bytes()));
    blob.extend(&strings);
    Some((blob, ids))
}

/// BTF with one `static int fN(void)` per function, loaded into the
/// kernel, and the `bpf_func_info` records naming them.
struct FuncInfo {
    btf: OwnedFd,
    records: Vec<libbpf_sys::bpf_func_info>,
}

impl FuncInfo {
    fn load(starts: &[u32]) -> Result<FuncInfo> {
        const KIND_INT: u32 = 1;
        const KIND_FUNC: u32 = 12;
        const KIND_FUNC_PROTO: u32 = 13;
        let mut strings = b"\0int\0".to_vec();
        let mut types: Vec<u32> = Vec::new();
        // [1] int: 32 bits, signed.
        types.extend([1, KIND_INT << 24, 4, (1 << 24) | 32]);
        // [2] int (void)
        types.extend([0, KIND_FUNC_PROTO << 24, 1]);
        let mut records = Vec::new();
        for (i, &start) in starts.iter().enumerate() {
            let name = strings.len() as u32;
            strings.extend(format!("f{i}\0").bytes());
            records.push(libbpf_sys::bpf_func_info {
                insn_off: start,
                type_id: 3 + i as u32,
            });
            // [3 + i] static int fI(void)
            types.extend([name, KIND_FUNC << 24, 2]);
        }
        Ok(FuncInfo {
            btf: load_btf(&types, &strings, "loading BTF for the program's functions")?,
            records,
        })
    }
}

/// BTF of `[1] int` and `[3] char[value_size]` (`[2]` is `char`): the
/// key and value types a socket storage map must be created with.
fn storage_btf(value_size: u32) -> Result<OwnedFd> {
    const KIND_INT: u32 = 1;
    const KIND_ARRAY: u32 = 3;
    let strings = b"\0int\0char\0".to_vec();
    let mut types: Vec<u32> = Vec::new();
    // [1] int: 32 bits, signed.
    types.extend([1, KIND_INT << 24, 4, (1 << 24) | 32]);
    // [2] char: 8 bits.
    types.extend([5, KIND_INT << 24, 1, 8]);
    // [3] char[value_size], indexed by int.
    types.extend([0, KIND_ARRAY << 24, 0, 2, 1, value_size]);
    load_btf(&types, &strings, "loading BTF for a socket storage map")
}

/// Loads a BTF image made of `types` (words) and `strings` into the kernel.
fn load_btf(types: &[u32], strings: &[u8], what: &str) -> Result<OwnedFd> {
    let type_len = (types.len() * 4) as u32;
    let mut blob = Vec::new();
    blob.extend(0xeb9f_u16.to_le_bytes());
    blob.extend([1u8, 0]);
    for v in [24, 0, type_len, type_len, strings.len() as u32] {
        blob.extend(u32::to_le_bytes(v));
    }
    blob.extend(types.iter().flat_map(|v| v.to_le_bytes()));
    blob.extend(strings);
    // SAFETY: the blob is a complete BTF image of the given size; no
    // options are passed.
    let fd = unsafe {
        libbpf_sys::bpf_btf_load(blob.as_ptr().cast(), blob.len() as _, std::ptr::null_mut())
    };
    let fd = check(what, fd)?;
    // SAFETY: a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `BPF_PROG_LOAD` of raw instruction bytes: first with statistics only
/// (a full log of a big program could overflow any buffer), then, if
/// refused, again with the log of the walk to say why.
pub fn load(bytes: &[u8], name: &str, prog_type: u32, attach: u32, flags: u32) -> Result<Ruling> {
    Ok(load_with(bytes, name, (prog_type, attach, flags), None)?.0)
}

/// [`load`], keeping the program loaded when the kernel accepts it: its
/// descriptor (for `BPF_PROG_TEST_RUN` or attaching), which unloads it when
/// dropped.
pub fn load_keep(
    bytes: &[u8],
    name: &str,
    prog_type: u32,
    attach: u32,
    flags: u32,
) -> Result<(Ruling, Option<OwnedFd>)> {
    load_with(bytes, name, (prog_type, attach, flags), None)
}

fn load_with(
    bytes: &[u8],
    name: &str,
    (prog_type, attach, flags): (u32, u32, u32),
    funcs: Option<&FuncInfo>,
) -> Result<(Ruling, Option<OwnedFd>)> {
    let cname = kernel_name(name);
    let attempt = |level: u32, log: &mut Vec<u8>| -> i32 {
        let mut o = libbpf_sys::bpf_prog_load_opts {
            sz: std::mem::size_of::<libbpf_sys::bpf_prog_load_opts>() as _,
            expected_attach_type: attach,
            prog_flags: flags,
            log_level: level,
            log_size: log.len() as u32,
            log_buf: log.as_mut_ptr().cast(),
            ..Default::default()
        };
        if let Some(f) = funcs {
            o.prog_btf_fd = f.btf.as_raw_fd() as u32;
            o.func_info = f.records.as_ptr().cast();
            o.func_info_cnt = f.records.len() as u32;
            o.func_info_rec_size = std::mem::size_of::<libbpf_sys::bpf_func_info>() as u32;
        }
        // SAFETY: `bytes` holds whole 8-byte instructions in the kernel's
        // layout; the strings are C strings; the log buffer outlives the
        // call and its size is given.
        unsafe {
            libbpf_sys::bpf_prog_load(
                prog_type,
                cname.as_ptr(),
                c"GPL".as_ptr(),
                bytes.as_ptr().cast(),
                (bytes.len() / 8) as _,
                &mut o,
            )
        }
    };
    let text = |log: &[u8]| {
        String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(log.len())])
            .into_owned()
    };
    let mut log = vec![0u8; 1 << 16];
    // BPF_LOG_STATS.
    let fd = attempt(4, &mut log);
    if fd >= 0 {
        // SAFETY: a fresh descriptor we own; dropping it unloads the program.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        return Ok((verdict(true, text(&log)), Some(fd)));
    }
    let errno = -fd;
    if errno == libc::EPERM && !crate::privileged() {
        return Err(Error::errno("loading a program", errno));
    }
    let mut log = vec![0u8; 64 << 20];
    let fd = attempt(1, &mut log);
    if fd >= 0 {
        // SAFETY: as above.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        return Ok((verdict(true, text(&log)), Some(fd)));
    }
    Ok((verdict(false, text(&log)), None))
}

fn verdict(accepted: bool, log: String) -> Ruling {
    let number_after = |key: &str| -> Option<u64> {
        let at = log.rfind(key)? + key.len();
        log[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Ruling {
        accepted,
        micros: number_after("verification time "),
        insns_processed: number_after("processed "),
        log,
    }
}
