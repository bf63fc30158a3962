//! The benchmarks' plots, each as SVG and PNG: lines on a log time axis
//! (transfer time against loss rate or RTT, one line per system or
//! preset), and Pantheon's scatter of throughput against delay (one point
//! per system or preset). `ltx-bench emu` and `ltx-bench compare` draw them.
//!
//! Text is drawn with a TrueType font read at run time
//! ([`ltx_plot::FONT_PATHS`]: Debian's `fonts-dejavu-core`); without one
//! the plots are not drawn, and the run says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The family name the plots ask for.
const FAMILY: &str = ltx_plot::FAMILY;

/// Size of every plot, pixels.
const SIZE: (u32, u32) = (900, 560);

/// Loads the font for the plots' text, once per process.
pub(crate) fn load_font() -> anyhow::Result<()> {
    Ok(ltx_plot::load_font()?)
}

/// Each system's points, by name.
pub(crate) type Series = BTreeMap<&'static str, Vec<(f64, f64)>>;

/// What a plot shows: its title, the axes' descriptions, and the names of
/// every system that can appear, in the order of their colours and of
/// the legend (the same colour for a name in every plot).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Frame<'a> {
    /// The caption.
    pub(crate) title: &'a str,
    /// The horizontal axis.
    pub(crate) x: &'a str,
    /// The vertical axis.
    pub(crate) y: &'a str,
    /// Every name, in colour and legend order.
    pub(crate) names: &'a [&'static str],
}

/// Lines on a log vertical axis (transfer time against loss rate or RTT),
/// one per system; writes `<stem>.svg` and `<stem>.png`, returns their
/// paths.
pub(crate) fn log_lines(
    stem: &Path,
    frame: &Frame<'_>,
    series: &Series,
) -> anyhow::Result<Vec<PathBuf>> {
    both(
        stem,
        |root| lines(root, frame, series),
        |root| lines(root, frame, series),
    )
}

/// Wire bytes against delivery delay on a log horizontal axis, one line
/// per series through its settings' points (the bytes-against-delay
/// frontier); writes `<stem>.svg` and `<stem>.png`.
pub(crate) fn frontier_lines(
    stem: &Path,
    frame: &Frame<'_>,
    series: &Series,
) -> anyhow::Result<Vec<PathBuf>> {
    both(
        stem,
        |root| frontier(root, frame, series),
        |root| frontier(root, frame, series),
    )
}

/// Throughput against delay, one named point per system (Pantheon's
/// plot); writes `<stem>.svg` and `<stem>.png`.
pub(crate) fn scatter_points(
    stem: &Path,
    frame: &Frame<'_>,
    points: &[(&'static str, f64, f64)],
) -> anyhow::Result<Vec<PathBuf>> {
    both(
        stem,
        |root| scatter(root, frame, points),
        |root| scatter(root, frame, points),
    )
}

/// Draws the same plot into an SVG file and a PNG file.
fn both(
    stem: &Path,
    svg: impl FnOnce(DrawingArea<SVGBackend<'_>, Shift>) -> anyhow::Result<()>,
    png: impl FnOnce(DrawingArea<BitMapBackend<'_>, Shift>) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<PathBuf>> {
    load_font()?;
    let svg_path = stem.with_extension("svg");
    let png_path = stem.with_extension("png");
    svg(SVGBackend::new(&svg_path, SIZE).into_drawing_area())
        .with_context(|| format!("drawing {}", svg_path.display()))?;
    png(BitMapBackend::new(&png_path, SIZE).into_drawing_area())
        .with_context(|| format!("drawing {}", png_path.display()))?;
    Ok(vec![svg_path, png_path])
}

fn failed(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// A colour per system, the same in every plot, in the order of `names`;
/// grey for a name not in it.
fn colour(system: &str, names: &[&str]) -> RGBColor {
    const COLOURS: [RGBColor; 9] = [
        RGBColor(0xd6, 0x27, 0x28),
        RGBColor(0x1f, 0x77, 0xb4),
        RGBColor(0x2c, 0xa0, 0x2c),
        RGBColor(0xff, 0x7f, 0x0e),
        RGBColor(0x94, 0x67, 0xbd),
        RGBColor(0x8c, 0x56, 0x4b),
        RGBColor(0xe3, 0x77, 0xc2),
        RGBColor(0x17, 0xbe, 0xcf),
        RGBColor(0xbc, 0xbd, 0x22),
    ];
    names
        .iter()
        .position(|&name| name == system)
        .and_then(|i| COLOURS.get(i).copied())
        .unwrap_or(RGBColor(0x7f, 0x7f, 0x7f))
}

/// The series in the order of `names`, then any others.
fn in_order<'s>(
    series: &'s Series,
    names: &[&'static str],
) -> impl Iterator<Item = (&'static str, &'s Vec<(f64, f64)>)> {
    let known = names
        .iter()
        .filter_map(|&name| series.get(name).map(|points| (name, points)));
    let others = series
        .iter()
        .filter(|(name, _)| !names.contains(name))
        .map(|(&name, points)| (name, points));
    known.chain(others).collect::<Vec<_>>().into_iter()
}

fn lines<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    frame: &Frame<'_>,
    series: &Series,
) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(failed)?;
    let all = series.values().flatten();
    let x_max = all.clone().map(|p| p.0).fold(1.0, f64::max) * 1.05;
    let y_min = all
        .clone()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
        .min(1.0)
        * 0.8;
    let y_max = all.map(|p| p.1).fold(1.0, f64::max) * 1.25;
    let mut chart = ChartBuilder::on(&root)
        .caption(frame.title, (FAMILY, 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..x_max, (y_min..y_max).log_scale())
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc(frame.x)
        .y_desc(frame.y)
        .label_style((FAMILY, 14))
        .draw()
        .map_err(failed)?;
    named_lines(&mut chart, frame, series, SeriesLabelPosition::UpperLeft)?;
    root.present().map_err(failed)?;
    Ok(())
}

fn frontier<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    frame: &Frame<'_>,
    series: &Series,
) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(failed)?;
    let all = series.values().flatten();
    let x_min = all
        .clone()
        .map(|p| p.0)
        .fold(f64::INFINITY, f64::min)
        .max(1.0)
        * 0.7;
    let x_max = all.clone().map(|p| p.0).fold(1.0, f64::max) * 1.4;
    let y_min = all
        .clone()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
        .min(1.0);
    let y_max = all.map(|p| p.1).fold(1.0, f64::max) * 1.02;
    let mut chart = ChartBuilder::on(&root)
        .caption(frame.title, (FAMILY, 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((x_min..x_max).log_scale(), y_min..y_max)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc(frame.x)
        .y_desc(frame.y)
        .label_style((FAMILY, 14))
        .draw()
        .map_err(failed)?;
    named_lines(&mut chart, frame, series, SeriesLabelPosition::UpperRight)?;
    root.present().map_err(failed)?;
    Ok(())
}

/// Each series as a line with its points marked, in the colours of
/// `frame.names`, and their legend at `legend`.
fn named_lines<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    frame: &Frame<'_>,
    series: &Series,
    legend: SeriesLabelPosition,
) -> anyhow::Result<()>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (name, points) in in_order(series, frame.names) {
        let colour = colour(name, frame.names);
        chart
            .draw_series(LineSeries::new(
                points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(failed)?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        chart
            .draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(failed)?;
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(legend)
        .draw()
        .map_err(failed)?;
    Ok(())
}

fn scatter<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    frame: &Frame<'_>,
    points: &[(&'static str, f64, f64)],
) -> anyhow::Result<()> {
    root.fill(&WHITE).map_err(failed)?;
    let x_min = points
        .iter()
        .map(|p| p.1)
        .fold(f64::INFINITY, f64::min)
        .min(1.0)
        * 0.9;
    let x_max = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let y_max = points.iter().map(|p| p.2).fold(1.0, f64::max) * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(frame.title, (FAMILY, 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(x_min..x_max, 0.0..y_max)
        .map_err(failed)?;
    chart
        .configure_mesh()
        .x_desc(frame.x)
        .y_desc(frame.y)
        .label_style((FAMILY, 14))
        .draw()
        .map_err(failed)?;
    for &(system, delay, mbit) in points {
        let colour = colour(system, frame.names);
        // The name beside the point, not over it.
        let point = EmptyElement::at((delay, mbit))
            + Circle::new((0, 0), 6, colour.filled())
            + Text::new(system, (9, -16), (FAMILY, 14).into_font().color(&BLACK));
        chart.draw_series([point]).map_err(failed)?;
    }
    root.present().map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_line_plots_name_every_series_in_their_legend() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let frame = Frame {
            title: "a plot",
            x: "x",
            y: "y",
            names: &["ltx", "quic-bbr"],
        };
        let mut series = Series::new();
        series.insert("ltx", vec![(10.0, 1.02), (100.0, 1.01)]);
        series.insert("quic-bbr", vec![(20.0, 1.5), (200.0, 1.2)]);
        for (stem, paths) in [
            (
                "lines",
                log_lines(&dir.path().join("lines"), &frame, &series),
            ),
            (
                "frontier",
                frontier_lines(&dir.path().join("frontier"), &frame, &series),
            ),
        ] {
            let paths = paths.unwrap_or_else(|e| panic!("{stem}: {e:#}"));
            let svg = std::fs::read_to_string(&paths[0]).expect("the SVG file");
            for name in ["ltx", "quic-bbr", "a plot"] {
                assert!(svg.contains(name), "{stem}: no {name:?}");
            }
            let png = std::fs::metadata(&paths[1]).expect("the PNG file");
            assert!(png.len() > 1000, "{stem}: a PNG of {} bytes", png.len());
        }
    }
}
