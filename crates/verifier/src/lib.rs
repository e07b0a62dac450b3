//! sluice's eBPF verifier: proves, path by path as the Linux kernel's
//! verifier does, that a program only touches memory it may, passes
//! helpers what they expect, releases what it takes and terminates; and
//! says why not, in the kernel's words and in plain ones.
//!
//! [`verify`] checks one program of an object against its maps
//! ([`MapView`]) with [`VerifyOptions`]; the [`VerifyReport`] says whether it passed
//! and, if not, the [`Rejection`] (its [`SafetyRule`], instruction, the kernel's
//! message and a plain one). The control-flow checks ([`Cfg`]) come first;
//! then every path is walked with an abstract state (types, bounds and
//! tnums per register, the stack byte by byte), pruning paths whose state
//! an explored one covers. [`insn_at`] prints an instruction as the
//! kernel's log does.
//!
//! The random program generator of the soundness tests, `randprog`, is
//! behind the `test-support` feature.
//!
//! ```
//! let object = obj::Object::parse(programs::object("xdp_pass").unwrap()).unwrap();
//! let maps = verifier::MapView::of_object(&object, &|_| None);
//! let report = verifier::verify(&object.programs[0], &maps, &verifier::VerifyOptions::default());
//! assert!(report.result.is_ok());
//! ```

mod alu;
mod bounds;
mod branch;
mod call;
mod cfg;
mod check;
mod ctx;
mod kfmt;
mod live;
mod mem;
mod precise;
mod protos;
#[cfg(feature = "test-support")]
pub mod randprog;
mod spin;
mod state;
mod tnum;
mod width;

#[cfg(test)]
mod exhaustive;

use std::fmt;

pub use cfg::{Cfg, CfgError, MAX_CALL_FRAMES, Subprog};
pub use kfmt::insn_at;

use maps::MapType;
use obj::{MapDef, MapOrigin, Object, Program};

/// Processed instructions after which the kernel gives up.
pub const INSN_LIMIT: usize = 1_000_000;

/// The classes of rejection, one per rule the verifier enforces.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SafetyRule {
    /// Jumps, calls, unreachable code, falling off the end, recursion.
    ControlFlow,
    /// A register read before it is written.
    UninitRegister,
    /// A write to r10.
    FramePointer,
    /// A load or store through something that is not a pointer to memory.
    InvalidDeref,
    /// A pointer that may be NULL used without a check.
    NullPointer,
    PacketBounds,
    MapBounds,
    StackBounds,
    /// A context field the program type may not read or write so.
    CtxAccess,
    /// A write to read-only memory.
    ReadOnly,
    /// Arithmetic the kernel forbids on a pointer.
    PointerArithmetic,
    /// A helper argument of the wrong kind or size.
    HelperArgument,
    /// A helper that does not exist or this program type may not call.
    UnknownHelper,
    /// A reference (socket, ring buffer record) not released on some path.
    ReferenceLeak,
    /// An instruction the kernel refuses outright (division by zero
    /// constant, shift too far, bad encoding, legacy loads in XDP).
    InvalidInstruction,
    /// Too many instructions processed, or a loop that never ends.
    Complexity,
    /// More than 512 bytes of stack over a call chain.
    StackDepth,
    /// The return value is not what the program type allows.
    ReturnValue,
    /// A `bpf_spin_lock` taken, released or touched as the kernel forbids.
    SpinLock,
    /// Something the kernel may allow but sluice's verifier does not model.
    Unsupported,
}

impl SafetyRule {
    pub fn name(self) -> &'static str {
        match self {
            SafetyRule::ControlFlow => "control-flow",
            SafetyRule::UninitRegister => "uninit-register",
            SafetyRule::FramePointer => "frame-pointer",
            SafetyRule::InvalidDeref => "invalid-deref",
            SafetyRule::NullPointer => "null-pointer",
            SafetyRule::PacketBounds => "packet-bounds",
            SafetyRule::MapBounds => "map-bounds",
            SafetyRule::StackBounds => "stack-bounds",
            SafetyRule::CtxAccess => "ctx-access",
            SafetyRule::ReadOnly => "read-only",
            SafetyRule::PointerArithmetic => "pointer-arithmetic",
            SafetyRule::HelperArgument => "helper-argument",
            SafetyRule::UnknownHelper => "unknown-helper",
            SafetyRule::ReferenceLeak => "reference-leak",
            SafetyRule::InvalidInstruction => "invalid-instruction",
            SafetyRule::Complexity => "complexity",
            SafetyRule::StackDepth => "stack-depth",
            SafetyRule::ReturnValue => "return-value",
            SafetyRule::SpinLock => "spin-lock",
            SafetyRule::Unsupported => "unsupported",
        }
    }
}

impl fmt::Display for SafetyRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a program is rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub rule: SafetyRule,
    /// The instruction (slot) at fault.
    pub insn: usize,
    /// The kernel's message for it.
    pub kernel: String,
    /// The same in one plain sentence, with what to do.
    pub reason: String,
    /// The registers and stack on the failing path.
    pub state: String,
    /// Where the value at fault came from (the map lookup that may return
    /// NULL), when that helps.
    pub origin: Option<usize>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "insn {}: {}", self.insn, self.reason)
    }
}

/// The outcome of verifying one program.
#[derive(Clone, Debug)]
pub struct VerifyReport {
    pub result: Result<(), Rejection>,
    pub insns_processed: usize,
    /// States stored for pruning.
    pub states: usize,
    /// Paths cut short because an explored state covered them.
    pub pruned: usize,
    /// Deepest stack use of the entry function, in bytes.
    pub stack_depth: usize,
    pub micros: u128,
    /// The walk, kernel-style, when asked for.
    pub log: Vec<String>,
}

/// A map as the verifier sees it.
#[derive(Clone, Debug)]
pub struct MapView {
    pub name: String,
    pub map_type: MapType,
    pub key_size: u32,
    pub value_size: u32,
    pub max_entries: u32,
    /// Programs may not write it (`.rodata`, `BPF_F_RDONLY_PROG`).
    pub readonly: bool,
    /// The contents of a frozen read-only array: loads at a constant
    /// offset read the actual value, as in the kernel.
    pub frozen: Option<Vec<u8>>,
    /// The template of a map of maps' inner maps (index into the table).
    pub inner: Option<usize>,
    /// Where the value's `struct bpf_spin_lock` is (from its BTF).
    pub spin_lock: Option<u32>,
}

/// `BPF_F_RDONLY_PROG`.
const F_RDONLY_PROG: u32 = 1 << 7;

impl MapView {
    /// The maps of an object, inner-map templates appended; `data`
    /// overrides a global data map's initial contents (after `--set`).
    pub fn of_object(object: &Object, data: &dyn Fn(usize) -> Option<Vec<u8>>) -> Vec<MapView> {
        MapView::of_maps(&object.maps, data)
    }

    /// The same for a list of map definitions.
    pub fn of_maps(maps: &[MapDef], data: &dyn Fn(usize) -> Option<Vec<u8>>) -> Vec<MapView> {
        let mut out: Vec<MapView> = Vec::new();
        let mut inner = Vec::new();
        for (i, def) in maps.iter().enumerate() {
            let readonly = matches!(def.origin, MapOrigin::Data { readonly: true, .. })
                || def.spec.flags & F_RDONLY_PROG != 0;
            let frozen = match def.origin {
                MapOrigin::Data { readonly: true, .. } => data(i).or_else(|| def.data.clone()),
                _ => None,
            };
            out.push(MapView {
                name: def.name().to_string(),
                map_type: def.spec.map_type,
                key_size: def.spec.key_size,
                value_size: def.spec.value_size,
                max_entries: def.spec.max_entries,
                readonly,
                frozen,
                inner: None,
                spin_lock: def.spec.spin_lock,
            });
            if let Some(t) = &def.inner {
                inner.push((i, t.clone()));
            }
        }
        for (i, t) in inner {
            out[i].inner = Some(out.len());
            out.push(MapView {
                name: format!("{}.inner", out[i].name),
                map_type: t.spec.map_type,
                key_size: t.spec.key_size,
                value_size: t.spec.value_size,
                max_entries: t.spec.max_entries,
                readonly: t.spec.flags & F_RDONLY_PROG != 0,
                frozen: None,
                inner: None,
                spin_lock: t.spec.spin_lock,
            });
        }
        out
    }
}

/// How to verify.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// The loader's privileges: with `CAP_PERFMON` (root) the kernel lets
    /// pointers leak into maps and return values and uninitialised stack be
    /// read; without, it refuses both.
    pub privileged: bool,
    /// Record the walk for `--log`.
    pub log: bool,
    pub insn_limit: usize,
    /// Helper ids the program type may call (`None`: any with a prototype).
    pub helpers: Option<Vec<u32>>,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            privileged: true,
            log: false,
            insn_limit: INSN_LIMIT,
            helpers: None,
        }
    }
}

/// Verifies `program` (one of `object`'s) against `maps`.
pub fn verify(program: &Program, maps: &[MapView], opts: &VerifyOptions) -> VerifyReport {
    check::run(program, maps, opts)
}
