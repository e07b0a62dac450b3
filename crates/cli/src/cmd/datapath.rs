//! `sluice datapath --port IF --port IF --prog OBJ`: a sluice program on
//! the AF_XDP datapath, run in user space (the JIT) on every frame the
//! ports receive, its verdicts carried out by the datapath
//! (docs/datapath.md); or `--tc FILE`: a tc configuration, each frame
//! through the ingress filters of the port it came in on, mirred moving
//! frames between ports (docs/tc.md).

use std::path::PathBuf;
use std::time::Duration;

use datapath::Totals;
use datapath::program::{self, ProgramOptions, ProgramSummary};

use crate::cmd::xsk;
use crate::settings::ObjectSettings;

#[derive(clap::Args)]
#[command(after_help = "\
A port whose interface goes away during the run (ip link del, or moved to another network \
namespace) is reported on stderr in one line naming it and the cause; the datapath goes on with \
the other ports (frames for the lost port are counted as lost) and, when none is left, stops \
cleanly. At the end the program is detached from every port still there and the sockets are \
closed. The programs are attached through bpf links of the process, so the kernel detaches them \
when it dies, even by SIGKILL; a program of sluice's own left attached by an earlier sluice (held \
by nothing) is replaced, any other program on a port is refused. Exit status: 0 when stopped by Ctrl-C, SIGTERM or --duration (also after losing some \
ports: the summary's \"gone\" says which and why); 1 on an error, or when every port went away.")]
pub struct Args {
    /// An interface of the datapath (repeatable)
    #[arg(long = "port", required = true)]
    ports: Vec<String>,
    /// Object file with the XDP program (built by clang -target bpf)
    #[arg(long = "prog", required_unless_present = "tc", conflicts_with = "tc")]
    object: Option<PathBuf>,
    /// A tc configuration instead of a program (the file `sluice tc` keeps,
    /// or any `tc -batch` file): its devices are the ports; one thread
    #[arg(long, value_name = "FILE")]
    tc: Option<PathBuf>,
    /// Program in the object (a function name; needed when it has several)
    #[arg(long = "prog-name")]
    prog_name: Option<String>,
    #[command(flatten)]
    settings: ObjectSettings,
    /// Map contents before the run
    #[command(flatten)]
    contents: crate::contents::MapContents,
    /// The engine running the program
    #[arg(long, value_enum, default_value_t = crate::args::Engine::Jit)]
    engine: crate::args::Engine,
    #[command(flatten)]
    common: xsk::Common,
}

/// The run's options from the command line.
pub fn options(c: &xsk::Common) -> ProgramOptions {
    ProgramOptions {
        ports: Vec::new(),
        queues: c.queues.clone(),
        mode: c.xdp_mode(),
        xsk: c.config(),
        batch: c.batch,
        pool: c.pool,
        kick_at: c.kick_at,
        duration: c.duration(),
        pmd: !c.no_pmd,
        pin: c.pin,
        pmd_threads: c.pmd_threads,
        own_program: None,
    }
}

pub fn run(a: Args) -> Result<std::process::ExitCode, String> {
    if let Some(file) = &a.tc {
        return run_tc(&a, file);
    }
    let object = a.object.clone().ok_or("give --prog OBJ or --tc FILE")?;
    let mut spec = engine::HookSpec::new(&object);
    spec.program = a.prog_name.clone();
    spec.settings = a.settings.spec();
    spec.contents = a.contents.spec();
    spec.engine = a.engine.into();
    // A per-CPU slot for each polling thread (one per queue of a port).
    spec.cpus = (a.ports.len() * a.common.queues.len()).max(1) as u32;
    let mut built = crate::hooks::load(&spec)?;
    if !built.hook.kind().is_xdp() {
        return Err(format!(
            "{}: {} is not an XDP program: the datapath runs XDP programs",
            object.display(),
            built.hook.program().name
        ));
    }
    crate::hooks::verify(&mut built)?;
    let mut hook = built.hook;
    let c = &a.common;
    let opts = ProgramOptions {
        ports: a.ports.clone(),
        ..options(c)
    };
    let stop = crate::signals::stop_on_signals();
    if !c.json {
        say!(
            "sluice datapath: {} on {} ({}, {} XDP); Ctrl-C stops",
            hook.program().name,
            a.ports.join(", "),
            if hook.jit_enabled() {
                "JIT"
            } else {
                "interpreter"
            },
            opts.mode.name()
        );
    }
    let summary =
        program::run(&mut hook, &opts, stop, reporter(c.json)).map_err(|e| e.to_string())?;
    print_summary(&hook.program().name, &summary, c.json, None);
    Ok(exit_status(&summary))
}

/// Live rates every second (not with `--json`), and one line on stderr
/// for each port whose interface goes away.
fn reporter(json: bool) -> impl FnMut(program::Event<'_>) {
    let mut last = (Totals::default(), Duration::ZERO);
    move |e| match e {
        program::Event::Tick(t, at) if !json => xsk::live_rates(&mut last, t, at),
        program::Event::Tick(..) => {}
        program::Event::PortGone(g) => say!("sluice datapath: {g}"),
    }
}

/// 0 when the run ended as asked (Ctrl-C, SIGTERM, `--duration`), also
/// after losing some ports; 1 when it stopped by itself because every
/// port's interface was gone.
fn exit_status(s: &ProgramSummary) -> std::process::ExitCode {
    if s.all_gone {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    }
}

/// `--tc FILE`: the configuration at the ports' ingress hooks, on one
/// thread (its counters and policers are shared by every packet).
fn run_tc(a: &Args, file: &std::path::Path) -> Result<std::process::ExitCode, String> {
    let mut ports = Vec::new();
    for p in &a.ports {
        ports.push((
            p.clone(),
            kernel::netdev::ifindex(p).map_err(|e| e.to_string())?,
        ));
    }
    let config =
        tc::Config::load(file, &ports, Some(crate::signals::flag())).map_err(|e| e.to_string())?;
    let c = &a.common;
    let opts = ProgramOptions {
        ports: a.ports.clone(),
        pmd: false,
        ..options(c)
    };
    let mut runner = tc::Runner::at_ports(config, tc::ClsactHook::Ingress);
    let stop = crate::signals::stop_on_signals();
    if !c.json {
        say!(
            "sluice datapath: tc configuration {} on {} ({} XDP, one thread); Ctrl-C stops",
            file.display(),
            a.ports.join(", "),
            opts.mode.name()
        );
    }
    let summary =
        program::run(&mut runner, &opts, stop, reporter(c.json)).map_err(|e| e.to_string())?;
    let mut config = runner.into_config();
    let mut filters = serde_json::Map::new();
    let mut text = String::new();
    for (dev, _) in &ports {
        for hook in ["ingress", "egress"] {
            let show = |json| tc::ShowOptions { stats: true, json };
            let words = ["filter", "show", "dev", dev.as_str(), hook];
            let shown = config.run(&words, show(false)).unwrap_or_default();
            if shown.trim().is_empty() {
                continue;
            }
            let j = config.run(&words, show(true)).map_err(|e| e.to_string())?;
            filters.insert(
                format!("{dev} {hook}"),
                serde_json::from_str(&j).map_err(|e| e.to_string())?,
            );
            text += &format!("{dev} {hook}:\n{shown}");
        }
    }
    let name = file.display().to_string();
    print_summary(
        &name,
        &summary,
        c.json,
        Some((serde_json::Value::Object(filters), text)),
    );
    Ok(exit_status(&summary))
}

/// The summary; with a tc configuration, its filters and counters too
/// (as `tc -s -j filter show` and `tc -s filter show` give them).
fn print_summary(
    prog: &str,
    s: &ProgramSummary,
    json: bool,
    filters: Option<(serde_json::Value, String)>,
) {
    let sum = |f: fn(&program::PortSummary) -> u64| s.ports.iter().map(f).sum::<u64>();
    let (rx, tx) = (sum(|p| p.rx), sum(|p| p.tx));
    let dropped = sum(|p| p.dropped + p.aborted);
    let per_s = |n: u64| n as f64 / s.seconds.max(1e-9);
    let packets = rx.max(1);
    if json {
        let ports: Vec<_> = s
            .ports
            .iter()
            .map(|p| {
                serde_json::json!({
                    "dev": p.dev,
                    "ifindex": p.ifindex,
                    "bind": p.bind.map(|b| b.name()),
                    "rx_packets": p.rx,
                    "rx_bytes": p.rx_bytes,
                    "tx_packets": p.tx,
                    "verdicts": {
                        "drop": p.dropped,
                        "pass": p.passed,
                        "tx": p.tx_verdicts,
                        "redirect": p.redirected,
                        "mirror": p.mirrored,
                        "stolen": p.stolen,
                        "aborted": p.aborted,
                    },
                    "lost": p.lost,
                    "gone": p.gone,
                    "kernel": {
                        "rx_dropped": p.kernel.rx_dropped,
                        "rx_ring_full": p.kernel.rx_ring_full,
                        "rx_fill_ring_empty": p.kernel.rx_fill_ring_empty_descs,
                        "rx_invalid_descs": p.kernel.rx_invalid_descs,
                        "tx_invalid_descs": p.kernel.tx_invalid_descs,
                    },
                    "queues": p.queues.iter().map(|q| serde_json::json!({
                        "queue": q.queue,
                        "rx_packets": q.rx,
                        "tx_packets": q.tx,
                        "cycles": q.cycles,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        let mut v = serde_json::json!({
            "program": prog,
            "seconds": s.seconds,
            "rx_pps": per_s(rx),
            "tx_pps": per_s(tx),
            "drop_pps": per_s(dropped),
            "cycles_per_packet": s.cycles as f64 / packets as f64,
            "frames": s.frames,
            "frames_unaccounted": s.frames_unaccounted,
            "ports": ports,
        });
        if let Some((f, _)) = filters {
            v["filters"] = f;
        }
        out!("{}", serde_json::to_string_pretty(&v).expect("JSON"));
        return;
    }
    out!(
        "{prog}: {:.2} s, rx {rx} ({:.3} Mpps), tx {tx} ({:.3} Mpps), dropped {dropped}, {:.1} cycles/packet, {} of {} frames unaccounted",
        s.seconds,
        per_s(rx) / 1e6,
        per_s(tx) / 1e6,
        s.cycles as f64 / packets as f64,
        s.frames_unaccounted,
        s.frames
    );
    for p in &s.ports {
        out!(
            "  {} (ifindex {}): rx {} tx {} | drop {} pass {} tx {} redirect {} mirror {} stolen {} aborted {} lost {}",
            p.dev,
            p.ifindex,
            p.rx,
            p.tx,
            p.dropped,
            p.passed,
            p.tx_verdicts,
            p.redirected,
            p.mirrored,
            p.stolen,
            p.aborted,
            p.lost
        );
        if let Some(cause) = &p.gone {
            out!("    gone during the run: {cause}");
        }
        let k = &p.kernel;
        if k.rx_dropped + k.rx_ring_full > 0 {
            out!(
                "    kernel: {} dropped (no free frame), {} with the RX ring full",
                k.rx_dropped,
                k.rx_ring_full
            );
        }
        if p.queues.len() > 1 {
            for q in &p.queues {
                out!("    queue {}: rx {} tx {}", q.queue, q.rx, q.tx);
            }
        }
    }
    if let Some((_, text)) = filters {
        out_part!("{text}");
    }
}
