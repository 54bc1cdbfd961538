//! The drawing engine every figure uses (plotters, text in the bundled DejaVu Sans, so no
//! system fonts are needed): panels of labelled lines on [`crate::axes`], and figures of panels
//! on a grid with one legend in its own strip above them, never over the data.

use crate::axes::{clip_polyline, dash_segments, fitted_range, tick_label, ticks, Axis, Ticked};
use crate::style::{Dash, LineStyle};
use plotters::prelude::*;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

pub(crate) fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bundled font is valid; a failure would only mean text is not drawn.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// Errors of plotting.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// Reading the metrics failed.
    #[error("{path}: {message}")]
    Input {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Drawing or encoding failed.
    #[error("drawing {0}")]
    Draw(String),
    /// A figure or its data could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A labelled line of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Legend label (figures draw one legend for all panels).
    pub label: String,
    /// (x, y) points; non-finite values break the line.
    pub points: Vec<(f64, f64)>,
    /// Look.
    pub style: LineStyle,
}

/// One chart of a figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// Title above the chart.
    pub title: String,
    /// Colour of the title (black by default).
    pub title_colour: Option<RGBColor>,
    /// X axis.
    pub x: Axis,
    /// Y axis.
    pub y: Axis,
    /// Lines, drawn in order (the last on top).
    pub lines: Vec<Line>,
    /// Draw markers at the points instead of lines; dashed lines stay lines (references such
    /// as a diagonal through a scatter).
    pub markers: bool,
}

impl Panel {
    /// A panel of lines.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis, lines: Vec<Line>) -> Self {
        Self {
            title: title.into(),
            title_colour: None,
            x,
            y,
            lines,
            markers: false,
        }
    }
}

/// Legend entries: label and look.
pub type Legend = Vec<(String, LineStyle)>;

/// A figure: panels on a grid, one legend above them, an optional title.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Title over everything.
    pub title: Option<String>,
    /// Panels, row by row.
    pub panels: Vec<Panel>,
    /// Panels per row.
    pub columns: usize,
    /// Size of one panel (pixels).
    pub panel_size: (u32, u32),
    /// Legend entries (label, look).
    pub legend: Vec<(String, LineStyle)>,
}

const TITLE_FONT: u32 = 26;
const PANEL_TITLE_FONT: u32 = 21;
const AXIS_FONT: u32 = 18;
const TICK_FONT: u32 = 16;
const LEGEND_FONT: u32 = 18;
const LEGEND_ROW: u32 = 30;
const LEGEND_SAMPLE: u32 = 36;

fn text_width(text: &str, size: u32) -> u32 {
    ("sans-serif", size)
        .into_font()
        .box_size(text)
        .map(|(w, _)| w)
        .unwrap_or(8 * text.len() as u32)
}

/// The legend laid out in rows that fit `width`: the entry indices of each row.
fn legend_rows(entries: &[(String, LineStyle)], width: u32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut used = 0;
    for (i, (label, _)) in entries.iter().enumerate() {
        let w = legend_entry_width(label);
        if rows.is_empty() || used + w > width.saturating_sub(40) {
            rows.push(Vec::new());
            used = 0;
        }
        if let Some(r) = rows.last_mut() {
            r.push(i);
        }
        used += w;
    }
    rows
}

fn legend_entry_width(label: &str) -> u32 {
    LEGEND_SAMPLE + 8 + text_width(label, LEGEND_FONT) + 28
}

type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// Draws the legend centred in `area`, entries flowing left to right.
fn draw_legend(area: &Area<'_>, entries: &[(String, LineStyle)]) -> Result<(), String> {
    let (width, _) = area.dim_in_pixel();
    let font = ("sans-serif", LEGEND_FONT).into_font().color(&BLACK);
    for (r, row) in legend_rows(entries, width).iter().enumerate() {
        let total: u32 = row.iter().map(|&i| legend_entry_width(&entries[i].0)).sum();
        let mut x = (width.saturating_sub(total) / 2) as i32;
        let y = (r as u32 * LEGEND_ROW + LEGEND_ROW / 2) as i32;
        for &i in row {
            let (label, style) = &entries[i];
            let sample = style.with_width(style.width.max(3));
            for seg in dash_segments(&[(x, y), (x + LEGEND_SAMPLE as i32, y)], sample.dash) {
                area.draw(&PathElement::new(seg, sample.shape()))
                    .map_err(|e| e.to_string())?;
            }
            let tx = x + LEGEND_SAMPLE as i32 + 8;
            area.draw(&Text::new(label.clone(), (tx, y - 10), font.clone()))
                .map_err(|e| e.to_string())?;
            x += legend_entry_width(label) as i32;
        }
    }
    Ok(())
}

/// Draws one panel into `area`.
pub fn draw_panel(area: &Area<'_>, panel: &Panel) -> Result<(), String> {
    let xs = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0));
    let ys = panel
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1));
    let (x0, x1) = fitted_range(&panel.x, xs);
    let (y0, y1) = fitted_range(&panel.y, ys);
    let x_ticks = ticks(&panel.x, x0, x1);
    let y_ticks = ticks(&panel.y, y0, y1);
    let title_font = ("sans-serif", PANEL_TITLE_FONT)
        .into_font()
        .color(&panel.title_colour.unwrap_or(BLACK));
    let mut builder = ChartBuilder::on(area);
    if !panel.title.is_empty() {
        builder.caption(&panel.title, title_font);
    }
    let mut chart = builder
        .margin_top(6)
        .margin_left(8)
        .margin_right(22)
        .margin_bottom(6)
        .x_label_area_size(54)
        .y_label_area_size(84)
        .build_cartesian_2d(
            Ticked {
                lo: x0,
                hi: x1,
                ticks: x_ticks,
            },
            Ticked {
                lo: y0,
                hi: y1,
                ticks: y_ticks,
            },
        )
        .map_err(|e| e.to_string())?;
    let (xa, ya) = (panel.x.clone(), panel.y.clone());
    let x_fmt = move |v: &f64| tick_label(xa.value_at(*v));
    let y_fmt = move |v: &f64| tick_label(ya.value_at(*v));
    chart
        .configure_mesh()
        .x_desc(panel.x.label.as_str())
        .y_desc(panel.y.label.as_str())
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style(("sans-serif", TICK_FONT))
        .axis_desc_style(("sans-serif", AXIS_FONT))
        .bold_line_style(BLACK.mix(0.12))
        .axis_style(BLACK.mix(0.6))
        .draw()
        .map_err(|e| e.to_string())?;
    for line in &panel.lines {
        let pts: Vec<(f64, f64)> = line
            .points
            .iter()
            .map(|&(x, y)| (panel.x.axis_units(x), panel.y.axis_units(y)))
            .collect();
        draw_line(
            &mut chart,
            &pts,
            line.style,
            panel.markers && line.style.dash == Dash::Solid,
            (x0, x1),
            (y0, y1),
        )?;
    }
    Ok(())
}

type Chart<'a, 'b> = ChartContext<'a, BitMapBackend<'b>, Cartesian2d<Ticked, Ticked>>;

fn draw_line(
    chart: &mut Chart<'_, '_>,
    pts: &[(f64, f64)],
    style: LineStyle,
    markers: bool,
    x: (f64, f64),
    y: (f64, f64),
) -> Result<(), String> {
    if markers {
        let inside = pts
            .iter()
            .copied()
            .filter(|p| p.0 >= x.0 && p.0 <= x.1 && p.1 >= y.0 && p.1 <= y.1);
        let fill = style.colour.mix(style.opacity).filled();
        chart
            .draw_series(inside.map(|p| Circle::new(p, 6, fill)))
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    for piece in clip_polyline(pts, x, y) {
        if style.dash == Dash::Solid && style.width <= 1 {
            chart
                .draw_series(LineSeries::new(piece, style.shape()))
                .map_err(|e| e.to_string())?;
        } else if style.dash == Dash::Solid {
            // Thick polylines are joined with mitres, which shoot far past sharp turns (a noisy
            // per-MI series is all sharp turns): draw thick lines segment by segment.
            let shape = style.shape();
            chart
                .draw_series(
                    piece
                        .windows(2)
                        .map(|w| PathElement::new(vec![w[0], w[1]], shape)),
                )
                .map_err(|e| e.to_string())?;
        } else {
            // Dashes are laid out in pixels, so they keep their length on any scale.
            let pixels: Vec<(i32, i32)> = piece.iter().map(|&p| chart.backend_coord(&p)).collect();
            let area = chart.plotting_area().strip_coord_spec();
            let (ox, oy) = chart.plotting_area().get_base_pixel();
            for seg in dash_segments(&pixels, style.dash) {
                for w in seg.windows(2) {
                    let local = vec![(w[0].0 - ox, w[0].1 - oy), (w[1].0 - ox, w[1].1 - oy)];
                    area.draw(&PathElement::new(local, style.shape()))
                        .map_err(|e| e.to_string())?;
                }
            }
        }
    }
    Ok(())
}

/// The figure's pixel size.
fn figure_size(fig: &Figure) -> (u32, u32, u32, u32) {
    let columns = fig.columns.max(1);
    let rows = fig.panels.len().div_ceil(columns).max(1);
    let width = columns as u32 * fig.panel_size.0;
    let title_h = if fig.title.is_some() { 46 } else { 0 };
    let legend_h = if fig.legend.is_empty() {
        0
    } else {
        legend_rows(&fig.legend, width).len() as u32 * LEGEND_ROW + 8
    };
    let height = title_h + legend_h + rows as u32 * fig.panel_size.1;
    (width, height, title_h, legend_h)
}

/// Draws a figure into a PNG.
pub fn draw_figure(out: &Path, fig: &Figure) -> Result<(), PlotError> {
    register_font();
    let d = |e: String| PlotError::Draw(format!("{}: {e}", out.display()));
    if let Some(dir) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| PlotError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let (width, height, title_h, legend_h) = figure_size(fig);
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    draw_into(&mut pixels, (width, height, title_h, legend_h), fig).map_err(d)?;
    let png = encode_png(pixels, width, height).map_err(d)?;
    mocc_outputs::write_file_atomic(out, &png).map_err(|e| PlotError::Write {
        path: e.path,
        source: e.source,
    })
}

/// Encodes RGB pixels as PNG.
fn encode_png(pixels: Vec<u8>, width: u32, height: u32) -> Result<Vec<u8>, String> {
    let image = image::RgbImage::from_raw(width, height, pixels)
        .ok_or_else(|| "the pixel buffer does not fit the figure's size".to_string())?;
    let mut png = std::io::Cursor::new(Vec::new());
    image
        .write_to(&mut png, image::ImageOutputFormat::Png)
        .map_err(|e| e.to_string())?;
    Ok(png.into_inner())
}

/// Draws the figure into an RGB buffer of `size` (width, height, title and legend heights).
fn draw_into(pixels: &mut [u8], size: (u32, u32, u32, u32), fig: &Figure) -> Result<(), String> {
    let (width, height, title_h, legend_h) = size;
    let root = BitMapBackend::with_buffer(pixels, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let (title_area, rest) = root.split_vertically(title_h);
    if let Some(title) = &fig.title {
        let font = ("sans-serif", TITLE_FONT).into_font().color(&BLACK);
        let w = text_width(title, TITLE_FONT);
        title_area
            .draw(&Text::new(
                title.clone(),
                (width.saturating_sub(w) as i32 / 2, 10),
                font,
            ))
            .map_err(|e| e.to_string())?;
    }
    let (legend_area, grid) = rest.split_vertically(legend_h);
    draw_legend(&legend_area, &fig.legend)?;
    let columns = fig.columns.max(1);
    let rows = fig.panels.len().div_ceil(columns).max(1);
    let areas = grid.split_evenly((rows, columns));
    for (area, panel) in areas.iter().zip(&fig.panels) {
        draw_panel(area, panel)?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

/// Legend entries for lines, each label once, in order.
pub fn legend_of<'a>(lines: impl IntoIterator<Item = &'a Line>) -> Vec<(String, LineStyle)> {
    let mut out: Vec<(String, LineStyle)> = Vec::new();
    for l in lines {
        if !out.iter().any(|(label, _)| *label == l.label) {
            out.push((l.label.clone(), l.style));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legend_wraps_inside_the_figure_width() {
        let entries: Vec<(String, LineStyle)> = (0..9)
            .map(|i| {
                (
                    format!("a fairly long legend label {i}"),
                    LineStyle::solid(BLACK),
                )
            })
            .collect();
        let rows = legend_rows(&entries, 900);
        assert!(rows.len() >= 3, "{rows:?}");
        for r in &rows {
            let w: u32 = r.iter().map(|&i| legend_entry_width(&entries[i].0)).sum();
            assert!(w <= 900);
        }
        assert_eq!(rows.iter().flatten().count(), 9);
    }

    fn one_line_figure() -> Figure {
        let line = Line {
            label: "a".into(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
            style: LineStyle::solid(BLACK),
        };
        Figure {
            title: Some("t".into()),
            legend: legend_of([&line]),
            panels: vec![Panel::new(
                "p",
                crate::axes::Axis::linear("x (s)"),
                crate::axes::Axis::linear("y"),
                vec![line],
            )],
            columns: 1,
            panel_size: (300, 200),
        }
    }

    #[test]
    fn a_figure_is_a_png_and_a_failed_write_names_the_file_in_words() {
        let dir = std::env::temp_dir().join(format!("mocc-chart-{}", std::process::id()));
        let png = dir.join("f.png");
        draw_figure(&png, &one_line_figure()).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG\r\n"));
        std::fs::remove_dir_all(&dir).unwrap();
        let full = std::path::Path::new("/dev/full/f.png");
        let err = draw_figure(full, &one_line_figure()).unwrap_err();
        assert!(matches!(err, PlotError::Write { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.starts_with("/dev/full") && !text.contains("Os {"),
            "{text}"
        );
    }
}
