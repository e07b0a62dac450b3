//! xPF (Ioannidis et al., "xPF: packet filtering for low-cost network
//! monitoring"): classic BPF that keeps state between packets and loops,
//! so monitoring runs inside the filter and only results reach user space.
//!
//! The extension, in opcodes classic BPF leaves unused ([`crate::xpf`
//! opcodes](crate::insn::xpf), docs/cbpf.md):
//! - **Banks.** `M[]` addresses the *active bank*: the 16 scratch words,
//!   zeroed for every packet (the bank a packet starts with, `bss`), or the
//!   instance's *persistent* block of [`XpfOptions::words`] words, kept
//!   between packets (`bsp`). Which bank an access reaches is known where it
//!   stands: the checker refuses an access that paths reach with different
//!   banks, so it costs nothing when the filter runs.
//! - **`NDX`**: `ld/ldx/st/stx M[x + k]` on the active bank, bounds-checked
//!   when it runs: an index outside the bank ends the filter with 0, as a
//!   packet load outside the packet does.
//! - **Backward jumps**: a `ja` whose `k` is negative (as an `i32`). The
//!   body (the program before `exc`) may loop; every body instruction run
//!   counts against the instance's [`XpfOptions::budget`], checked at each
//!   backward jump: over budget, control goes to the *exception handler*
//!   (from the `exc` marker to the end), or the filter ends with 0 when
//!   there is none. Inside the handler jumps go forward only, so it ends.
//! - **Time**: `ld #time_sec` and `ld #time_nsec` ([`TIME_SEC`],
//!   [`TIME_NSEC`]) load the packet's arrival time, from one reading of
//!   the clock per packet (the translation calls `bpf_ktime_get_ns` once).
//!
//! Persistent memory is a set of equal blocks owned by the instance
//! ([`Memory`]): user space allocates (`malloc`), reads (`mread`), writes
//! (`mwrite`) and switches (`mswitch`: keep, zero or copy) them through
//! handles between packets. [`Instance`] runs a program in the interpreter;
//! [`translate`] makes eBPF of it (memory as an array map, the active
//! block's index in a one-entry map, the budget as a counter), which runs
//! in sluice's VM and loads into the kernel unchanged in meaning.

mod check;
mod image;
mod instance;
mod memory;

pub use crate::asm::assemble_xpf as assemble;
pub use check::check;
pub(crate) use check::{Bank, Shape, ja_target, shape as shape_of};
pub use image::image;
pub use instance::{Instance, XpfVerdict};
pub use memory::{
    Blocks, Handle, MapBlocks, MapValueError, MapValues, MemError, Memory, MemoryOps, Switch,
    UnknownSwitch, VecBlocks,
};

pub use crate::insn::xpf::{TIME_NSEC, TIME_SEC, is_time_load};
// One of the workspace's few module loops, on purpose: `to_ebpf` translates
// classic BPF and xPF alike, so it reads xPF's shape and banks from here; this
// re-export makes `cbpf::xpf` the one face of xPF (check, run, memory and its
// eBPF translation) for the crates that use it.
pub use crate::to_ebpf::{Form, XpfProgram, translate_xpf as translate};

/// The largest persistent block, in 32-bit words (256 KiB).
pub const MAX_WORDS: u32 = 1 << 16;
/// The most blocks an instance may own.
pub const MAX_BLOCKS: u32 = 64;

/// An instance's shape: its memory and its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XpfOptions {
    /// Words in each persistent block (1 to [`MAX_WORDS`]).
    pub words: u32,
    /// Blocks the instance may own at once (1 to [`MAX_BLOCKS`]).
    pub blocks: u32,
    /// Body instructions a packet may run before the handler takes over
    /// (checked at backward jumps; at most `i32::MAX`).
    pub budget: u32,
}

impl Default for XpfOptions {
    fn default() -> XpfOptions {
        XpfOptions {
            words: 1024,
            blocks: 2,
            budget: 4096,
        }
    }
}

/// A size of [`XpfOptions`] out of range, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OptionsError {
    #[error("{0} words per block: 1 to {MAX_WORDS}")]
    Words(u32),
    #[error("{0} blocks: 1 to {MAX_BLOCKS}")]
    Blocks(u32),
    #[error("a budget of {0}: at most {max}", max = i32::MAX)]
    Budget(u32),
}

impl XpfOptions {
    /// Refuses sizes out of range, by name.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if !(1..=MAX_WORDS).contains(&self.words) {
            return Err(OptionsError::Words(self.words));
        }
        if !(1..=MAX_BLOCKS).contains(&self.blocks) {
            return Err(OptionsError::Blocks(self.blocks));
        }
        if self.budget > i32::MAX as u32 {
            return Err(OptionsError::Budget(self.budget));
        }
        Ok(())
    }
}
