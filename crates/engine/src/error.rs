//! [`Error`]: why a hook could not be built or a run could not be made,
//! in the words the command line has always used for it.

use std::path::PathBuf;

use pipeline::{Route, SinkError, SourceError};

use crate::contents::ContentsError;
use crate::settings::SettingsError;

/// Why a [`HookSpec`](crate::HookSpec) or a [`RunSpec`](crate::RunSpec)
/// failed. `Display` gives the message `sluice` prints after `sluice: `.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `--shard ranges` for a run whose result may depend on the order
    /// of packets, or whose source cannot be cut.
    #[error("--shard ranges: {0} (--shard auto shards it by flow)")]
    Ranges(String),
    /// A file (the object, a BTF file, a FIB or route table) not read.
    #[error("{0}")]
    File(#[from] capture::WholeFileError),
    /// The BTF file of [`BtfTarget::File`](crate::BtfTarget::File).
    #[error("--btf {0}")]
    Btf(#[from] obj::CoreTargetError),
    /// The object did not parse, load, or has no such program.
    #[error("{name}: {cause}")]
    Object { name: String, cause: ObjectError },
    /// `--set`, `--map-size`, `--map-size-default`, `--type`.
    #[error("{0}")]
    Settings(#[from] SettingsError),
    /// `--map-update`, `--routes`, `--sa`.
    #[error("{0}")]
    Contents(#[from] ContentsError),
    /// The forwarding table file did not parse.
    #[error("{path}: {reason}", path = path.display())]
    Fib {
        path: PathBuf,
        reason: runtime::fib::FibError,
    },
    /// A pinned map's file not read, restored or written.
    #[error("{path}: {reason}", path = path.display())]
    Pin { path: PathBuf, reason: String },
    /// The verifier refused the program (the message says what to do).
    #[error("{0}")]
    Rejected(#[from] runtime::Rejection),
    /// The packets' source did not open.
    #[error("{0}")]
    Source(#[from] SourceError),
    /// The AF_XDP datapath did not open on the interface.
    #[error("{0}")]
    Datapath(#[from] datapath::DatapathError),
    /// The tcpdump expression did not compile.
    #[error("--filter {expr}: {cause}")]
    Filter {
        expr: String,
        cause: cbpf::ExprError,
    },
    /// A tcpdump expression given on its own did not compile (as `sluice
    /// filter` says it: `EXPR: libpcap's message`).
    #[error("{expr}: {cause}")]
    Expr {
        expr: String,
        cause: cbpf::ExprError,
    },
    /// Packets not filtered ([`FilterRunSpec`](crate::FilterRunSpec)): the
    /// output not written, a program the interpreter could not run.
    #[error("{0}")]
    FilterRun(cbpf::FilterError),
    /// A filter engine not known, or not usable here (the kernel's).
    #[error("--engine {engine}: {cause}")]
    FilterEngine { engine: String, cause: String },
    /// A link type name not known.
    #[error("{0}")]
    Linktype(#[from] capture::UnknownLinkType),
    /// An output file not created.
    #[error("{0}")]
    Sink(#[from] SinkError),
    /// An interface a route is sent out of did not open.
    #[error("--send-{route} {cause}", route = crate::sink::route_name(*route))]
    Send { route: Route, cause: SinkError },
    /// Two outputs on standard output.
    #[error("only one output can be standard output (-)")]
    StdoutTwice,
    /// The replay failed (an output could not be written, a worker failed).
    #[error("{0}")]
    Replay(#[from] pipeline::ReplayError),
    /// A tc configuration not loaded, run or shown ([`TcRunSpec`](crate::TcRunSpec)).
    #[error("{0}")]
    Tc(#[from] TcError),
    /// A monitoring application's option out of range, or its run failed
    /// ([`FlowsSpec`](crate::FlowsSpec), [`RttSpec`](crate::RttSpec),
    /// [`SampleSpec`](crate::SampleSpec)).
    #[error("{0}")]
    Monitor(#[from] monitor::MonitorError),
    /// Shards' parts (flows, filters) that cannot be made or merged.
    #[error("{0}")]
    Parts(#[from] crate::flows_shard::PartsError),
    /// A flow-affine partition not made, or buckets that do not go
    /// together ([`partition`](crate::partition), [`BucketRunSpec`](crate::BucketRunSpec)).
    #[error("{0}")]
    Partition(#[from] crate::bucket::PartitionError),
    /// Runs over byte ranges not merged, or a range's run not kept
    /// ([`merge_runs`](crate::merge_runs), [`ShardRun`](crate::ShardRun)).
    #[error("{0}")]
    Merge(#[from] crate::merge_policy::MergeError),
    /// A profile's packets did not read, or none ran to a verdict
    /// ([`ProfileSpec`](crate::ProfileSpec)).
    #[error("{0}")]
    Profile(#[from] profile::ProfileError),
}

/// What went wrong with the object itself.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error("{0}")]
    Parse(#[from] obj::ObjError),
    #[error("{0}")]
    Load(#[from] runtime::ImageError),
    /// No such program, or several and none named.
    #[error("{0}")]
    Program(#[from] runtime::FindProgramError),
    #[error("{0}")]
    Hook(#[from] runtime::HookError),
    /// The kernel (libbpf) refused the object ([`KernelSpec`](crate::KernelSpec)).
    #[error("{0}")]
    Kernel(#[from] kernel::Error),
}

/// Why a tc configuration gave no run (besides the source, the sinks and
/// the replay, which are the [`Error`]s of any run).
#[derive(Debug, thiserror::Error)]
pub enum TcError {
    /// The file not read, or a line tc would refuse.
    #[error("{0}")]
    Load(#[from] tc::LoadError),
    /// No device named, and no qdisc to take packets.
    #[error("--tc: the configuration has no qdisc (qdisc add dev DEV clsact)")]
    NoQdisc,
    /// No device named, and several with a qdisc.
    #[error("--tc: packets arrive at which device? --tc-dev {}", .0.join("|"))]
    WhichDevice(Vec<String>),
    /// `tc filter show` refused (after the run).
    #[error("{0}")]
    Show(String),
    /// `tc -j filter show` gave what is not JSON.
    #[error("tc -j: {0}")]
    Json(#[from] serde_json::Error),
}
