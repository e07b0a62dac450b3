//! XDP attachments owned by the process: a bpf link (`BPF_LINK_CREATE`
//! with the `BPF_XDP` attach type) whose descriptor is the attachment, so
//! that it goes away when the process does, however it ends (SIGKILL
//! included). Before attaching, a program left on the interface by an
//! earlier sluice that was killed (one of [`OWN_PROGRAMS`], attached the
//! old way through netlink, held by no bpf link and by no live process) is
//! taken over, as xdp-loader's dispatcher replaces its own; anything else
//! there is refused, as [`crate::attach::xdp_attach`] does.
//!
//! `sluice attach` keeps netlink attachments: what the user attaches on
//! purpose outlives the process.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::attach::{self, XdpAttachment, XdpMode};
use crate::error::{Error, ErrorKind, Result};
use crate::links::xdp_links;
use crate::netdev;

/// The programs sluice attaches for itself (the datapath's redirect
/// program and the switch's fast path), by function name: found on an
/// interface with nothing holding them, they are leftovers of a sluice
/// that was killed and may be replaced.
pub const OWN_PROGRAMS: &[&str] = &["sluice_xsk", "sluice_switch"];

/// An XDP program attached through a bpf link of this process; detached
/// when dropped (or when the process ends).
#[derive(Debug)]
pub struct XdpLink {
    fd: OwnedFd,
    pub dev: String,
    pub ifindex: u32,
    pub prog_id: u32,
    pub link_id: u32,
    /// A stale program of sluice's own that was detached to make room.
    pub took_over: Option<TookOver>,
}

/// A leftover program replaced by [`xdp_attach_owned`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TookOver {
    pub prog_id: u32,
    pub name: String,
    pub mode: XdpMode,
}

impl XdpLink {
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Attaches `prog_fd` to `dev` in `mode` through a bpf link of this
/// process. A program already there is refused (naming who holds it),
/// unless it is a stale one of sluice's own, which is detached first.
pub fn xdp_attach_owned(dev: &str, prog_fd: RawFd, mode: XdpMode) -> Result<XdpLink> {
    crate::log::install();
    let ifindex = netdev::ifindex(dev)?;
    let mut took_over = None;
    if let Some(a) = attach::xdp_query(ifindex)?.first().cloned() {
        took_over = Some(take_over(dev, ifindex, &a)?);
    }
    // SAFETY: plain old data; zero is valid.
    let mut opts: libbpf_sys::bpf_link_create_opts = unsafe { std::mem::zeroed() };
    opts.sz = std::mem::size_of_val(&opts) as _;
    opts.flags = mode.flag();
    // SAFETY: `opts` is initialised and sized; the descriptors are ours.
    let ret =
        unsafe { libbpf_sys::bpf_link_create(prog_fd, ifindex as i32, libbpf_sys::BPF_XDP, &opts) };
    if ret < 0 {
        return Err(crate::attach::xdp_attach_error(
            dev,
            mode,
            " (bpf link)",
            -ret,
        ));
    }
    // SAFETY: the kernel just gave us this descriptor; nobody else owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(ret) };
    let (link_id, prog_id) = link_ids(fd.as_raw_fd())?;
    Ok(XdpLink {
        fd,
        dev: dev.into(),
        ifindex,
        prog_id,
        link_id,
        took_over,
    })
}

/// Makes room for our program where `a` is attached: only a stale
/// program of sluice's own goes; anything else is an error naming it.
fn take_over(dev: &str, ifindex: u32, a: &XdpAttachment) -> Result<TookOver> {
    let name = attach::prog_by_id(a.prog_id)
        .map(|p| p.name)
        .unwrap_or_default();
    let what = format!(
        "{dev} already has XDP program id {}{} attached in {} mode",
        a.prog_id,
        if name.is_empty() {
            String::new()
        } else {
            format!(" ({name})")
        },
        a.mode.name()
    );
    if let Some(link) = xdp_links()?
        .into_iter()
        .find(|l| l.prog_id == a.prog_id && l.ifindex == ifindex)
    {
        let holder = holders("link_id", link.link_id)
            .first()
            .map(|pid| format!(" of process {pid}"))
            .unwrap_or_default();
        return Err(Error::new(
            ErrorKind::Busy,
            format!(
                "{what} through bpf link id {}{holder}: it goes when that process ends",
                link.link_id
            ),
        ));
    }
    if !OWN_PROGRAMS.contains(&name.as_str()) {
        return Err(Error::new(
            ErrorKind::Busy,
            format!("{what}: detach it first (sluice detach --dev {dev})"),
        ));
    }
    if let Some(pid) = holders("prog_id", a.prog_id).first() {
        return Err(Error::new(
            ErrorKind::Busy,
            format!("{what}, held by running process {pid}: stop it first"),
        ));
    }
    // SAFETY: a null opts pointer is allowed.
    let ret =
        unsafe { libbpf_sys::bpf_xdp_detach(ifindex as i32, a.mode.flag(), std::ptr::null()) };
    crate::error::check(
        &format!("detaching the stale XDP program {} from {dev}", a.prog_id),
        ret,
    )?;
    Ok(TookOver {
        prog_id: a.prog_id,
        name,
        mode: a.mode,
    })
}

/// The link id and program id of link descriptor `fd`.
fn link_ids(fd: RawFd) -> Result<(u32, u32)> {
    // SAFETY: plain old data; zero is valid.
    let mut info: libbpf_sys::bpf_link_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of_val(&info) as u32;
    // SAFETY: `info` is writable for `len` bytes.
    let ret = unsafe { libbpf_sys::bpf_link_get_info_by_fd(fd, &mut info, &mut len) };
    crate::error::check("reading bpf link info", ret)?;
    Ok((info.id, info.prog_id))
}

/// The processes holding a bpf descriptor whose fdinfo says `key: id`
/// (`prog_id` for programs, `link_id` for links), by PID.
fn holders(key: &str, id: u32) -> Vec<u32> {
    let me = std::process::id();
    let want = format!("{key}:\t{id}");
    let mut pids = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        let held = fds.flatten().any(|fd| {
            let bpf = std::fs::read_link(fd.path())
                .is_ok_and(|t| t.to_string_lossy().starts_with("anon_inode:bpf"));
            bpf && std::fs::read_to_string(p.path().join("fdinfo").join(fd.file_name()))
                .is_ok_and(|info| info.lines().any(|l| l == want))
        });
        if held {
            pids.push(pid);
        }
    }
    pids
}
