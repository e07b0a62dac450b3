//! xPF instances on every engine, fed from any [`Source`]: the xPF
//! interpreter ([`cbpf::xpf::Instance`]); the eBPF translation in sluice's
//! VM, interpreted or (after sluice's verifier) JIT-compiled; and the
//! translation loaded into the kernel, each packet through
//! `BPF_PROG_TEST_RUN`, the memory maps read and written through the
//! kernel. Whatever the engine, user space works on the instance's memory
//! through the same handle operations ([`MemoryOps`]), between packets.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

use cbpf::xpf::{
    self, Form, Handle, Instance, MapBlocks, MapValueError, MapValues, Memory, MemoryOps, Switch,
    XpfOptions,
};
use cbpf::{Insn, Meta};
use runtime::{Hook, Image, LoadOptions, PacketMeta};

use pipeline::{Source, for_each_packet};

use crate::error::XpfError;

/// Where an instance runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XpfEngine {
    /// The xPF interpreter.
    Interp,
    /// The eBPF translation in sluice's VM interpreter.
    Vm,
    /// The eBPF translation in sluice's JIT, after sluice's verifier.
    Jit,
    /// The eBPF translation in the kernel (root or CAP_BPF).
    Kernel,
}

/// Sluice's maps as the translation's memory.
struct VmMaps(Arc<[maps::Map]>);

impl MapValues for VmMaps {
    fn value(&self, map: usize, key: u32) -> Result<Vec<u8>, MapValueError> {
        self.0[map]
            .user_lookup(&key.to_ne_bytes())
            .map_err(|e| MapValueError::Store(format!("{e:?}")))
    }
    fn set_value(&mut self, map: usize, key: u32, value: &[u8]) -> Result<(), MapValueError> {
        self.0[map]
            .user_update(&key.to_ne_bytes(), value, 0)
            .map_err(|e| MapValueError::Store(format!("{e:?}")))
    }
    fn read_part(
        &self,
        map: usize,
        key: u32,
        at: usize,
        out: &mut [u8],
    ) -> Result<(), MapValueError> {
        self.0[map]
            .array_read(key, at, out)
            .map_err(|e| MapValueError::Store(format!("{e:?}")))
    }
    fn write_part(
        &mut self,
        map: usize,
        key: u32,
        at: usize,
        bytes: &[u8],
    ) -> Result<(), MapValueError> {
        self.0[map]
            .array_write(key, at, bytes)
            .map_err(|e| MapValueError::Store(format!("{e:?}")))
    }
}

/// The kernel's maps as the translation's memory (descriptors of loaded
/// or pinned maps, in the translation's order).
pub struct KernelMaps(Vec<(kernel::MapInfo, OwnedFd)>);

impl KernelMaps {
    pub(crate) fn new(fds: Vec<OwnedFd>) -> Result<KernelMaps, XpfError> {
        fds.into_iter()
            .map(|fd| {
                let info = kernel::MapInfo::of_fd(fd.as_raw_fd())?;
                Ok((info, fd))
            })
            .collect::<Result<_, XpfError>>()
            .map(KernelMaps)
    }

    /// The memory map's value size and entries.
    pub(crate) fn memory_shape(&self) -> (u32, u32) {
        let m = &self.0[0].0;
        (m.value_size, m.max_entries)
    }
}

impl MapValues for KernelMaps {
    fn value(&self, map: usize, key: u32) -> Result<Vec<u8>, MapValueError> {
        self.0[map]
            .0
            .lookup(&key.to_ne_bytes())
            .map_err(|e| MapValueError::Store(e.to_string()))?
            .ok_or_else(|| MapValueError::Store(format!("the kernel's map has no key {key}")))
    }
    fn set_value(&mut self, map: usize, key: u32, value: &[u8]) -> Result<(), MapValueError> {
        self.0[map]
            .0
            .update(&key.to_ne_bytes(), value, 0)
            .map_err(|e| MapValueError::Store(e.to_string()))
    }
}

enum Inner {
    Interp(Box<Instance>),
    Vm(Box<Hook>, Memory<MapBlocks<VmMaps>>),
    Kernel(OwnedFd, Memory<MapBlocks<KernelMaps>>),
}

/// An xPF instance on one engine.
pub struct XpfRunner {
    inner: Inner,
    form: Form,
    /// The interpreter's clock, when the program reads the time.
    clock: Option<u64>,
}

impl XpfRunner {
    /// Checks `prog` for an instance of `opts` and sets it up on `engine`
    /// (the translation in `form`; the interpreter's results are given in
    /// the same form).
    pub fn new(
        prog: &[Insn],
        opts: XpfOptions,
        engine: XpfEngine,
        form: Form,
    ) -> Result<XpfRunner, XpfError> {
        if engine == XpfEngine::Interp {
            let i = Instance::new(prog, opts).map_err(|e| XpfError::Program(e.to_string()))?;
            return Ok(XpfRunner {
                inner: Inner::Interp(Box::new(i)),
                form,
                clock: prog.iter().any(xpf::is_time_load).then_some(0),
            });
        }
        let translated =
            xpf::translate(prog, &opts, form).map_err(|e| XpfError::Program(e.to_string()))?;
        let object = translated.object("xpf");
        let inner = if engine == XpfEngine::Kernel {
            let loaded =
                kernel::verify::load_program(&object.programs[0], &object.maps, None, &|_| None)
                    .map_err(XpfError::Load)?;
            let Some(fd) = loaded.program else {
                return Err(XpfError::KernelRefuses(
                    loaded.ruling.log.trim_end().to_string(),
                ));
            };
            let maps = KernelMaps::new(loaded.maps)?;
            let mem = Memory::new(MapBlocks(maps), opts.words, opts.blocks)
                .map_err(|e| XpfError::Memory(e.to_string()))?;
            Inner::Kernel(fd, mem)
        } else {
            let image = Image::load(object.clone(), &LoadOptions::default())
                .map_err(|e| XpfError::Vm(e.to_string()))?;
            let mut hook = Hook::new(image, 0, 0).map_err(|e| XpfError::Vm(e.to_string()))?;
            if engine == XpfEngine::Jit {
                let report = verifier::verify(
                    &object.programs[0],
                    &verifier::MapView::of_object(&object, &|_| None),
                    &verifier::VerifyOptions {
                        helpers: runtime::helpers::ids_for(&object.programs[0].kind),
                        ..verifier::VerifyOptions::default()
                    },
                );
                if let Err(e) = &report.result {
                    return Err(XpfError::VerifierRefuses(e.to_string()));
                }
                // SAFETY: the verifier accepted the only program, with
                // these maps.
                unsafe { hook.trust_verified() };
                hook.set_stack_depth(report.stack_depth);
                hook.enable_jit().map_err(|e| XpfError::Vm(e.to_string()))?;
            }
            let maps = hook.shared_maps().clone();
            let mem = Memory::new(MapBlocks(VmMaps(maps)), opts.words, opts.blocks)
                .map_err(|e| XpfError::Memory(e.to_string()))?;
            Inner::Vm(Box::new(hook), mem)
        };
        Ok(XpfRunner {
            inner,
            form,
            clock: None,
        })
    }

    /// Runs one packet that arrived at `time_ns` (`wire_len`: its length
    /// on the wire, what `len` loads in the interpreter); the filter's result in the runner's form
    /// (XDP: `XDP_PASS` 2 or `XDP_DROP` 1), and whether the budget ran out
    /// (known to the interpreter only).
    ///
    /// `Ok(None)`: the engine cannot run this frame (in the XDP form, no
    /// engine runs a frame over a page; the kernel's test run takes no
    /// frame under 14 bytes, nor, as an skb, one with an IP header cut
    /// short): it did not run, and the memory is as before.
    pub fn packet(
        &mut self,
        data: &[u8],
        wire_len: u32,
        time_ns: u64,
    ) -> Result<Option<(u32, Option<bool>)>, XpfError> {
        if self.form == Form::Xdp && data.len() > runtime::XDP_LINEAR_MAX {
            // An XDP program sees one page of the frame (the rest would be
            // fragments, which the translation does not read): no engine
            // runs it, so all agree.
            return Ok(None);
        }
        match &mut self.inner {
            Inner::Interp(i) => {
                // The clock of sluice's VM, which the translation reads
                // once per packet: it follows the packets' times, never
                // steps back, and moves a nanosecond per reading.
                let time_ns = match &mut self.clock {
                    Some(clock) => {
                        let now = (*clock).max(time_ns);
                        *clock = now + 1;
                        now
                    }
                    None => time_ns,
                };
                let meta = Meta {
                    len: Some(wire_len),
                    time_ns,
                    ..Meta::default()
                };
                let v = i
                    .run(data, &meta)
                    .map_err(|e| XpfError::Run(e.to_string()))?;
                let ret = match self.form {
                    Form::Socket => v.ret,
                    Form::Xdp if v.ret != 0 => 2,
                    Form::Xdp => 1,
                };
                Ok(Some((ret, Some(v.exceeded))))
            }
            Inner::Vm(hook, _) => hook
                .run(
                    data,
                    &PacketMeta {
                        timestamp_ns: time_ns,
                        ..PacketMeta::default()
                    },
                )
                .map(|o| Some((o.r0 as u32, None)))
                .map_err(|e| XpfError::Vm(e.to_string())),
            Inner::Kernel(..) if data.len() < 14 => Ok(None),
            Inner::Kernel(fd, _) => match kernel::testrun::run(
                fd.as_raw_fd(),
                &kernel::testrun::RunInput {
                    data,
                    ..Default::default()
                },
            ) {
                Ok(o) => Ok(Some((o.retval, None))),
                Err(e) if e.to_string().contains("Invalid argument") => Ok(None),
                Err(e) => Err(XpfError::TestRun(e)),
            },
        }
    }

    /// Whether `ret` (from [`XpfRunner::packet`]) accepts the packet.
    pub fn accepts(&self, ret: u32) -> bool {
        match self.form {
            Form::Socket => ret != 0,
            Form::Xdp => ret == 2,
        }
    }

    /// The instance's memory.
    pub fn memory(&mut self) -> &mut dyn MemoryOps {
        match &mut self.inner {
            Inner::Interp(i) => i.memory_mut(),
            Inner::Vm(_, m) => m,
            Inner::Kernel(_, m) => m,
        }
    }
}

/// A block retired by a periodic switch, with its words then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Retired {
    /// Packets run when it was retired.
    pub after: u64,
    pub block: Handle,
    pub words: Vec<u32>,
}

/// What [`run_xpf`] does besides running packets.
#[derive(Clone, Copy, Debug, Default)]
pub struct XpfRunOptions {
    /// Stop after this many packets.
    pub limit: Option<u64>,
    /// Every this many packets, switch to a spare block prepared as the
    /// mode says (allocated when there is none) and keep the retired one's
    /// words (double buffering).
    pub switch_every: Option<(u64, Switch)>,
}

/// How a run went.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XpfSummary {
    /// Packets run.
    pub packets: u64,
    /// Packets the engine could not run (see [`XpfRunner::packet`]).
    pub refused: u64,
    pub accepted: u64,
    /// Packets over budget (the interpreter knows; `None` elsewhere).
    pub exceptions: Option<u64>,
    pub retired: Vec<Retired>,
    /// Why the source stopped early, if it did.
    pub source_error: Option<String>,
}

/// Runs every packet of `source` through `runner`.
///
/// The pipeline's own loop (`pipeline::for_each_packet`), not
/// `pipeline::replay` with a `PacketHook`: an xPF run keeps no routes or
/// per-verdict counters but the instance's memory, which user space
/// switches between packets (`switch_every`) on the one instance there
/// is (no sibling on other threads); a frame the engine refuses is not
/// counted as run, and the first packet that fails ends the run.
pub fn run_xpf(
    runner: &mut XpfRunner,
    source: &mut dyn Source,
    opts: &XpfRunOptions,
) -> Result<XpfSummary, XpfError> {
    let mut s = XpfSummary::default();
    let mut failure = None;
    let mut exceptions = Some(0u64);
    let read = for_each_packet(source, opts.limit, |info, data| {
        if failure.is_some() {
            return;
        }
        // The frame as the source gives it: its length is `len`, as
        // in the VM and the kernel.
        match runner.packet(data, data.len() as u32, info.timestamp_ns) {
            Ok(None) => s.refused += 1,
            Ok(Some((ret, exceeded))) => {
                s.packets += 1;
                s.accepted += u64::from(runner.accepts(ret));
                exceptions = exceptions.zip(exceeded).map(|(n, e)| n + u64::from(e));
            }
            Err(e) => {
                failure = Some(XpfError::Packet {
                    seq: info.seq,
                    error: Box::new(e),
                })
            }
        }
        if let Some((every, how)) = opts.switch_every
            && every > 0
            && s.packets.is_multiple_of(every)
            && failure.is_none()
            && let Err(e) = switch(runner, how, s.packets, &mut s.retired)
        {
            failure = Some(e);
        }
    });
    if let Some(f) = failure {
        return Err(f);
    }
    if let Err(e) = read {
        s.source_error = Some(e.to_string());
    }
    s.exceptions = exceptions;
    Ok(s)
}

/// One periodic switch: to the next allocated block (or a new one).
fn switch(
    runner: &mut XpfRunner,
    how: Switch,
    after: u64,
    retired: &mut Vec<Retired>,
) -> Result<(), XpfError> {
    let mem = runner.memory();
    let active = mem.active();
    let handles = mem.handles();
    let spare = match handles.iter().find(|h| **h > active).or(handles.first()) {
        Some(&h) if h != active => h,
        _ => mem.malloc().map_err(|e| XpfError::Switch(e.to_string()))?,
    };
    let old = mem
        .mswitch(spare, how)
        .map_err(|e| XpfError::Memory(e.to_string()))?;
    let words = mem
        .mread(old, 0, mem.words() as usize)
        .map_err(|e| XpfError::Memory(e.to_string()))?;
    retired.push(Retired {
        after,
        block: old,
        words,
    });
    Ok(())
}
