//! The chart BENCHMARKS.md shows: reconnect time against events buffered, one line per side,
//! both axes logarithmic, so "flat" reads as a horizontal line.

use std::path::Path;

use anyhow::{Result, anyhow};
use plotters::prelude::*;

use crate::report;
use crate::results::{Results, Workload};

pub fn reconnect_vs_buffered(results: &Results, path: &Path) -> Result<()> {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for side in results.sides() {
        let points: Vec<(f64, f64)> = results
            .0
            .iter()
            .filter_map(|(w, sides)| match w {
                Workload::Resume { buffered } => Some((*buffered as f64, sides.get(&side)? / 1000.0)),
                _ => None,
            })
            .collect();
        if !points.is_empty() {
            lines.push((side, points));
        }
    }
    let ys = lines.iter().flat_map(|(_, p)| p.iter().map(|(_, y)| *y));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    if lines.is_empty() {
        return Err(anyhow!("no reconnect measurements to chart"));
    }

    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("on-reconnect, resume replaying k = 10 events of 128 B", ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d((50f64..2e6f64).log_scale(), ((lo / 2.0)..(hi * 2.0)).log_scale())
        .map_err(|e| anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("events buffered")
        .y_desc("median time per reconnect")
        .x_label_formatter(&|x| report::power_of_ten(x.round() as u64))
        .y_label_formatter(&|y| report::duration(y * 1000.0))
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    for (i, (side, points)) in lines.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
            .map_err(|e| anyhow!("{e}"))?
            .label(report::display(&side))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart
            .draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| anyhow!("{e}"))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
