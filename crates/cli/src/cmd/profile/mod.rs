//! `sluice profile`: PacketBench. Per packet the instructions, branches,
//! helper calls and memory accesses by place; the linear model of the
//! cost in the packet length; the processing delay it predicts for a
//! processor; plots and a model file for a simulator.

mod plot;

use std::path::PathBuf;
use std::process::ExitCode;

use profile::{Calibration, CostModel, Cpu};
use serde::Serialize;

use engine::{HookSpec, Origin, ProfileSpec, SourceSpec};

use crate::progress::with_progress;
use crate::report::print_json;
use crate::settings::ObjectSettings;

#[derive(clap::Args)]
pub struct Args {
    /// Object file built by clang -target bpf
    object: PathBuf,
    /// Program to profile (a function name; needed when the object has several)
    #[arg(long)]
    prog: Option<String>,
    /// Packets from a capture: a file, a FIFO, or - for standard input; -r as tcpdump's
    #[arg(short = 'r', long, value_name = "FILE", conflicts_with_all = ["gen", "sizes"])]
    pcap: Option<PathBuf>,
    /// Generated packets (see `sluice run --help`); repeatable. With
    /// --sizes, the template each size is made from
    #[arg(long = "gen", value_name = "SPEC")]
    r#gen: Vec<String>,
    /// Packet sizes FROM..TO[:STEP] (bytes of Ethernet frame; STEP 64 by default)
    #[arg(long, value_name = "FROM..TO[:STEP]")]
    sizes: Option<String>,
    /// Packets per size with --sizes
    #[arg(long, default_value_t = 10)]
    per_size: u64,
    /// Profile only the packets this tcpdump expression accepts (e.g. `udp`: an ARP frame in the capture then stays out of the fit)
    #[arg(long, value_name = "EXPR")]
    filter: Option<String>,
    /// Packets taken from the source at most (with --filter: packets that pass it)
    #[arg(long)]
    limit: Option<u64>,
    /// Run the packets once, uncounted, before profiling them: per-flow
    /// state (flow tables, token buckets) then exists, the steady state
    #[arg(long)]
    warm_up: bool,
    /// Processors to predict the delay for: `ixp1200` (the paper's, 233 MHz,
    /// memory 4 to 170 ns), `f=233MHz[,cpi=1][,tmem=4ns[..170ns]][,t0=0ns]`,
    /// `host` (this machine, calibrated now against the JIT's time) or a
    /// file written by --save-host; repeatable
    #[arg(long, value_name = "SPEC", default_value = "ixp1200")]
    cpu: Vec<String>,
    /// Write the calibrated host processor to FILE (JSON), for --cpu FILE
    #[arg(long, value_name = "FILE")]
    save_host: Option<PathBuf>,
    /// Packets per length timed when calibrating the host
    #[arg(long, default_value_t = 4)]
    calibrate_packets: usize,
    /// Write the fitted model as JSON to FILE (for a simulator)
    #[arg(long, value_name = "FILE")]
    model: Option<PathBuf>,
    /// Write the model's table (one row per packet length) as CSV to FILE
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Write plots into DIR: cost against packet size, delay, instructions histogram (SVG and PNG)
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Write every packet's costs as CSV to FILE
    #[arg(long, value_name = "FILE")]
    per_packet: Option<PathBuf>,
    /// Write one row per packet (its costs and verdict) to FILE: Parquet, or Arrow IPC for .arrow/.feather/.ipc, CSV for .csv (docs/tables.md)
    #[arg(long, value_name = "FILE")]
    out_table: Option<PathBuf>,
    #[command(flatten)]
    settings: ObjectSettings,
    /// Map contents before the run
    #[command(flatten)]
    contents: crate::contents::MapContents,
    /// The engine that runs the program (the counts are the same)
    #[arg(long, value_enum, default_value_t = crate::args::Engine::Jit)]
    engine: crate::args::Engine,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    object: String,
    model: &'a CostModel,
    alpha: f64,
    beta: f64,
    gamma: f64,
    delta: f64,
    cpus: &'a [Cpu],
    #[serde(skip_serializing_if = "Option::is_none")]
    calibration: Option<&'a Calibration>,
}

/// Generator specs for `--sizes FROM..TO[:STEP]` from the templates.
fn size_specs(range: &str, templates: &[String], per_size: u64) -> Result<Vec<String>, String> {
    let bad = || format!("--sizes {range}: expected FROM..TO[:STEP], e.g. 64..1500:64");
    let (span, step) = match range.split_once(':') {
        Some((s, st)) => (s, st.trim().parse::<usize>().map_err(|_| bad())?),
        None => (range, 64),
    };
    let (from, to) = span.split_once("..").ok_or_else(bad)?;
    let (from, to): (usize, usize) = (
        from.trim().parse().map_err(|_| bad())?,
        to.trim().parse().map_err(|_| bad())?,
    );
    if step == 0 || from > to {
        return Err(bad());
    }
    let templates = if templates.is_empty() {
        vec!["udp".to_string()]
    } else {
        templates.to_vec()
    };
    let mut sizes: Vec<usize> = (from..=to).step_by(step).collect();
    if sizes.last() != Some(&to) {
        sizes.push(to);
    }
    let mut specs = Vec::new();
    for t in &templates {
        for s in &sizes {
            specs.push(format!("{t},size={s},count={per_size}"));
        }
    }
    Ok(specs)
}

/// The program profiled, on `engine`.
fn hook_spec(a: &Args, engine: crate::args::Engine) -> HookSpec {
    let mut hook = HookSpec::new(&a.object);
    hook.program = a.prog.clone();
    hook.settings = a.settings.spec();
    hook.contents = a.contents.spec();
    hook.engine = engine.into();
    hook.cpus = crate::hooks::cores();
    hook
}

/// The packets profiled: a capture, generated traffic, or generated
/// packets of each size; through `--filter`.
fn source(a: &Args) -> Result<SourceSpec, String> {
    let origin = match (&a.sizes, &a.pcap) {
        (None, Some(path)) => Origin::Capture {
            path: path.clone(),
            foreign: engine::Foreign::Skip,
        },
        (Some(range), _) => Origin::Generated {
            specs: size_specs(range, &a.r#gen, a.per_size)?,
        },
        (None, None) if a.r#gen.is_empty() => Origin::Generated {
            specs: size_specs("64..1500:64", &[], a.per_size)?,
        },
        (None, None) => Origin::Generated {
            specs: a.r#gen.clone(),
        },
    };
    Ok(SourceSpec {
        origin,
        filter: a.filter.clone(),
    })
}

/// Opens `spec`'s packets.
fn open(spec: &SourceSpec) -> Result<Box<dyn engine::Source>, String> {
    spec.open(None).map_err(|e| e.to_string())
}

fn cpus(a: &Args, calibration: Option<&Calibration>) -> Result<Vec<Cpu>, String> {
    let mut out = Vec::new();
    for spec in &a.cpu {
        if spec == "host" {
            out.push(calibration.expect("calibrated first").cpu.clone());
        } else {
            out.extend(cpus_of(spec)?);
        }
    }
    Ok(out)
}

/// The processors of one `--cpu` other than `host`: a file written by
/// `--save-host` (checked: a hand-edited file may hold a zero clock), or a
/// description.
fn cpus_of(spec: &str) -> Result<Vec<Cpu>, String> {
    if std::path::Path::new(spec).is_file() {
        let text = crate::files::text(std::path::Path::new(spec))?;
        let cpu: Cpu = serde_json::from_str(&text)
            .map_err(|e| format!("--cpu {spec}: not a processor file ({e})"))?;
        cpu.check().map_err(|e| format!("--cpu {spec}: {e}"))?;
        Ok(vec![cpu])
    } else {
        Cpu::parse(spec).map_err(|e| format!("--cpu {e}"))
    }
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let wants_host = a.cpu.iter().any(|c| c == "host") || a.save_host.is_some();
    if let Some(p) = a.pcap.as_deref().filter(|p| capture::is_stream(p))
        && (a.warm_up || wants_host)
    {
        let why = if a.warm_up { "--warm-up" } else { "--cpu host" };
        return Err(format!(
            "{why} reads the capture twice: {} is a stream (a pipe or standard input), read once; give a file",
            p.display()
        ));
    }
    // Processors given by hand are checked before the long work.
    for spec in a.cpu.iter().filter(|c| *c != "host") {
        cpus_of(spec)?;
    }
    crate::out_table::check(a.out_table.as_deref())?;
    let spec = ProfileSpec {
        hook: hook_spec(&a, a.engine),
        source: source(&a)?,
        limit: a.limit,
        warm_up: a.warm_up,
    };
    let packets = &spec.source;
    let hook = crate::hooks::build(&spec.hook)?.hook;
    let profiling = spec.start(hook).map_err(|e| e.to_string())?;
    let total = profiling.expected();
    let profiled = with_progress(total, a.json, |count| profiling.finish(Some(count)))
        .map_err(|e| e.to_string())?;
    crate::report::warn_skipped(
        &profiled.skipped,
        " (--foreign pass gives them to the program as captured)",
    );
    for w in &profiled.warnings {
        say!("sluice: warning: {w}");
    }
    let model = profiled.model;
    let profiled = profiled.profile;

    let calibration = if wants_host {
        let mut jit = crate::hooks::build(&hook_spec(&a, crate::args::Engine::Jit))?.hook;
        let mut baseline = baseline(&jit)?;
        let mut source = open(packets)?;
        let c = profile::calibrate(
            &mut jit,
            &mut baseline,
            source.as_mut(),
            a.limit,
            a.calibrate_packets,
            200,
        )?;
        if let Some(path) = &a.save_host {
            let text = serde_json::to_string_pretty(&c.cpu).map_err(|e| e.to_string())?;
            std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Some(c)
    } else {
        None
    };
    let cpus = cpus(&a, calibration.as_ref())?;

    if let Some(path) = &a.model {
        let text = serde_json::to_string_pretty(&profile::model_json(&model, &cpus))
            .map_err(|e| e.to_string())?;
        std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, profile::model_csv(&model, &cpus))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &a.per_packet {
        write_per_packet(path, &profiled)?;
    }
    if let Some(path) = &a.out_table {
        crate::out_table::write(path, tables::profile(&profiled))?;
    }
    if let Some(dir) = &a.plot {
        plot::all(dir, &model, &profiled, &cpus, calibration.as_ref())?;
    }
    if a.json {
        print_json(&Report {
            object: a.object.display().to_string(),
            model: &model,
            alpha: model.alpha(),
            beta: model.beta(),
            gamma: model.gamma(),
            delta: model.delta(),
            cpus: &cpus,
            calibration: calibration.as_ref(),
        })?;
    } else {
        print_text(&model, &cpus, calibration.as_ref());
    }
    Ok(ExitCode::SUCCESS)
}

/// A program of the same kind as `hook`'s that only returns, in the JIT:
/// what the host spends around any program.
fn baseline(hook: &runtime::Hook) -> Result<runtime::Hook, String> {
    if !matches!(hook.program().kind, obj::ProgramKind::Xdp { .. }) {
        return Err(
            "--cpu host calibrates with XDP programs only (its baseline is xdp_pass)".into(),
        );
    }
    let object = programs::object("xdp_pass").ok_or("xdp_pass is not built in")?;
    let mut spec = HookSpec::from_bytes("xdp_pass", object);
    // The JIT is enabled after verifying, and its failure is an error.
    spec.engine = engine::VmEngine::Interpreter;
    let mut h = crate::hooks::build(&spec)?.hook;
    h.enable_jit().map_err(|e| e.to_string())?;
    Ok(h)
}

fn write_per_packet(path: &std::path::Path, p: &profile::Profile) -> Result<(), String> {
    let mut out = String::from(
        "seq,len,insns,branches,taken,helper_calls,loads,stores,helper_reads,helper_writes,verdict\n",
    );
    for c in &p.packets {
        out += &format!(
            "{},{},{},{},{},{},{},{},{},{},{}\n",
            c.seq,
            c.len,
            c.insns,
            c.branches,
            c.taken,
            c.helper_calls,
            c.loads,
            c.stores,
            c.helper_reads,
            c.helper_writes,
            c.verdict
        );
    }
    std::fs::write(path, out).map_err(|e| format!("{}: {e}", path.display()))
}

fn print_text(m: &CostModel, cpus: &[Cpu], cal: Option<&Calibration>) {
    out!(
        "{}: {} packets profiled ({} failed), {} lengths, {:?}",
        m.program,
        m.packets,
        m.failed,
        m.rows.len(),
        m.engine
    );
    let fit = |name: &str, f: &profile::Fitted, a: &str, b: &str| {
        out!(
            "  {name:<16} {a} = {:>10.2}  {b} = {:>8.4} per byte   R^2 {:.4} (means per length {:.4})  rms {:.2}  max error {:.1}",
            f.line.intercept,
            f.line.slope,
            f.line.r2,
            f.means.r2,
            f.line.rms,
            f.line.max_error
        );
    };
    fit("instructions", &m.insns, "alpha", "beta");
    fit("memory accesses", &m.accesses, "gamma", "delta");
    out!(
        "  {}",
        if m.linear {
            "linear in the packet length (the means per length: R^2 >= 0.99)"
        } else {
            "NOT linear in the packet length"
        }
    );
    for n in &m.notes {
        out!("  note: {n}");
    }
    out!();
    let places: Vec<&str> = m
        .rows
        .first()
        .map(|r| r.places.iter().map(|p| p.place.as_str()).collect())
        .unwrap_or_default();
    out_part!(
        "{:>6} {:>7} {:>10} {:>10} {:>9} {:>8}",
        "len",
        "packets",
        "insns",
        "accesses",
        "branches",
        "helpers"
    );
    for p in &places {
        out_part!(" {:>14}", p);
    }
    out!();
    for r in &m.rows {
        out_part!(
            "{:>6} {:>7} {:>10.1} {:>10.1} {:>9.1} {:>8.1}",
            r.len,
            r.packets,
            r.insns_mean,
            r.accesses_mean,
            r.branches_mean,
            r.helper_calls_mean
        );
        for p in &r.places {
            out_part!(" {:>14}", format!("{:.1}/{:.1}", p.loads, p.stores));
        }
        out!();
    }
    out!("  (per place: loads/stores per packet)");
    if let Some(c) = cal {
        out!();
        out!(
            "host calibration ({:.0} MHz): {:.3} cycles per instruction, {}; around the program {:.1} ns + {:.3} ns per byte (R^2 {:.3}); error against the JIT's time on the lengths fitted: mean {:.1}%, max {:.1}%{}",
            c.cpu.f_mhz,
            c.cycles_per_insn,
            match c.cycles_per_access {
                Some(x) => format!("{x:.2} cycles per memory access"),
                None => "memory accesses folded into instructions".into(),
            },
            c.cpu.t0_ns,
            c.cpu.tbyte_ns,
            c.harness_r2,
            c.mean_error_pct,
            c.max_error_pct,
            match (c.held_out_mean_error_pct, c.held_out_max_error_pct) {
                (Some(mean), Some(max)) => format!(
                    "; on every other length, held out of the fit: mean {mean:.1}%, max {max:.1}%"
                ),
                _ => String::new(),
            }
        );
        if let Some(n) = &c.note {
            out!("  note: {n}");
        }
    }
    if !cpus.is_empty() {
        out!();
        out_part!("{:>6}", "len");
        for c in cpus {
            out_part!(" {:>24}", c.name);
        }
        out!("   (predicted delay, ns)");
        for r in &m.rows {
            out_part!("{:>6}", r.len);
            for c in cpus {
                out_part!(" {:>24.1}", m.delay_ns(c, f64::from(r.len)));
            }
            out!();
        }
    }
}
