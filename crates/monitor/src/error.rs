//! [`MonitorError`]: why a monitoring application could not be set up or
//! run, in the words the command line has always printed after `sluice: `.

/// An error of the monitoring applications (flows, sampling, RTT; in
/// sluice's VM, on an xPF engine, or live in the kernel).
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// An option out of range (`--rate`, `-a`, a table size the program
    /// cannot hold).
    #[error("{0}")]
    Options(String),
    /// An eBPF program sluice ships was not built (`programs/`).
    #[error("the {0} program is not built")]
    NotBuilt(&'static str),
    /// An xPF program sluice ships was not built in (`programs/xpf/`).
    #[error("programs/xpf/{0}.s is not built in")]
    XpfNotBuilt(&'static str),
    /// An xPF program sluice ships does not assemble.
    #[error("{file}: {error}")]
    Assemble {
        file: &'static str,
        error: cbpf::AsmError,
    },
    /// A shipped eBPF object did not parse.
    #[error("{0}")]
    Object(#[from] obj::ObjError),
    /// It did not load into sluice's VM.
    #[error("{0}")]
    Image(#[from] runtime::ImageError),
    /// Its hook could not be made.
    #[error("{0}")]
    Hook(#[from] runtime::HookError),
    /// A packet's run in sluice's VM failed.
    #[error("{0}")]
    Run(#[from] vm::VmError),
    /// A program has no map of that name (`program`: `flows`, or `loaded
    /// flows` for the one in the kernel).
    #[error("the {program} program has no map {map}")]
    NoMap { program: String, map: String },
    /// A map that should be a ring buffer is not (what it is called).
    #[error("{0} is no ring buffer")]
    NoRingBuffer(&'static str),
    /// A record, key or value a program wrote is not as user space reads
    /// it (its size, an address family, an end reason, a method).
    #[error("{0}")]
    Record(String),
    /// A map of sluice's VM refused an operation.
    #[error("{0}")]
    Map(String),
    /// An xPF engine failed (setting up the instance, running a packet).
    #[error("{0}")]
    Xpf(#[from] xpf::XpfError),
    /// An xPF instance's memory refused an operation.
    #[error("{0}")]
    Memory(#[from] cbpf::xpf::MemError),
    /// The kernel refused (loading, attaching, maps, ring buffers).
    #[error("{0}")]
    Kernel(#[from] kernel::Error),
    /// A packet's run failed (its number in the source).
    #[error("packet {seq}: {error}")]
    Packet { seq: u64, error: Box<MonitorError> },
}

impl MonitorError {
    /// A record not as user space reads it.
    pub(crate) fn record(why: impl Into<String>) -> MonitorError {
        MonitorError::Record(why.into())
    }

    /// A map of sluice's VM that refused (its error as `{:?}` shows it).
    pub(crate) fn map(e: impl std::fmt::Debug) -> MonitorError {
        MonitorError::Map(format!("{e:?}"))
    }
}
