//! `sluice diff`: every packet through the sluice VM and through the
//! kernel's BPF_PROG_TEST_RUN, compared (verdict, packet, context, maps);
//! with `--tc`, a tc configuration in the kernel and in sluice ([`tc`]).

mod tc;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use difftest::{DiffSummary, Differ, Difference};
use serde::Serialize;

use crate::report::print_json;

/// Prove the VM and the kernel agree: each packet through both, compared (needs root)
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["pcap", "gen"])))]
pub struct Args {
    /// Object file built by clang -target bpf
    #[arg(required_unless_present = "tc")]
    pub object: Option<PathBuf>,
    /// Compare a tc configuration instead (the file `sluice tc` keeps, or
    /// any `tc -batch` file): the real tc and sluice on the same frames,
    /// live in a network namespace of its own, counter by counter
    #[arg(long, value_name = "FILE", conflicts_with = "object")]
    pub tc: Option<PathBuf>,
    /// With --tc: the device frames arrive at [default: the only one with a qdisc]
    #[arg(long, value_name = "DEV", requires = "tc")]
    pub tc_dev: Option<String>,
    /// With --tc: the hook frames arrive at
    #[arg(long, value_enum, default_value_t = crate::args::TcHook::Ingress)]
    pub tc_hook: crate::args::TcHook,
    /// Program to compare (a function name; needed when the object has several)
    #[arg(long)]
    pub prog: Option<String>,
    /// Capture to replay (pcap or pcapng): a file, a FIFO, or - for standard input; -r as tcpdump's
    #[arg(short = 'r', long)]
    pub pcap: Option<PathBuf>,
    /// Generated traffic, e.g. udp,flows=1000,size=64,count=10000 (repeat to mix streams)
    #[arg(long)]
    pub r#gen: Vec<String>,
    /// Frames of the capture without an Ethernet form: skip them or pass
    /// them as captured (see `sluice run --help`)
    #[arg(long, value_enum, default_value_t = crate::args::ForeignFrames::Skip)]
    pub foreign: crate::args::ForeignFrames,
    /// Globals and map sizes, on both sides
    #[command(flatten)]
    pub settings: crate::settings::ObjectSettings,
    /// Map contents before the run (on both sides)
    #[command(flatten)]
    pub contents: crate::contents::MapContents,
    /// Stop after this many packets
    #[arg(long)]
    pub limit: Option<u64>,
    /// Divergences shown in full
    #[arg(long, default_value_t = 5)]
    pub show: usize,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

impl Args {
    /// The frames compared: a capture or generated traffic.
    fn source(&self) -> engine::SourceSpec {
        match &self.pcap {
            Some(path) => engine::SourceSpec::new(engine::Origin::Capture {
                path: path.clone(),
                foreign: self.foreign.into(),
            }),
            None => engine::SourceSpec::generated(self.r#gen.clone()),
        }
    }
}

/// The frames `source` skipped, per link type, told on standard error.
fn skipped(source: &dyn engine::Source) -> BTreeMap<String, u64> {
    let skipped = engine::Skipped::of(source);
    crate::report::warn_skipped(
        &skipped,
        " (--foreign pass gives them to the program as captured)",
    );
    skipped.by_name()
}

#[derive(Serialize)]
struct DiffReport<'a> {
    object: String,
    program: String,
    /// Frames of the capture without an Ethernet form, not compared, per
    /// link type.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    skipped: BTreeMap<String, u64>,
    #[serde(flatten)]
    summary: &'a DiffSummary,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if !kernel::privileged() {
        return Err(
            "sluice diff loads the program into the kernel: run it as root (or with CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON)"
                .into(),
        );
    }
    if let Some(file) = &a.tc {
        return tc::run(&a, file);
    }
    let object = a
        .object
        .clone()
        .ok_or("give an object file, or --tc FILE")?;
    let bytes = crate::files::object(&object)?;
    let mut spec = engine::HookSpec::from_bytes(object.display().to_string(), bytes.clone());
    spec.program = a.prog.clone();
    spec.settings = a.settings.spec();
    spec.contents = a.contents.spec();
    // Per-CPU maps hold one value per possible CPU, as the kernel's.
    spec.cpus = kernel::possible_cpus() as u32;
    let hook = crate::hooks::load(&spec)?.hook;
    let program = hook.program().name.clone();
    let name = object
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "sluice".into());
    let differ = Differ::new(hook, &bytes, &name, a.show)
        .map_err(|e| format!("{}: {e}", object.display()))?;
    let mut source = a.source().open(None).map_err(|e| e.to_string())?;
    let total = source.expected().map(|n| a.limit.map_or(n, |l| l.min(n)));
    let summary = crate::progress::with_progress(total, a.json, |count| {
        differ.compare_source(source.as_mut(), a.limit, count)
    })
    .map_err(|e| e.to_string())?;
    let report = DiffReport {
        object: object.display().to_string(),
        program,
        skipped: skipped(source.as_ref()),
        summary: &summary,
    };
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(if summary.divergences == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn print_text(r: &DiffReport<'_>) {
    let s = r.summary;
    out!(
        "{} {}: {} packets, {} compared, {} divergences, {} not comparable",
        r.object,
        r.program,
        s.packets,
        s.compared,
        s.divergences,
        s.not_comparable
    );
    for (k, n) in &r.skipped {
        out!("skipped: {n} frames of {k} without an Ethernet form");
    }
    for n in &s.notes {
        out!("note: {n}");
    }
    if !s.not_comparable_reasons.is_empty() {
        out!("not comparable:");
        for (why, n) in &s.not_comparable_reasons {
            out!("  {n:>8}  {why}");
        }
    }
    if !s.maps_not_compared.is_empty() {
        out!("maps not compared:");
        for (m, why) in &s.maps_not_compared {
            out!("  {m}: {why}");
        }
    }
    for d in &s.first {
        match d.since_packet {
            Some(since) => out!(
                "packet {} ({} bytes; found by a full comparison of the maps, changed at one of packets {since}-{}):",
                d.packet,
                d.len,
                d.packet
            ),
            None => out!("packet {} ({} bytes):", d.packet, d.len),
        }
        for x in &d.differences {
            out!("  {}", describe(x).replace('\n', "\n    "));
        }
    }
    if s.divergences as usize > s.first.len() {
        out!(
            "... {} more diverging packets",
            s.divergences as usize - s.first.len()
        );
    }
}

fn describe(d: &Difference) -> String {
    let or_missing = |v: &Option<String>| v.clone().unwrap_or_else(|| "(missing)".into());
    match d {
        Difference::ReturnValue { vm, kernel } => {
            format!("return value: vm {vm}, kernel {kernel}")
        }
        Difference::VmError {
            error,
            kernel_retval,
        } => {
            format!("the VM stopped: {error}; the kernel returned {kernel_retval}")
        }
        Difference::Packet {
            vm_len,
            kernel_len,
            offset,
            diff,
        } => format!(
            "output packet differs at byte {offset} (vm {vm_len} bytes, kernel {kernel_len}):\n{diff}"
        ),
        Difference::Context { field, vm, kernel } => {
            format!("context {field}: vm {vm:#x}, kernel {kernel:#x}")
        }
        Difference::Map {
            map,
            key,
            vm,
            kernel,
        } => format!(
            "map {map} key {key}:\n   vm {}\n   kernel {}",
            or_missing(vm),
            or_missing(kernel)
        ),
        Difference::MapMore { map, entries } => {
            format!("map {map}: {entries} entries differ in all")
        }
        Difference::HelperCalls { detail } => detail.clone(),
        Difference::Resync { error } => format!("could not re-synchronise the maps: {error}"),
    }
}
