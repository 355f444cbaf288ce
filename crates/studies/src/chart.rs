//! Line charts as SVG strings, the one chart setup every study uses: a grid of panels, each
//! with series of points, linear or log axes, a legend when a panel has several series.

use crate::{Error, Result};
use plotters::prelude::*;

/// One line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// Its points, in x order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
}

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// Points joined by a line.
    #[default]
    Line,
    /// A dashed line (half of each segment drawn).
    Dashed,
    /// Dots.
    Scatter,
    /// Bars at each x position, the panel's bar series side by side (use with `x_ticks`).
    Bars,
}

/// One panel.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Panel {
    /// The caption.
    pub title: String,
    /// The x axis's label.
    pub x: String,
    /// The y axis's label.
    pub y: String,
    /// A log-scale x axis.
    pub log_x: bool,
    /// A log-scale y axis.
    pub log_y: bool,
    /// Names of the x positions 0, 1, 2… (a categorical axis; empty: numbers).
    pub x_ticks: Vec<String>,
    /// Its lines.
    pub series: Vec<Series>,
}

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn range(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return if log { (1.0, 10.0) } else { (0.0, 1.0) };
    }
    if log {
        (lo / 1.2, hi * 1.2)
    } else {
        let lo = lo.min(0.0);
        (lo, if hi > lo { hi * 1.05 } else { lo + 1.0 })
    }
}

fn draw<DB: DrawingBackend>(area: &DrawingArea<DB, plotters::coord::Shift>, p: &Panel) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: &dyn std::fmt::Display| Error::Chart(format!("{}: {e}", p.title));
    let points = || p.series.iter().flat_map(|s| s.points.iter().copied());
    let (x0, x1) = if p.x_ticks.is_empty() {
        range(points().map(|q| q.0), p.log_x)
    } else {
        (-0.2, p.x_ticks.len() as f64 - 0.8)
    };
    let (y0, y1) = range(points().map(|q| q.1), p.log_y);
    let mut b = ChartBuilder::on(area);
    b.caption(&p.title, ("sans-serif", 14))
        .margin(8)
        .x_label_area_size(30)
        .y_label_area_size(52);
    macro_rules! body {
        ($chart:expr) => {{
            let mut chart = $chart.map_err(|e| err(&e))?;
            let ticks = |x: &f64| {
                let i = x.round();
                match p.x_ticks.get(i as usize) {
                    Some(t) if (x - i).abs() < 0.01 && i >= 0.0 => t.clone(),
                    _ => String::new(),
                }
            };
            let mut mesh = chart.configure_mesh();
            mesh.x_desc(p.x.as_str())
                .y_desc(p.y.as_str())
                .x_labels(if p.x_ticks.is_empty() {
                    5
                } else {
                    p.x_ticks.len()
                })
                .y_labels(5);
            if !p.x_ticks.is_empty() {
                mesh.x_label_formatter(&ticks);
            }
            mesh.draw().map_err(|e| err(&e))?;
            let bar_series = p
                .series
                .iter()
                .filter(|s| s.style == Style::Bars)
                .count()
                .max(1);
            let mut bar_k = 0usize;
            for (i, s) in p.series.iter().enumerate() {
                let c = COLORS[i % COLORS.len()];
                let pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|q| (!p.log_x || q.0 > 0.0) && (!p.log_y || q.1 > 0.0))
                    .collect();
                let drawn = match s.style {
                    Style::Scatter => {
                        chart.draw_series(pts.into_iter().map(|q| Circle::new(q, 2, c.filled())))
                    }
                    Style::Line => chart.draw_series(LineSeries::new(pts, c.stroke_width(1))),
                    Style::Dashed => chart.draw_series(pts.windows(2).map(|w| {
                        let mid = ((w[0].0 + w[1].0) / 2.0, (w[0].1 + w[1].1) / 2.0);
                        PathElement::new(vec![w[0], mid], c.stroke_width(1))
                    })),
                    Style::Bars => {
                        let width = 0.8 / bar_series as f64;
                        let off = -0.4 + width * (bar_k as f64 + 0.5);
                        bar_k += 1;
                        let base = if p.log_y { y0 } else { 0.0 };
                        chart.draw_series(pts.into_iter().map(|q| {
                            let x = q.0 + off;
                            Rectangle::new(
                                [(x - width * 0.45, base), (x + width * 0.45, q.1)],
                                c.filled(),
                            )
                        }))
                    }
                };
                drawn
                    .map_err(|e| err(&e))?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], c));
            }
            if p.series.len() > 1 {
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()
                    .map_err(|e| err(&e))?;
            }
        }};
    }
    match (p.log_x, p.log_y) {
        (false, false) => body!(b.build_cartesian_2d(x0..x1, y0..y1)),
        (true, false) => body!(b.build_cartesian_2d((x0..x1).log_scale(), y0..y1)),
        (false, true) => body!(b.build_cartesian_2d(x0..x1, (y0..y1).log_scale())),
        (true, true) => body!(b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())),
    }
    Ok(())
}

/// `panels` in a grid of `columns` columns, each `cell` pixels (width, height): the SVG.
pub fn grid(panels: &[Panel], columns: usize, cell: (u32, u32)) -> Result<String> {
    let columns = columns.max(1);
    let rows = panels.len().div_ceil(columns).max(1);
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (cell.0 * columns as u32, cell.1 * rows as u32))
                .into_drawing_area();
        root.fill(&WHITE).map_err(|e| Error::Chart(e.to_string()))?;
        for (p, area) in panels.iter().zip(root.split_evenly((rows, columns))) {
            draw(&area, p)?;
        }
        root.present().map_err(|e| Error::Chart(e.to_string()))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grid_draws_every_panel_and_its_legend() {
        let panel = |t: &str, log| Panel {
            title: t.into(),
            x: "events".into(),
            y: "nodes".into(),
            log_x: log,
            series: vec![
                Series {
                    name: "ε = 10%".into(),
                    points: vec![(100.0, 3.0), (1000.0, 9.0)],
                    ..Series::default()
                },
                Series {
                    name: "ε = 1%".into(),
                    points: vec![(100.0, 5.0), (1000.0, 40.0)],
                    style: Style::Scatter,
                },
            ],
            ..Panel::default()
        };
        let svg = grid(
            &[panel("fft", true), panel("lz", false), Panel::default()],
            2,
            (300, 200),
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        for t in ["fft", "lz", "ε = 1%"] {
            assert!(svg.contains(t), "{t} missing");
        }
    }
}
