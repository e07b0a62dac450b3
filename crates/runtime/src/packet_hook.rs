//! What the packet pipeline runs each packet through: anything that takes
//! a frame and decides as a program at a hook does, with an [`Outcome`].
//! A program of an object ([`Hook`]) is one; a tc configuration of
//! classifiers and actions (the `tc` crate) is another.

use vm::VmError;

use crate::hook::{Hook, Outcome, PacketMeta};

pub trait PacketHook: Send {
    /// Runs one packet; the outcome borrows what the hook keeps for it.
    fn run(&mut self, packet: &[u8], meta: &PacketMeta) -> Result<Outcome<'_>, VmError>;

    /// Whether outcomes count memory accesses per region.
    fn is_counting(&self) -> bool {
        false
    }

    /// Another hook on the same shared state (maps), for worker `cpu`;
    /// a hook whose state cannot be shared says why.
    fn sibling(&self, cpu: u32) -> Result<Self, String>
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

    fn is_counting(&self) -> bool {
        Hook::is_counting(self)
    }

    fn sibling(&self, cpu: u32) -> Result<Hook, String> {
        Hook::sibling(self, cpu).map_err(|e| e.to_string())
    }
}
