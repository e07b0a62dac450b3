//! RTT over time (the paper's Figure 5): one line per scenario (SVG).

use std::path::Path;

use plotters::prelude::*;
use profile::sim::RouterComparison;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

pub(crate) fn rtt_over_time(path: &Path, c: &RouterComparison) -> Result<(), String> {
    let samples = || c.rows.iter().flat_map(|r| &r.result.samples);
    let t1 = samples().map(|x| x.at_ns).max().unwrap_or(1) as f64 / 1e9;
    let top = samples().map(|x| x.rtt_ns).max().unwrap_or(1) as f64 / 1e6;
    crate::plotfont::register()?;
    let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("round-trip time of each ACK", ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..t1 * 1.02, 0f64..top * 1.35)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("RTT (ms)")
        .draw()
        .map_err(err)?;
    for (k, row) in c.rows.iter().enumerate() {
        let color = Palette99::pick(k).to_rgba();
        let pts: Vec<(f64, f64)> = row
            .result
            .samples
            .iter()
            .map(|x| (x.at_ns as f64 / 1e9, x.rtt_ns as f64 / 1e6))
            .collect();
        chart
            .draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(err)?
            .label(format!(
                "{}: mean {:.2} ms",
                row.name,
                row.result.rtt.mean_ns / 1e6
            ))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present()
        .map_err(|e| format!("{}: {e}", path.display()))
}
