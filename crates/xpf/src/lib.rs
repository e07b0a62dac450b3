//! Engines for classic BPF and xPF programs beside the classic
//! interpreter of `cbpf`:
//!
//! - [`classic`]: the eBPF translation of a classic filter in sluice's JIT
//!   or in the kernel, for `cbpf::filter_capture` (`sluice filter
//!   --engine jit|kernel`);
//! - [`XpfRunner`]: an xPF instance on the xPF interpreter, sluice's VM or
//!   JIT, or the kernel, fed from any `pipeline` source by [`run_xpf`]
//!   (through the pipeline's packet loop, `pipeline::for_each_packet`);
//! - [`xpf_attach`], [`xpf_open`], [`xpf_detach`]: an xPF instance on an
//!   interface's receive path, its memory pinned in bpffs.

pub mod classic;
mod error;
mod pinned;
mod runner;

pub use error::XpfError;
pub use pinned::{PinnedMemory, xpf_attach, xpf_detach, xpf_open};
pub use runner::{KernelMaps, Retired, XpfEngine, XpfRunOptions, XpfRunner, XpfSummary, run_xpf};
