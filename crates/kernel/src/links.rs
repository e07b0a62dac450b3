//! The XDP bpf links the kernel has, in every namespace: which link holds
//! which program on which interface (as `bpftool link` lists them). Both
//! ways of attaching read them: `attach.rs` to say why a program cannot be
//! detached through netlink, `xdp_link.rs` to find a leftover of a killed
//! sluice.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::error::Result;

/// One XDP bpf link in the system (any namespace).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct XdpLinkInfo {
    pub link_id: u32,
    pub prog_id: u32,
    pub ifindex: u32,
}

/// Every XDP bpf link the kernel has (in every namespace: the ifindex is
/// that of the link's own namespace).
pub fn xdp_links() -> Result<Vec<XdpLinkInfo>> {
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        let mut next = 0u32;
        // SAFETY: `next` is writable.
        let ret = unsafe { libbpf_sys::bpf_link_get_next_id(id, &mut next) };
        if ret < 0 {
            // ENOENT: no more links.
            break;
        }
        id = next;
        // SAFETY: no pointers.
        let fd = unsafe { libbpf_sys::bpf_link_get_fd_by_id(id) };
        if fd < 0 {
            // Gone meanwhile.
            continue;
        }
        // SAFETY: the descriptor was just opened for us.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: plain old data; zero is valid.
        let mut info: libbpf_sys::bpf_link_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: `info` is writable for `len` bytes.
        let ret =
            unsafe { libbpf_sys::bpf_link_get_info_by_fd(fd.as_raw_fd(), &mut info, &mut len) };
        if ret < 0 || info.type_ != libbpf_sys::BPF_LINK_TYPE_XDP {
            continue;
        }
        // SAFETY: the union member of an XDP link.
        let ifindex = unsafe { info.__bindgen_anon_1.xdp.ifindex };
        out.push(XdpLinkInfo {
            link_id: info.id,
            prog_id: info.prog_id,
            ifindex,
        });
    }
    Ok(out)
}

/// The bpf link holding the XDP program on `ifindex`, if one does (a
/// netlink detach cannot remove it).
pub fn link_on(ifindex: u32, prog_id: u32) -> Result<Option<XdpLinkInfo>> {
    Ok(xdp_links()?
        .into_iter()
        .find(|l| l.ifindex == ifindex && l.prog_id == prog_id))
}
