//! `sluice bench`: ns per packet of one program on the same packets, in the
//! same run, in sluice's interpreter and JIT, in the kernel through
//! `BPF_PROG_TEST_RUN` (one call per packet, and repeated inside the
//! kernel), and in the rbpf crate where it can run the program.
//! `sluice bench tc`: the tc classifiers ([`tc`]).

mod tc;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use pipeline::Batch;
use runtime::{Hook, PacketMeta};
use serde::Serialize;

use engine::{HookSpec, Origin, SourceSpec};

use crate::report::print_json;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    sub: Option<Sub>,
    /// Object file built by clang -target bpf
    #[arg(required = true)]
    object: Option<PathBuf>,
    /// Program to run (a function name; needed when the object has several)
    #[arg(long)]
    prog: Option<String>,
    /// Packets from a capture: a file, a FIFO, or - for standard input
    #[arg(long, value_name = "FILE", conflicts_with = "gen")]
    pcap: Option<PathBuf>,
    /// Generated packets (see `sluice run --help`); repeatable
    #[arg(long = "gen", value_name = "SPEC")]
    r#gen: Vec<String>,
    /// Frames of the capture without an Ethernet form: skip them or pass
    /// them as captured (see `sluice run --help`)
    #[arg(long, value_enum, default_value_t = crate::args::ForeignFrames::Skip)]
    foreign: crate::args::ForeignFrames,
    /// Packets taken from the source
    #[arg(long, default_value_t = 10_000)]
    packets: usize,
    /// Time per engine, in seconds (whole passes over the packets)
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// Runs per call inside the kernel for `kernel-repeat` (one call per
    /// packet, as many packets as fit in `--seconds`)
    #[arg(long, default_value_t = 100)]
    repeat: u32,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// The tc classifiers from 1 to 1000 rules, best and worst case: u32 and flower in sluice, u32 in the kernel, and the u32 trie of 64K flows; a table and an SVG plot
    Tc(tc::Args),
}

impl Args {
    fn object(&self) -> &PathBuf {
        self.object
            .as_ref()
            .expect("clap requires an object without a subcommand")
    }
}

#[derive(Serialize)]
struct Report {
    program: String,
    packets: usize,
    /// "verified" (sluice runs without per-access checks) or "run-time".
    checks: &'static str,
    /// Frames of the capture without an Ethernet form, not run, per link
    /// type.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    skipped: BTreeMap<String, u64>,
    results: Vec<Engine>,
}

#[derive(Serialize)]
struct Engine {
    engine: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ns_per_packet: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mpps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
}

impl Engine {
    fn measured(engine: &'static str, ns: f64) -> Engine {
        Engine {
            engine,
            ns_per_packet: Some(ns),
            mpps: Some(1e3 / ns),
            skipped: None,
        }
    }

    fn skipped(engine: &'static str, why: impl Into<String>) -> Engine {
        Engine {
            engine,
            ns_per_packet: None,
            mpps: None,
            skipped: Some(why.into()),
        }
    }
}

fn meta() -> PacketMeta {
    PacketMeta {
        ifindex: 1,
        rx_queue: 0,
        timestamp_ns: 0,
        egress_ifindex: 0,
        dev_addr: [0; 6],
        dev_broadcast: [0; 6],
    }
}

/// Whole passes over `packets` until `seconds` passed: ns per packet.
fn time_passes(
    seconds: f64,
    packets: usize,
    mut pass: impl FnMut() -> Result<(), String>,
) -> Result<f64, String> {
    let start = Instant::now();
    let mut runs = 0u64;
    while start.elapsed() < Duration::from_secs_f64(seconds) || runs == 0 {
        pass()?;
        runs += packets as u64;
    }
    Ok(start.elapsed().as_nanos() as f64 / runs as f64)
}

/// A fresh hook on the program, verified (and then trusted) as `sluice run`
/// does, on the chosen engine; its verdicts for one pass.
fn hook(spec: &HookSpec, jit: bool) -> Result<Hook, String> {
    let mut h = crate::hooks::build(spec)?.hook;
    if jit {
        h.enable_jit().map_err(|e| e.to_string())?;
    }
    Ok(h)
}

/// Times the pipeline's worker over the batches (what a one-thread replay
/// spends per packet, reading aside), after one pass that records each
/// packet's verdict.
fn sluice_engine(
    mut h: Hook,
    packets: &[Vec<u8>],
    batches: &[Batch],
    seconds: f64,
) -> Result<(f64, Vec<String>), String> {
    let m = meta();
    let verdicts = packets
        .iter()
        .map(|p| {
            h.run(p, &m)
                .map(|o| o.verdict.name().to_string())
                .unwrap_or_else(|e| format!("ERROR {e}"))
        })
        .collect();
    // A timing loop of its own around the pipeline's worker, not
    // `pipeline::replay`: the packets are read once, before, into batches
    // in memory, so that the clock sees the program and not the reading,
    // and the same batches run pass after pass until `seconds` are spent.
    let mut worker = pipeline::Worker::new(&mut h, &pipeline::Sinks::new(), m.ifindex);
    let ns = time_passes(seconds, packets.len(), || {
        for b in batches {
            worker.run(b);
        }
        Ok(())
    })?;
    Ok((ns, verdicts))
}

/// The kernel through `BPF_PROG_TEST_RUN`: wall time per call with one run
/// per packet, and the kernel's own per-run figure with `repeat` runs.
fn kernel_engines(a: &Args, spec: &HookSpec, packets: &[Vec<u8>]) -> Vec<Engine> {
    if !kernel::privileged() {
        let why = "needs root (BPF_PROG_TEST_RUN)";
        return vec![
            Engine::skipped("kernel", why),
            Engine::skipped("kernel-repeat", why),
        ];
    }
    let measure = || -> Result<Vec<Engine>, String> {
        let h = crate::hooks::load(spec)?.hook;
        let bytes = crate::files::object(a.object())?;
        let mut opts = kernel::load_options(h.object(), h.maps());
        let pins = PathBuf::from(format!("/sys/fs/bpf/sluice-bench-{}", std::process::id()));
        opts.pin_root = Some(pins.clone());
        let name = a.object().display().to_string();
        let loaded = kernel::KernelObject::load(&bytes, &name, &opts);
        let result = loaded.map_err(|e| e.to_string()).and_then(|k| {
            let fd = k.program(&h.program().name).map_err(|e| e.to_string())?.fd;
            let once = |p: &[u8], repeat: u32| {
                kernel::testrun::run(
                    fd,
                    &kernel::testrun::RunInput {
                        data: p,
                        repeat,
                        ..Default::default()
                    },
                )
                .map_err(|e| e.to_string())
            };
            let per_call = time_passes(a.seconds, packets.len(), || {
                for p in packets {
                    once(p, 1)?;
                }
                Ok(())
            })?;
            // Each XDP test run with repeat > 1 swaps the program into the
            // XDP dispatcher and back, which waits for RCU grace periods
            // (~25 ms here): sample as many packets as fit in the time.
            let (mut total, mut sampled) = (0f64, 0usize);
            let start = Instant::now();
            for p in packets {
                if sampled > 0 && start.elapsed() >= Duration::from_secs_f64(a.seconds) {
                    break;
                }
                total += f64::from(once(p, a.repeat)?.duration_ns);
                sampled += 1;
            }
            Ok(vec![
                Engine::measured("kernel", per_call),
                Engine::measured("kernel-repeat", total / sampled as f64),
            ])
        });
        let _ = std::fs::remove_dir_all(&pins);
        result
    };
    measure().unwrap_or_else(|e| {
        vec![
            Engine::skipped("kernel", e.clone()),
            Engine::skipped("kernel-repeat", e),
        ]
    })
}

/// rbpf runs plain bytecode over 64-bit pointers: programs that read the
/// XDP or tc context (32-bit `data` fields the kernel rewrites), call
/// helpers or use maps are out of its reach.
fn rbpf_engines(prog: &obj::Program, packets: usize, seconds: f64) -> Vec<Engine> {
    use isa::Insn;
    let why = prog.insns.iter().find_map(|i| match i {
        Insn::Call(_) | Insn::Callx { .. } => Some("the program calls helpers or functions"),
        Insn::Lddw { value, .. } if !matches!(value, isa::Lddw::Imm(_)) => {
            Some("the program uses maps or global data")
        }
        Insn::Load { .. } | Insn::Store { .. } | Insn::Atomic { .. } => Some(
            "the program reads its context: rbpf passes 64-bit pointers where xdp_md/__sk_buff have 32-bit fields (the kernel rewrites those loads)",
        ),
        Insn::LdAbs { .. } | Insn::LdInd { .. } => Some("legacy packet loads"),
        _ => None,
    });
    if let Some(why) = why {
        return vec![
            Engine::skipped("rbpf-interp", why),
            Engine::skipped("rbpf-jit", why),
        ];
    }
    let bytes = isa::encode(&prog.insns);
    let mut out = Vec::new();
    match rbpf::EbpfVmNoData::new(Some(&bytes)) {
        Ok(vm) => {
            let ns = time_passes(seconds, packets, || {
                for _ in 0..packets {
                    std::hint::black_box(vm.execute_program().map_err(|e| e.to_string())?);
                }
                Ok(())
            });
            out.push(match ns {
                Ok(ns) => Engine::measured("rbpf-interp", ns),
                Err(e) => Engine::skipped("rbpf-interp", e),
            });
            let mut jit = vm;
            out.push(match jit.jit_compile() {
                Ok(()) => {
                    let ns = time_passes(seconds, packets, || {
                        for _ in 0..packets {
                            // SAFETY: rbpf verified the program, which touches
                            // no memory (checked above).
                            std::hint::black_box(
                                unsafe { jit.execute_program_jit() }.map_err(|e| e.to_string())?,
                            );
                        }
                        Ok(())
                    });
                    match ns {
                        Ok(ns) => Engine::measured("rbpf-jit", ns),
                        Err(e) => Engine::skipped("rbpf-jit", e),
                    }
                }
                Err(e) => Engine::skipped("rbpf-jit", e.to_string()),
            });
        }
        Err(e) => {
            out.push(Engine::skipped("rbpf-interp", e.to_string()));
            out.push(Engine::skipped("rbpf-jit", e.to_string()));
        }
    }
    out
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if let Some(Sub::Tc(t)) = a.sub {
        return tc::run(t);
    }
    let mut spec = HookSpec::new(a.object());
    spec.program = a.prog.clone();
    spec.engine = engine::VmEngine::Interpreter;
    spec.cpus = crate::hooks::cores();
    let packets_spec = match &a.pcap {
        Some(path) => SourceSpec::new(Origin::Capture {
            path: path.clone(),
            foreign: a.foreign.into(),
        }),
        None if a.r#gen.is_empty() => SourceSpec::generated([format!("udp,count={}", a.packets)]),
        None => SourceSpec::generated(a.r#gen.clone()),
    };
    let mut source = packets_spec.open(None).map_err(|e| e.to_string())?;
    let (mut packets, mut batches) = (Vec::new(), vec![Batch::new()]);
    pipeline::for_each_packet(source.as_mut(), Some(a.packets as u64), |info, data| {
        packets.push(data.to_vec());
        if batches.last().is_some_and(Batch::is_full) {
            batches.push(Batch::new());
        }
        let b = batches.last_mut().expect("one batch at least");
        b.push(info.seq, info.timestamp_ns, info.link, data);
    })
    .map_err(|e| e.to_string())?;
    let skipped = engine::Skipped::of(source.as_ref());
    crate::report::warn_skipped(
        &skipped,
        " (--foreign pass gives them to the program as captured)",
    );
    let skipped = skipped.by_name();
    if packets.is_empty() {
        return Err("no packets to run".into());
    }
    let interp = hook(&spec, false)?;
    let program = interp.program().clone();
    let checks = if interp.is_trusted() {
        "verified"
    } else {
        "run-time"
    };

    let mut results = Vec::new();
    let (interp_ns, interp_verdicts) = sluice_engine(interp, &packets, &batches, a.seconds)?;
    results.push(Engine::measured("interp", interp_ns));
    #[cfg(target_arch = "x86_64")]
    {
        let (jit_ns, jit_verdicts) =
            sluice_engine(hook(&spec, true)?, &packets, &batches, a.seconds)?;
        if jit_verdicts != interp_verdicts {
            return Err(
                "the JIT and the interpreter gave different verdicts: a bug, please report it"
                    .into(),
            );
        }
        results.push(Engine::measured("jit", jit_ns));
    }
    #[cfg(not(target_arch = "x86_64"))]
    results.push(Engine::skipped("jit", "the JIT needs an x86-64 host"));
    results.extend(kernel_engines(&a, &spec, &packets));
    results.extend(rbpf_engines(&program, packets.len(), a.seconds));

    let report = Report {
        program: program.name.clone(),
        packets: packets.len(),
        checks,
        skipped,
        results,
    };
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report, &program);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(r: &Report, p: &obj::Program) {
    out!(
        "{} ({}): {} packets, {} in sluice",
        r.program,
        p.section,
        r.packets,
        if r.checks == "verified" {
            "verified, no per-access checks"
        } else {
            "checked on every access"
        }
    );
    for (k, n) in &r.skipped {
        out!("skipped: {n} frames of {k} without an Ethernet form");
    }
    out!("{:<14} {:>12} {:>9}", "engine", "ns/packet", "Mpps");
    let ns_of = |e: &str| {
        r.results
            .iter()
            .find(|x| x.engine == e)
            .and_then(|x| x.ns_per_packet)
    };
    for e in &r.results {
        match (e.ns_per_packet, &e.skipped) {
            (Some(ns), _) => out!("{:<14} {ns:>12.1} {:>9.2}", e.engine, 1e3 / ns),
            (None, Some(why)) => out!("{:<14} skipped: {why}", e.engine),
            _ => {}
        }
    }
    let ratio = |a: &str, b: &str| match (ns_of(a), ns_of(b)) {
        (Some(x), Some(y)) => Some(x / y),
        _ => None,
    };
    let mut lines = Vec::new();
    if let Some(x) = ratio("jit", "kernel") {
        lines.push(format!(
            "jit time / kernel time (one packet per call): {x:.2}x (goal <= 1.0)"
        ));
    }
    if let Some(x) = ratio("jit", "kernel-repeat") {
        lines.push(format!(
            "jit time / kernel time (repeat, kernel-measured): {x:.2}x"
        ));
    }
    if let Some(x) = ratio("interp", "jit") {
        lines.push(format!(
            "jit speed-up over the interpreter: {x:.1}x (goal >= 10)"
        ));
    }
    if let Some(x) = ratio("rbpf-jit", "jit") {
        lines.push(format!(
            "jit speed-up over rbpf's JIT: {x:.2}x (goal >= 1.5)"
        ));
    }
    for l in lines {
        out!("{l}");
    }
}
