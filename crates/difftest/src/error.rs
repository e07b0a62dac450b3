//! Why a differential run could not start or go on: [`DiffError`], for the
//! VM-against-kernel comparison ([`crate::Differ`]) and the tc one
//! ([`crate::tc::tc_diff`]). The messages are what `sluice diff` prints.

use std::path::PathBuf;

/// Why a differential run could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// The kernel refused: loading, maps, namespaces, sockets, tc.
    #[error("{0}")]
    Kernel(#[from] kernel::Error),
    /// Sluice's tc refused the configuration.
    #[error("{0}")]
    Tc(#[from] tc::TcError),
    /// Sluice could not run a packet.
    #[error("{0}")]
    Run(#[from] vm::VmError),
    /// A per-CPU map of the VM has another number of CPUs than the kernel.
    #[error("map {map}: the VM has {vm} CPUs, the kernel {kernel}: load the VM with {kernel}")]
    Cpus {
        map: String,
        vm: usize,
        kernel: usize,
    },
    /// The thread could not be kept on CPU 0.
    #[error("cannot pin to CPU 0: {0}")]
    PinCpu(std::io::Error),
    /// A kernel map whose entries could not be read.
    #[error("map {0}: cannot read the kernel's map")]
    KernelMap(String),
    /// The private pin directory could not be made.
    #[error("{}: {source}", path.display())]
    PinDir {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The temporary directory's name cannot be given to `mount`.
    #[error("temporary directory name has a NUL byte")]
    NulInTempDir,
    /// No BPF filesystem, and none could be mounted.
    #[error(
        "no BPF filesystem is mounted on /sys/fs/bpf, and mounting one on {} failed \
         ({source}): mount one (mount -t bpf bpf /sys/fs/bpf) for objects that pin maps",
        dir.display()
    )]
    NoBpfFs {
        dir: PathBuf,
        source: std::io::Error,
    },
    /// The tc comparison makes namespaces and runs tc.
    #[error("comparing with the kernel's tc needs root (network namespaces, tc)")]
    NotRoot,
    /// A device name too long for the veth peer's name.
    #[error("device name {0} is too long for a veth pair here (13 characters at most)")]
    LongDeviceName(String),
    /// The thread that sends the frames panicked.
    #[error("the sending thread failed")]
    Sender,
    /// The kernel's qdisc show has no counters.
    #[error("no counters in tc's qdisc show: {0}")]
    NoQdiscCounters(String),
    /// The kernel's qdisc counters do not read as numbers.
    #[error("unexpected qdisc counters: {0}")]
    QdiscCounters(String),
}
