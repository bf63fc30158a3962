//! Stacked panels of a [`Trace`] on one time axis, into an SVG or PNG
//! file.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::font::{load_font, FontError, FAMILY};
use crate::trace::{bit_rate, counts, growth_rate, Points, Trace, REPAIR_REASONS};

/// Width of a plot, pixels.
const WIDTH: u32 = 1100;
/// Lines with fewer points than this get a mark on each.
const SPARSE: usize = 20;
/// Height of one panel, pixels.
const PANEL_HEIGHT: u32 = 230;

/// A plot that could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The output's extension is neither `.svg` nor `.png`.
    #[error("{0}: the plot is written as .svg or .png; give a file name ending in one of them")]
    UnknownFormat(String),
    /// The trace has nothing to plot.
    #[error("the trace has no events to plot")]
    Empty,
    /// No font for the text.
    #[error(transparent)]
    Font(#[from] FontError),
    /// The drawing library failed (e.g. the file could not be written).
    #[error("drawing {path}: {message}")]
    Draw {
        /// The output.
        path: String,
        /// What failed.
        message: String,
    },
}

/// One line of a panel.
#[derive(Debug, Clone)]
pub struct Line {
    /// Its legend.
    pub name: &'static str,
    /// Its points.
    pub points: Points,
}

/// One panel: a title, the vertical axis's description with its unit, and
/// its lines.
#[derive(Debug, Clone)]
pub struct Panel {
    /// The caption.
    pub title: &'static str,
    /// The vertical axis.
    pub y: &'static str,
    /// The lines, in legend order.
    pub lines: Vec<Line>,
}

/// The panels of `trace` that have something to show.
pub fn panels(trace: &Trace) -> Vec<Panel> {
    let (bin, end) = (trace.bin_s(), trace.duration_s);
    let line = |name, points: Points| Line { name, points };
    let mut rates = vec![
        line("sent", bit_rate(&trace.sent, bin, end)),
        line("received", bit_rate(&trace.received, bin, end)),
    ];
    if let Some(payload) = trace.symbol_payload {
        // The peer reports its decoding in steps; over five bins the
        // steps read as a rate.
        let decoded = growth_rate(&trace.peer_decoded_through, bin, end, payload * 8.0 / 1e6);
        rates.push(line(
            "decoded by the peer (5-bin mean)",
            moving_mean(&decoded, 5),
        ));
    }
    let percent = |points: &Points| points.iter().map(|&(t, v)| (t, v * 100.0)).collect();
    let kilobytes = |points: &Points| points.iter().map(|&(t, v)| (t, v / 1e3)).collect();
    let mut repairs: Vec<Line> = REPAIR_REASONS
        .iter()
        .zip(&trace.repairs)
        .map(|(&name, times)| line(name, counts(times, bin, end)))
        .collect();
    repairs.push(line(
        "recovered at the receiver",
        counts(&trace.recovered, bin, end),
    ));
    repairs.push(line("packets declared lost", counts(&trace.lost, bin, end)));
    let all = [
        Panel {
            title: "Rates",
            y: "Mbit/s",
            lines: rates,
        },
        Panel {
            title: "Congestion window and bytes in flight",
            y: "kB",
            lines: vec![
                line("congestion window", kilobytes(&trace.cwnd)),
                line("in flight", kilobytes(&trace.in_flight)),
            ],
        },
        Panel {
            title: "Round-trip time",
            y: "ms",
            lines: vec![
                line("smoothed", trace.smoothed_rtt.clone()),
                line("min", trace.min_rtt.clone()),
                line("latest", trace.latest_rtt.clone()),
            ],
        },
        Panel {
            title: "Loss estimate and proactive redundancy",
            y: "%",
            lines: vec![
                line("loss estimate", percent(&trace.loss_estimate)),
                line("redundancy", percent(&trace.redundancy)),
            ],
        },
        Panel {
            title: "Source symbols: sent, and decoded by the peer",
            y: "symbols",
            lines: vec![
                line("sent", trace.next_symbol.clone()),
                line("peer decoded through", trace.peer_decoded_through.clone()),
            ],
        },
        Panel {
            title: "Repair symbols sent, symbols recovered, losses (per bin)",
            y: "count per bin",
            lines: repairs,
        },
    ];
    all.into_iter()
        .map(|mut panel| {
            panel
                .lines
                .retain(|l| l.points.iter().any(|&(_, v)| v != 0.0));
            panel
        })
        .filter(|panel| !panel.lines.is_empty())
        .collect()
}

/// The mean of each point with its `width - 1` predecessors.
fn moving_mean(points: &Points, width: usize) -> Points {
    (0..points.len())
        .map(|i| {
            let window = &points[i.saturating_sub(width - 1)..=i];
            let mean = window.iter().map(|p| p.1).sum::<f64>() / window.len() as f64;
            (points[i].0, mean)
        })
        .collect()
}

/// Draws `trace` into `out`, as SVG or PNG by its extension.
pub fn draw(trace: &Trace, out: &Path) -> Result<(), PlotError> {
    let panels = panels(trace);
    if panels.is_empty() {
        return Err(PlotError::Empty);
    }
    let extension = out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let size = (WIDTH, PANEL_HEIGHT * panels.len() as u32 + 40);
    let title = format!(
        "{} ({}), bins of {:.0} ms",
        trace.title,
        trace.vantage,
        trace.bin_s() * 1e3
    );
    load_font()?;
    let failed = |e: String| PlotError::Draw {
        path: out.display().to_string(),
        message: e,
    };
    match extension.as_deref() {
        Some("svg") => stack(
            SVGBackend::new(out, size).into_drawing_area(),
            &title,
            trace.duration_s,
            &panels,
        )
        .map_err(failed),
        Some("png") => stack(
            BitMapBackend::new(out, size).into_drawing_area(),
            &title,
            trace.duration_s,
            &panels,
        )
        .map_err(failed),
        _ => Err(PlotError::UnknownFormat(out.display().to_string())),
    }
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x7f, 0x7f, 0x7f),
];

fn stack<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    duration_s: f64,
    panels: &[Panel],
) -> Result<(), String> {
    let text = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(text)?;
    let root = root.titled(title, (FAMILY, 20)).map_err(text)?;
    let areas = root.split_evenly((panels.len(), 1));
    let x_max = duration_s.max(0.001) * 1.02;
    for (area, panel) in areas.into_iter().zip(panels) {
        let y_max = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0, f64::max)
            .max(1e-9)
            * 1.15;
        let mut chart = ChartBuilder::on(&area)
            .caption(panel.title, (FAMILY, 16))
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(text)?;
        chart
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc(panel.y)
            .label_style((FAMILY, 12))
            .axis_desc_style((FAMILY, 13))
            .draw()
            .map_err(text)?;
        for (i, line) in panel.lines.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    line.points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(text)?
                .label(line.name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            if line.points.len() < SPARSE {
                // A line of a few points draws little or nothing: mark them.
                chart
                    .draw_series(
                        line.points
                            .iter()
                            .map(|&p| Circle::new(p, 3, colour.filled())),
                    )
                    .map_err(text)?;
            }
        }
        chart
            .configure_series_labels()
            .label_font((FAMILY, 12))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(text)?;
    }
    root.present().map_err(text)?;
    Ok(())
}
