//! The XSK redirect program (`programs/tools/xsk.c`), loaded through the
//! kernel backend and attached to the port; each socket's descriptor goes
//! into its XSKMAP at the socket's queue. Detached again on drop, if it is
//! still the program attached there.

use std::os::fd::RawFd;

use kernel::attach::{self, XdpMode};
use kernel::{KernelObject, MapInfo};

use crate::DatapathError;

pub struct XskRedirect {
    dev: String,
    prog_id: u32,
    map: MapInfo,
    _object: KernelObject,
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
            _object: object,
        })
    }

    /// Frames of `queue` go to the socket `fd` from now on.
    pub fn register(&self, queue: u32, fd: RawFd) -> Result<(), DatapathError> {
        self.map
            .update(&queue.to_le_bytes(), &(fd as u32).to_le_bytes(), 0)?;
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
