//! `sluice tc compile` (issue 18; docs/tc.md, "tc compile"): one clsact
//! hook's chains of flower, u32 and matchall rules with gact and mirred
//! actions, as a `tc::Config` holds them, turned into C and compiled by
//! clang into one eBPF object with two programs: a tc direct-action
//! classifier (section `tc`) and an XDP program (section `xdp`). Both walk
//! the chains as `tc::Block::classify` does (chain 0 first, filters in
//! priority order, the filter's protocol, `continue`, `reclassify`, `goto
//! chain N`, the 16-restart limit) and count every rule hit and every
//! action run in two array maps, `rule_stats` and `action_stats`, the
//! same numbers the user-space chain counts; a [`Manifest`] says which
//! slot is which rule and action, and [`CompiledCounters`] reads them back (from
//! the VM's maps or the kernel's) and writes them into a configuration so
//! that its `tc -s filter show` prints them.
//!
//! What cannot be compiled exactly is refused by name (a bpf filter, a
//! police action, gact's random determination, ...): see [`Refusal`].
//!
//! ```no_run
//! let mut tc = tc::Config::default();
//! tc.run_batch("qdisc add dev v0 clsact\n\
//!               filter add dev v0 ingress prio 1 protocol ip flower ip_proto udp dst_port 53 action drop",
//!              tc::ShowOptions::default()).unwrap();
//! let out = tccompile::compile(&tc, "v0", tc::ClsactHook::Ingress, &tccompile::CompileOptions::default()).unwrap();
//! std::fs::write("v0.o", &out.object).unwrap();
//! ```

mod actions;
mod clang;
mod counters;
mod emit;
mod filter_code;
mod flower;
mod manifest;
mod matchall;
mod u32;

pub use clang::{ClangError, clang, compile_c};
pub use counters::{ActionCounters, CompiledCounters, CounterError, RuleCounters};
pub use emit::generate;
pub use manifest::{ACTION_MAP, ActionSlot, Manifest, RULE_MAP, RuleSlot};

use std::collections::BTreeMap;

/// The program sections of the object.
pub const TC_SECTION: &str = "tc";
pub const XDP_SECTION: &str = "xdp";

/// How to compile.
#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Whether to make the XDP program too (what XDP cannot do, a mirror
    /// or a redirect into a device's ingress, is refused while it is on).
    pub xdp: bool,
    /// Interface indexes for mirred's devices, over the configuration's
    /// own (`tc::Devices`).
    pub ifindex: BTreeMap<String, u32>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            xdp: true,
            ifindex: BTreeMap::new(),
        }
    }
}

/// Why a configuration was not compiled: one line per rule or action
/// that cannot be, e.g. `filter pref 3 (bpf): not compiled: ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal(pub Vec<String>);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.join("\n"))
    }
}

impl std::error::Error for Refusal {}

/// Why [`compile`] gave no object: what was refused, or what went wrong
/// with clang.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error(transparent)]
    Refused(#[from] Refusal),
    #[error(transparent)]
    Clang(#[from] ClangError),
}

/// A compiled hook: the C source, the object, and which map slot is
/// which rule and action.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub c: String,
    pub object: Vec<u8>,
    pub manifest: Manifest,
}

/// Compiles `dev`'s `hook` of `config` (C, then clang). The error says
/// what was refused, or what clang said (or that there is no clang).
pub fn compile(
    config: &tc::Config,
    dev: &str,
    hook: tc::ClsactHook,
    opts: &CompileOptions,
) -> Result<Compiled, CompileError> {
    let (c, manifest) = generate(config, dev, hook, opts)?;
    let object = compile_c(&c)?;
    Ok(Compiled {
        c,
        object,
        manifest,
    })
}
