//! Paints [`Chart`]s with plotters, stacked one above the other, as an SVG document or a PNG
//! image. Text is laid out (and, in PNGs, drawn) with a DejaVu Sans subset compiled into the
//! binary, so the output is the same on every machine, fonts installed or not.

use std::sync::Once;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::charts::{Chart, ChartKind};

const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
const FAMILY: &str = "sans-serif";
/// Width of the image, and height of each chart in it.
const WIDTH: u32 = 960;
const PANEL: u32 = 380;

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Nothing to draw (a kind without intervals or histogram).
    #[error("this run has nothing to chart (no intervals and no latency histogram)")]
    Empty,
    /// plotters failed.
    #[error("drawing the chart: {0}")]
    Draw(String),
    /// PNG encoding failed.
    #[error("encoding the PNG: {0}")]
    Png(#[from] png::EncodingError),
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is a compile-time constant that a test loads: this cannot fail at run time.
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// Image height for `n` charts.
fn height(n: usize) -> u32 {
    PANEL * n as u32
}

/// The charts as one SVG document.
pub fn svg(charts: &[Chart]) -> Result<String, PlotError> {
    if charts.is_empty() {
        return Err(PlotError::Empty);
    }
    register_font();
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (WIDTH, height(charts.len()))).into_drawing_area();
        paint(&root, charts)?;
    }
    Ok(out)
}

/// The charts as one PNG image.
pub fn png(charts: &[Chart]) -> Result<Vec<u8>, PlotError> {
    if charts.is_empty() {
        return Err(PlotError::Empty);
    }
    register_font();
    let (w, h) = (WIDTH, height(charts.len()));
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        paint(&root, charts)?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.write_header()?.write_image_data(&rgb)?;
    Ok(out)
}

fn draw_err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError::Draw(format!("{e:?}"))
}

fn paint<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    charts: &[Chart],
) -> Result<(), PlotError> {
    root.fill(&WHITE).map_err(draw_err)?;
    for (area, chart) in root.split_evenly((charts.len(), 1)).iter().zip(charts) {
        match chart.kind {
            ChartKind::Bar => bars(area, chart)?,
            ChartKind::Line => lines(area, chart)?,
        }
    }
    root.present().map_err(draw_err)
}

/// The x and y spans of a line chart, padded; log axes start above zero.
fn bounds(chart: &Chart) -> ((f64, f64), (f64, f64)) {
    let pts = chart.series.iter().flat_map(|s| &s.points);
    let span = |vals: Vec<f64>, log: bool| {
        let vals: Vec<f64> =
            vals.into_iter().filter(|v| v.is_finite() && (!log || *v > 0.0)).collect();
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !lo.is_finite() {
            return if log { (1.0, 10.0) } else { (0.0, 1.0) };
        }
        if log {
            (lo / 1.5, hi * 1.5)
        } else {
            let lo = lo.min(0.0);
            let hi = if hi <= lo { lo + 1.0 } else { hi * 1.08 };
            (lo, hi)
        }
    };
    (
        span(pts.clone().map(|p| p.0).collect(), chart.log_x),
        span(pts.map(|p| p.1).collect(), chart.log_y),
    )
}

fn lines<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), PlotError> {
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let corner = legend_corner(chart, (x0, x1, chart.log_x), (y0, y1, chart.log_y));
    match (chart.log_x, chart.log_y) {
        (false, false) => lines_in(area, chart, x0..x1, y0..y1, corner),
        (true, false) => lines_in(area, chart, (x0..x1).log_scale(), y0..y1, corner),
        (false, true) => lines_in(area, chart, x0..x1, (y0..y1).log_scale(), corner),
        (true, true) => lines_in(area, chart, (x0..x1).log_scale(), (y0..y1).log_scale(), corner),
    }
}

fn number(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn lines_in<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    chart: &Chart,
    x: X,
    y: Y,
    corner: SeriesLabelPosition,
) -> Result<(), PlotError>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(draw_err)?;
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .x_label_formatter(&|v| number(*v))
        .y_label_formatter(&|v| number(*v))
        .light_line_style(RGBColor(246, 246, 246))
        .draw()
        .map_err(draw_err)?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .copied()
            .filter(|p| (!chart.log_x || p.0 > 0.0) && (!chart.log_y || p.1 > 0.0))
            .collect();
        let dots = pts.len() < 40;
        // A run of one interval is one point: drawn large, or it is easy to miss.
        let radius = if pts.len() == 1 { 6 } else { 3 };
        ctx.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
            .map_err(draw_err)?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
            });
        if dots {
            ctx.draw_series(pts.iter().map(|&p| Circle::new(p, radius, color.filled())))
                .map_err(draw_err)?;
        }
    }
    ctx.configure_series_labels()
        .label_font((FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(corner)
        .draw()
        .map_err(draw_err)
}

/// The corner of the plot where the legend covers the fewest points (upper right when none
/// is covered): a throughput line runs along the top, and a one-interval run's only point
/// sits in the upper right corner, where the legend used to hide it.
fn legend_corner(
    chart: &Chart,
    (x0, x1, log_x): (f64, f64, bool),
    (y0, y1, log_y): (f64, f64, bool),
) -> SeriesLabelPosition {
    // Where a value falls across its axis, 0 to 1 (on a log axis, by its logarithm).
    let at = |v: f64, lo: f64, hi: f64, log: bool| {
        let f = |v: f64| if log { v.max(f64::MIN_POSITIVE).ln() } else { v };
        (f(v) - f(lo)) / (f(hi) - f(lo)).max(f64::MIN_POSITIVE)
    };
    let near = |share: f64, high: bool| if high { share >= 0.65 } else { share <= 0.35 };
    let covered = |right: bool, upper: bool| {
        chart
            .series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|p| near(at(p.0, x0, x1, log_x), right) && near(at(p.1, y0, y1, log_y), upper))
            .count()
    };
    [
        (SeriesLabelPosition::UpperRight, covered(true, true)),
        (SeriesLabelPosition::LowerRight, covered(true, false)),
        (SeriesLabelPosition::UpperLeft, covered(false, true)),
        (SeriesLabelPosition::LowerLeft, covered(false, false)),
    ]
    .into_iter()
    .min_by_key(|(_, n)| *n)
    .map_or(SeriesLabelPosition::UpperRight, |(p, _)| p)
}

fn bars<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), PlotError> {
    let n = chart.categories.len().max(1);
    let top = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1).chain(s.whiskers.iter().map(|w| w.1)))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let top = if top <= 0.0 { 1.0 } else { top * 1.15 };
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, (FAMILY, 20))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
        .map_err(draw_err)?;
    let names = chart.categories.clone();
    ctx.configure_mesh()
        .disable_x_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .x_labels(n)
        .x_label_formatter(&move |v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| number(*v))
        .light_line_style(RGBColor(246, 246, 246))
        .draw()
        .map_err(draw_err)?;
    for s in &chart.series {
        for (k, &(x, y)) in s.points.iter().enumerate() {
            let color = Palette99::pick(k).to_rgba();
            ctx.draw_series([Rectangle::new([(x - 0.3, 0.0), (x + 0.3, y)], color.filled())])
                .map_err(draw_err)?;
            let above =
                TextStyle::from((FAMILY, 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
            ctx.draw_series([Text::new(number(y), (x + 0.15, y), above)]).map_err(draw_err)?;
            if let Some(&(lo, hi)) = s.whiskers.get(k).filter(|w| w.1 > w.0) {
                let w = BLACK.stroke_width(2);
                ctx.draw_series([
                    PathElement::new(vec![(x, lo), (x, hi)], w),
                    PathElement::new(vec![(x - 0.08, lo), (x + 0.08, lo)], w),
                    PathElement::new(vec![(x - 0.08, hi), (x + 0.08, hi)], w),
                ])
                .map_err(draw_err)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::ChartSeries;

    fn line() -> Chart {
        Chart {
            title: "Throughput per interval".into(),
            kind: ChartKind::Line,
            x_label: "Time (s)".into(),
            y_label: "Throughput (Gbit/s)".into(),
            log_x: false,
            log_y: false,
            categories: vec![],
            series: vec![ChartSeries {
                label: "Upload".into(),
                points: vec![(1.0, 9.1), (2.0, 9.4), (3.0, 9.3)],
                whiskers: vec![],
            }],
        }
    }

    #[test]
    fn the_font_loads() {
        assert!(plotters::style::register_font("font-check", FontStyle::Normal, FONT).is_ok());
    }

    /// A one-interval run's only point sat under the legend in the upper right corner, and
    /// the chart looked empty.
    #[test]
    fn the_legend_moves_off_the_points() {
        let mut one = line();
        one.series[0].points = vec![(1.0, 23.8)];
        let ((x0, x1), (y0, y1)) = bounds(&one);
        let corner = legend_corner(&one, (x0, x1, false), (y0, y1, false));
        assert!(!matches!(corner, SeriesLabelPosition::UpperRight), "{corner:?}");
        // A line along the top keeps the legend off the top.
        let ((x0, x1), (y0, y1)) = bounds(&line());
        let corner = legend_corner(&line(), (x0, x1, false), (y0, y1, false));
        assert!(matches!(corner, SeriesLabelPosition::LowerRight), "{corner:?}");
    }

    #[test]
    fn nothing_to_draw_is_an_error() {
        assert!(matches!(svg(&[]), Err(PlotError::Empty)));
    }

    #[test]
    fn png_is_a_png_with_ink() {
        let bytes = png(&[line()]).unwrap();
        let decoder = ::png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (WIDTH, PANEL));
        let dark = buf.chunks(3).filter(|p| p.iter().all(|&c| c < 100)).count();
        assert!(dark > 500, "only {dark} dark pixels: no text or axes drawn");
    }
}
