//! The XSK redirect program (`programs/tools/xsk.c`), loaded through the
//! kernel backend and attached to the port; each socket's descriptor goes
//! into its XSKMAP at the socket's queue. Or a program of the caller's
//! ([`OwnProgram`], one for all ports) that sends what is for user space
//! to its XSKMAP at the port's base plus the queue. Attached through a
//! bpf link of this process (`kernel::xdp_link`): detached on drop, and by
//! the kernel when the process ends, even by SIGKILL; a stale program of
//! an earlier sluice that was killed is taken over (and said so on stderr).

use std::os::fd::RawFd;

use kernel::attach::XdpMode;
use kernel::xdp_link::{self, XdpLink};
use kernel::{KernelObject, MapInfo};

use crate::DatapathError;

/// An XDP program the caller loaded (and keeps loaded for the run), in
/// place of the plain redirect program: frames for user space go to its
/// XSKMAP `xsks` at `port position * stride + queue`.
#[derive(Clone, Debug)]
pub struct OwnProgram {
    pub prog_fd: RawFd,
    pub xsks: MapInfo,
    pub stride: u32,
}

pub struct XskRedirect {
    /// The attachment; closing it detaches the program.
    _link: XdpLink,
    map: MapInfo,
    /// Added to the queue for the XSKMAP index.
    base: u32,
    _object: Option<KernelObject>,
}

impl XskRedirect {
    /// Loads the program and attaches it to `dev` in `mode`.
    pub fn attach(dev: &str, mode: XdpMode) -> Result<XskRedirect, DatapathError> {
        let bytes = programs::tool("xsk")
            .ok_or_else(|| DatapathError::Setup("the xsk tool program was not built".into()))?;
        let object = KernelObject::load(bytes, "xsk", &kernel::LoadOptions::default())?;
        let prog = object.program("sluice_xsk")?;
        let map = object
            .maps()?
            .into_iter()
            .find(|m| m.name == "xsks")
            .ok_or_else(|| DatapathError::Setup("the xsk program has no xsks map".into()))?;
        Ok(XskRedirect {
            _link: attach_owned(dev, prog.fd, mode)?,
            map,
            base: 0,
            _object: Some(object),
        })
    }

    /// Attaches `own` to `dev`, the `position`th port of the run.
    pub fn attach_own(
        dev: &str,
        mode: XdpMode,
        own: &OwnProgram,
        position: u32,
    ) -> Result<XskRedirect, DatapathError> {
        Ok(XskRedirect {
            _link: attach_owned(dev, own.prog_fd, mode)?,
            map: own.xsks.clone(),
            base: position * own.stride,
            _object: None,
        })
    }

    /// Frames of `queue` go to the socket `fd` from now on.
    pub fn register(&self, queue: u32, fd: RawFd) -> Result<(), DatapathError> {
        let index = self.base + queue;
        self.map
            .update(&index.to_le_bytes(), &(fd as u32).to_le_bytes(), 0)?;
        Ok(())
    }
}

/// Attaches through a bpf link; tells of a stale program taken over.
fn attach_owned(dev: &str, prog_fd: RawFd, mode: XdpMode) -> Result<XdpLink, DatapathError> {
    let link = xdp_link::xdp_attach_owned(dev, prog_fd, mode)?;
    if let Some(t) = &link.took_over {
        eprintln!(
            "sluice: replaced the stale XDP program id {} ({}, {} mode) on {dev}, left by a sluice that ended without detaching it",
            t.prog_id,
            t.name,
            t.mode.name()
        );
    }
    Ok(link)
}
