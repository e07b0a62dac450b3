//! Running one program of an image over packets, as the kernel's XDP and
//! tc hooks do: the packet in a frame with headroom, a context struct that
//! points at it, the object's maps, and a verdict at the end.

use std::sync::Arc;

use maps::Map;
use obj::{ProgramKind, XdpAttach};
use vm::{HelperTable, Memory, RegionKind, Stats, Vm, VmError};

use crate::env::{CtxKind, Env, PacketView, Redirect, RedirectTarget};
use crate::helpers;
use crate::image::Image;
use crate::lowmem::LowBuf;

mod batch;
mod fast;
mod sibling;
mod verify;
pub use verify::Rejection;

/// `XDP_PACKET_HEADROOM`.
pub const HEADROOM: usize = 256;
/// The most packet bytes one XDP page holds; longer frames continue in
/// fragments.
pub const XDP_LINEAR_MAX: usize = FRAME - HEADROOM - TAILROOM;
/// Size of an XDP fragment (a page).
pub const FRAG_SIZE: usize = 4096;
/// `sizeof(struct skb_shared_info)`: kept free at the end of a frame.
pub const TAILROOM: usize = 320;
/// Frame size of one packet (a page), larger only for longer packets.
pub const FRAME: usize = 4096;
/// Longest packet a tc hook takes (its linear data; longer ones are
/// refused with an error, never cut). XDP takes packets of any length:
/// the linear part ([`XDP_LINEAR_MAX`]) and fragments.
pub const MAX_PACKET: usize = 65_535;
const CTX_SIZE: usize = 192;
/// A hook's packet buffer: one packet of any length from its start, or a
/// batch's packets a frame each (`hook/batch.rs`).
const BUF_LEN: usize = {
    let one = HEADROOM + MAX_PACKET + TAILROOM + FRAME;
    let batch = batch::SLOTS * FRAME;
    if one > batch { one } else { batch }
};

#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum HookError {
    #[error("{0}")]
    Program(String),
    #[error("{0}")]
    Load(#[from] vm::LoadError),
    #[error("{0}")]
    Memory(String),
    #[error("CPU {cpu} has no slot in per-CPU map {map}, which has {ncpus}: load with more CPUs")]
    Cpu { cpu: u32, map: String, ncpus: u32 },
}

/// What the receive path knows about a packet.
#[derive(Copy, Clone, Debug, Default)]
pub struct PacketMeta {
    pub ifindex: u32,
    pub rx_queue: u32,
    /// Arrival time; the program's clock (`bpf_ktime_get_ns`) follows it.
    pub timestamp_ns: u64,
    /// For devmap programs: the interface the frame is leaving by.
    pub egress_ifindex: u32,
    /// The receiving interface's MAC address: frames to another unicast
    /// address are `PACKET_OTHERHOST` (all zeros, as on loopback, where the
    /// kernel's test runs receive).
    pub dev_addr: [u8; 6],
    /// Its broadcast address (all zeros on loopback, so the kernel counts
    /// ff:ff:ff:ff:ff:ff there as multicast).
    pub dev_broadcast: [u8; 6],
}

/// What the kernel's `eth_type_trans` sets for a received frame:
/// `skb->protocol` as the program reads it (network byte order in a u32)
/// and `skb->pkt_type`.
fn eth_type_trans(frame: &[u8], dev_addr: &[u8; 6], broadcast: &[u8; 6]) -> (u32, u32) {
    const PACKET_HOST: u32 = 0;
    const PACKET_BROADCAST: u32 = 1;
    const PACKET_MULTICAST: u32 = 2;
    const PACKET_OTHERHOST: u32 = 3;
    if frame.len() < 14 {
        return (0, PACKET_HOST);
    }
    let dst = &frame[..6];
    let pkt_type = if dst == dev_addr {
        PACKET_HOST
    } else if dst[0] & 1 != 0 {
        if dst == broadcast {
            PACKET_BROADCAST
        } else {
            PACKET_MULTICAST
        }
    } else {
        PACKET_OTHERHOST
    };
    let ethertype = u16::from_be_bytes([frame[12], frame[13]]);
    let proto: u16 = if ethertype >= 0x0600 {
        ethertype
    } else if frame.get(14..16) == Some(&[0xff, 0xff]) {
        // Novell raw 802.3 (IPX without LLC): ETH_P_802_3.
        0x0001
    } else {
        // A length field: 802.2 LLC follows (ETH_P_802_2).
        0x0004
    };
    (u32::from(u16::from_ne_bytes(proto.to_be_bytes())), pkt_type)
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum XdpAction {
    Aborted,
    Drop,
    Pass,
    Tx,
    Redirect,
    /// A return value that is no XDP action: the kernel treats it as aborted.
    Invalid(u64),
}

impl XdpAction {
    pub fn from_r0(r0: u64) -> XdpAction {
        match r0 as u32 {
            0 => XdpAction::Aborted,
            1 => XdpAction::Drop,
            2 => XdpAction::Pass,
            3 => XdpAction::Tx,
            4 => XdpAction::Redirect,
            _ => XdpAction::Invalid(r0),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            XdpAction::Aborted | XdpAction::Invalid(_) => "ABORTED",
            XdpAction::Drop => "DROP",
            XdpAction::Pass => "PASS",
            XdpAction::Tx => "TX",
            XdpAction::Redirect => "REDIRECT",
        }
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum TcAction {
    Unspec,
    Ok,
    Reclassify,
    Shot,
    Pipe,
    Stolen,
    Queued,
    Repeat,
    Redirect,
    Trap,
    Invalid(u64),
}

impl TcAction {
    pub fn from_r0(r0: u64) -> TcAction {
        match r0 as i32 {
            -1 => TcAction::Unspec,
            0 => TcAction::Ok,
            1 => TcAction::Reclassify,
            2 => TcAction::Shot,
            3 => TcAction::Pipe,
            4 => TcAction::Stolen,
            5 => TcAction::Queued,
            6 => TcAction::Repeat,
            7 => TcAction::Redirect,
            8 => TcAction::Trap,
            _ => TcAction::Invalid(r0),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TcAction::Unspec => "UNSPEC",
            TcAction::Ok => "OK",
            TcAction::Reclassify => "RECLASSIFY",
            TcAction::Shot => "SHOT",
            TcAction::Pipe => "PIPE",
            TcAction::Stolen => "STOLEN",
            TcAction::Queued => "QUEUED",
            TcAction::Repeat => "REPEAT",
            TcAction::Redirect => "REDIRECT",
            TcAction::Trap => "TRAP",
            TcAction::Invalid(_) => "INVALID",
        }
    }
}

/// The program's decision.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize, serde::Deserialize)]
pub enum Verdict {
    Xdp(XdpAction),
    Tc(TcAction),
    /// A socket filter keeps this many bytes (0 drops).
    Socket(u32),
}

impl Verdict {
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Xdp(a) => a.name(),
            Verdict::Tc(a) => a.name(),
            Verdict::Socket(0) => "DROP",
            Verdict::Socket(_) => "KEEP",
        }
    }
}

/// The fields of `__sk_buff` a tc program may change.
#[derive(Clone, PartialEq, Eq, Debug, Default)]
pub struct SkbFields {
    pub mark: u32,
    pub priority: u32,
    pub tc_index: u32,
    pub tc_classid: u32,
    pub cb: [u32; 5],
    pub tstamp: u64,
    /// Tunnel metadata set for an encapsulating device.
    pub tunnel: Option<crate::TunnelInfo>,
}

/// One run's result.
#[derive(Debug)]
pub struct Outcome<'h> {
    pub r0: u64,
    pub verdict: Verdict,
    /// The packet as the program left it.
    pub packet: &'h [u8],
    /// XDP metadata in front of the packet (`data_meta..data`).
    pub meta: &'h [u8],
    /// XDP multi-buffer: the bytes after `packet` (fragments), empty for
    /// frames that fit one page.
    pub frags: &'h [u8],
    pub redirect: Option<Redirect>,
    /// What the run cost (both programs' sum when a redirect ran a second).
    pub stats: &'h Stats,
    /// `bpf_trace_printk` lines of this run.
    pub trace: &'h [String],
    /// Copies `bpf_clone_redirect` sent on (tc).
    pub clones: &'h [crate::Cloned],
    pub skb: Option<&'h SkbFields>,
    /// The program a redirect ran the frame through (devmap/cpumap entry).
    pub followup: Option<&'h Followup>,
}

/// A second program a redirected frame went through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Followup {
    pub program: String,
    pub action: XdpAction,
}

/// A program of an image, ready to run over packets. Hooks on one image
/// (see [`Hook::sibling`]) share its maps and may run on several threads.
pub struct Hook {
    vm: Vm<Env>,
    env: Env,
    object: Arc<obj::Object>,
    program: usize,
    kind: ProgramKind,
    buf: LowBuf,
    ctx: Box<[u8; CTX_SIZE]>,
    counting: bool,
    /// The regions of every run, mapped once (see [`Hook::map_regions`]):
    /// the packet (whose window moves per packet), the context, the maps'
    /// values and the scratch. Addresses only: each points into memory this
    /// hook owns and that never moves (the buffer, the boxed context, map
    /// arenas, the boxed scratch).
    mem: Memory<'static>,
    /// Whether `mem` maps the maps `env` has now; cleared whenever `env` is
    /// lent out mutably (its maps could be replaced).
    mapped: bool,
    /// What each region of `mem` is, by name (for [`Hook::accesses_by_place`]).
    places: Vec<String>,
    /// The context the program gets (fixed by its kind).
    ctx_kind: CtxKind,
    /// Whether the program runs on a devmap entry (`egress_ifindex` set).
    devmap: bool,
    /// The cost of a run that went through a second program (the sum of
    /// both); a one-program run's is the VM's.
    both: Stats,
    /// The `__sk_buff` fields of the last tc run ([`Outcome::skb`]).
    skb: SkbFields,
    /// The last second program a redirect ran ([`Outcome::followup`]).
    followup: Option<Followup>,
    /// Descriptors and results of batch runs (`hook/batch.rs`).
    batch: batch::Slots,
}

/// Index of the packet's region in a hook's `Memory`.
const PACKET_REGION: usize = 0;

fn resolve_tail_call(env: &mut Env, map: u64, index: u64) -> Option<usize> {
    let m = env.map_of(map)?;
    if env.maps[m].map_type() != maps::MapType::ProgArray {
        return None;
    }
    let id = env.maps[m].ref_at(&(index as u32).to_le_bytes())?;
    let prog = (id as usize).checked_sub(1)?;
    env.vm_program_of.get(prog).copied().flatten()
}

impl Hook {
    /// Prepares program `program` (an index into the image's programs) of
    /// `image`, with every program of the same type as a tail-call target.
    pub fn new(image: Image, program: usize, cpu: u32) -> Result<Hook, HookError> {
        let Image {
            object,
            maps,
            programs,
        } = image;
        let kind = object.programs[program].kind.clone();
        let table = helper_table(&kind)?;
        let entry = programs[program].as_ref().map_err(|why| {
            HookError::Program(format!("{}: {why}", object.programs[program].name))
        })?;
        // Check the entry alone first, so its own errors are reported.
        Vm::with_programs(
            vec![entry.clone()],
            &table,
            Some(resolve_tail_call as vm::TailCallFn<Env>),
        )?;
        let mut vm_programs = Vec::new();
        let mut vm_program_of = vec![None; programs.len()];
        for (i, p) in programs.iter().enumerate() {
            let Ok(p) = p else { continue };
            let same_type = object.programs[i].kind.type_name() == kind.type_name();
            let loads = Vm::with_programs(
                vec![p.clone()],
                &table,
                Some(resolve_tail_call as vm::TailCallFn<Env>),
            )
            .is_ok();
            if same_type && loads {
                vm_program_of[i] = Some(vm_programs.len());
                vm_programs.push(p.clone());
            }
        }
        let mut vm = Vm::with_programs(
            vm_programs,
            &table,
            Some(resolve_tail_call as vm::TailCallFn<Env>),
        )?;
        vm.set_entry(vm_program_of[program].expect("the entry loads"));
        let mut env = Env::new(maps, cpu);
        env.vm_program_of = vm_program_of;
        let ctx_kind = if kind.is_xdp() {
            CtxKind::Xdp
        } else {
            CtxKind::Skb
        };
        let devmap = matches!(
            kind,
            ProgramKind::Xdp {
                attach: XdpAttach::Devmap,
                ..
            }
        );
        Ok(Hook {
            vm,
            env,
            object: Arc::new(object),
            program,
            kind,
            buf: LowBuf::new(BUF_LEN).map_err(|e| HookError::Memory(e.to_string()))?,
            ctx: Box::new([0; CTX_SIZE]),
            counting: false,
            mem: Memory::new(),
            mapped: false,
            places: Vec::new(),
            ctx_kind,
            devmap,
            both: Stats::default(),
            skb: SkbFields::default(),
            followup: None,
            batch: batch::Slots::default(),
        })
    }

    /// The object's programs this hook may run: the entry and the tail-call
    /// targets of the same type (indices into the object's programs).
    pub fn runnable(&self) -> impl Iterator<Item = usize> + '_ {
        (self.env.vm_program_of.iter().enumerate()).filter_map(|(i, v)| v.map(|_| i))
    }

    /// Runs loads and stores without per-access checks (the verifier's fast
    /// mode).
    ///
    /// # Safety
    /// The verifier must have accepted every program of [`Hook::runnable`]
    /// against this hook's maps (sizes and frozen contents as they are now).
    pub unsafe fn trust_verified(&mut self) {
        // SAFETY: passed on from the caller.
        unsafe { self.vm.trust_verified() }
    }

    /// Whether loads and stores run unchecked.
    pub fn is_trusted(&self) -> bool {
        self.vm.is_trusted()
    }

    /// Runs the programs as x86-64 machine code from now on (checked, or
    /// unchecked once trusted); elsewhere an error and the interpreter.
    pub fn enable_jit(&mut self) -> Result<(), HookError> {
        #[cfg(target_arch = "x86_64")]
        {
            self.vm
                .enable_jit()
                .map_err(|e| HookError::Program(format!("the JIT: {e}")))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Err(HookError::Program(
                "the JIT needs an x86-64 host; the interpreter runs instead".into(),
            ))
        }
    }

    /// Runs the programs on the interpreter from now on.
    pub fn disable_jit(&mut self) {
        #[cfg(target_arch = "x86_64")]
        self.vm.disable_jit();
    }

    pub fn jit_enabled(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            self.vm.jit_enabled()
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// Counts memory accesses per region too (for profiling).
    pub fn set_counting(&mut self, on: bool) {
        self.counting = on;
    }

    /// Whether runs count memory accesses ([`Hook::set_counting`]); when
    /// not, their `loads` and `stores` are zero.
    pub fn is_counting(&self) -> bool {
        self.counting
    }

    /// Counts each instruction run and each conditional jump's way, from
    /// zero (`true`), or stops (`false`): runs are then interpreted step
    /// by step whatever the engine ([`vm::Vm::set_coverage`]). Siblings
    /// made afterwards count too, each its own counts.
    pub fn set_coverage(&mut self, on: bool) {
        self.vm.set_coverage(on);
    }

    /// Whether runs count coverage ([`Hook::set_coverage`]).
    pub fn is_covering(&self) -> bool {
        self.vm.is_covering()
    }

    /// The coverage counts so far, per VM program (see
    /// [`Hook::program_of_vm`]); counting goes on from zero.
    pub fn take_coverage(&mut self) -> Option<vm::Coverage> {
        self.vm.take_coverage()
    }

    /// The loads and stores of the last counting run by place: `stack`,
    /// `packet`, `context`, `map:NAME` per map, and `scratch` (keys
    /// helpers hand to callbacks). Of the last program only, when a
    /// redirect ran a second one.
    pub fn accesses_by_place(&self) -> Vec<(&str, [u64; 2])> {
        let counts = self.vm.last_region_accesses();
        std::iter::once("stack")
            .chain(self.places.iter().map(String::as_str))
            .zip(counts.iter().copied())
            .collect()
    }

    pub fn set_budget(&mut self, insns: u64) {
        self.vm.set_budget(insns);
    }

    pub fn env(&self) -> &Env {
        &self.env
    }

    pub fn env_mut(&mut self) -> &mut Env {
        self.mapped = false;
        &mut self.env
    }

    pub fn maps(&self) -> &[Map] {
        &self.env.maps
    }

    /// The maps, as a handle to share with other threads (or hooks).
    pub fn shared_maps(&self) -> &Arc<[Map]> {
        &self.env.maps
    }

    pub fn object(&self) -> &obj::Object {
        &self.object
    }

    /// The object program this hook runs.
    pub fn program(&self) -> &obj::Program {
        &self.object.programs[self.program]
    }

    /// The object program behind a VM program index (as errors carry).
    pub fn program_of_vm(&self, vm_index: usize) -> Option<&obj::Program> {
        let i = self
            .env
            .vm_program_of
            .iter()
            .position(|v| *v == Some(vm_index))?;
        self.object.programs.get(i)
    }

    /// Adds what the loader knows to an error: which CO-RE relocation
    /// poisoned the instruction that ran.
    fn explain(&self, mut e: VmError) -> VmError {
        if e.kind == vm::VmErrorKind::CorePoisoned
            && let Some(p) = self.program_of_vm(e.program)
            && let Some((_, why)) = p.core_poisoned.iter().find(|(pc, _)| *pc == e.pc)
        {
            e.text = format!("{}; {why}", e.text);
        }
        e
    }

    pub fn kind(&self) -> &ProgramKind {
        &self.kind
    }

    /// Runs the program over one packet; a frame it redirects into a
    /// devmap or cpumap entry that carries a program then runs through that
    /// program too (`xdp/devmap`, `xdp/cpumap`), as in the kernel.
    #[inline]
    pub fn run(&mut self, packet: &[u8], meta: &PacketMeta) -> Result<Outcome<'_>, VmError> {
        let entry = self.env.vm_program_of[self.program].expect("the entry is loaded");
        if packet.len() > MAX_PACKET && self.ctx_kind == CtxKind::Skb {
            return Err(VmError {
                program: entry,
                pc: 0,
                text: "before the first instruction".into(),
                kind: vm::VmErrorKind::PacketTooLong {
                    len: packet.len(),
                    max: MAX_PACKET,
                },
            });
        }
        let first = self
            .exec(entry, packet, meta, None, true)
            .map_err(|e| self.explain(e))?;
        self.outcome(first, meta)
    }

    /// The outcome of a run whose result is `first` (the environment as
    /// the run left it): a redirect's second program runs here.
    #[inline(always)]
    fn outcome(&mut self, first: Exec, meta: &PacketMeta) -> Result<Outcome<'_>, VmError> {
        let mut last = first;
        // The second program's action, when a redirect ran one.
        let mut followed = None;
        if let Some((prog, egress)) = self.redirect_program(&first) {
            followed = Some(self.followup(&mut last, prog, egress, meta)?);
        }
        let (verdict, skb) = match (&self.kind, self.env.packet.kind) {
            (ProgramKind::SocketFilter, _) => (Verdict::Socket(first.r0 as u32), false),
            (_, CtxKind::Xdp) => {
                let v = match followed {
                    // The second program decides whether the frame leaves.
                    Some(XdpAction::Pass) | None => XdpAction::from_r0(first.r0),
                    Some(_) => XdpAction::Drop,
                };
                (Verdict::Xdp(v), false)
            }
            (_, CtxKind::Skb) => {
                self.read_skb();
                (Verdict::Tc(TcAction::from_r0(first.r0)), true)
            }
        };
        let verdict_redirects = matches!(
            verdict,
            Verdict::Xdp(XdpAction::Redirect) | Verdict::Tc(TcAction::Redirect)
        );
        Ok(Outcome {
            r0: first.r0,
            verdict,
            packet: &self.buf.as_slice()[last.start..last.end],
            meta: &self.buf.as_slice()[last.meta..last.start],
            frags: if self.env.packet.kind == CtxKind::Xdp {
                &self.env.frags
            } else {
                &[]
            },
            redirect: if verdict_redirects {
                self.env.redirect
            } else {
                None
            },
            stats: if followed.is_some() {
                &self.both
            } else {
                self.vm.last_stats()
            },
            trace: &self.env.trace,
            clones: &self.env.clones,
            skb: if skb { Some(&self.skb) } else { None },
            followup: if followed.is_some() {
                self.followup.as_ref()
            } else {
                None
            },
        })
    }

    /// The `__sk_buff` fields a tc run left, into `self.skb`.
    fn read_skb(&mut self) {
        let get =
            |off: usize| u32::from_le_bytes(self.ctx[off..off + 4].try_into().expect("4 bytes"));
        let mut cb = [0u32; 5];
        for (i, v) in cb.iter_mut().enumerate() {
            *v = get(48 + 4 * i);
        }
        let skb = &mut self.skb;
        skb.mark = get(8);
        skb.priority = get(32);
        // The kernel keeps both in 16 bits (`skb->tc_index`,
        // `qdisc_skb_cb->tc_classid`): a program's write keeps its low half.
        skb.tc_index = get(44) & 0xffff;
        skb.tc_classid = get(72) & 0xffff;
        skb.cb = cb;
        skb.tstamp = u64::from_le_bytes(self.ctx[152..160].try_into().expect("8 bytes"));
        skb.tunnel.clone_from(&self.env.tunnel);
    }

    /// Runs the frame `first` left through the program its redirect's map
    /// entry carries: `last` becomes that run's result (keeping `first`'s
    /// r0), the hook's `followup` says which program decided what and its
    /// `both` holds the two runs' cost. Returns that program's action.
    #[cold]
    #[inline(never)]
    fn followup(
        &mut self,
        last: &mut Exec,
        prog: (usize, usize),
        egress: Option<u32>,
        meta: &PacketMeta,
    ) -> Result<XdpAction, VmError> {
        let first = *last;
        let first_stats = *self.vm.last_stats();
        let bytes = self.buf.as_slice()[first.start..first.end].to_vec();
        let then = self
            .exec(prog.1, &bytes, meta, egress, false)
            .map_err(|e| self.explain(e))?;
        let action = XdpAction::from_r0(then.r0);
        let program = &self.object.programs[prog.0].name;
        match &mut self.followup {
            Some(f) => {
                f.program.clone_from(program);
                f.action = action;
            }
            None => {
                self.followup = Some(Followup {
                    program: program.clone(),
                    action,
                })
            }
        }
        self.both = add(first_stats, *self.vm.last_stats());
        *last = Exec {
            r0: first.r0,
            ..then
        };
        Ok(action)
    }

    /// The program (object index, VM index) and egress interface a redirect
    /// runs next, if its map entry carries one.
    #[inline]
    fn redirect_program(&self, first: &Exec) -> Option<((usize, usize), Option<u32>)> {
        if XdpAction::from_r0(first.r0) != XdpAction::Redirect || !self.kind.is_xdp() {
            return None;
        }
        self.redirect_entry_program()
    }

    #[cold]
    fn redirect_entry_program(&self) -> Option<((usize, usize), Option<u32>)> {
        let r = self.env.redirect?;
        let map = &self.env.maps[r.map?];
        if map.spec().value_size != 8 {
            return None;
        }
        let key = match r.target {
            RedirectTarget::Device { .. } | RedirectTarget::Cpu(_) => self.env.redirect_key?,
            // Broadcast copies go to every entry: their programs are not
            // run (one verdict per packet is reported).
            RedirectTarget::Socket(_) | RedirectTarget::Broadcast { .. } => return None,
        };
        let value = map.user_lookup(&key.to_le_bytes()).ok()?;
        let id = u32::from_le_bytes(value[4..8].try_into().expect("8-byte value"));
        let prog = (id as usize).checked_sub(1)?;
        let vm = self.env.vm_program_of.get(prog).copied().flatten()?;
        let egress = match r.target {
            RedirectTarget::Device { ifindex, .. } => Some(ifindex),
            _ => None,
        };
        Some(((prog, vm), egress))
    }

    /// Maps the regions every run shares: the whole packet buffer (its
    /// window set per packet), the context, each map's values and the
    /// scratch.
    fn map_regions(&mut self) {
        // Every region below is memory this hook owns and that never moves
        // or shrinks while it lives (the buffer's mapping, the boxed
        // context, the map arenas, the boxed scratch); `mem` is used only
        // by this hook's runs, while nothing holds a Rust reference into
        // any of it.
        let mut mem = Memory::new();
        let buf = self.buf.as_mut_slice();
        let (base, len) = (buf.as_mut_ptr().expose_provenance() as u64, buf.len());
        // SAFETY: see above.
        let packet = unsafe { mem.add_raw(RegionKind::Packet, base, len as u64, true) };
        debug_assert_eq!(packet, PACKET_REGION);
        let ctx = self.ctx.as_mut_ptr().expose_provenance() as u64;
        // XDP context fields are read-only; tc programs may write some
        // __sk_buff fields (mark, priority, tc_index, cb, tc_classid, ...).
        if self.ctx_kind == CtxKind::Xdp {
            // SAFETY: see above.
            unsafe { mem.add_raw_protected(RegionKind::Context, ctx, CTX_SIZE as u64) };
        } else {
            // SAFETY: see above.
            unsafe { mem.add_raw(RegionKind::Context, ctx, CTX_SIZE as u64, true) };
        }
        let mut places = vec!["packet".to_string(), "context".to_string()];
        for (i, map) in self.env.maps.iter().enumerate() {
            if let Some((addr, len)) = map.value_region() {
                // SAFETY: see above; `mapped` is cleared whenever `env` (so
                // its maps) is lent out mutably, and the regions remapped.
                unsafe { mem.add_raw(RegionKind::Map, addr, len as u64, map.program_writable()) };
                let name = self.object.maps.get(i).map(|m| m.name());
                places.push(format!("map:{}", name.unwrap_or("?")));
            }
        }
        places.push("scratch".to_string());
        self.places = places;
        // Keys for callbacks: read-only to the program; only helpers write
        // them, through `env`.
        let scratch = self.env.scratch.as_ptr().expose_provenance() as u64;
        // SAFETY: see above.
        unsafe {
            mem.add_raw(
                RegionKind::Map,
                scratch,
                self.env.scratch.len() as u64,
                false,
            )
        };
        self.env.scratch_addr = scratch;
        self.mem = mem;
        self.mapped = true;
        self.inline_lookups();
    }

    /// One execution of VM program `entry` over `packet`.
    #[inline(always)]
    fn exec(
        &mut self,
        entry: usize,
        packet: &[u8],
        meta: &PacketMeta,
        egress: Option<u32>,
        fresh: bool,
    ) -> Result<Exec, VmError> {
        if !self.mapped {
            self.map_regions();
        }
        let ctx_kind = self.ctx_kind;
        // tc packets longer than the buffer are refused by `run`; the min
        // only keeps the copy below in bounds.
        let mut len = packet.len().min(MAX_PACKET);
        if ctx_kind == CtxKind::Xdp && fresh {
            // One page holds the linear part; the rest, however long, goes
            // to fragments, as the kernel's multi-buffer XDP does.
            self.env.frags.clear();
            if packet.len() > XDP_LINEAR_MAX {
                self.env.frags.extend_from_slice(&packet[XDP_LINEAR_MAX..]);
                len = XDP_LINEAR_MAX;
            }
        }
        let frame = (HEADROOM + len + TAILROOM).div_ceil(FRAME) * FRAME;
        let base = self.buf.addr32(0);
        let data = base + HEADROOM as u32;
        let data_end = data + len as u32;
        let buf = self.buf.as_mut_slice();
        // The headroom reads as zeros (the kernel leaves garbage; zeros keep
        // runs deterministic): zero what the last runs exposed or wrote of
        // it. The tail is zeroed when it grows.
        let low = self.env.headroom_low;
        if low < u64::from(data) {
            let from = low.saturating_sub(u64::from(base)) as usize;
            buf[from..HEADROOM].fill(0);
        }
        self.env.headroom_low = u64::MAX;
        buf[HEADROOM..HEADROOM + len].copy_from_slice(&packet[..len]);
        // Re-derive the buffer's and context's addresses for this run (the
        // mutable borrows above); they are the ones mapped.
        buf.as_mut_ptr().expose_provenance();
        let ctx_addr = self.ctx.as_mut_ptr().expose_provenance() as u64;
        let put = |ctx: &mut [u8; CTX_SIZE], off: usize, v: u32| {
            ctx[off..off + 4].copy_from_slice(&v.to_le_bytes())
        };
        match ctx_kind {
            CtxKind::Xdp => {
                // Programs cannot write an XDP context and helpers write
                // only data, data_end and data_meta: the rest stays zero.
                let devmap = self.devmap;
                let egress = egress.unwrap_or(if devmap { meta.egress_ifindex } else { 0 });
                let fields = [data, data_end, data, meta.ifindex, meta.rx_queue, egress];
                for (i, v) in fields.into_iter().enumerate() {
                    put(&mut self.ctx, 4 * i, v);
                }
            }
            CtxKind::Skb => {
                // Programs may write __sk_buff fields: start from the
                // defaults again.
                self.ctx.fill(0);
                let (proto, pkt_type) =
                    eth_type_trans(&packet[..len], &meta.dev_addr, &meta.dev_broadcast);
                put(&mut self.ctx, 0, len as u32);
                put(&mut self.ctx, 4, pkt_type);
                put(&mut self.ctx, 12, meta.rx_queue);
                put(&mut self.ctx, 16, proto);
                put(&mut self.ctx, 36, meta.ifindex);
                put(&mut self.ctx, 40, meta.ifindex);
                put(&mut self.ctx, 76, data);
                put(&mut self.ctx, 80, data_end);
                put(&mut self.ctx, 140, data);
                self.ctx[152..160].copy_from_slice(&meta.timestamp_ns.to_le_bytes());
                put(&mut self.ctx, 160, len as u32);
                put(&mut self.ctx, 164, 1);
            }
        }
        self.mem
            .set_window(PACKET_REGION, u64::from(data), len as u64);
        if !self.env.iterations.is_empty() {
            self.env.iterations.clear();
        }
        self.env.packet = PacketView {
            kind: ctx_kind,
            region: PACKET_REGION,
            hard_start: u64::from(base),
            hard_end: u64::from(base) + (frame - TAILROOM) as u64,
            meta: u64::from(data),
            data: u64::from(data),
            data_end: u64::from(data_end),
            ctx: ctx_addr,
        };
        if fresh {
            self.env.redirect = None;
            self.env.clones.clear();
            self.env.redirect_key = None;
            self.env.tunnel = None;
            self.env.trace.clear();
            self.env.unreproducible.clear();
            self.env.csum_unnecessary = None;
        }
        self.env.sim.clock_ns = self.env.sim.clock_ns.max(meta.timestamp_ns);

        self.vm.set_entry(entry);
        let args = [ctx_addr, 0, 0, 0, 0];
        let out = (self.vm).run_r0(&mut self.env, &mut self.mem, args, self.counting);
        // A run that failed inside a critical section must not leave the
        // other threads spinning.
        if self.env.spin_held.is_some() {
            helpers::release_held_lock(&mut self.env, &mut self.mem);
        }
        let r0 = out?;
        Ok(self.exec_of(r0))
    }
}

impl Hook {
    /// A run's result from the packet as the environment has it.
    #[inline(always)]
    fn exec_of(&self, r0: u64) -> Exec {
        let p = &self.env.packet;
        let base = u64::from(self.buf.addr32(0));
        Exec {
            r0,
            meta: (p.meta.min(p.data) - base) as usize,
            start: (p.data - base) as usize,
            end: (p.data_end - base) as usize,
        }
    }
}

/// One execution's result, before it becomes an [`Outcome`]: offsets into
/// the hook's buffer.
#[derive(Copy, Clone)]
struct Exec {
    r0: u64,
    meta: usize,
    start: usize,
    end: usize,
}

fn add(a: Stats, b: Stats) -> Stats {
    let mut s = a;
    s.accumulate(&b);
    s
}

// Hooks move to the threads that run them.
const _: () = {
    const fn sendable<T: Send>() {}
    sendable::<Hook>()
};

fn helper_table(kind: &ProgramKind) -> Result<HelperTable<Env>, HookError> {
    Ok(match kind {
        ProgramKind::Xdp { .. } => helpers::xdp_table(),
        ProgramKind::SchedCls | ProgramKind::SchedAct => helpers::tc_table(),
        ProgramKind::SocketFilter => helpers::socket_table(),
        ProgramKind::Unsupported(why) => return Err(HookError::Program(why.clone())),
    })
}
