//! The profile's plots (SVG): cost against packet size (the paper's
//! Figure 2), predicted delay per processor with the host's measured
//! times, and a histogram of instructions per packet.

use std::path::Path;

use plotters::prelude::*;
use profile::{Calibration, CostModel, Cpu, Profile};

type R<T> = Result<T, String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Writes `cost.svg`, `delay.svg` and `insns-histogram.svg` into `dir`.
pub fn all(
    dir: &Path,
    m: &CostModel,
    p: &Profile,
    cpus: &[Cpu],
    cal: Option<&Calibration>,
) -> R<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    cost(&dir.join("cost.svg"), m)?;
    if !cpus.is_empty() {
        delay(&dir.join("delay.svg"), m, cpus, cal)?;
    }
    histogram(&dir.join("insns-histogram.svg"), m, p)
}

fn x_range(m: &CostModel) -> (f64, f64) {
    let lo = m.rows.first().map_or(0, |r| r.len) as f64;
    let hi = m.rows.last().map_or(1, |r| r.len) as f64;
    (0f64.max(lo - 32.0), hi + 32.0)
}

fn cost(path: &Path, m: &CostModel) -> R<()> {
    let (x0, x1) = x_range(m);
    let top = m
        .rows
        .iter()
        .map(|r| r.insns_max.max(r.accesses_max) as f64)
        .fold(1.0, f64::max)
        * 1.1;
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: cost per packet against packet size", m.program),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("packet size (bytes)")
        .y_desc("per packet")
        .draw()
        .map_err(err)?;
    let series = [
        ("instructions", &m.insns, BLUE, true),
        ("memory accesses", &m.accesses, RED, false),
    ];
    for (name, f, color, insns) in series {
        let pts: Vec<(f64, f64)> = m
            .rows
            .iter()
            .map(|r| {
                let y = if insns { r.insns_mean } else { r.accesses_mean };
                (f64::from(r.len), y)
            })
            .collect();
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(err)?
            .label(format!(
                "{name}: {:.1} + {:.3} l (R^2 {:.3})",
                f.line.intercept, f.line.slope, f.line.r2
            ))
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, color.filled()));
        let line = vec![(x0, f.line.at(x0)), (x1, f.line.at(x1))];
        chart
            .draw_series(LineSeries::new(line, color.stroke_width(1)))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn delay(path: &Path, m: &CostModel, cpus: &[Cpu], cal: Option<&Calibration>) -> R<()> {
    let (x0, x1) = x_range(m);
    let at = |c: &Cpu, x: f64| m.delay_ns(c, x) / 1e3;
    let mut top = cpus.iter().map(|c| at(c, x1)).fold(0.001, f64::max);
    if let Some(c) = cal {
        top = c
            .points
            .iter()
            .map(|p| p.measured_ns / 1e3)
            .fold(top, f64::max);
    }
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: predicted processing delay", m.program),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..top * 1.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("packet size (bytes)")
        .y_desc("delay (us)")
        .draw()
        .map_err(err)?;
    for (k, c) in cpus.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let pts: Vec<(f64, f64)> = (0..=50)
            .map(|s| x0 + (x1 - x0) * f64::from(s) / 50.0)
            .map(|x| (x, at(c, x)))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(c.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    if let Some(c) = cal {
        let pts: Vec<(f64, f64)> = c
            .points
            .iter()
            .map(|p| (f64::from(p.len), p.measured_ns / 1e3))
            .collect();
        chart
            .draw_series(pts.iter().map(|&p| Cross::new(p, 4, BLACK.stroke_width(2))))
            .map_err(err)?
            .label("host: measured (JIT)")
            .legend(|(x, y)| Cross::new((x + 10, y), 4, BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn histogram(path: &Path, m: &CostModel, p: &Profile) -> R<()> {
    let lo = p.packets.iter().map(|c| c.insns).min().unwrap_or(0);
    let hi = p.packets.iter().map(|c| c.insns).max().unwrap_or(0);
    let bins = 40u64;
    let width = ((hi - lo) / bins + 1).max(1);
    let mut counts = vec![0u64; bins as usize + 1];
    for c in &p.packets {
        counts[((c.insns - lo) / width) as usize] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1) as f64 * 1.1;
    let root = SVGBackend::new(path, (820, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (x0, x1) = (lo as f64, (lo + width * (bins + 1)) as f64);
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: instructions per packet ({} packets)",
                m.program, m.packets
            ),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, 0f64..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("instructions")
        .y_desc("packets")
        .draw()
        .map_err(err)?;
    chart
        .draw_series(
            counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, &n)| {
                    let x = (lo + width * i as u64) as f64;
                    Rectangle::new([(x, 0.0), (x + width as f64, n as f64)], BLUE.filled())
                }),
        )
        .map_err(err)?;
    root.present().map_err(err)
}
