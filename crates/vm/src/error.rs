use crate::memory::MemFault;

/// A run that stopped before `exit`: where, and why.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[error("instruction {pc} ({text}): {kind}")]
pub struct VmError {
    /// Index of the program (among the VM's) the instruction belongs to.
    pub program: usize,
    /// Slot index of the failing instruction.
    pub pc: usize,
    /// The instruction, disassembled.
    pub text: String,
    pub kind: VmErrorKind,
}

#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
pub enum VmErrorKind {
    #[error("{0}")]
    Memory(MemFault),
    #[error("atomic {size}-byte access at {addr:#x} is not {size}-byte aligned")]
    MisalignedAtomic { addr: u64, size: u64 },
    #[error("call depth exceeds {} frames", crate::MAX_FRAMES)]
    CallDepth,
    #[error(
        "instruction budget of {0} exhausted (raise it with --budget if the program really loops this long)"
    )]
    Budget(u64),
    #[error("execution ran past the last instruction")]
    FellOff,
    #[error("callx to helper {0}, which this VM does not provide")]
    UnknownHelper(u64),
    #[error("helper {name} failed: {message}")]
    Helper { name: String, message: String },
    #[error("legacy packet load, but no packet is mapped")]
    NoPacket,
    #[error(
        "this instruction's CO-RE relocation failed at load time (the target BTF lacks the field or type it uses)"
    )]
    CorePoisoned,
    #[error("callback {0:#x} is not a function of this program")]
    BadCallback(u64),
    /// A packet longer than the hook takes: not run (never cut).
    #[error(
        "a packet of {len} bytes is longer than the {max} bytes of linear data a tc program takes here (the kernel keeps the rest of a longer skb in fragments, which sluice does not model for tc): not run"
    )]
    PacketTooLong { len: usize, max: usize },
}
