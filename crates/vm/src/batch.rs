//! Runs over a batch of packets with one entry into native code.
//!
//! The rule: a batch run gives every packet exactly what a run of its own
//! ([`Vm::run`]) would give — r0, instruction, helper and tail-call counts,
//! the same memory and map effects in the same order — while Rust is
//! entered once per batch. The JIT emits, around the verified program, a
//! loop over [`BatchPacket`]s that writes the first 16 bytes of the
//! context, resets the machine (budget, counters, the stack the verifier
//! saw used, registers), runs the program and stores a [`BatchResult`].
//!
//! What lives outside the VM (the embedder's per-packet state: the packet's
//! window, its clock, what helpers record for the packet's outcome) is set
//! lazily: [`BatchHooks::sync`] runs before the first helper call of a
//! packet, and only then. A packet that calls a helper outside
//! [`BatchHooks::quiet`] (one that leaves something for the packet's outcome:
//! a redirect, a trace line, a packet that moved) ends the batch right
//! after it, so the embedder reads that state before the next packet
//! changes it ([`BatchStop::After`]); so does a packet that needed the
//! interpreter for an instruction.
//!
//! Only trusted runs without counting or coverage take this path
//! ([`Vm::batch_ready`]); everything else keeps its per-packet form.

use crate::{Memory, Vm, VmError};

/// One packet of a batch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchPacket {
    /// The first 16 bytes of the context for this packet (for XDP:
    /// `data`, `data_end`, `data_meta`, `ingress_ifindex`).
    pub ctx_head: [u32; 4],
    /// The embedder's own word ([`BatchHooks::sync`] gets the packet).
    pub extra: u64,
}

/// What one packet's run left.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchResult {
    pub r0: u64,
    pub insns: u64,
    pub helper_calls: u64,
    pub tail_calls: u64,
}

/// Helper ids (below 256) as a set.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HelperSet([u64; 4]);

impl HelperSet {
    pub fn new(ids: &[u32]) -> HelperSet {
        let mut s = HelperSet::default();
        for &id in ids {
            if id < 256 {
                s.0[id as usize / 64] |= 1 << (id % 64);
            }
        }
        s
    }

    pub fn contains(&self, id: u64) -> bool {
        id < 256 && self.0[id as usize / 64] & (1 << (id % 64)) != 0
    }
}

/// What the embedder gives a batch run.
pub struct BatchHooks<E> {
    /// The context's address (the program's r1).
    pub ctx: u64,
    /// Sets the embedder's state for a packet, before its first helper
    /// call (or before the interpreter runs one of its instructions).
    pub sync: fn(&mut E, &mut Memory<'_>, &BatchPacket),
    /// Helpers whose calls leave nothing the packet's outcome is read from.
    pub quiet: HelperSet,
}

/// Where a batch run stopped.
#[derive(Debug)]
pub enum BatchStop {
    /// Every packet ran; every result is written.
    Done,
    /// Packets up to and including this one ran (their results written);
    /// this one called a helper outside the quiet set or needed the
    /// interpreter: the embedder's state is this packet's.
    After(usize),
    /// This packet's run failed (the results before it are written).
    Failed(usize, VmError),
}

/// Why a VM cannot run batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotBatchable {
    #[error("batches run in native code: the JIT is not enabled")]
    NoJit,
    #[error("batches run verified programs only (not trusted)")]
    Untrusted,
    #[error("batches do not count coverage")]
    Covering,
    #[error("no memory for the batch code")]
    NoCode,
    #[error("{packets} packets but {results} results")]
    Lengths { packets: usize, results: usize },
}

/// The batch's state as native code reads and writes it (`repr(C)`:
/// addressed by offset, `jit/batch_code.rs`).
#[repr(C)]
pub(crate) struct BatchState {
    /// The packet running (or next to run).
    pub next: u64,
    pub len: u64,
    pub packets: *const BatchPacket,
    pub results: *mut BatchResult,
    pub ctx: u64,
    /// Native address of the entry program's first slot.
    pub entry: u64,
    pub entry_prog: u64,
    pub budget: u64,
    pub stack_top: u64,
    /// Set when the packet called a helper outside `quiet`.
    pub loud: u64,
    /// Why native code returned: 0 it left mid-packet, 1 after a loud
    /// packet, 2 every packet ran.
    pub status: u64,
    /// `next + 1` of the packet `sync` ran for.
    pub synced: u64,
    /// `fn(&mut E, &mut Memory<'_>, &BatchPacket)`, erased.
    pub sync: *const (),
    pub quiet: HelperSet,
}

impl BatchState {
    /// Runs `sync` for the running packet unless done already.
    ///
    /// # Safety
    /// `self.sync` must be a `fn(&mut E, &mut Memory, &BatchPacket)` and
    /// `packets` valid for `len` packets (both set by `Vm::run_batch`).
    pub(crate) unsafe fn sync_now<E>(&mut self, env: &mut E, mem: &mut Memory<'_>) {
        if self.synced == self.next + 1 {
            return;
        }
        self.synced = self.next + 1;
        // SAFETY: as the caller promises.
        let (sync, packet) = unsafe {
            (
                std::mem::transmute::<*const (), fn(&mut E, &mut Memory<'_>, &BatchPacket)>(
                    self.sync,
                ),
                &*self.packets.add(self.next as usize),
            )
        };
        sync(env, mem, packet);
    }
}

impl<E> Vm<E> {
    /// Whether [`Vm::run_batch`] can run (native code, trusted, no
    /// coverage); counting runs keep their per-packet form.
    pub fn batch_ready(&self) -> Result<(), NotBatchable> {
        #[cfg(not(target_arch = "x86_64"))]
        return Err(NotBatchable::NoJit);
        #[cfg(target_arch = "x86_64")]
        {
            if self.jit.is_none() {
                return Err(NotBatchable::NoJit);
            }
            if !self.trusted {
                return Err(NotBatchable::Untrusted);
            }
            if self.cover.is_some() {
                return Err(NotBatchable::Covering);
            }
            Ok(())
        }
    }

    /// Runs the entry program over `packets`, one result each, with one
    /// entry into native code until a packet needs the embedder
    /// ([`BatchStop`]); call again with the rest.
    pub fn run_batch(
        &mut self,
        env: &mut E,
        mem: &mut Memory<'_>,
        hooks: &BatchHooks<E>,
        packets: &[BatchPacket],
        results: &mut [BatchResult],
    ) -> Result<BatchStop, NotBatchable> {
        self.batch_ready()?;
        if packets.len() != results.len() {
            return Err(NotBatchable::Lengths {
                packets: packets.len(),
                results: results.len(),
            });
        }
        #[cfg(target_arch = "x86_64")]
        {
            let stop = self.drive_batch(env, mem, hooks, packets, results);
            mem.stack.len = 0;
            stop
        }
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("batch_ready refuses")
    }
}
