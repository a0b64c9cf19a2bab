//! docs/bench-fleet.svg: per scenario (rows), `NotReady` nodes (left) and new connections per
//! second at the API servers (right) over time from the first step, one line per contender,
//! in the colours of the bench's other chart.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use super::raw::Raw;
use super::tally::Tally;

const COLORS: [RGBColor; 4] = [
    RGBColor(150, 150, 150),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
];

#[expect(
    clippy::cast_precision_loss,
    reason = "small counts and seconds for drawing"
)]
pub(super) fn draw(path: &Path, results: &[(Raw, Vec<Tally>)]) -> Result<()> {
    let e = |e: &dyn std::fmt::Display| anyhow!("{e}");
    let rows = results.len().max(1);
    let root = SVGBackend::new(path, (1200, 300 * u32::try_from(rows)?)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let panels = root.split_evenly((rows, 2));
    for (r, (raw, tallies)) in results.iter().enumerate() {
        let secs = tallies.first().map_or(1, |t| t.not_ready.len()) as f64;
        for (col, (title, pick)) in [
            (
                "NotReady nodes",
                (|t: &Tally| t.not_ready.clone()) as fn(&Tally) -> Vec<usize>,
            ),
            ("new connections / s", |t: &Tally| t.reconnects.clone()),
        ]
        .into_iter()
        .enumerate()
        {
            let series: Vec<Vec<usize>> = tallies.iter().map(pick).collect();
            let top = series.iter().flatten().copied().max().unwrap_or(0).max(1) as f64 * 1.1;
            let mut chart = ChartBuilder::on(&panels[r * 2 + col])
                .caption(
                    format!("{}: {title}", raw.scenario.label()),
                    ("sans-serif", 16),
                )
                .margin(8)
                .x_label_area_size(28)
                .y_label_area_size(40)
                .build_cartesian_2d(0.0..secs, 0.0..top)
                .map_err(|x| e(&x))?;
            chart
                .configure_mesh()
                .x_desc("s after the first step")
                .draw()
                .map_err(|x| e(&x))?;
            for (i, (t, v)) in tallies.iter().zip(&series).enumerate() {
                let color = COLORS[i % COLORS.len()];
                let pts = v
                    .iter()
                    .enumerate()
                    .map(|(s, &n)| (s as f64 + 1.0, n as f64));
                let s = chart
                    .draw_series(LineSeries::new(pts, color.stroke_width(2)))
                    .map_err(|x| e(&x))?;
                if r == 0 {
                    s.label(t.contender.name()).legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
                    });
                }
            }
            if let Some(at) = raw.second {
                let x = (at - raw.t0) as f64 / 1000.0;
                chart
                    .draw_series(std::iter::once(PathElement::new(
                        vec![(x, 0.0), (x, top)],
                        RED,
                    )))
                    .map_err(|x| e(&x))?;
            }
            if r == 0 {
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::UpperRight)
                    .background_style(WHITE.mix(0.9))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|x| e(&x))?;
            }
        }
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
