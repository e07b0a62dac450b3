//! `sluice bench tc`: the classifier-action paper's experiments on this
//! machine. Rule sets of 1 to 1000 exact rules (1 tuple or 5), best case
//! (the first rule matches) and worst (the last), as u32 and flower, in one
//! filter and a filter per rule (`tc::bench`), run through sluice as
//! `sluice run --tc` runs them; the same u32 sets in the kernel on a veth
//! of a namespace of its own (`difftest::tc::kernel_rate`), beside a
//! baseline with no filter; and the u32 trie of 64K flows. A table of
//! Mpps, the ratio of each worst case at the most rules to its 1-rule
//! rate, and an SVG plot.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use plotters::prelude::*;
use serde::Serialize;
use tc::bench::{Case, Kind, Layout, rate, trie_frames, trie_lines};
use tc::{Config, ShowOptions};

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
    svg: String,
}

fn config(lines: &str) -> Result<Config, String> {
    let mut c = Config::default();
    c.run_batch(lines, ShowOptions::default())?;
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
    for (engine, kind, layout) in [
        ("sluice", Kind::U32, Layout::OneFilter),
        ("sluice", Kind::U32, Layout::FilterPerRule),
        ("sluice", Kind::Flower, Layout::OneFilter),
        ("sluice", Kind::Flower, Layout::FilterPerRule),
        ("kernel", Kind::U32, Layout::OneFilter),
        ("kernel", Kind::U32, Layout::FilterPerRule),
    ] {
        if engine == "kernel" && !with_kernel {
            continue;
        }
        for tuples in [1u8, 5] {
            for worst in [false, true] {
                plan.push((engine, cases(kind, layout, tuples, worst, &a.rules)));
            }
        }
    }
    let total: u64 = plan.iter().map(|(_, c)| c.len() as u64).sum();
    let measured = crate::progress::with_progress(Some(total), a.json, |count| {
        let mut series = Vec::new();
        for (engine, cases) in &plan {
            let mut points = Vec::new();
            for case in cases {
                let lines = case.lines(DEV);
                let ns = if *engine == "sluice" {
                    let r = rate(config(&lines)?, DEV, &[case.frame()], time)?;
                    if r.classid != case.classid() {
                        return Err(format!(
                            "{} ({} rules): the frame got class {:#x}, not {:#x}",
                            case.label(),
                            case.rules,
                            r.classid,
                            case.classid()
                        ));
                    }
                    r.ns_per_packet
                } else {
                    difftest::tc::kernel_rate(&lines, DEV, &[case.frame()], time)?.ns_per_packet
                };
                points.push((case.rules, mpps(ns)));
                count.fetch_add(1, Ordering::Relaxed);
            }
            let ratio = match (points.first(), points.last()) {
                (Some(f), Some(l)) if points.len() > 1 => Some(l.1 / f.1),
                _ => None,
            };
            let c = cases[0];
            series.push(Series {
                engine,
                label: format!("{engine} {}", c.label()),
                tuples: c.tuples,
                case: if c.worst { "worst" } else { "best" },
                points,
                ratio,
            });
        }
        Ok::<_, String>(series)
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
            difftest::tc::kernel_rate(&lines, DEV, &[frame], time)?.ns_per_packet,
        ))
    } else {
        None
    };
    let mut trie = Vec::new();
    if !a.no_trie {
        let lines = trie_lines(DEV);
        let frames = trie_frames(4096);
        let r = rate(config(&lines)?, DEV, &frames, time)?;
        trie.push(("sluice", mpps(r.ns_per_packet)));
        if with_kernel {
            let k = difftest::tc::kernel_rate(&lines, DEV, &frames, time)?;
            trie.push(("kernel", mpps(k.ns_per_packet)));
        }
    }
    let svg = a.svg.display().to_string();
    let plotted = plot(&measured, &svg);
    let report = Report {
        seconds_each: a.seconds,
        series: measured,
        kernel_baseline_mpps,
        kernel_skipped,
        trie,
        svg: if plotted.is_ok() { svg } else { String::new() },
    };
    if let Err(e) = plotted {
        eprintln!("sluice bench tc: plot: {e}");
    }
    if a.json {
        print_json(&report)?;
    } else {
        print_text(&report, &a.rules);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(r: &Report, rules: &[u32]) {
    println!(
        "Mpps by rule count ({} s each; best: the first rule matches, worst: the last)",
        r.seconds_each
    );
    print!("{:<48} {:<5}", "", "case");
    for n in rules {
        print!(" {:>8}", n);
    }
    println!(" {:>10}", "most/1");
    for s in &r.series {
        print!("{:<48} {:<5}", s.label, s.case);
        for (_, m) in &s.points {
            print!(" {m:>8.3}");
        }
        match s.ratio {
            Some(x) => println!(" {x:>10.2}"),
            None => println!(),
        }
    }
    match (&r.kernel_baseline_mpps, &r.kernel_skipped) {
        (Some(b), _) => println!(
            "kernel: the whole path (AF_PACKET send, veth, tc, the stack's drop); with a clsact qdisc and no filter: {b:.3} Mpps"
        ),
        (None, Some(why)) => println!("kernel: left out ({why})"),
        _ => {}
    }
    for (engine, m) in &r.trie {
        println!("u32 trie of 64K flows, {engine}: {m:.3} Mpps");
    }
    if !r.svg.is_empty() {
        println!("plot: {}", r.svg);
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
