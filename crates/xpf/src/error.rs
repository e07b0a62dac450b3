//! What can go wrong running classic BPF and xPF programs on an engine,
//! in the words the command line has always printed.

/// An error of the classic and xPF engines.
#[derive(Debug, thiserror::Error)]
pub enum XpfError {
    /// xPF's checks refuse the program for the instance, or it has no
    /// translation.
    #[error("{0}")]
    Program(String),
    /// The kernel could not load the translation.
    #[error("loading into the kernel: {0}")]
    Load(kernel::Error),
    /// The kernel's verifier refuses the translation (its log).
    #[error("the kernel refuses the translation: {0}")]
    KernelRefuses(String),
    /// sluice's verifier refuses the translation.
    #[error("sluice's verifier refuses the translation: {0}")]
    VerifierRefuses(String),
    /// sluice's loader, VM or JIT failed.
    #[error("{0}")]
    Vm(String),
    /// A packet's run failed in the interpreter.
    #[error("{0}")]
    Run(String),
    /// The kernel's test run of a packet failed.
    #[error("the kernel's test run: {0}")]
    TestRun(kernel::Error),
    /// The kernel refused something else (maps, pins, attachments).
    #[error("{0}")]
    Kernel(#[from] kernel::Error),
    /// The instance's memory refused an operation.
    #[error("{0}")]
    Memory(String),
    /// No spare block for a periodic switch.
    #[error("switching blocks: {0}")]
    Switch(String),
    /// A packet's run failed (its number, from 1).
    #[error("packet {seq}: {error}")]
    Packet { seq: u64, error: Box<XpfError> },
    /// The kernel engine cannot run here, or a bpffs directory holds no
    /// instance or one already: what to do.
    #[error("{0}")]
    Unavailable(String),
    /// A file or directory of the pins.
    #[error("{path}: {source}")]
    File {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
}
