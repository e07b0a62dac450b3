//! `sluice run`: replays packets through a program in the VM and reports
//! verdicts, costs, output and maps.

mod report;
pub(crate) mod tc;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use pipeline::{Capture, Foreign, Generated, Live, Port, PortCounts, Route, Shard, Sinks, Source};
use runtime::{Hook, Image, LoadOptions};

use crate::contents::MapContents;
use crate::settings::ObjectSettings;

/// Replay packets through a program in the sluice VM (no root needed).
/// Which engine runs the programs.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Engine {
    #[default]
    Jit,
    Interp,
}

/// What a capture's frames without an Ethernet form become.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum ForeignFrames {
    #[default]
    Skip,
    Pass,
}

impl From<ForeignFrames> for Foreign {
    fn from(f: ForeignFrames) -> Foreign {
        match f {
            ForeignFrames::Skip => Foreign::Skip,
            ForeignFrames::Pass => Foreign::Pass,
        }
    }
}

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
    #[arg(long, value_enum, default_value_t = tc::TcHook::Ingress)]
    pub tc_hook: tc::TcHook,
    /// Program to run (a function name; needed when the object has several)
    #[arg(long)]
    pub prog: Option<String>,
    /// Capture to replay (pcap or pcapng): a file, a FIFO, or - for
    /// standard input (`tcpdump -w - | sluice run OBJ --pcap -`)
    #[arg(long, value_name = "FILE")]
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
    /// maps, packets sharded by flow (0: one per core; 1: in capture order,
    /// exactly as one CPU)
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// How packets are spread over threads: symmetric (both directions of a
    /// flow together), directional, or round-robin
    #[arg(long, default_value = "symmetric")]
    pub shard: Shard,
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
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// Loads the object with the options and map updates of `a`.
pub fn prepare(a: &Args) -> Result<Hook, String> {
    let path = a.object_path()?;
    let data = crate::files::object(path)?;
    prepare_bytes(a, &data)
}

/// Like [`prepare`], with the object's bytes at hand.
pub fn prepare_bytes(a: &Args, data: &[u8]) -> Result<Hook, String> {
    let name = a.object_path()?.display().to_string();
    let custom = match &a.btf {
        Some(path) if path.as_os_str() == "bundled" => None,
        Some(path) => {
            let bytes = crate::files::object(path)?;
            let origin = path.display().to_string();
            Some(obj::CoreTarget::from_bytes(&bytes, &origin).map_err(|e| format!("--btf {e}"))?)
        }
        None => None,
    };
    let mut object = match (&custom, &a.btf) {
        (Some(t), _) => obj::Object::parse_with(data, Some(t)),
        (None, Some(_)) => obj::Object::parse_with(data, Some(obj::CoreTarget::bundled())),
        // The kernel's BTF (or the bundled types), read only if needed.
        (None, None) => obj::Object::parse(data),
    }
    .map_err(|e| format!("{name}: {e}"))?;
    let mut opts = LoadOptions {
        ncpus: a.cpus.max(a.worker_threads() as u32).max(1),
        ..LoadOptions::default()
    };
    a.settings.apply(&mut object, &mut opts)?;
    let image = Image::load(object, &opts).map_err(|e| format!("{name}: {e}"))?;
    let prog = image
        .find_program(a.prog.as_deref())
        .map_err(|e| format!("{name}: {e}"))?;
    let mut hook = Hook::new(image, prog, 0).map_err(|e| format!("{name}: {e}"))?;
    hook.set_counting(a.count_memory);
    if a.engine == Engine::Jit
        && let Err(e) = hook.enable_jit()
    {
        say!("sluice: note: {e}");
    }
    if let Some(fib) = &a.fib {
        let text = crate::files::text(fib)?;
        hook.env_mut().fib =
            runtime::fib::Fib::parse(&text).map_err(|e| format!("{}: {e}", fib.display()))?;
    }
    if let Some(dir) = &a.pin {
        crate::pin::load(&mut hook, dir)?;
    }
    a.contents.fill(&hook)?;
    Ok(hook)
}

impl Args {
    /// The object file (every run but `--tc` has one).
    pub fn object_path(&self) -> Result<&std::path::Path, String> {
        self.object
            .as_deref()
            .ok_or_else(|| "give an object file (or --tc FILE)".to_string())
    }

    /// The worker threads the replay uses.
    pub fn worker_threads(&self) -> usize {
        match self.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

/// The packets `a` names: a capture (a file, a FIFO, or standard input
/// for `-`), generated traffic or a live interface (which a signal stops,
/// as it stops the replay).
pub(crate) fn source(a: &Args) -> Result<Box<dyn Source>, String> {
    source_with(a, None)
}

/// Like [`source`]; a capture reads no more once `stop` (the replay's
/// stop flag) is set, and ends after the packets it holds.
pub(crate) fn source_with(
    a: &Args,
    stop: Option<&'static AtomicBool>,
) -> Result<Box<dyn Source>, String> {
    let source: Box<dyn Source> = if let Some(iface) = &a.iface {
        let stop = crate::signals::stop_on_signals();
        Box::new(Live::open(iface, Some(stop)).map_err(|e| e.to_string())?)
    } else {
        match &a.pcap {
            Some(path) => Box::new(
                Capture::open_with(path, stop)
                    .map_err(|e| e.to_string())?
                    .foreign(a.foreign.into()),
            ),
            None => Box::new(Generated::parse(&a.r#gen).map_err(|e| e.0)?),
        }
    };
    match &a.filter {
        // The hook sees Ethernet frames (other link types are converted).
        Some(expr) => {
            let prog = cbpf::compile_expr(expr, cbpf::ETHERNET, cbpf::DEFAULT_SNAPLEN)
                .map_err(|e| format!("--filter {expr}: {e}"))?;
            Ok(Box::new(pipeline::Filtered::new(source, prog, expr)))
        }
        None => Ok(source),
    }
}

/// The frames `source` skipped, per link type (`NAME (N)`), told on
/// stderr as a warning; what reports print.
pub(crate) fn skipped(source: &dyn Source) -> BTreeMap<String, u64> {
    warn_skipped(
        source,
        " (--foreign pass gives them to the program as captured)",
    )
}

/// The frames `source` skipped, per link type, told on stderr as the
/// warning every front end gives, `hint` after it (what the command can
/// do with them, or nothing).
pub(crate) fn warn_skipped(source: &dyn Source, hint: &str) -> BTreeMap<String, u64> {
    let skipped = source.skipped();
    if !skipped.is_empty() {
        let total: u64 = skipped.iter().map(|(_, n)| n).sum();
        let each: Vec<String> = skipped
            .iter()
            .map(|(l, n)| format!("{n} {}", io::describe_linktype(*l)))
            .collect();
        say!(
            "sluice: warning: skipped {total} frames without an Ethernet form: {}{hint}",
            each.join(", ")
        );
    }
    skipped
        .into_iter()
        .map(|(l, n)| (io::describe_linktype(l), n))
        .collect()
}

/// The interface a `--send-*` option names, and what was sent out of it.
pub(crate) struct SentPort {
    pub route: Route,
    pub iface: String,
    pub counts: Arc<PortCounts>,
}

/// The per-verdict outputs `a` asks for: files, and interfaces a route is
/// sent out of (a route with both goes to both).
fn sinks(a: &Args) -> Result<(Sinks, Vec<SentPort>), String> {
    crate::report::outputs_on_stdout(
        [&a.out_pass, &a.out_tx, &a.out_redirect, &a.out_drop].map(|p| p.as_deref()),
    )?;
    let mut sinks = Sinks::new();
    for (path, route) in [
        (&a.out_pass, Route::Pass),
        (&a.out_tx, Route::Tx),
        (&a.out_redirect, Route::Redirect),
        (&a.out_drop, Route::Drop),
    ] {
        if let Some(p) = path {
            let w = pipeline::PcapWriter::create(p).map_err(|e| e.to_string())?;
            sinks.add(&[route], Box::new(w));
        }
    }
    let mut ports = Vec::new();
    for (iface, route, option) in [
        (&a.send_pass, Route::Pass, "--send-pass"),
        (&a.send_tx, Route::Tx, "--send-tx"),
        (&a.send_redirect, Route::Redirect, "--send-redirect"),
        (&a.send_drop, Route::Drop, "--send-drop"),
    ] {
        if let Some(name) = iface {
            let port = Port::open(name).map_err(|e| format!("{option} {e}"))?;
            ports.push(SentPort {
                route,
                iface: port.interface().name.clone(),
                counts: port.counts(),
            });
            sinks.add(&[route], Box::new(port));
        }
    }
    Ok((sinks, ports))
}

/// What the report says was read: the capture, the traffic generated or
/// the interface.
fn describe_source(a: &Args) -> String {
    match (&a.iface, &a.pcap) {
        (Some(iface), _) => format!("interface {iface} (live)"),
        (None, Some(path)) if io::is_stdin(path) => "capture from standard input".to_string(),
        (None, Some(path)) => format!("capture {}", path.display()),
        (None, None) => format!("generated {}", a.r#gen.join(" + ")),
    }
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if let Some(file) = &a.tc {
        return tc::run(&a, file);
    }
    let mut hook = prepare(&a)?;
    if !a.no_verify {
        crate::cmd::verify::before_run(&mut hook)?;
    }
    report(&a, &mut hook)
}

/// Replays, saves pinned maps and prints the report.
pub fn report(a: &Args, hook: &mut Hook) -> Result<ExitCode, String> {
    // Ctrl-C or SIGTERM: stop reading, finish the outputs, report.
    let stop = crate::signals::stop_on_signals();
    let mut source = source_with(a, Some(stop))?;
    let (sinks, ports) = sinks(a)?;
    // The hook sees the interface read, unless told otherwise.
    let arrival = a
        .iface
        .as_deref()
        .map(|name| pipeline::Interface::lookup(name).map_or(1, |i| i.index));
    let opts = pipeline::Options {
        threads: a.worker_threads(),
        shard: a.shard,
        limit: a.limit,
        ifindex: a.ifindex.or(arrival).unwrap_or(1),
        stop: Some(stop),
    };
    let total = source.expected().map(|n| a.limit.map_or(n, |l| l.min(n)));
    let summary = crate::progress::with_progress(total, a.json, |count| {
        pipeline::replay(hook, source.as_mut(), sinks, &opts, Some(count))
    })
    .map_err(|e| e.to_string())?;
    if let Some(dir) = &a.pin {
        crate::pin::save(hook, dir)?;
    }
    let read = report::Read {
        source: describe_source(a),
        note: source.note(),
        ports: &ports,
        skipped: skipped(source.as_ref()),
    };
    let report = report::RunReport::new(a, hook, &summary, &read);
    report.print(a.json)?;
    if summary.stopped {
        say!(
            "sluice: stopped by a signal after {} packets; outputs are complete",
            summary.counters.packets
        );
    }
    if summary.source_error.is_some() {
        return Ok(crate::report::input_ended(
            summary.source_error.as_ref().map(|e| e.0.as_str()),
            summary.counters.packets,
            a.iface.is_some(),
        ));
    }
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
