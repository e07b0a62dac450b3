//! `sluice run`: replays packets through a program in the VM and reports
//! verdicts, costs, output and maps.

mod report;
pub(crate) mod tc;

use std::path::PathBuf;
use std::process::ExitCode;

use engine::{
    BtfTarget, HookSpec, Origin, Route, RunSpec, ShardMode, SinkSpec, SourceSpec, Target,
};

use crate::args::{Engine, ForeignFrames};
use crate::contents::MapContents;
use crate::settings::ObjectSettings;

#[derive(clap::Args, Clone, Default)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["pcap", "gen", "iface"])))]
pub struct Args {
    /// Object file built by clang -target bpf
    #[arg(required_unless_present = "tc")]
    pub object: Option<PathBuf>,
    /// Run the packets through a tc configuration instead of a program:
    /// the file `sluice tc` keeps, or any `tc -batch` file (docs/tc.md)
    #[arg(long, value_name = "FILE", alias = "tc-batch")]
    pub tc: Option<PathBuf>,
    /// With --tc: the device packets arrive at [default: the only one with a qdisc]
    #[arg(long, value_name = "DEV", requires = "tc")]
    pub tc_dev: Option<String>,
    /// With --tc: the hook packets arrive at
    #[arg(long, value_enum, default_value_t = crate::args::TcHook::Ingress)]
    pub tc_hook: crate::args::TcHook,
    /// Program to run (a function name; needed when the object has several)
    #[arg(long)]
    pub prog: Option<String>,
    /// Capture to replay (pcap or pcapng): a file, a FIFO, or - for
    /// standard input (`tcpdump -w - | sluice run OBJ --pcap -`); -r as tcpdump's
    #[arg(short = 'r', long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Generated traffic, e.g. udp,flows=1000,size=64,count=1000000 (repeat to mix streams)
    #[arg(long)]
    pub r#gen: Vec<String>,
    /// Frames of the capture without an Ethernet form (802.11 management,
    /// control or encrypted frames, PPP, ...): skip them (counted, with a
    /// warning) or pass them to the program as captured
    #[arg(long, value_enum, default_value_t = ForeignFrames::Skip)]
    pub foreign: ForeignFrames,
    /// Read the frames arriving on this interface, live (AF_PACKET; needs
    /// root or CAP_NET_RAW), until Ctrl-C, SIGTERM or --limit; frames sent
    /// out of it are not read
    #[arg(long, value_name = "IF")]
    pub iface: Option<String>,
    /// Write passed packets here (pcap; .pcapng for pcapng; - for standard output, the report then going to standard error)
    #[arg(long)]
    pub out_pass: Option<PathBuf>,
    /// Write packets sent back out (XDP_TX) here
    #[arg(long)]
    pub out_tx: Option<PathBuf>,
    /// Write redirected packets here
    #[arg(long)]
    pub out_redirect: Option<PathBuf>,
    /// Write dropped packets here
    #[arg(long)]
    pub out_drop: Option<PathBuf>,
    /// Send passed packets out of this interface (AF_PACKET; with --out-pass too, both get them)
    #[arg(long, value_name = "IF")]
    pub send_pass: Option<String>,
    /// Send packets sent back out (XDP_TX) out of this interface
    #[arg(long, value_name = "IF")]
    pub send_tx: Option<String>,
    /// Send redirected packets out of this interface
    #[arg(long, value_name = "IF")]
    pub send_redirect: Option<String>,
    /// Send dropped packets out of this interface
    #[arg(long, value_name = "IF")]
    pub send_drop: Option<String>,
    #[command(flatten)]
    pub settings: ObjectSettings,
    #[command(flatten)]
    pub contents: MapContents,
    /// Forwarding table for bpf_fib_lookup: a file of `link`, `neigh` and route lines
    #[arg(long)]
    pub fib: Option<PathBuf>,
    /// Resolve CO-RE relocations against this BTF (raw, like /sys/kernel/btf/vmlinux, or an object's .BTF; `bundled`: sluice's UAPI types) instead of the running kernel's
    #[arg(long, value_name = "FILE")]
    pub btf: Option<PathBuf>,
    /// Keep maps pinned by name (LIBBPF_PIN_BY_NAME) in this directory across runs
    #[arg(long)]
    pub pin: Option<PathBuf>,
    /// Simulated CPUs (per-CPU maps keep one value per CPU; at least one per thread)
    #[arg(long, default_value_t = 1)]
    pub cpus: u32,
    /// Worker threads, each with its own copy of the program on the same
    /// maps (0: one per core; 1: in capture order, exactly as one CPU)
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// How threads share the packets: ranges (byte ranges of a capture
    /// file, each record read once: for programs whose result does not
    /// depend on the order of packets across flows), by flow: symmetric
    /// (both directions of a flow together), directional, round-robin; or
    /// auto: ranges where the program and source allow, else symmetric
    #[arg(long, default_value = "auto")]
    pub shard: ShardMode,
    /// Interface index the packets arrive on [default: 1; with --iface,
    /// that interface's index]
    #[arg(long)]
    pub ifindex: Option<u32>,
    /// Stop after this many packets (with --filter: packets that pass it)
    #[arg(long)]
    pub limit: Option<u64>,
    /// Run only the packets this tcpdump expression accepts (classic BPF compiled by libpcap for Ethernet)
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// Count memory accesses per region too
    #[arg(long)]
    pub count_memory: bool,
    /// Write the source lines, branches and functions the packets ran to
    /// FILE, an lcov tracefile (`genhtml FILE` draws it); runs in the
    /// interpreter, step by step (docs/coverage.md)
    #[arg(long, value_name = "FILE", conflicts_with = "tc")]
    pub coverage: Option<PathBuf>,
    /// Entries shown per map
    #[arg(long, default_value_t = 16)]
    pub map_entries: usize,
    /// Replay without verifying first (every access is still checked at run time)
    #[arg(long)]
    pub no_verify: bool,
    /// The engine: the x86-64 JIT (the interpreter on other hosts) or the
    /// interpreter
    #[arg(long, value_enum, default_value_t = Engine::Jit)]
    pub engine: Engine,
    /// Write one row per packet (index, timestamp, length, verdict, redirect, instructions, helper calls) to FILE: Parquet, or Arrow IPC for .arrow/.feather/.ipc, CSV for .csv (docs/tables.md)
    #[arg(long, value_name = "FILE")]
    pub out_table: Option<std::path::PathBuf>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The object file (every run but `--tc` has one).
    pub fn object_path(&self) -> Result<&std::path::Path, String> {
        self.object
            .as_deref()
            .ok_or_else(|| "give an object file (or --tc FILE)".to_string())
    }

    /// The hook the arguments describe.
    fn hook(&self) -> Result<HookSpec, String> {
        let mut hook = HookSpec::new(self.object_path()?);
        hook.program = self.prog.clone();
        hook.btf = match &self.btf {
            Some(path) if path.as_os_str() == "bundled" => BtfTarget::Bundled,
            Some(path) => BtfTarget::File(path.clone()),
            None => BtfTarget::Kernel,
        };
        hook.settings = self.settings.spec();
        hook.contents = self.contents.spec();
        hook.fib = self.fib.clone();
        hook.pin = self.pin.clone();
        hook.engine = self.engine.into();
        hook.count_memory = self.count_memory;
        hook.cpus = self.cpus;
        hook.verify = !self.no_verify;
        Ok(hook)
    }

    /// The packets the arguments name: a live interface, a capture or
    /// generated traffic; through `--filter`.
    pub(super) fn source(&self) -> SourceSpec {
        let origin = match (&self.iface, &self.pcap) {
            (Some(name), _) => Origin::Interface { name: name.clone() },
            (None, Some(path)) => Origin::Capture {
                path: path.clone(),
                foreign: self.foreign.into(),
            },
            (None, None) => Origin::Generated {
                specs: self.r#gen.clone(),
            },
        };
        SourceSpec {
            origin,
            filter: self.filter.clone(),
        }
    }

    /// The outputs per route: files, and interfaces packets are sent out of.
    pub(super) fn sinks(&self) -> Vec<SinkSpec> {
        let files = [
            (&self.out_pass, Route::Pass),
            (&self.out_tx, Route::Tx),
            (&self.out_redirect, Route::Redirect),
            (&self.out_drop, Route::Drop),
        ];
        let ifaces = [
            (&self.send_pass, Route::Pass),
            (&self.send_tx, Route::Tx),
            (&self.send_redirect, Route::Redirect),
            (&self.send_drop, Route::Drop),
        ];
        let files = files.into_iter().filter_map(|(p, route)| {
            p.as_ref().map(|p| SinkSpec {
                route,
                to: Target::File(p.clone()),
            })
        });
        let ifaces = ifaces.into_iter().filter_map(|(i, route)| {
            i.as_ref().map(|i| SinkSpec {
                route,
                to: Target::Interface(i.clone()),
            })
        });
        files.chain(ifaces).collect()
    }

    /// The run the arguments describe.
    pub(crate) fn spec(&self) -> Result<RunSpec, String> {
        Ok(RunSpec {
            hook: self.hook()?,
            source: self.source(),
            sinks: self.sinks(),
            threads: self.threads,
            shard: self.shard,
            limit: self.limit,
            ifindex: self.ifindex,
            map_entries: self.map_entries,
            per_packet: self.out_table.is_some(),
            coverage: self.coverage.is_some(),
        })
    }
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if let Some(file) = &a.tc {
        if a.out_table.is_some() {
            return Err(
                "--out-table goes with an object: a tc configuration's run has no per-packet rows"
                    .into(),
            );
        }
        return tc::run(&a, file);
    }
    crate::out_table::check(a.out_table.as_deref())?;
    replay(
        &a.spec()?,
        a.json,
        a.coverage.as_deref(),
        a.out_table.as_deref(),
    )
}

/// The files among `sinks`.
pub(super) fn files(sinks: &[SinkSpec]) -> impl Iterator<Item = Option<&std::path::Path>> {
    sinks.iter().map(|s| match &s.to {
        Target::File(p) => Some(p.as_path()),
        Target::Interface(_) | Target::Memory => None,
    })
}

/// Builds the hook (its notes told), replays, saves pinned maps, writes
/// the coverage to `coverage` (with [`RunSpec::coverage`]) and the
/// per-packet table to `out_table` (when the spec keeps it), and prints
/// the report; the exit status says whether every packet ran and the
/// input ended cleanly.
pub(crate) fn replay(
    spec: &RunSpec,
    json: bool,
    coverage: Option<&std::path::Path>,
    out_table: Option<&std::path::Path>,
) -> Result<ExitCode, String> {
    let built = crate::hooks::build(&spec.hook_spec())?;
    // Ctrl-C or SIGTERM: stop reading, finish the outputs, report.
    let stop = crate::signals::stop_on_signals();
    let replay = spec
        .start(built.hook, Some(stop))
        .map_err(|e| e.to_string())?;
    let total = replay.expected();
    let finished = crate::progress::with_progress(total, json, |count| replay.finish(Some(count)))
        .map_err(|e| e.to_string())?;
    let mut report = finished.report;
    if let (Some(path), Some(cover)) = (coverage, &report.coverage) {
        cover.write(path, "").map_err(|e| e.to_string())?;
    }
    if let (Some(path), Some(rows)) = (out_table, report.packet_table.take()) {
        crate::out_table::write(path, tables::packets(rows))?;
    }
    crate::report::outputs_on_stdout(files(&spec.sinks))?;
    crate::report::warn_skipped(
        &report.skipped,
        " (--foreign pass gives them to the program as captured)",
    );
    report::print(&report, json)?;
    if report.stopped {
        say!(
            "sluice: stopped by a signal after {} packets; outputs are complete",
            report.packets
        );
    }
    if report.source_error.is_some() {
        return Ok(crate::report::input_ended(
            report.source_error.as_deref(),
            report.packets,
            spec.source.interface().is_some(),
        ));
    }
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
