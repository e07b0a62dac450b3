//! sluice's face for users: the one library the `sluice` command line (and
//! the Python package) calls to run packet programs.
//!
//! A run is data before it is work:
//!
//! - an **object**: an ELF file built by `clang -target bpf`, or its bytes
//!   ([`ObjectSource`]);
//! - a **hook specification** ([`HookSpec`]): the object, the program in it,
//!   the BTF its CO-RE relocations resolve against, globals and map sizes
//!   ([`Settings`]), map contents ([`Contents`]), a forwarding table, pinned
//!   maps, the engine (JIT or interpreter), verification. [`HookSpec::build`]
//!   gives a verified, ready [`Hook`], and what building it noted;
//! - a **run specification** ([`RunSpec`]): the hook, its packets
//!   ([`SourceSpec`]: a capture or one byte range of it, generated
//!   traffic, a live interface, frames in memory; a tcpdump filter), where each route's packets go
//!   ([`SinkSpec`]), threads, limits. [`RunSpec::run`] replays the packets
//!   through the hook (the pipeline's loop, on every thread asked for);
//! - a **report** ([`RunReport`]): verdicts, costs, histograms, redirects,
//!   errors, maps; it serializes (serde) as `sluice run --json` prints it.
//!   With [`RunSpec::per_packet`], it also holds one row per packet
//!   ([`PacketTable`]: verdict, redirect, cost, memory accesses, error),
//!   in columns; with [`RunSpec::coverage`], the source lines, branches
//!   and functions the packets ran ([`Coverage`], written as lcov).
//!
//! A tc configuration runs in place of a program: a [`TcSpec`] (a file of
//! `tc` lines, the device and clsact hook packets arrive at) in a
//! [`TcRunSpec`], whose [`TcRunSpec::run`] gives a [`TcReport`] (verdicts,
//! where mirred sent packets, every hook's filters with their counters).
//! A tcpdump expression is a [`CompiledFilter`] (its classic BPF program,
//! its `tcpdump -d` text, a packet matched); a [`FilterRunSpec`] filters
//! packets as `sluice filter` does, its [`FilterReport`] holding the
//! matching packets ([`MatchTable`]). A route's packets can be kept in
//! memory ([`Target::Memory`]): the report's [`Output`].
//!
//! A [`KernelSpec`] loads an object into the kernel with the globals and
//! map sizes the same [`Settings`] give in the VM. [`FlowsSpec`],
//! [`RttSpec`] and [`SampleSpec`] run `sluice monitor`'s applications
//! (flow accounting, passive RTT, trajectory sampling) over a source; a
//! [`ProfileSpec`] profiles a program's cost per packet and fits its
//! model ([`Profiled`]), as `sluice profile` does. [`files`] reads the
//! input files every front end reads whole, bounded.
//!
//! [`Verifiable`] makes an object ready for verifying its programs one by
//! one ([`verify`]), as `sluice verify` does; [`Verifiable::check`] gives
//! `sluice verify`'s [`ProgramVerdict`] on one (the kernel's beside it).
//! [`HookMaps`] reads and writes a built hook's maps as user space does
//! (`bpf()`), keys and values as [`Value`]s laid out by BTF ([`Shape`]).
//! Errors are [`Error`]s, whose messages are the command line's.
//!
//! Build a hook, run it over a capture, read a map:
//!
//! ```
//! use engine::{HookSpec, RunSpec, SourceSpec};
//!
//! // A capture of three UDP packets and one TCP packet.
//! let dir = std::env::temp_dir().join(format!("engine-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("four.pcap");
//! let mut w = pcap_file::pcap::PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
//! for (i, tcp) in [false, false, true, false].into_iter().enumerate() {
//!     let frame = if tcp {
//!         packet::Builder::tcp("10.0.0.1", "10.0.0.2", 1000, 80).build()
//!     } else {
//!         packet::Builder::udp("10.0.0.1", "10.0.0.2", 1000, 53).build()
//!     };
//!     let at = std::time::Duration::from_millis(i as u64);
//!     let record = pcap_file::pcap::PcapPacket::new(at, frame.len() as u32, &frame);
//!     w.write_packet(&record).unwrap();
//! }
//! drop(w);
//!
//! // xdp_count counts packets per IP protocol in the per-CPU array proto_stats.
//! let object = programs::object("xdp_count").unwrap();
//! let hook = HookSpec::from_bytes("xdp_count.o", object);
//! let spec = RunSpec::new(hook, SourceSpec::capture(&path));
//! let report = spec.run(None, None).unwrap();
//! assert_eq!(report.packets, 4);
//! assert_eq!(report.verdicts["PASS"], 4);
//! assert_eq!(report.checks, "verified");
//! let stats = report.maps.iter().find(|m| m.name == "proto_stats").unwrap();
//! let udp = stats.entries.iter().find(|e| e.key == "17").unwrap();
//! assert!(udp.value.contains("packets: 3"), "{}", udp.value);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! A generated source, the report as JSON:
//!
//! ```
//! use engine::{HookSpec, RunSpec, SourceSpec};
//!
//! let mut hook = HookSpec::from_bytes("xdp_ddos.o", programs::object("xdp_ddos").unwrap());
//! hook.settings.set = vec!["rate_pps=1000".into(), "burst=100".into()];
//! let source = SourceSpec::generated(["udp,flows=10,count=1000"]);
//! let mut spec = RunSpec::new(hook, source);
//! spec.map_entries = 4;
//! let report = spec.run(None, None).unwrap();
//! let json = serde_json::to_string_pretty(&report).unwrap();
//! println!("{json}");
//! assert_eq!(report.packets, 1000);
//! ```
//!
//! Packets through a tc configuration:
//!
//! ```
//! use engine::{SourceSpec, TcRunSpec, TcSpec};
//!
//! let dir = std::env::temp_dir().join(format!("engine-doc-tc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let rules = dir.join("rules.tc");
//! std::fs::write(
//!     &rules,
//!     "qdisc add dev v0 clsact\n\
//!      filter add dev v0 ingress prio 1 protocol ip u32 match ip protocol 17 0xff action drop\n",
//! )
//! .unwrap();
//! let spec = TcRunSpec::new(TcSpec::new(&rules), SourceSpec::generated(["udp,count=10"]));
//! let report = spec.run(None, None).unwrap().report;
//! assert_eq!(report.dev, "v0");
//! assert_eq!(report.verdicts["SHOT"], 10);
//! assert!(report.shown[0].text.contains("action order 1: gact action drop"));
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```
//!
//! The hook alone, to run packets one at a time:
//!
//! ```
//! let built = engine::HookSpec::from_bytes("xdp_pass.o", programs::object("xdp_pass").unwrap())
//!     .build()
//!     .unwrap();
//! let mut hook = built.hook;
//! let frame = packet::Builder::udp("10.0.0.1", "10.0.0.2", 1, 2).build();
//! let meta = engine::PacketMeta { ifindex: 1, ..Default::default() };
//! let outcome = hook.run(&frame, &meta).unwrap();
//! assert_eq!(outcome.verdict.name(), "PASS");
//! ```

mod bucket;
mod bucket_merge;
mod bucket_run;
mod contents;
mod error;
pub mod files;
mod filter;
mod filter_shard;
mod flows_shard;
mod hook_maps;
mod hook_spec;
mod kernel_spec;
mod map_merge;
pub mod map_value;
pub mod mapfmt;
mod merge;
mod merge_policy;
mod monitor_spec;
mod names;
mod order_free;
mod packet_table;
mod partition;
mod pin;
mod profile_spec;
mod report;
mod run_spec;
mod settings;
mod shard_mode;
mod shard_run;
mod sink;
mod source;
mod tc_report;
mod tc_spec;
mod verdict;
mod verify;

// Flow-affine runs: a range split into the buckets of N workers, each run as its worker.
pub use bucket::{Bucket, BucketPacket, PartitionError};
pub use bucket_merge::{merge_buckets, merge_buckets_on};
pub use bucket_run::{BucketRun, BucketRunSpec};
pub use contents::{Contents, ContentsError, MapUpdate};
pub use error::{Error, ObjectError, TcError};
pub use filter::{
    CompiledFilter, DumpForm, FilterEngineKind, FilterReport, FilterRunSpec, MatchTable,
    capture_link, linktype_from_name,
};
pub use filter_shard::{FilterPart, merge_filter, partition_path};
pub use flows_shard::{FlowsPart, MergedFlows, PartsError, boundary_bytes, merge_flows};
pub use hook_spec::{BtfTarget, Built, HookSpec, ObjectSource};
pub use kernel_spec::KernelSpec;
pub use mapfmt::{EntryDump, MapDump};
pub use monitor_spec::{FlowsSpec, RttSpec, SampleSpec};
pub use packet_table::{PacketTable, RegionColumns};
pub use partition::{Partition, partition};
pub use profile_spec::{ProfileSpec, Profiled, Profiling};
pub use report::{CoreReport, ErrorReport, Percentiles, RunReport, SentReport};
pub use run_spec::{Finished, Replay, RunSpec};
pub use settings::{Settings, SettingsError, parse_int};
pub use shard_mode::{ShardMode, UnknownShardMode};
// Runs over byte ranges of captures, kept raw and merged (docs/shards.md).
pub use merge::{Merged, merge_runs, merge_runs_on};
pub use merge_policy::{MapPolicies, MapPolicy, MergeError, MergedReport};
pub use shard_run::{Bytes, MapContents, RangeRun, ShardRun};
/// Shards: a capture list planned as byte ranges, read and proven exact.
pub mod shards {
    pub use capture::{Boundary, Position, Redo, Shard, ShardError, check, parse_split, plan};
}
pub use sink::{Output, SinkSpec, Target, open_sinks, route_name};
pub use source::{Origin, Skipped, SourceSpec};
pub use tc_report::{DeliveryReport, FilterShow, TcReport};
pub use tc_spec::{TcBuilt, TcFinished, TcReplay, TcRunSpec, TcSpec};
pub use verify::Verifiable;
// Maps from user space, and verdicts on programs (the Python package's maps and verify()).
pub use hook_maps::{HookMap, HookMaps, MapError, MapInfo, MapValue};
pub use map_value::{MapValueError, Member, Shape, Value};
pub use verdict::{CheckOptions, KernelVerdict, ProgramVerdict};

// The layers below, as far as a user of this crate needs them.
// Objects: a parsed ELF object and its programs.
pub use obj::{Object, Program, ProgramKind};
// Hooks: a program over packets, one at a time.
pub use runtime::{Hook, PacketHook, PacketMeta, Rejection, Verdict};
// Runs: the engine, routes, sharding, sources.
pub use pipeline::{Foreign, Route, Sharding, Sinks, Source};
// Live sources: how the AF_XDP datapath's redirect program attaches.
pub use kernel::attach::XdpMode;
pub use profile::VmEngine;
// Verification: sluice's verifier on one program.
pub use verifier::{SafetyRule, VerifyOptions, VerifyReport, verify};
// Filters: tcpdump expressions compiled to classic BPF.
pub use cbpf::{DEFAULT_SNAPLEN, ETHERNET, ExprError, Insn, compile_expr};
// tc: the clsact hooks packets arrive at.
pub use tc::ClsactHook;
// Flows: the flow table of flow monitoring.
pub use monitor::{Ended, FlowKey, FlowTable, TableOptions};
// Coverage: source lines, branches and functions a run exercised
// (`RunSpec::coverage`), summed over runs, as lcov tracefiles.
pub use coverage::{Coverage, CoverageError, FileCoverage, Summary as CoverageSummary};
// Monitoring: who runs each application, what it gives, its summary.
pub use monitor::{
    EndReason, FlowEngine, FlowSummary, LabelFlow, Method, Metrics, MonitorError, RttEngine,
    RttSample, RttSummary, Sample, SampleEngine, SampleRecord, SampleSummary,
};
pub use xpf::XpfEngine;
// Profiles: per-packet costs and the cost model fitted to them.
pub use profile::{CostModel, PacketCost, Profile, ProfileError, profile as profile_packets};
