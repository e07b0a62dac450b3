//! The profile's plots, each as SVG and PNG: cost against packet size
//! (the paper's Figure 2), predicted delay per processor with the host's
//! measured times, and a histogram of instructions per packet.
//!
//! Text is laid out with DejaVu Sans (crate::plotfont).

use std::path::Path;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use profile::{Calibration, CostModel, Cpu, Profile};

type R<T> = Result<T, String>;
type Root<'a, DB> = DrawingArea<DB, Shift>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

const SIZE: (u32, u32) = (820, 500);

/// Draws plot `$draw(&root)` into `$dir/$stem.svg` and `.png`.
macro_rules! svg_and_png {
    ($dir:expr, $stem:literal, $draw:expr) => {{
        let svg = $dir.join(concat!($stem, ".svg"));
        let root = SVGBackend::new(&svg, SIZE).into_drawing_area();
        $draw(&root)?;
        root.present()
            .map_err(|e| format!("{}: {e}", svg.display()))?;
        let png = $dir.join(concat!($stem, ".png"));
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        $draw(&root)?;
        root.present()
            .map_err(|e| format!("{}: {e}", png.display()))?;
    }};
}

/// Writes `cost`, `delay` and `insns-histogram`, each `.svg` and `.png`,
/// into `dir`.
pub fn all(
    dir: &Path,
    m: &CostModel,
    p: &Profile,
    cpus: &[Cpu],
    cal: Option<&Calibration>,
) -> R<()> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    crate::plotfont::register()?;
    svg_and_png!(dir, "cost", |root| cost(root, m));
    if !cpus.is_empty() {
        svg_and_png!(dir, "delay", |root| delay(root, m, cpus, cal));
    }
    svg_and_png!(dir, "insns-histogram", |root| histogram(root, m, p));
    Ok(())
}

type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The chart every plot draws on: white, a caption, labelled axes.
fn chart<'a, DB: DrawingBackend>(
    root: &'a Root<'a, DB>,
    caption: String,
    x: (f64, f64),
    y: (f64, f64),
    (x_desc, y_desc): (&str, &str),
) -> R<Chart<'a, DB>> {
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x.0..x.1, y.0..y.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(err)?;
    Ok(chart)
}

/// The legend, top left.
fn legend<'a, DB: DrawingBackend + 'a>(chart: &mut Chart<'a, DB>) -> R<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

fn x_range(m: &CostModel) -> (f64, f64) {
    let lo = m.rows.first().map_or(0, |r| r.len) as f64;
    let hi = m.rows.last().map_or(1, |r| r.len) as f64;
    (0f64.max(lo - 32.0), hi + 32.0)
}

fn cost<DB: DrawingBackend>(root: &Root<'_, DB>, m: &CostModel) -> R<()> {
    let (x0, x1) = x_range(m);
    let top = m
        .rows
        .iter()
        .map(|r| r.insns_max.max(r.accesses_max) as f64)
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = chart(
        root,
        format!("{}: cost per packet against packet size", m.program),
        (x0, x1),
        (0.0, top),
        ("packet size (bytes)", "per packet"),
    )?;
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
    legend(&mut chart)
}

fn delay<DB: DrawingBackend>(
    root: &Root<'_, DB>,
    m: &CostModel,
    cpus: &[Cpu],
    cal: Option<&Calibration>,
) -> R<()> {
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
    let mut chart = chart(
        root,
        format!("{}: predicted processing delay", m.program),
        (x0, x1),
        (0.0, top * 1.1),
        ("packet size (bytes)", "delay (us)"),
    )?;
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
    legend(&mut chart)
}

fn histogram<DB: DrawingBackend>(root: &Root<'_, DB>, m: &CostModel, p: &Profile) -> R<()> {
    let lo = p.packets.iter().map(|c| c.insns).min().unwrap_or(0);
    let hi = p.packets.iter().map(|c| c.insns).max().unwrap_or(0);
    let bins = 40u64;
    let width = ((hi - lo) / bins + 1).max(1);
    let mut counts = vec![0u64; bins as usize + 1];
    for c in &p.packets {
        counts[((c.insns - lo) / width) as usize] += 1;
    }
    let top = counts.iter().copied().max().unwrap_or(1) as f64 * 1.1;
    let (x0, x1) = (lo as f64, (lo + width * (bins + 1)) as f64);
    let mut chart = chart(
        root,
        format!(
            "{}: instructions per packet ({} packets)",
            m.program, m.packets
        ),
        (x0, x1),
        (0.0, top),
        ("instructions", "packets"),
    )?;
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
    Ok(())
}
