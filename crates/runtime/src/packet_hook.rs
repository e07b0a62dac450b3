//! What the packet pipeline runs each packet through: anything that takes
//! a frame and decides as a program at a hook does, with an [`Outcome`].
//! A program of an object ([`Hook`]) is one; a tc configuration of
//! classifiers and actions (the `tc` crate) is another.

use vm::VmError;

use crate::hook::{Hook, HookError, Outcome, PacketMeta};

/// Why a hook has no sibling for another worker.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SiblingError {
    /// A program's hook could not set up the worker's per-CPU state.
    #[error("{0}")]
    Hook(#[from] HookError),
    /// The hook's state belongs to one thread (the text says why).
    #[error("{0}")]
    OneThread(&'static str),
}

pub trait PacketHook: Send {
    /// Runs one packet; the outcome borrows what the hook keeps for it.
    fn run(&mut self, packet: &[u8], meta: &PacketMeta) -> Result<Outcome<'_>, VmError>;

    /// Runs packets `0..n` in order (`packet(i)`: its bytes and
    /// timestamp, which goes into `meta`), handing each outcome to `each`
    /// with the packet's index: what [`PacketHook::run`] gives each, which
    /// a hook may reach faster for a whole batch ([`Hook::run_batch`]).
    fn run_batch<'p>(
        &mut self,
        n: usize,
        packet: impl Fn(usize) -> (&'p [u8], u64),
        meta: &mut PacketMeta,
        mut each: impl FnMut(usize, Result<Outcome<'_>, VmError>),
    ) where
        Self: Sized,
    {
        for i in 0..n {
            let (data, ts) = packet(i);
            meta.timestamp_ns = ts;
            each(i, self.run(data, meta));
        }
    }

    /// Whether outcomes count memory accesses per region.
    fn is_counting(&self) -> bool {
        false
    }

    /// The coverage counts of the runs so far, counting on from zero
    /// (`None`: the hook does not count them, [`Hook::set_coverage`]).
    fn take_coverage(&mut self) -> Option<vm::Coverage> {
        None
    }

    /// Another hook on the same shared state (maps), for worker `cpu`;
    /// a hook whose state cannot be shared says why.
    fn sibling(&self, cpu: u32) -> Result<Self, SiblingError>
    where
        Self: Sized;

    /// Called by a polling thread after each round of batches, also when
    /// the round found no packets: a hook that keeps per-thread state
    /// (counts to publish, timers) does that work here.
    fn after_batch(&mut self, _idle: bool) {}
}

impl PacketHook for Hook {
    #[inline]
    fn run(&mut self, packet: &[u8], meta: &PacketMeta) -> Result<Outcome<'_>, VmError> {
        Hook::run(self, packet, meta)
    }

    #[inline]
    fn run_batch<'p>(
        &mut self,
        n: usize,
        packet: impl Fn(usize) -> (&'p [u8], u64),
        meta: &mut PacketMeta,
        each: impl FnMut(usize, Result<Outcome<'_>, VmError>),
    ) {
        Hook::run_batch(self, n, packet, meta, each)
    }

    fn is_counting(&self) -> bool {
        Hook::is_counting(self)
    }

    fn take_coverage(&mut self) -> Option<vm::Coverage> {
        Hook::take_coverage(self)
    }

    fn sibling(&self, cpu: u32) -> Result<Hook, SiblingError> {
        Ok(Hook::sibling(self, cpu)?)
    }
}
