//! `sluice bench tc`: the classifier-action paper's experiments on this
//! machine. Rule sets of 1 to 1000 exact rules (1 tuple or 5), best case
//! (the first rule matches) and worst (the last), as u32 and flower, in one
//! filter and a filter per rule (`tc::bench`), run through sluice as
//! `sluice run --tc` runs them; the flower sets compiled by `sluice tc
//! compile` into one cls_bpf program (direct action) as the third
//! classifier; the same u32 and bpf sets in the kernel on a veth of a
//! namespace of its own (`kernel::tc::kernel_rate`), beside a baseline
//! with no filter; the u32 trie of 64K flows; and 100k flower rules. A
//! table of Mpps, the ratio of each worst case at the most rules to its
//! 1-rule rate, and an SVG plot.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use plotters::prelude::*;
use serde::Serialize;
use tc::bench::{Case, Kind, Layout, rate, trie_frames, trie_lines};
use tc::{ClsactHook, Config, ShowOptions};

use crate::report::print_json;

/// The device the rule sets are on.
const DEV: &str = "bench0";

#[derive(clap::Args)]
pub struct Args {
    /// Rule counts, comma-separated
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 10, 100, 1000])]
    rules: Vec<u32>,
    /// Time per measurement, in seconds
    #[arg(long, default_value_t = 0.3)]
    seconds: f64,
    /// Leave the kernel out (it needs root; without root it is left out anyway)
    #[arg(long)]
    no_kernel: bool,
    /// Leave the 64K-flow u32 trie out
    #[arg(long)]
    no_trie: bool,
    /// Leave the bpf series (the flower sets compiled by `sluice tc compile`) out
    #[arg(long)]
    no_bpf: bool,
    /// Rules of the large flower set (5 tuples, one filter, worst case; 0 leaves it out)
    #[arg(long, value_name = "N", default_value_t = 100_000)]
    large: u32,
    /// Where the plot goes
    #[arg(long, value_name = "FILE", default_value = "sluice-bench-tc.svg")]
    svg: std::path::PathBuf,
    /// Print JSON
    #[arg(long)]
    json: bool,
}

/// One series: a classifier and layout, tuples, best or worst, where.
#[derive(Serialize, Clone)]
struct Series {
    engine: &'static str,
    label: String,
    tuples: u8,
    case: &'static str,
    /// (rules, Mpps).
    points: Vec<(u32, f64)>,
    /// Rule counts not measured, and why (e.g. the kernel's verifier
    /// refused the program).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skipped: Vec<(u32, String)>,
    /// The rate at the most rules over the rate at the fewest.
    ratio: Option<f64>,
}

#[derive(Serialize)]
struct Report {
    seconds_each: f64,
    series: Vec<Series>,
    /// The kernel's path (send, veth, tc, drop) with a clsact qdisc and
    /// no filter, Mpps.
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_baseline_mpps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_skipped: Option<String>,
    /// The u32 trie of 64K flows: Mpps in sluice and the kernel.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    trie: Vec<(&'static str, f64)>,
    /// The large flower set in sluice: (rules, Mpps).
    #[serde(skip_serializing_if = "Option::is_none")]
    large: Option<(u32, f64)>,
    svg: String,
}

fn config(lines: &str) -> Result<Config, String> {
    let mut c = Config::default();
    c.run_batch(lines, ShowOptions::default())
        .map_err(|e| e.to_string())?;
    Ok(c)
}

fn mpps(ns_per_packet: f64) -> f64 {
    1e3 / ns_per_packet
}

/// Every case of one series, over the rule counts.
fn cases(kind: Kind, layout: Layout, tuples: u8, worst: bool, rules: &[u32]) -> Vec<Case> {
    rules
        .iter()
        .map(|&n| Case {
            kind,
            layout,
            rules: n,
            tuples,
            worst,
        })
        .collect()
}

/// How a series' rule sets reach the classifier.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// As tc lines of the case's own classifier.
    Native,
    /// Compiled by `sluice tc compile` into one cls_bpf program.
    Bpf,
}

/// One series to measure.
struct Planned {
    engine: &'static str,
    form: Form,
    cases: Vec<Case>,
}

pub fn run(a: Args) -> Result<ExitCode, String> {
    if a.rules.is_empty() || a.rules.contains(&0) {
        return Err("--rules: give counts of one rule or more".into());
    }
    let time = Duration::from_secs_f64(a.seconds);
    let kernel_skipped = if a.no_kernel {
        Some("--no-kernel".to_string())
    } else if !kernel::privileged() {
        Some("needs root (a namespace, veth, tc)".to_string())
    } else {
        None
    };
    let with_kernel = kernel_skipped.is_none();
    let mut plan = Vec::new();
    for (engine, form, kind, layout) in [
        ("sluice", Form::Native, Kind::U32, Layout::OneFilter),
        ("sluice", Form::Native, Kind::U32, Layout::FilterPerRule),
        ("sluice", Form::Native, Kind::Flower, Layout::OneFilter),
        ("sluice", Form::Native, Kind::Flower, Layout::FilterPerRule),
        ("sluice", Form::Bpf, Kind::Flower, Layout::OneFilter),
        ("kernel", Form::Native, Kind::U32, Layout::OneFilter),
        ("kernel", Form::Native, Kind::U32, Layout::FilterPerRule),
        ("kernel", Form::Bpf, Kind::Flower, Layout::OneFilter),
    ] {
        if (engine == "kernel" && !with_kernel) || (form == Form::Bpf && a.no_bpf) {
            continue;
        }
        for tuples in [1u8, 5] {
            for worst in [false, true] {
                plan.push(Planned {
                    engine,
                    form,
                    cases: cases(kind, layout, tuples, worst, &a.rules),
                });
            }
        }
    }
    let objects = Objects::new()?;
    let total: u64 = plan.iter().map(|p| p.cases.len() as u64).sum::<u64>()
        + u64::from(!a.no_trie)
        + u64::from(a.large > 0);
    let (measured, trie, large) = crate::progress::with_progress(Some(total), a.json, |count| {
        let mut series = Vec::new();
        for p in &plan {
            let (mut points, mut skipped) = (Vec::new(), Vec::new());
            for case in &p.cases {
                let lines = match p.form {
                    Form::Native => case.lines(DEV),
                    Form::Bpf => match objects.bpf_lines(case) {
                        Ok(l) => l,
                        Err(e) => {
                            skipped.push((case.rules, e));
                            count.fetch_add(1, Ordering::Relaxed);
                            continue;
                        }
                    },
                };
                let ns = if p.engine == "sluice" {
                    sluice_rate(&lines, case, time)
                } else {
                    kernel::tc::kernel_rate(&lines, DEV, &[case.frame()], time)
                        .map(|r| r.ns_per_packet)
                        .map_err(|e| e.to_string())
                };
                match ns {
                    Ok(ns) => points.push((case.rules, mpps(ns))),
                    // A compiled program the verifier (ours or the
                    // kernel's) will not take is a point not measured.
                    Err(e) if p.form == Form::Bpf => skipped.push((case.rules, first_line(&e))),
                    Err(e) => return Err(e),
                }
                count.fetch_add(1, Ordering::Relaxed);
            }
            let ratio = match (points.first(), points.last()) {
                (Some(f), Some(l)) if points.len() > 1 => Some(l.1 / f.1),
                _ => None,
            };
            let c = p.cases[0];
            let label = match p.form {
                Form::Native => c.label(),
                Form::Bpf => format!("bpf (tc compile of {})", c.label()),
            };
            series.push(Series {
                engine: p.engine,
                label: format!("{} {label}", p.engine),
                tuples: c.tuples,
                case: if c.worst { "worst" } else { "best" },
                points,
                skipped,
                ratio,
            });
        }
        let mut trie = Vec::new();
        if !a.no_trie {
            let lines = trie_lines(DEV);
            let frames = trie_frames(4096);
            let r = rate(config(&lines)?, DEV, &frames, time).map_err(|e| e.to_string())?;
            trie.push(("sluice", mpps(r.ns_per_packet)));
            if with_kernel {
                let k = kernel::tc::kernel_rate(&lines, DEV, &frames, time)
                    .map_err(|e| e.to_string())?;
                trie.push(("kernel", mpps(k.ns_per_packet)));
            }
            count.fetch_add(1, Ordering::Relaxed);
        }
        let mut large = None;
        if a.large > 0 {
            let case = Case {
                kind: Kind::Flower,
                layout: Layout::OneFilter,
                rules: a.large,
                tuples: 5,
                worst: true,
            };
            let ns = sluice_rate(&case.lines(DEV), &case, time)?;
            large = Some((a.large, mpps(ns)));
            count.fetch_add(1, Ordering::Relaxed);
        }
        Ok::<_, String>((series, trie, large))
    })?;
    let kernel_baseline_mpps = if with_kernel {
        let lines = format!("qdisc add dev {DEV} clsact\n");
        let frame = Case {
            kind: Kind::U32,
            layout: Layout::OneFilter,
            rules: 1,
            tuples: 1,
            worst: false,
        }
        .frame();
        Some(mpps(
            kernel::tc::kernel_rate(&lines, DEV, &[frame], time)
                .map_err(|e| e.to_string())?
                .ns_per_packet,
        ))
    } else {
        None
    };
    let svg = a.svg.display().to_string();
    let plotted = plot(&measured, &svg);
    let report = Report {
        seconds_each: a.seconds,
        series: measured,
        kernel_baseline_mpps,
        kernel_skipped,
        trie,
        large,
        svg: if plotted.is_ok() { svg } else { String::new() },
    };
    if let Err(e) = plotted {
        say!("sluice bench tc: plot: {e}");
    }
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report, &a.rules);
    }
    Ok(ExitCode::SUCCESS)
}

/// sluice's time per packet for a case's frame under `lines`, checking
/// the frame got the case's class.
fn sluice_rate(lines: &str, case: &Case, time: Duration) -> Result<f64, String> {
    let r = rate(config(lines)?, DEV, &[case.frame()], time).map_err(|e| e.to_string())?;
    if r.classid != case.classid() {
        return Err(format!(
            "{} ({} rules): the frame got class {:#x}, not {:#x}",
            case.label(),
            case.rules,
            r.classid,
            case.classid()
        ));
    }
    Ok(r.ns_per_packet)
}

fn first_line(e: &str) -> String {
    e.lines().next().unwrap_or("").to_string()
}

/// A directory of this run's compiled objects (removed at the end).
struct Objects {
    dir: PathBuf,
}

impl Objects {
    fn new() -> Result<Self, String> {
        let dir = std::env::temp_dir().join(format!("sluice-bench-tc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(Objects { dir })
    }

    /// The case's rules compiled by `sluice tc compile` into one object,
    /// and the tc lines that attach it (`bpf obj .. sec tc da classid 1:`,
    /// every protocol: the program writes its rule's class to
    /// `skb->tc_classid`, of which cls_bpf keeps the minor, the filter's
    /// major going with it); the object is compiled once and kept for the
    /// kernel's series.
    fn bpf_lines(&self, case: &Case) -> Result<String, String> {
        let path = self.dir.join(format!(
            "{}-{}-{}-{}.o",
            case.kind.name(),
            case.tuples,
            case.rules,
            if case.worst { "worst" } else { "best" }
        ));
        if !path.exists() {
            let object = compile(case, &path)?;
            std::fs::write(&path, object).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(format!(
            "qdisc add dev {DEV} clsact\n\
             filter add dev {DEV} ingress prio 1 protocol all bpf obj {} sec {} da classid 1:\n",
            path.display(),
            tccompile::TC_SECTION
        ))
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn compile(case: &Case, path: &Path) -> Result<Vec<u8>, String> {
    let options = tccompile::CompileOptions {
        xdp: false,
        ..tccompile::CompileOptions::default()
    };
    tccompile::compile(
        &config(&case.lines(DEV))?,
        DEV,
        ClsactHook::Ingress,
        &options,
    )
    .map(|c| c.object)
    .map_err(|e| {
        format!(
            "{}: tc compile: {}",
            path.display(),
            first_line(&e.to_string())
        )
    })
}

fn print_text(r: &Report, rules: &[u32]) {
    out!(
        "Mpps by rule count ({} s each; best: the first rule matches, worst: the last)",
        r.seconds_each
    );
    out_part!("{:<48} {:<5}", "", "case");
    for n in rules {
        out_part!(" {:>8}", n);
    }
    out!(" {:>10}", "most/1");
    for s in &r.series {
        out_part!("{:<48} {:<5}", s.label, s.case);
        for n in rules {
            match s.points.iter().find(|p| p.0 == *n) {
                Some((_, m)) => out_part!(" {m:>8.3}"),
                None => out_part!(" {:>8}", "-"),
            }
        }
        match s.ratio {
            Some(x) => out!(" {x:>10.2}"),
            None => out!(),
        }
    }
    match (&r.kernel_baseline_mpps, &r.kernel_skipped) {
        (Some(b), _) => out!(
            "kernel: the whole path (AF_PACKET send, veth, tc, the stack's drop); with a clsact qdisc and no filter: {b:.3} Mpps"
        ),
        (None, Some(why)) => out!("kernel: left out ({why})"),
        _ => {}
    }
    for s in &r.series {
        for (n, why) in &s.skipped {
            out!("{} {}, {n} rules: not measured: {why}", s.label, s.case);
        }
    }
    for (engine, m) in &r.trie {
        out!("u32 trie of 64K flows, {engine}: {m:.3} Mpps");
    }
    if let Some((n, m)) = r.large {
        out!("flower, {n} rules, 5 tuples, one filter, worst case, sluice: {m:.3} Mpps");
    }
    if !r.svg.is_empty() {
        out!("plot: {}", r.svg);
    }
}

/// Worst-case Mpps against rule count, one line per series, log-log.
fn plot(series: &[Series], path: &str) -> Result<(), String> {
    let worst: Vec<&Series> = series.iter().filter(|s| s.case == "worst").collect();
    let all = worst.iter().flat_map(|s| s.points.iter());
    let (mut lo, mut hi, mut xmax) = (f64::MAX, 0f64, 1u32);
    for &(n, m) in all {
        lo = lo.min(m);
        hi = hi.max(m);
        xmax = xmax.max(n);
    }
    if worst.is_empty() || hi <= 0.0 {
        return Err("nothing measured".into());
    }
    crate::plotfont::register()?;
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "tc classifiers, worst case (the last rule matches)",
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (1f64..f64::from(xmax) * 1.5).log_scale(),
            (lo / 1.5..hi * 1.5).log_scale(),
        )
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("rules")
        .y_desc("million packets per second")
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, s) in worst.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s.points.iter().map(|&(n, m)| (f64::from(n), m)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(s.label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(|e| e.to_string())?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerLeft)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}
