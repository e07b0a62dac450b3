//! The XSK redirect program (`programs/tools/xsk.c`), loaded through the
//! kernel backend and attached to the port; each socket's descriptor goes
//! into its XSKMAP at the socket's queue. Or a program of the caller's
//! ([`OwnProgram`], one for all ports) that sends what is for user space
//! to its XSKMAP at the port's base plus the queue. Detached again on
//! drop, if it is still the program attached there.

use std::os::fd::RawFd;

use kernel::attach::{self, XdpMode};
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
    dev: String,
    prog_id: u32,
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
        attach::xdp_attach(dev, prog.fd, mode)?;
        let prog_id = attach::prog_by_fd(prog.fd)?.id;
        Ok(XskRedirect {
            dev: dev.into(),
            prog_id,
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
        attach::xdp_attach(dev, own.prog_fd, mode)?;
        Ok(XskRedirect {
            dev: dev.into(),
            prog_id: attach::prog_by_fd(own.prog_fd)?.id,
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

impl Drop for XskRedirect {
    fn drop(&mut self) {
        let Ok(ifindex) = kernel::netdev::ifindex(&self.dev) else {
            return;
        };
        let ours = attach::xdp_query(ifindex)
            .map(|a| a.iter().any(|a| a.prog_id == self.prog_id))
            .unwrap_or(false);
        if ours {
            let _ = attach::xdp_detach(&self.dev);
        }
    }
}
