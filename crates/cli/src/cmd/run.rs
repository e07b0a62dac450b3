//! `sluice run`: replays packets through a program in the VM and reports
//! verdicts, costs, output and maps.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use runtime::{Hook, Image, LoadOptions, PacketMeta, RedirectTarget, Verdict};
use serde::Serialize;

use crate::mapfmt::{self, MapDump};
use crate::report::print_json;
use crate::settings::ObjectSettings;

/// Replay packets through a program in the sluice VM (no root needed).
/// Which engine runs the programs.
#[derive(clap::ValueEnum, Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Engine {
    #[default]
    Jit,
    Interp,
}

#[derive(clap::Args, Clone, Default)]
pub struct Args {
    /// Object file built by clang -target bpf
    pub object: PathBuf,
    /// Program to run (a function name; needed when the object has several)
    #[arg(long)]
    pub prog: Option<String>,
    /// Capture to replay (pcap or pcapng)
    #[arg(long, conflicts_with = "gen", required_unless_present = "gen")]
    pub pcap: Option<PathBuf>,
    /// Generated traffic, e.g. udp,flows=1000,size=64,count=1000000 (repeat to mix streams)
    #[arg(long)]
    pub r#gen: Vec<String>,
    /// Write passed packets here (pcap; .pcapng for pcapng)
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
    #[command(flatten)]
    pub settings: ObjectSettings,
    /// Add a map entry before the run: NAME KEY VALUE (KEY/VALUE: integer, IP address, ADDR/LEN for LPM keys, or hex:BYTES)
    #[arg(long = "map-update", num_args = 3, value_names = ["NAME", "KEY", "VALUE"])]
    pub map_update: Vec<String>,
    /// Forwarding table for bpf_fib_lookup: a file of `link`, `neigh` and route lines
    #[arg(long)]
    pub fib: Option<PathBuf>,
    /// Resolve CO-RE relocations against this BTF (raw, like /sys/kernel/btf/vmlinux, or an object's .BTF; `bundled`: sluice's UAPI types) instead of the running kernel's
    #[arg(long, value_name = "FILE")]
    pub btf: Option<PathBuf>,
    /// Keep maps pinned by name (LIBBPF_PIN_BY_NAME) in this directory across runs
    #[arg(long)]
    pub pin: Option<PathBuf>,
    /// Simulated CPUs (per-CPU maps keep one value per CPU)
    #[arg(long, default_value_t = 1)]
    pub cpus: u32,
    /// Interface index the packets arrive on
    #[arg(long, default_value_t = 1)]
    pub ifindex: u32,
    /// Stop after this many packets
    #[arg(long)]
    pub limit: Option<u64>,
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

#[derive(Serialize, Default)]
struct Percentiles {
    mean: f64,
    p50: u64,
    p99: u64,
    max: u64,
}

#[derive(Serialize)]
struct ErrorReport {
    packet: u64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<String>,
}

#[derive(Serialize)]
struct CoreReport {
    relocations: usize,
    target: String,
    poisoned: Vec<String>,
}

#[derive(Serialize)]
struct RunReport {
    object: String,
    program: String,
    section: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    core: Option<CoreReport>,
    /// "jit" or "interpreter".
    engine: &'static str,
    /// "verified" (no per-access checks) or "run-time".
    checks: &'static str,
    packets: u64,
    seconds: f64,
    packets_per_second: f64,
    verdicts: BTreeMap<&'static str, u64>,
    redirects: BTreeMap<String, u64>,
    /// Copies sent on by `bpf_clone_redirect`, per interface.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    clones: BTreeMap<String, u64>,
    insns_per_packet: Percentiles,
    helper_calls_per_packet: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_per_packet: Option<BTreeMap<String, [f64; 2]>>,
    errors: u64,
    first_errors: Vec<ErrorReport>,
    trace: Vec<String>,
    trace_lines: u64,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    ringbuf: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    perf_events: BTreeMap<String, u64>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    link_types: BTreeMap<String, u64>,
    maps: Vec<MapDump>,
}

/// Loads the object with the options and map updates of `a`.
pub fn prepare(a: &Args) -> Result<Hook, String> {
    let data = std::fs::read(&a.object).map_err(|e| format!("{}: {e}", a.object.display()))?;
    prepare_bytes(a, &data)
}

/// Like [`prepare`], with the object's bytes at hand.
pub fn prepare_bytes(a: &Args, data: &[u8]) -> Result<Hook, String> {
    let custom = match &a.btf {
        Some(path) if path.as_os_str() == "bundled" => None,
        Some(path) => {
            let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            let origin = path.display().to_string();
            Some(obj::CoreTarget::from_bytes(&bytes, &origin).map_err(|e| format!("--btf {e}"))?)
        }
        None => None,
    };
    let target = match (&custom, &a.btf) {
        (Some(t), _) => t,
        (None, Some(_)) => obj::CoreTarget::bundled(),
        (None, None) => obj::CoreTarget::default_target(),
    };
    let object = obj::Object::parse_with(data, Some(target))
        .map_err(|e| format!("{}: {e}", a.object.display()))?;
    let mut opts = LoadOptions {
        ncpus: a.cpus.max(1),
        ..LoadOptions::default()
    };
    a.settings.apply(&object, &mut opts)?;
    let image = Image::load(object, &opts).map_err(|e| format!("{}: {e}", a.object.display()))?;
    let prog = image
        .find_program(a.prog.as_deref())
        .map_err(|e| format!("{}: {e}", a.object.display()))?;
    let mut hook = Hook::new(image, prog, 0).map_err(|e| format!("{}: {e}", a.object.display()))?;
    hook.set_counting(a.count_memory);
    if a.engine == Engine::Jit
        && let Err(e) = hook.enable_jit()
    {
        eprintln!("sluice: note: {e}");
    }
    if let Some(fib) = &a.fib {
        let text = std::fs::read_to_string(fib).map_err(|e| format!("{}: {e}", fib.display()))?;
        hook.env_mut().fib =
            runtime::fib::Fib::parse(&text).map_err(|e| format!("{}: {e}", fib.display()))?;
    }
    if let Some(dir) = &a.pin {
        crate::pin::load(&mut hook, dir)?;
    }
    for u in a.map_update.chunks(3) {
        let [name, key, value] = u else {
            unreachable!("clap gives three values")
        };
        let i = hook
            .object()
            .map_index(name)
            .ok_or_else(|| format!("--map-update {name}: no such map"))?;
        let map = &mut hook.maps_mut()[i];
        let spec = map.spec().clone();
        let k = mapfmt::parse(key, spec.key_size as usize, spec.map_type, true)
            .map_err(|e| format!("--map-update {name}: key {e}"))?;
        let v = mapfmt::parse(value, map.user_value_len(), spec.map_type, false)
            .map_err(|e| format!("--map-update {name}: value {e}"))?;
        map.user_update(&k, &v, maps::update::ANY)
            .map_err(|e| format!("--map-update {name} {key} {value}: {e}"))?;
    }
    Ok(hook)
}

/// Packets to replay: `(timestamp, bytes, link kind)`.
pub(crate) type Frames = Box<dyn Iterator<Item = Result<(u64, Vec<u8>, String), String>>>;

/// A source of packets, with their number when known.
pub(crate) fn source(a: &Args) -> Result<(Frames, Option<u64>), String> {
    if let Some(path) = &a.pcap {
        let src = io::PcapSource::open(path).map_err(|e| e.to_string())?;
        let it = src.map(|r| {
            r.map(|f| (f.timestamp_ns, f.data, format!("{:?}", f.link)))
                .map_err(|e| e.to_string())
        });
        return Ok((Box::new(it), None));
    }
    let specs = a
        .r#gen
        .iter()
        .map(|s| packet::GenSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let total = specs.iter().map(|s| s.count).sum();
    let it = packet::merge(&specs).map(|(ts, data)| Ok((ts, data, "Ethernet".to_string())));
    Ok((Box::new(it), Some(total)))
}

struct Sinks {
    pass: Option<io::PcapSink>,
    tx: Option<io::PcapSink>,
    redirect: Option<io::PcapSink>,
    drop: Option<io::PcapSink>,
}

fn sink(p: &Option<PathBuf>) -> Result<Option<io::PcapSink>, String> {
    p.as_deref()
        .map(io::PcapSink::create)
        .transpose()
        .map_err(|e| e.to_string())
}

fn percentiles(mut v: Vec<u32>) -> Percentiles {
    if v.is_empty() {
        return Percentiles::default();
    }
    let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
    v.sort_unstable();
    let at = |q: f64| u64::from(v[((v.len() - 1) as f64 * q).round() as usize]);
    Percentiles {
        mean,
        p50: at(0.5),
        p99: at(0.99),
        max: u64::from(*v.last().expect("not empty")),
    }
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    let mut hook = prepare(&a)?;
    if !a.no_verify {
        crate::cmd::verify::before_run(&mut hook)?;
    }
    report(&a, &mut hook)
}

/// Replays, saves pinned maps and prints the report.
pub fn report(a: &Args, hook: &mut Hook) -> Result<ExitCode, String> {
    let report = replay(a, hook)?;
    if let Some(dir) = &a.pin {
        crate::pin::save(hook, dir)?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report);
    }
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn replay(a: &Args, hook: &mut Hook) -> Result<RunReport, String> {
    let (frames, total) = source(a)?;
    let mut sinks = Sinks {
        pass: sink(&a.out_pass)?,
        tx: sink(&a.out_tx)?,
        redirect: sink(&a.out_redirect)?,
        drop: sink(&a.out_drop)?,
    };
    let progress = if std::io::stderr().is_terminal() && !a.json {
        let bar = match total {
            Some(n) => ProgressBar::new(n).with_style(
                ProgressStyle::with_template(
                    "{spinner} {bar:40} {pos}/{len} packets  {per_sec}  eta {eta}",
                )
                .expect("template"),
            ),
            None => ProgressBar::new_spinner().with_style(
                ProgressStyle::with_template("{spinner} {pos} packets  {per_sec}")
                    .expect("template"),
            ),
        };
        Some(bar)
    } else {
        None
    };

    let prog = hook.program().clone();
    let map_names: Vec<String> = hook.maps().iter().map(|m| m.name().to_string()).collect();
    let mut verdicts: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut redirects: BTreeMap<String, u64> = BTreeMap::new();
    let mut clones: BTreeMap<String, u64> = BTreeMap::new();
    let mut link_types: BTreeMap<String, u64> = BTreeMap::new();
    let mut insns = Vec::new();
    let (mut helpers, mut loads, mut stores) = (0u64, [0u64; 4], [0u64; 4]);
    let mut trace = Vec::new();
    let mut trace_lines = 0u64;
    let mut errors = 0u64;
    let mut first_errors = Vec::new();
    let mut packets = 0u64;
    let start = Instant::now();
    for item in frames {
        if a.limit.is_some_and(|l| packets >= l) {
            break;
        }
        let (ts, data, link) = item?;
        packets += 1;
        *link_types.entry(link).or_default() += 1;
        let meta = PacketMeta {
            ifindex: a.ifindex,
            rx_queue: 0,
            timestamp_ns: ts,
            egress_ifindex: 0,
            dev_addr: [0; 6],
            dev_broadcast: [0; 6],
        };
        let frame = &data[..data.len().min(runtime::MAX_FRAME)];
        match hook.run(frame, &meta) {
            Ok(out) => {
                let name = out.verdict.name();
                insns.push(out.stats.insns as u32);
                helpers += out.stats.helper_calls;
                for k in 0..4 {
                    loads[k] += out.stats.loads[k];
                    stores[k] += out.stats.stores[k];
                }
                for line in out.trace {
                    trace_lines += 1;
                    if trace.len() < 100 {
                        trace.push(line.clone());
                    }
                }
                if let Some(r) = out.redirect {
                    let key = match r.target {
                        RedirectTarget::Device {
                            ifindex,
                            ingress: false,
                        } => format!("ifindex {ifindex}"),
                        RedirectTarget::Device {
                            ifindex,
                            ingress: true,
                        } => format!("ifindex {ifindex} ingress"),
                        RedirectTarget::Cpu(c) => format!("cpu {c}"),
                        RedirectTarget::Socket(q) => format!("xsk queue {q}"),
                        RedirectTarget::Broadcast { exclude_ingress } => {
                            let map = r.map.map_or("?", |m| map_names[m].as_str());
                            if exclude_ingress {
                                format!("broadcast {map} (not ingress)")
                            } else {
                                format!("broadcast {map}")
                            }
                        }
                    };
                    *redirects.entry(key).or_default() += 1;
                }
                for c in out.clones {
                    let dir = if c.ingress { " ingress" } else { "" };
                    *clones
                        .entry(format!("ifindex {}{dir}", c.ifindex))
                        .or_default() += 1;
                    // Copies leave like redirected packets do.
                    if let Some(s) = &mut sinks.redirect {
                        s.write(&c.packet, ts).map_err(|e| e.to_string())?;
                    }
                }
                let target = match out.verdict {
                    Verdict::Xdp(runtime::XdpAction::Pass) | Verdict::Tc(runtime::TcAction::Ok) => {
                        &mut sinks.pass
                    }
                    Verdict::Xdp(runtime::XdpAction::Tx) => &mut sinks.tx,
                    Verdict::Xdp(runtime::XdpAction::Redirect)
                    | Verdict::Tc(runtime::TcAction::Redirect) => &mut sinks.redirect,
                    Verdict::Xdp(runtime::XdpAction::Drop)
                    | Verdict::Tc(runtime::TcAction::Shot) => &mut sinks.drop,
                    _ => &mut None,
                };
                if let Some(s) = target {
                    if out.frags.is_empty() {
                        s.write(out.packet, ts)
                    } else {
                        s.write(&[out.packet, out.frags].concat(), ts)
                    }
                    .map_err(|e| e.to_string())?;
                }
                *verdicts.entry(name).or_default() += 1;
            }
            Err(e) => {
                errors += 1;
                *verdicts.entry("ERROR").or_default() += 1;
                if first_errors.len() < 5 {
                    let line = (e.program == 0 || hook.program_of_vm(e.program).is_some())
                        .then(|| hook.program_of_vm(e.program).unwrap_or(&prog).line_at(e.pc))
                        .flatten()
                        .map(|l| format!("{}:{}: {}", l.file, l.line, l.source.trim()));
                    first_errors.push(ErrorReport {
                        packet: packets,
                        message: e.to_string(),
                        line,
                    });
                }
            }
        }
        if let Some(p) = &progress
            && packets.is_multiple_of(4096)
        {
            p.set_position(packets);
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    for s in [sinks.pass, sinks.tx, sinks.redirect, sinks.drop]
        .into_iter()
        .flatten()
    {
        s.finish().map_err(|e| e.to_string())?;
    }

    let mut ringbuf = BTreeMap::new();
    let mut perf_events = BTreeMap::new();
    let map_count = hook.maps().len();
    for i in 0..map_count {
        let name = hook.maps()[i].name().to_string();
        let map = &mut hook.maps_mut()[i];
        if let Some(rb) = map.ringbuf() {
            let n = rb.consume().len() as u64;
            ringbuf.insert(name.clone(), n);
        }
        let perf = map.perf_drain();
        if !perf.is_empty() {
            perf_events.insert(name, perf.len() as u64);
        }
    }
    let object = hook.object();
    let btf = object.btf.as_ref();
    let maps = hook
        .maps()
        .iter()
        .enumerate()
        .map(|(i, m)| mapfmt::dump(m, object.maps.get(i), btf, a.map_entries))
        .collect();
    let n = packets.max(1) as f64;
    let kinds = ["stack", "context", "packet", "map"];
    let memory_per_packet = a.count_memory.then(|| {
        (0..4)
            .map(|k| {
                (
                    kinds[k].to_string(),
                    [loads[k] as f64 / n, stores[k] as f64 / n],
                )
            })
            .collect()
    });
    if link_types.len() == 1 && link_types.contains_key("Ethernet") {
        link_types.clear();
    }
    let core = (prog.core_relocations > 0).then(|| CoreReport {
        relocations: prog.core_relocations,
        target: hook.object().core_target.clone().unwrap_or_default(),
        poisoned: prog
            .core_poisoned
            .iter()
            .map(|(pc, why)| format!("instruction {pc}: {why}"))
            .collect(),
    });
    Ok(RunReport {
        object: a.object.display().to_string(),
        program: prog.name.clone(),
        engine: if hook.jit_enabled() {
            "jit"
        } else {
            "interpreter"
        },
        checks: if hook.is_trusted() {
            "verified"
        } else {
            "run-time"
        },
        section: prog.section.clone(),
        core,
        packets,
        seconds,
        packets_per_second: packets as f64 / seconds.max(1e-9),
        verdicts,
        redirects,
        clones,
        insns_per_packet: percentiles(insns),
        helper_calls_per_packet: helpers as f64 / n,
        memory_per_packet,
        errors,
        first_errors,
        trace,
        trace_lines,
        ringbuf,
        perf_events,
        link_types,
        maps,
    })
}

fn print_text(r: &RunReport) {
    println!("{} ({}) of {}", r.program, r.section, r.object);
    if let Some(c) = &r.core {
        println!(
            "CO-RE         {} relocations against {}",
            c.relocations, c.target
        );
        for p in &c.poisoned {
            println!("  poisoned {p}");
        }
    }
    println!(
        "engine        {}, {}",
        r.engine,
        if r.checks == "verified" {
            "no per-access checks (verified)"
        } else {
            "checks on every access"
        }
    );
    println!(
        "packets       {} in {:.3} s ({:.0} packets/s)",
        r.packets, r.seconds, r.packets_per_second
    );
    let total = r.packets.max(1) as f64;
    let v: Vec<String> = r
        .verdicts
        .iter()
        .map(|(k, n)| format!("{k} {n} ({:.1}%)", *n as f64 * 100.0 / total))
        .collect();
    println!("verdicts      {}", v.join("  "));
    if !r.redirects.is_empty() {
        let v: Vec<String> = r
            .redirects
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        println!("redirects     {}", v.join("  "));
    }
    if !r.clones.is_empty() {
        let v: Vec<String> = (r.clones.iter())
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        println!("clones        {}", v.join("  "));
    }
    let p = &r.insns_per_packet;
    println!(
        "insns/packet  mean {:.1}  p50 {}  p99 {}  max {}",
        p.mean, p.p50, p.p99, p.max
    );
    println!("helpers/pkt   {:.2}", r.helper_calls_per_packet);
    if let Some(m) = &r.memory_per_packet {
        let v: Vec<String> = m
            .iter()
            .filter(|(_, [l, s])| l + s > 0.0)
            .map(|(k, [l, s])| format!("{k} {l:.1} loads {s:.1} stores"))
            .collect();
        println!("memory/packet {}", v.join(", "));
    }
    if !r.link_types.is_empty() {
        let v: Vec<String> = r
            .link_types
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        println!(
            "link types    {} (Converted: given an Ethernet header; Foreign(N): bytes as captured)",
            v.join("  ")
        );
    }
    if r.errors > 0 {
        println!("errors        {} packets stopped with an error:", r.errors);
        for e in &r.first_errors {
            println!("  packet {}: {}", e.packet, e.message);
            if let Some(l) = &e.line {
                println!("    at {l}");
            }
        }
    }
    if r.trace_lines > 0 {
        println!(
            "trace_printk  {} lines{}",
            r.trace_lines,
            if r.trace_lines > r.trace.len() as u64 {
                " (first 100)"
            } else {
                ""
            }
        );
        for l in &r.trace {
            println!("  {l}");
        }
    }
    for (k, n) in &r.ringbuf {
        println!("ringbuf       {k}: {n} records");
    }
    for (k, n) in &r.perf_events {
        println!("perf events   {k}: {n} records");
    }
    println!("maps");
    for m in &r.maps {
        println!(
            "  {} ({}, key {} B, value {} B, {} of {} entries)",
            m.name, m.map_type, m.key_size, m.value_size, m.len, m.max_entries
        );
        for e in &m.entries {
            if e.cpus.len() > 1 {
                println!("    {} => {}", e.key, e.cpus.join(" | "));
            } else {
                println!("    {} => {}", e.key, e.value);
            }
        }
        let mut notes = Vec::new();
        if m.zero_entries > 0 && (!m.entries.is_empty() || m.zero_entries < m.len) {
            notes.push(format!("{} all-zero entries not shown", m.zero_entries));
        } else if m.zero_entries > 0 {
            notes.push("all zero".to_string());
        }
        if m.more > 0 {
            notes.push(format!("{} more entries (--map-entries)", m.more));
        }
        if !notes.is_empty() {
            println!("    ({})", notes.join(", "));
        }
    }
}
