//! Attaching programs to interfaces: XDP (native or generic/skb mode, like
//! `xdp-loader`) and tc (a clsact qdisc with a direct-action bpf filter,
//! like `tc filter add ... bpf da`), and what is attached where.

use std::os::fd::RawFd;

use crate::error::{Error, ErrorKind, Result, check};
use crate::netdev;

/// XDP attach modes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum XdpMode {
    /// In the driver (`XDP_FLAGS_DRV_MODE`).
    Native,
    /// Generic XDP on the skb path (`XDP_FLAGS_SKB_MODE`), any device.
    Skb,
}

impl XdpMode {
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Native => "native",
            XdpMode::Skb => "skb",
        }
    }
    pub(crate) fn flag(self) -> u32 {
        match self {
            XdpMode::Native => libbpf_sys::XDP_FLAGS_DRV_MODE,
            XdpMode::Skb => libbpf_sys::XDP_FLAGS_SKB_MODE,
        }
    }
}

/// tc hook points of the clsact qdisc.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TcDir {
    Ingress,
    Egress,
}

impl TcDir {
    pub fn name(self) -> &'static str {
        match self {
            TcDir::Ingress => "ingress",
            TcDir::Egress => "egress",
        }
    }
    fn point(self) -> libbpf_sys::bpf_tc_attach_point {
        match self {
            TcDir::Ingress => libbpf_sys::BPF_TC_INGRESS,
            TcDir::Egress => libbpf_sys::BPF_TC_EGRESS,
        }
    }
}

/// The filter handle and priority sluice uses on clsact, so it finds its
/// own filter again (other filters on the qdisc are left alone).
pub const TC_HANDLE: u32 = 0x51;
pub const TC_PRIORITY: u32 = 0x51;

/// Attaches XDP program `prog_fd` to `dev`; fails if a program is there.
pub fn xdp_attach(dev: &str, prog_fd: RawFd, mode: XdpMode) -> Result<()> {
    crate::log::install();
    let ifindex = netdev::ifindex(dev)?;
    if let Some(a) = xdp_query(ifindex)?.first() {
        return Err(Error::new(
            ErrorKind::Busy,
            format!(
                "{dev} already has XDP program id {} attached in {} mode: {}",
                a.prog_id,
                a.mode.name(),
                how_to_detach(dev, ifindex, a.prog_id)
            ),
        ));
    }
    let flags = mode.flag() | libbpf_sys::XDP_FLAGS_UPDATE_IF_NOEXIST;
    // SAFETY: a null opts pointer is allowed.
    let ret =
        unsafe { libbpf_sys::bpf_xdp_attach(ifindex as i32, prog_fd, flags, std::ptr::null()) };
    if ret < 0 {
        return Err(xdp_attach_error(dev, mode, "", -ret));
    }
    Ok(())
}

/// The error of a failed XDP attach (`how`: how it was attempted, e.g.
/// " (bpf link)"), saying what to try when native mode is refused.
pub(crate) fn xdp_attach_error(dev: &str, mode: XdpMode, how: &str, errno: i32) -> Error {
    let mut e = Error::errno(
        &format!("attaching XDP to {dev} in {} mode{how}", mode.name()),
        errno,
    );
    if mode == XdpMode::Native && matches!(errno, libc::EOPNOTSUPP | libc::EINVAL) {
        e.kind = ErrorKind::NotSupported;
        e.message.push_str(&format!(
            " (the driver of {dev} has no native XDP or refuses this program: try --mode skb)"
        ));
    }
    e
}

/// One attached XDP program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdpAttachment {
    pub mode: XdpMode,
    pub prog_id: u32,
}

/// The XDP programs attached to interface `ifindex`.
pub fn xdp_query(ifindex: u32) -> Result<Vec<XdpAttachment>> {
    crate::log::install();
    // SAFETY: plain old data; zero is valid.
    let mut opts: libbpf_sys::bpf_xdp_query_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of_val(&opts) as _;
    // SAFETY: `opts` is writable and sized.
    let ret = unsafe { libbpf_sys::bpf_xdp_query(ifindex as i32, 0, &mut opts) };
    check("querying XDP programs", ret)?;
    let mut out = Vec::new();
    if opts.drv_prog_id != 0 {
        out.push(XdpAttachment {
            mode: XdpMode::Native,
            prog_id: opts.drv_prog_id,
        });
    }
    if opts.skb_prog_id != 0 {
        out.push(XdpAttachment {
            mode: XdpMode::Skb,
            prog_id: opts.skb_prog_id,
        });
    }
    Ok(out)
}

/// What to do about program `prog_id` on `dev`: detach it, or, when a
/// bpf link of a running process holds it (a datapath or switch), end
/// that process.
fn how_to_detach(dev: &str, ifindex: u32, prog_id: u32) -> String {
    match crate::links::link_on(ifindex, prog_id) {
        Ok(Some(l)) => format!(
            "it is held by bpf link id {} of a running process (a sluice datapath or switch?) and goes when that process ends",
            l.link_id
        ),
        _ => format!("detach it first (sluice detach --dev {dev})"),
    }
}

/// Detaches whatever XDP program `dev` has; returns what was detached.
/// A program held by a bpf link of a running process cannot be detached
/// this way: the error says so.
pub fn xdp_detach(dev: &str) -> Result<Vec<XdpAttachment>> {
    crate::log::install();
    let ifindex = netdev::ifindex(dev)?;
    let attached = xdp_query(ifindex)?;
    for a in &attached {
        if let Ok(Some(l)) = crate::links::link_on(ifindex, a.prog_id) {
            return Err(Error::new(
                ErrorKind::Busy,
                format!(
                    "XDP program id {} on {dev} is held by bpf link id {} of a running process (a sluice datapath or switch?): it goes when that process ends",
                    a.prog_id, l.link_id
                ),
            ));
        }
        // SAFETY: a null opts pointer is allowed.
        let ret =
            unsafe { libbpf_sys::bpf_xdp_detach(ifindex as i32, a.mode.flag(), std::ptr::null()) };
        check(&format!("detaching XDP from {dev}"), ret)?;
    }
    Ok(attached)
}

fn tc_hook(ifindex: u32, dir: TcDir) -> libbpf_sys::bpf_tc_hook {
    // SAFETY: plain old data; zero is valid.
    let mut hook: libbpf_sys::bpf_tc_hook = unsafe { std::mem::zeroed() };
    hook.sz = std::mem::size_of_val(&hook) as _;
    hook.ifindex = ifindex as i32;
    hook.attach_point = dir.point();
    hook
}

fn tc_opts(prog_fd: RawFd) -> libbpf_sys::bpf_tc_opts {
    // SAFETY: plain old data; zero is valid.
    let mut opts: libbpf_sys::bpf_tc_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of_val(&opts) as _;
    opts.prog_fd = prog_fd;
    opts.handle = TC_HANDLE;
    opts.priority = TC_PRIORITY;
    opts
}

/// Adds a clsact qdisc to `dev` (if missing) and attaches `prog_fd` as a
/// direct-action filter on `dir`.
pub fn tc_attach(dev: &str, prog_fd: RawFd, dir: TcDir) -> Result<()> {
    crate::log::install();
    let ifindex = netdev::ifindex(dev)?;
    if let Some(id) = tc_query(ifindex, dir)? {
        return Err(Error::new(
            ErrorKind::Busy,
            format!(
                "{dev} already has sluice's tc {} filter (program id {id}): detach it first (sluice detach --dev {dev} --tc {})",
                dir.name(),
                dir.name()
            ),
        ));
    }
    let mut hook = tc_hook(ifindex, dir);
    // SAFETY: `hook` is initialised and sized.
    let ret = unsafe { libbpf_sys::bpf_tc_hook_create(&mut hook) };
    if ret < 0 && -ret != libc::EEXIST {
        return Err(Error::errno(
            &format!("adding a clsact qdisc to {dev}"),
            -ret,
        ));
    }
    let mut opts = tc_opts(prog_fd);
    // SAFETY: both structures are initialised and sized.
    let ret = unsafe { libbpf_sys::bpf_tc_attach(&hook, &mut opts) };
    check(
        &format!("attaching the tc {} filter to {dev}", dir.name()),
        ret,
    )
    .map(drop)
}

/// The program id of sluice's filter on `dir`, if there is one.
pub fn tc_query(ifindex: u32, dir: TcDir) -> Result<Option<u32>> {
    crate::log::install();
    let hook = tc_hook(ifindex, dir);
    let mut opts = tc_opts(0);
    opts.prog_fd = 0;
    // SAFETY: both structures are initialised and sized.
    let ret = unsafe { libbpf_sys::bpf_tc_query(&hook, &mut opts) };
    match -ret {
        0 => Ok(Some(opts.prog_id)),
        // No qdisc (EINVAL on older kernels) or no such filter.
        libc::ENOENT | libc::EINVAL => Ok(None),
        e => Err(Error::errno("querying tc filters", e)),
    }
}

/// Removes sluice's filter from `dir`; with `qdisc`, also the clsact
/// qdisc (and every other filter on it, as `tc qdisc del ... clsact`).
pub fn tc_detach(dev: &str, dir: TcDir, qdisc: bool) -> Result<Option<u32>> {
    crate::log::install();
    let ifindex = netdev::ifindex(dev)?;
    let id = tc_query(ifindex, dir)?;
    let hook = tc_hook(ifindex, dir);
    if id.is_some() {
        let opts = tc_opts(0);
        // SAFETY: both structures are initialised and sized.
        let ret = unsafe { libbpf_sys::bpf_tc_detach(&hook, &opts) };
        check(
            &format!("detaching the tc {} filter from {dev}", dir.name()),
            ret,
        )?;
    }
    if qdisc {
        let mut all = tc_hook(ifindex, dir);
        all.attach_point = libbpf_sys::BPF_TC_INGRESS | libbpf_sys::BPF_TC_EGRESS;
        // SAFETY: `all` is initialised and sized.
        let ret = unsafe { libbpf_sys::bpf_tc_hook_destroy(&mut all) };
        if ret < 0 && !matches!(-ret, libc::ENOENT | libc::EINVAL) {
            return Err(Error::errno(
                &format!("removing the clsact qdisc of {dev}"),
                -ret,
            ));
        }
    }
    Ok(id)
}

/// What the kernel says about a loaded program.
#[derive(Clone, Debug, Default)]
pub struct ProgSummary {
    pub id: u32,
    pub name: String,
    pub tag: String,
    pub prog_type: u32,
    pub map_ids: Vec<u32>,
}

/// Information about program `id` (as `bpftool prog show id N`).
pub fn prog_by_id(id: u32) -> Result<ProgSummary> {
    // SAFETY: no pointers.
    let fd = unsafe { libbpf_sys::bpf_prog_get_fd_by_id(id) };
    if fd < 0 {
        return Err(Error::errno(&format!("opening program id {id}"), -fd));
    }
    let r = prog_by_fd(fd);
    // SAFETY: we own `fd`.
    unsafe { libc::close(fd) };
    r
}

pub fn prog_by_fd(fd: RawFd) -> Result<ProgSummary> {
    // SAFETY: plain old data; zero is valid.
    let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is writable for `len` bytes.
    let ret = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
    check("reading program info", ret)?;
    let mut map_ids = vec![0u32; info.nr_map_ids as usize];
    if !map_ids.is_empty() {
        let n = map_ids.len() as u32;
        // SAFETY: plain old data; zero is valid.
        info = unsafe { std::mem::zeroed() };
        info.nr_map_ids = n;
        info.map_ids = map_ids.as_mut_ptr() as u64;
        len = std::mem::size_of_val(&info) as u32;
        // SAFETY: `map_ids` has room for `n` ids, as nr_map_ids says.
        let ret = unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) };
        check("reading program map ids", ret)?;
        map_ids.truncate(info.nr_map_ids.min(n) as usize);
    }
    // The kernel keeps 15 bytes of the name; the program's BTF has it all.
    let name = full_name(fd, &info).unwrap_or_else(|| crate::error::c_name(&info.name));
    Ok(ProgSummary {
        id: info.id,
        name,
        tag: info.tag.iter().map(|b| format!("{b:02x}")).collect(),
        prog_type: info.type_,
        map_ids,
    })
}

/// The program's function name from its BTF (the first func_info record).
fn full_name(fd: RawFd, info: &libbpf_sys::bpf_prog_info) -> Option<String> {
    if info.btf_id == 0 || info.nr_func_info == 0 {
        return None;
    }
    let mut func = libbpf_sys::bpf_func_info {
        insn_off: 0,
        type_id: 0,
    };
    // SAFETY: plain old data; zero is valid.
    let mut q: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
    q.nr_func_info = 1;
    q.func_info_rec_size = std::mem::size_of_val(&func) as u32;
    q.func_info = (&mut func as *mut libbpf_sys::bpf_func_info) as u64;
    let mut len = std::mem::size_of_val(&q) as u32;
    // SAFETY: `func` has room for the one record asked for.
    if unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut q, &mut len) } < 0 {
        return None;
    }
    // SAFETY: an owned btf object or an error pointer, freed below; the
    // name is copied out before.
    unsafe {
        let btf = libbpf_sys::btf__load_from_kernel_by_id(info.btf_id);
        if btf.is_null() || libbpf_sys::libbpf_get_error(btf.cast()) != 0 {
            return None;
        }
        let t = libbpf_sys::btf__type_by_id(btf, func.type_id);
        let name = if t.is_null() {
            None
        } else {
            let p = libbpf_sys::btf__name_by_offset(btf, (*t).name_off);
            (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        libbpf_sys::btf__free(btf);
        name.filter(|n| !n.is_empty())
    }
}

/// One line of `sluice status`.
#[derive(Clone, Debug)]
pub struct Attached {
    pub dev: String,
    pub ifindex: u32,
    /// `native`, `skb`, `tc ingress`, `tc egress`.
    pub hook: String,
    pub prog: ProgSummary,
}

/// Every XDP program, and sluice's tc filters, on every interface.
pub fn status() -> Result<Vec<Attached>> {
    crate::log::install();
    let mut out = Vec::new();
    for (ifindex, dev) in netdev::interfaces() {
        for a in xdp_query(ifindex)? {
            out.push(Attached {
                dev: dev.clone(),
                ifindex,
                hook: a.mode.name().to_string(),
                prog: prog_by_id(a.prog_id)?,
            });
        }
        for dir in [TcDir::Ingress, TcDir::Egress] {
            if let Some(id) = tc_query(ifindex, dir)? {
                out.push(Attached {
                    dev: dev.clone(),
                    ifindex,
                    hook: format!("tc {}", dir.name()),
                    prog: prog_by_id(id)?,
                });
            }
        }
    }
    Ok(out)
}
