//! The state a program's helpers work on during a run.

use std::sync::Arc;

use maps::Map;
use vm::{BasicEnv, SimEnv};

use crate::fib::Fib;

/// What kind of context the running program has.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum CtxKind {
    Xdp,
    Skb,
}

/// The packet of the current run: addresses of its buffer and of the
/// bytes the program sees (`data_meta <= data <= data_end`).
#[derive(Copy, Clone, Debug)]
pub struct PacketView {
    pub kind: CtxKind,
    /// Index of the packet's region in the run's `Memory`.
    pub region: usize,
    /// First byte of the buffer (`data_hard_start`).
    pub hard_start: u64,
    /// Last byte the packet may grow to, exclusive.
    pub hard_end: u64,
    pub meta: u64,
    pub data: u64,
    pub data_end: u64,
    /// Address of the context struct.
    pub ctx: u64,
}

impl PacketView {
    pub fn len(&self) -> u64 {
        self.data_end - self.data
    }

    pub fn is_empty(&self) -> bool {
        self.data_end == self.data
    }
}

/// Where a redirect sends the packet.
#[derive(Copy, Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub enum RedirectTarget {
    /// An interface (`bpf_redirect`, a devmap entry, `bpf_redirect_neigh`).
    Device { ifindex: u32, ingress: bool },
    /// Another CPU (a cpumap entry).
    Cpu(u32),
    /// An AF_XDP socket (an xskmap entry at this queue index).
    Socket(u32),
    /// Every interface of the devmap (`BPF_F_BROADCAST`), the one the
    /// packet came in on excepted with `BPF_F_EXCLUDE_INGRESS`.
    Broadcast { exclude_ingress: bool },
}

/// A copy of the packet `bpf_clone_redirect` sent to an interface (out of
/// it, or into it with `BPF_F_INGRESS`), as the packet was at the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cloned {
    pub ifindex: u32,
    pub ingress: bool,
    pub packet: Vec<u8>,
}

/// A redirect requested by the program.
#[derive(Copy, Clone, PartialEq, Eq, Debug, serde::Serialize, serde::Deserialize)]
pub struct Redirect {
    pub target: RedirectTarget,
    /// The map it came from (`bpf_redirect_map`), if any.
    pub map: Option<usize>,
}

/// Bytes of scratch per nesting level of `bpf_for_each_map_elem` (keys
/// handed to callbacks; the kernel caps keys at 512 bytes).
pub const SCRATCH_SLOT: usize = 512;
pub const SCRATCH_LEVELS: usize = 8;

/// The environment of every helper.
pub struct Env {
    /// The object's maps, shared with every hook on the same image (the
    /// kernel's CPUs share one set of maps).
    pub maps: Arc<[Map]>,
    /// The simulated clock, CPU and random numbers of this hook.
    pub sim: SimEnv,
    /// `bpf_trace_printk` output of the current run.
    pub trace: Vec<String>,
    pub redirect: Option<Redirect>,
    /// Copies `bpf_clone_redirect` sent on during the current run.
    pub clones: Vec<Cloned>,
    /// The map key of the last `bpf_redirect_map`.
    pub redirect_key: Option<u32>,
    pub packet: PacketView,
    pub fib: Fib,
    /// For tail calls: the VM program index of each object program index
    /// (`None` for programs that cannot run).
    pub vm_program_of: Vec<Option<usize>>,
    /// Tunnel metadata the program set (`bpf_skb_set_tunnel_key`).
    pub tunnel: Option<crate::TunnelInfo>,
    /// XDP multi-buffer: the frame's bytes beyond its linear part, in
    /// fragments of [`crate::FRAG_SIZE`] bytes (what `bpf_xdp_load_bytes`,
    /// `_store_bytes`, `_get_buff_len` and `_adjust_tail` reach).
    pub frags: Vec<u8>,
    /// What this run did that another system cannot reproduce (the
    /// kernel's jiffies, its randomly seeded flow hash, its routing table and
    /// sockets, an LRU eviction):
    /// differential testing reports a difference after them as "not
    /// comparable" rather than as a divergence.
    pub unreproducible: Vec<&'static str>,
    /// The last flow hash computed or set (`bpf_get_hash_recalc`).
    pub last_hash: u32,
    /// `CHECKSUM_UNNECESSARY` with this `csum_level`, as `bpf_csum_level`
    /// left the packet (`None`: `CHECKSUM_NONE`, how packets arrive).
    pub csum_unnecessary: Option<u8>,
    /// Keys being walked by `bpf_for_each_map_elem`, one list per level.
    pub iterations: Vec<Vec<Vec<u8>>>,
    /// Read-only to programs: keys handed to callbacks.
    pub scratch: Box<[u8; SCRATCH_SLOT * SCRATCH_LEVELS]>,
    /// The scratch's address as programs see it.
    pub scratch_addr: u64,
    /// The address of the `bpf_spin_lock` the running program holds.
    pub spin_held: Option<u64>,
    /// The lowest buffer address the packet's start (`data_meta`, `data`)
    /// moved to, or helpers moved bytes to, since the hook last zeroed the
    /// headroom: the headroom below it is still zero (see
    /// [`Env::touch_headroom`]).
    pub headroom_low: u64,
}

impl Env {
    /// A fresh run state over `maps` for CPU `cpu` (whose pseudo-random
    /// numbers are its own: [`SimEnv::for_cpu`]).
    pub fn new(maps: Arc<[Map]>, cpu: u32) -> Env {
        let sim = SimEnv::for_cpu(cpu);
        Env {
            maps,
            sim,
            trace: Vec::new(),
            redirect: None,
            clones: Vec::new(),
            redirect_key: None,
            unreproducible: Vec::new(),
            tunnel: None,
            frags: Vec::new(),
            packet: PacketView {
                kind: CtxKind::Xdp,
                region: 0,
                hard_start: 0,
                hard_end: 0,
                meta: 0,
                data: 0,
                data_end: 0,
                ctx: 0,
            },
            fib: Fib::default(),
            vm_program_of: Vec::new(),
            last_hash: 0,
            csum_unnecessary: None,
            iterations: Vec::new(),
            scratch: Box::new([0; SCRATCH_SLOT * SCRATCH_LEVELS]),
            scratch_addr: 0,
            spin_held: None,
            headroom_low: u64::MAX,
        }
    }

    /// Notes that packet bytes from `addr` on may be written or exposed to
    /// the program, so the hook zeroes the headroom from there before the
    /// next packet (a program must not see an earlier packet's bytes).
    pub fn touch_headroom(&mut self, addr: u64) {
        self.headroom_low = self.headroom_low.min(addr);
    }

    /// The map behind a handle a program passed.
    pub fn map_of(&self, handle: u64) -> Option<usize> {
        crate::handles::map_index(handle, self.maps.len())
    }

    pub fn cpu(&self) -> u32 {
        self.sim.cpu
    }
}

impl BasicEnv for Env {
    fn now_ns(&mut self) -> u64 {
        self.sim.now_ns()
    }
    fn random_u32(&mut self) -> u32 {
        self.sim.random_u32()
    }
    fn cpu_id(&self) -> u32 {
        self.sim.cpu
    }
}
