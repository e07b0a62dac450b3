//! An xPF instance running in the kernel on an interface's receive path
//! (the XDP form), its program and memory maps pinned in a bpffs
//! directory, so that any process works on its memory while packets
//! arrive: the bookkeeping (active and allocated blocks) lives in the
//! `xpf_active` map beside the index the program reads.

use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use cbpf::Insn;
use cbpf::xpf::{self, Form, MapBlocks, Memory, XpfOptions};
use kernel::attach::XdpMode;

use crate::error::XpfError;
use crate::runner::KernelMaps;

const MEMORY: &str = "xpf_memory";
const ACTIVE: &str = "xpf_active";
const PROGRAM: &str = "xpf_prog";

/// The memory of an instance pinned in a directory.
pub type PinnedMemory = Memory<MapBlocks<KernelMaps>>;

fn pins(dir: &Path) -> [PathBuf; 3] {
    [MEMORY, ACTIVE, PROGRAM].map(|n| dir.join(n))
}

/// Loads `prog` for an instance of `opts` into the kernel (the XDP form),
/// pins it and its maps in `dir` (created), sets up its memory and
/// attaches it to `dev` in `mode`. On failure nothing stays behind.
pub fn xpf_attach(
    prog: &[Insn],
    opts: XpfOptions,
    dev: &str,
    mode: XdpMode,
    dir: &Path,
) -> Result<(), XpfError> {
    let translated =
        xpf::translate(prog, &opts, Form::Xdp).map_err(|e| XpfError::Program(e.to_string()))?;
    let object = translated.object("xpf");
    let loaded = kernel::verify::load_program(&object.programs[0], &object.maps, None, &|_| None)
        .map_err(XpfError::Load)?;
    let Some(prog_fd) = loaded.program else {
        return Err(XpfError::KernelRefuses(
            loaded.ruling.log.trim_end().to_string(),
        ));
    };
    if pins(dir).iter().any(|p| p.exists()) {
        return Err(XpfError::Unavailable(format!(
            "{} already holds an xPF instance: unload it first (sluice xpf unload {})",
            dir.display(),
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|source| XpfError::File {
        path: dir.to_path_buf(),
        source,
    })?;
    let pinned = || -> Result<(), XpfError> {
        let [mem_pin, active_pin, prog_pin] = pins(dir);
        kernel::kmap::pin_fd(loaded.maps[0].as_raw_fd(), &mem_pin)?;
        kernel::kmap::pin_fd(loaded.maps[1].as_raw_fd(), &active_pin)?;
        kernel::kmap::pin_fd(prog_fd.as_raw_fd(), &prog_pin)?;
        Ok(())
    };
    let result = pinned().and_then(|()| {
        let maps = KernelMaps::new(loaded.maps)?;
        Memory::new(MapBlocks(maps), opts.words, opts.blocks)
            .map_err(|e| XpfError::Memory(e.to_string()))?;
        Ok(kernel::attach::xdp_attach(dev, prog_fd.as_raw_fd(), mode)?)
    });
    if result.is_err() {
        remove_pins(dir);
    }
    result
}

fn remove_pins(dir: &Path) {
    for p in pins(dir) {
        let _ = std::fs::remove_file(p);
    }
    let _ = std::fs::remove_dir(dir);
}

/// The memory of the instance pinned in `dir`, as its loader left it.
pub fn xpf_open(dir: &Path) -> Result<PinnedMemory, XpfError> {
    let [mem_pin, active_pin, _] = pins(dir);
    let open = |p: &Path| {
        kernel::kmap::open_pin(p).map_err(|e| {
            XpfError::Unavailable(format!(
                "{e}: {} holds no xPF instance (sluice xpf load ... --pin {})",
                dir.display(),
                dir.display()
            ))
        })
    };
    let maps = KernelMaps::new(vec![open(&mem_pin)?, open(&active_pin)?])?;
    let (value_size, blocks) = maps.memory_shape();
    Memory::open(MapBlocks(maps), value_size / 4, blocks)
        .map_err(|e| XpfError::Memory(e.to_string()))
}

/// Detaches the instance pinned in `dir` from every interface it is
/// attached to and removes its pins; the interfaces it was on.
pub fn xpf_detach(dir: &Path) -> Result<Vec<String>, XpfError> {
    let [_, _, prog_pin] = pins(dir);
    let fd = kernel::kmap::open_pin(&prog_pin).map_err(|e| {
        XpfError::Unavailable(format!("{e}: {} holds no xPF instance", dir.display()))
    })?;
    let id = kernel::attach::prog_by_fd(fd.as_raw_fd())?.id;
    let mut devs = Vec::new();
    for a in kernel::attach::status()? {
        if a.prog.id == id && !a.hook.starts_with("tc") {
            kernel::attach::xdp_detach(&a.dev)?;
            devs.push(a.dev);
        }
    }
    remove_pins(dir);
    Ok(devs)
}
