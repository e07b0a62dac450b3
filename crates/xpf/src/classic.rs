//! Engines that filter captures with the eBPF translation of a classic
//! program (`cbpf::to_ebpf`, the kernel's `bpf_convert_filter`), for
//! `cbpf::filter_capture` (`sluice filter --engine ebpf-jit|kernel`;
//! `--engine jit` is the classic program compiled straight to native code,
//! `cbpf::Jit`):
//!
//! - [`EbpfJit`]: verified by sluice's verifier as a tc classifier, then
//!   run in sluice's x86-64 JIT without per-access checks. Each packet runs
//!   straight on a [`vm::Vm`] with two regions (the `__sk_buff` and the
//!   packet, which `ld_abs`/`ld_ind` read): no frame copy, no hook
//!   around it. `__sk_buff.len` is the packet's wire length, so `len`
//!   expressions agree with the classic interpreter.
//! - [`Kernel`]: loaded into the kernel as a tc classifier (a type with
//!   `ld_abs`, whose test runs see the frame from its link-layer header),
//!   each packet through `BPF_PROG_TEST_RUN`, the return value deciding.
//!   Packets the kernel cannot run as classic BPF would are refused
//!   (`cbpf::Decision::Refused`), so the interpreter decides them and the
//!   summary counts them: frames under 14 bytes and those the test run
//!   answers `EINVAL` (over a page less the skb's head and tail room, an
//!   IPv4 or IPv6 header cut short), and, for programs that read `len`,
//!   frames captured shorter than their wire length (a test run's
//!   `__sk_buff.len` is the bytes given).

use std::os::fd::{AsRawFd, OwnedFd};

use cbpf::ancillary::{self, AD_OFF};
use cbpf::{Decider, Decision, EngineError, FilterEngine, Insn, Meta};
use obj::{Program, ProgramKind};
use vm::{HelperTable, Memory, RegionKind, SimEnv, Vm};

use crate::error::XpfError;

/// `BPF_PROG_TYPE_SCHED_CLS`.
const SCHED_CLS: u32 = 3;

/// Bytes of `struct __sk_buff`.
const SKB_SIZE: usize = 192;

/// The translation as a tc classifier of an object of its own.
fn classifier(insns: Vec<isa::Insn>) -> Program {
    Program {
        name: "filter".into(),
        section: "tc".into(),
        kind: ProgramKind::SchedCls,
        insns,
        functions: vec![("filter".into(), 0)],
        lines: vec![],
        kfuncs: vec![],
        core_relocations: 0,
        core_poisoned: vec![],
        type_given: true,
        attach_type: None,
    }
}

/// The `k` of every absolute load of A.
fn absolute_loads(prog: &[Insn]) -> impl Iterator<Item = u32> + '_ {
    prog.iter()
        .filter(|i| i.code & 0x07 == cbpf::class::LD && i.code & 0xe0 == cbpf::mode::ABS)
        .map(|i| i.k)
}

/// The translation, for a program the engines run as classic BPF would:
/// not one that reads the network- or link-layer-relative windows
/// (`SKF_NET_OFF`, `SKF_LL_OFF`), which the translation leaves to
/// `ld_abs` at a negative offset (the kernel resolves them from its skb,
/// sluice's VM ends the program with 0).
/// An engine's own reason, in its words.
fn engine(why: impl ToString) -> EngineError {
    EngineError::Engine(why.to_string())
}

fn translate(prog: &[Insn]) -> Result<Vec<isa::Insn>, EngineError> {
    if absolute_loads(prog).any(|k| (ancillary::LL_OFF..AD_OFF).contains(&k)) {
        return Err(engine(
            "it reads the SKF_NET_OFF/SKF_LL_OFF windows, which only the \
                    interpreter gives from the capture",
        ));
    }
    cbpf::to_ebpf(prog).map_err(|e| engine(format!("no eBPF translation: {e}")))
}

/// The translation in sluice's JIT, after sluice's verifier.
#[derive(Debug, Default)]
pub struct EbpfJit;

/// The `__sk_buff` a run reads, aligned for its word loads.
#[repr(C, align(8))]
struct Skb([u8; SKB_SIZE]);

impl Skb {
    fn put(&mut self, off: usize, v: u32) {
        self.0[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// The fields the translation reads, from what the replay knows.
    fn fill(&mut self, len: u32, meta: &Meta) {
        self.put(0, len);
        self.put(4, meta.pkttype);
        self.put(8, meta.mark);
        self.put(12, meta.queue);
        // `protocol` and `vlan_proto` hold network byte order.
        self.put(16, u32::from(meta.protocol.to_be()));
        let (tpid, tci) = meta.vlan.unwrap_or((0, 0));
        self.put(20, u32::from(meta.vlan.is_some()));
        self.put(24, u32::from(tci));
        self.put(28, u32::from(tpid.to_be()));
        self.put(40, meta.ifindex);
        self.put(68, meta.rxhash);
        self.put(160, len);
    }
}

impl FilterEngine for EbpfJit {
    fn name(&self) -> &'static str {
        "ebpf-jit"
    }

    fn decider(&mut self, _linktype: u32, prog: &[Insn]) -> Result<Decider, EngineError> {
        if !cbpf::reads_len(prog) && !absolute_loads(prog).any(|k| k >= ancillary::LL_OFF) {
            return xdp_decider(prog);
        }
        // Each run maps a whole `__sk_buff` as its context and the packet,
        // which the program reads only through `ld_abs` and `ld_ind`
        // (checked on every run).
        let mut machine = trusted_jit(classifier(translate(prog)?))?;
        let random = absolute_loads(prog).any(|k| k == AD_OFF + ancillary::RANDOM);
        let mut env = SimEnv::default();
        let mut skb = Box::new(Skb([0; SKB_SIZE]));
        let mut regions = Vec::new();
        Ok(Box::new(move |data: &[u8], meta: &Meta| {
            let len = meta.len.unwrap_or(data.len() as u32);
            skb.fill(len, meta);
            env.cpu = meta.cpu;
            if random {
                env.replay_u32.clear();
                env.replay_u32.push_back(meta.random);
            }
            let mut mem = Memory::recycle(std::mem::take(&mut regions));
            // The packet first: `ld_abs`/`ld_ind` look it up on every load.
            mem.add_readonly(RegionKind::Packet, data);
            // Writable as far as Rust knows (the translation writes no
            // context field, and trusted code would not be stopped).
            let ctx = mem.add_protected(RegionKind::Context, &mut skb.0);
            let r0 = machine.run_r0(&mut env, &mut mem, [ctx, 0, 0, 0, 0], false);
            regions = mem.into_regions();
            r0.map(|r| Decision::Ret(r as u32)).map_err(engine)
        }))
    }
}

/// `program` (a translation without maps) verified by sluice's verifier
/// and compiled to native code that runs without per-access checks; the
/// caller gives each run the context and packet the program type has.
fn trusted_jit(program: Program) -> Result<Vm<SimEnv>, EngineError> {
    let report = verifier::verify(
        &program,
        &[],
        &verifier::VerifyOptions {
            helpers: runtime::helpers::ids_for(&program.kind),
            ..verifier::VerifyOptions::default()
        },
    );
    if let Err(r) = &report.result {
        return Err(engine(format!(
            "sluice's verifier refuses the translation: {r}"
        )));
    }
    let mut helpers = HelperTable::<SimEnv>::new();
    vm::register_basic(&mut helpers);
    let code = vm::Program::new(program.insns).map_err(engine)?;
    let mut machine = Vm::new(code, &helpers).map_err(engine)?;
    // SAFETY: the verifier accepted the only program, which uses no maps,
    // for its program type; the callers map that type's whole context and
    // the packet on every run.
    unsafe { machine.trust_verified() };
    machine.set_stack_depth(report.stack_depth);
    machine.enable_jit().map_err(engine)?;
    Ok(machine)
}

/// `struct xdp_md`: data, data_end, data_meta, ingress_ifindex,
/// rx_queue_index, egress_ifindex.
#[repr(C, align(8))]
struct XdpMd([u8; 24]);

/// Why the XDP form leaves a frame to the interpreter.
pub const OVER_64K: &str = "frames over 64 KiB, past what an XDP frame holds";

/// The XDP form of the translation (`cbpf::to_xdp`: every load inline,
/// checked against `data_end`) in sluice's JIT, for a program that reads
/// neither `len` (an XDP frame's length is the bytes captured, the
/// interpreter's the wire length) nor ancillary fields or the skb's
/// windows. Each frame is copied below 4 GiB, where `xdp_md`'s 32-bit
/// fields can hold its addresses.
fn xdp_decider(prog: &[Insn]) -> Result<Decider, EngineError> {
    let insns = cbpf::to_xdp(prog).map_err(|e| engine(format!("no XDP translation: {e}")))?;
    let program = Program {
        kind: ProgramKind::Xdp {
            attach: obj::XdpAttach::Device,
            frags: false,
        },
        section: "xdp".into(),
        ..classifier(insns)
    };
    // Each run maps a whole `xdp_md` whose `data`..`data_end` is the frame
    // copied into `frame` (the program reads nothing else).
    let mut machine = trusted_jit(program)?;
    const ROOM: usize = 1 << 16;
    let mut frame = runtime::LowBuf::new(ROOM).map_err(engine)?;
    let mut ctx = Box::new(XdpMd([0; 24]));
    let mut env = SimEnv::default();
    let mut regions = Vec::new();
    Ok(Box::new(move |data: &[u8], meta: &Meta| {
        if data.len() >= ROOM - 8 {
            return Ok(Decision::Refused(OVER_64K));
        }
        frame.as_mut_slice()[..data.len()].copy_from_slice(data);
        let put = |ctx: &mut XdpMd, off: usize, v: u32| {
            ctx.0[off..off + 4].copy_from_slice(&v.to_le_bytes())
        };
        put(&mut ctx, 0, frame.addr32(0));
        put(&mut ctx, 4, frame.addr32(data.len()));
        put(&mut ctx, 8, frame.addr32(0));
        put(&mut ctx, 12, meta.ifindex);
        put(&mut ctx, 16, meta.queue);
        env.cpu = meta.cpu;
        let mut mem = Memory::recycle(std::mem::take(&mut regions));
        mem.add_readonly(RegionKind::Packet, &frame.as_slice()[..data.len()]);
        let c = mem.add_protected(RegionKind::Context, &mut ctx.0);
        let r0 = machine.run_r0(&mut env, &mut mem, [c, 0, 0, 0, 0], false);
        regions = mem.into_regions();
        // XDP_PASS is a match (the filter's value is not kept: only
        // whether it is zero matters here).
        r0.map(|r| Decision::Ret(u32::from(r == 2))).map_err(engine)
    }))
}

/// The translation in the kernel, one `BPF_PROG_TEST_RUN` per packet.
#[derive(Debug)]
pub struct Kernel(());

impl Kernel {
    /// Fails, naming what is missing, unless this process may load
    /// programs and test-run them.
    pub fn new() -> Result<Kernel, XpfError> {
        if !kernel::privileged() {
            return Err(XpfError::Unavailable(
                "the kernel engine loads the filter as a tc classifier and runs \
                        BPF_PROG_TEST_RUN: it needs root, or CAP_BPF and CAP_NET_ADMIN"
                    .into(),
            ));
        }
        Ok(Kernel(()))
    }
}

/// Why the kernel engine leaves a packet to the interpreter.
pub const UNDER_14: &str = "frames under 14 bytes, which the kernel's test run refuses";
pub const TEST_RUN_REFUSES: &str =
    "frames the kernel's test run refuses (EINVAL: over a page, or an IP header cut short)";
pub const WIRE_LEN: &str = "frames captured shorter than their wire length, for a program \
                            that reads len (a test run's len is the bytes given)";

impl FilterEngine for Kernel {
    fn name(&self) -> &'static str {
        "kernel"
    }

    fn decider(&mut self, _linktype: u32, prog: &[Insn]) -> Result<Decider, EngineError> {
        let insns = translate(prog)?;
        if absolute_loads(prog).any(|k| k >= AD_OFF) {
            // The test run sets the skb's metadata itself (the protocol
            // from the frame, the CPU, ...), not from the capture.
            return Err(engine(
                "it reads ancillary fields (SKF_AD_*), which a kernel test run \
                        sets itself; use --engine interp or jit",
            ));
        }
        let (ruling, fd) =
            kernel::verify::load_keep(&isa::encode(&insns), "sluice_filter", SCHED_CLS, 0, 0)
                .map_err(engine)?;
        let fd: OwnedFd = fd.ok_or_else(|| {
            engine(format!(
                "the kernel refuses the translation: {}",
                ruling.log
            ))
        })?;
        let reads_len = cbpf::reads_len(prog);
        Ok(Box::new(move |data: &[u8], meta: &Meta| {
            if data.len() < 14 {
                return Ok(Decision::Refused(UNDER_14));
            }
            if reads_len && meta.len.is_some_and(|l| l as usize != data.len()) {
                return Ok(Decision::Refused(WIRE_LEN));
            }
            let input = kernel::testrun::RunInput {
                data,
                ..Default::default()
            };
            match kernel::testrun::run(fd.as_raw_fd(), &input) {
                Ok(out) => Ok(Decision::Ret(out.retval)),
                Err(e) if e.kind == kernel::ErrorKind::Invalid => {
                    Ok(Decision::Refused(TEST_RUN_REFUSES))
                }
                Err(e) => Err(engine(e)),
            }
        }))
    }
}
