//! docs/bench-outage.svg: outage per contender and scenario, drawn by the bench from this
//! run's numbers. Bars are the p50, whiskers reach the p90; a bar at the cap with a `>` never
//! recovered within it.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::cells::Scenario;
use crate::contender::Contender;
use crate::matrix::Cell;
use crate::stats::summarize;

const COLORS: [RGBColor; 6] = [
    RGBColor(150, 150, 150),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(204, 121, 167),
    RGBColor(0, 114, 178),
    RGBColor(0, 158, 115),
];

#[expect(
    clippy::cast_precision_loss,
    reason = "seconds and small indexes for drawing"
)]
pub(crate) fn draw(path: &Path, cells: &[Cell], cap: Duration) -> Result<()> {
    let cap_s = cap.as_secs_f64();
    let root = SVGBackend::new(path, (1200, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    // The blip rows measure something else (served again, not outage): their own tables.
    let rows: Vec<Scenario> = Scenario::ALL
        .into_iter()
        .filter(|s| s.blip().is_none())
        .collect();
    let n = rows.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Outage after the fault (p50 bar, p90 whisker; at the cap: not back)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..n, 0.0..cap_s * 1.05)
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(rows.len() * 2 + 1)
        .x_label_formatter(&|x| {
            // Only the middle of each group carries its name.
            rows.iter()
                .enumerate()
                .find(|(i, _)| (x - *i as f64 - 0.5).abs() < 0.01)
                .map_or(String::new(), |(_, s)| s.short().to_owned())
        })
        .y_desc("outage (s)")
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    let width = 1.0 / (Contender::ALL.len() as f64 + 1.0);
    for (ci, contender) in Contender::ALL.into_iter().enumerate() {
        let color = COLORS[ci];
        let mut bars = Vec::new();
        let mut whiskers = Vec::new();
        for (si, &scenario) in rows.iter().enumerate() {
            let Some(cell) = cells
                .iter()
                .find(|c| c.scenario == scenario && c.contender == contender)
            else {
                continue;
            };
            let v: Vec<Option<u64>> = cell.trials.iter().map(|t| t.outage_ms).collect();
            if v.is_empty() {
                continue;
            }
            let sum = summarize(&v);
            let h = |x: Option<u64>| x.map_or(cap_s, |ms| ms as f64 / 1000.0);
            let x0 = si as f64 + width * (ci as f64 + 0.5);
            bars.push(Rectangle::new(
                [(x0, 0.0), (x0 + width * 0.9, h(sum.p50))],
                color.filled(),
            ));
            let xm = x0 + width * 0.45;
            whiskers.push(PathElement::new(
                vec![(xm, h(sum.p50)), (xm, h(sum.p90))],
                BLACK,
            ));
        }
        chart
            .draw_series(bars)
            .map_err(|e| anyhow!("{e}"))?
            .label(contender.name())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
        chart.draw_series(whiskers).map_err(|e| anyhow!("{e}"))?;
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, cap_s), (n, cap_s)],
            RED,
        )))
        .map_err(|e| anyhow!("{e}"))?
        .label(format!("cap {} s: not back", cap.as_secs()))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 12, y)], RED));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
