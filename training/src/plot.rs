//! PNG figures drawn with plotters (text in the bundled DejaVu Sans, so no system fonts are
//! needed).
//!
//! Every figure follows one standard (design.md, section 7): at most [`MAX_LINES_PER_PANEL`]
//! lines per panel (small multiples otherwise), the legend in its own strip outside the
//! plotting areas, one colour per scheme in every figure ([`SCHEMES`], the only owner of scheme
//! colours), units on every axis, few ticks with tidy labels, and lines clipped to their panel.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use std::collections::BTreeMap;
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
}

/// Reads a run's metrics.csv into `tag -> [(step, value)]`.
pub fn read_metrics(path: &Path) -> Result<BTreeMap<String, Vec<(f64, f64)>>, PlotError> {
    let err = |message: String| PlotError::Input {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let mut out: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        if cols.len() != 4 {
            return Err(err(format!("line {}: expected 4 columns", i + 1)));
        }
        let step: f64 = cols[1]
            .parse()
            .map_err(|_| err(format!("line {}: bad step", i + 1)))?;
        let value: f64 = cols[3]
            .parse()
            .map_err(|_| err(format!("line {}: bad value", i + 1)))?;
        out.entry(cols[2].to_string())
            .or_default()
            .push((step, value));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Schemes and their colours
// ---------------------------------------------------------------------------------------------

/// A congestion-control scheme with its fixed colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    /// Key the policy name is matched against (`mocc`, `cubic`, ...).
    pub key: &'static str,
    /// Name in legends.
    pub name: &'static str,
    /// Its colour in every figure.
    pub colour: RGBColor,
    /// A classic (hand-designed) controller rather than a learned policy.
    pub classic: bool,
}

/// Every scheme with a colour of its own (Tableau 10, readable on white).
pub const SCHEMES: [Scheme; 8] = [
    Scheme {
        key: "mocc",
        name: "MOCC",
        colour: RGBColor(0xd6, 0x27, 0x28),
        classic: false,
    },
    Scheme {
        key: "aurora",
        name: "Aurora",
        colour: RGBColor(0x1f, 0x77, 0xb4),
        classic: false,
    },
    Scheme {
        key: "cubic",
        name: "Cubic",
        colour: RGBColor(0xff, 0x7f, 0x0e),
        classic: true,
    },
    Scheme {
        key: "bbr",
        name: "BBR",
        colour: RGBColor(0x2c, 0xa0, 0x2c),
        classic: true,
    },
    Scheme {
        key: "copa",
        name: "Copa",
        colour: RGBColor(0x94, 0x67, 0xbd),
        classic: true,
    },
    Scheme {
        key: "vegas",
        name: "Vegas",
        colour: RGBColor(0x8c, 0x56, 0x4b),
        classic: true,
    },
    Scheme {
        key: "vivace",
        name: "Vivace",
        colour: RGBColor(0xe3, 0x77, 0xc2),
        classic: true,
    },
    Scheme {
        key: "const",
        name: "constant rate",
        colour: RGBColor(0x7f, 0x7f, 0x7f),
        classic: true,
    },
];

/// Colours for policies of no known scheme, in order of appearance in a figure.
const EXTRA_COLOURS: [RGBColor; 4] = [
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
    RGBColor(0x33, 0x33, 0x33),
    RGBColor(0xff, 0xbb, 0x78),
];

/// Grey for reference lines (link capacity, base RTT, equal share).
pub const REFERENCE: RGBColor = RGBColor(0x40, 0x40, 0x40);

/// At most this many lines share a panel; figures with more use small multiples.
pub const MAX_LINES_PER_PANEL: usize = 7;

/// The last component of a policy path (`checkpoints/mocc-omega36` -> `mocc-omega36`).
fn policy_stem(policy: &str) -> &str {
    let p = policy.trim_end_matches('/');
    p.rsplit('/').next().unwrap_or(p)
}

/// The scheme of a policy name: a baseline name (`cubic`, `const:300`), or a checkpoint or export
/// path whose last component (else the whole path) names `mocc` or `aurora`.
pub fn scheme_of(policy: &str) -> Option<&'static Scheme> {
    let stem = policy_stem(policy).to_ascii_lowercase();
    let find = |key: &str| SCHEMES.iter().find(|s| s.key == key);
    if stem.starts_with("const:") {
        return find("const");
    }
    if let Some(s) = find(&stem) {
        return Some(s);
    }
    let whole = policy.to_ascii_lowercase();
    ["mocc", "aurora"]
        .into_iter()
        .find(|k| stem.contains(k))
        .or_else(|| ["mocc", "aurora"].into_iter().find(|k| whole.contains(k)))
        .and_then(find)
}

/// The legend name of a policy: its scheme's name, with the file name when that says more
/// (`MOCC (mocc-omega36)`, `Aurora`, `BBR`, `constant 300 pkt/s`).
pub fn display_name(policy: &str) -> String {
    let stem = policy_stem(policy);
    match scheme_of(policy) {
        Some(s) if s.key == "const" => match stem.split_once(':') {
            Some((_, rate)) => format!("constant {rate} pkt/s"),
            None => s.name.to_string(),
        },
        Some(s) if stem.eq_ignore_ascii_case(s.key) => s.name.to_string(),
        Some(s) => format!("{} ({stem})", s.name),
        None => stem.to_string(),
    }
}

/// Whether a policy is a classic controller (for the learned / classic small multiples).
pub fn is_classic(policy: &str) -> bool {
    scheme_of(policy).is_some_and(|s| s.classic)
}

/// How a line is stroked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dash {
    /// Continuous.
    Solid,
    /// Long dashes.
    Dashed,
    /// Short dashes.
    Dotted,
}

/// The look of one line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineStyle {
    /// Colour.
    pub colour: RGBColor,
    /// Opacity (1 = opaque).
    pub opacity: f64,
    /// Stroke.
    pub dash: Dash,
    /// Width in pixels.
    pub width: u32,
}

impl LineStyle {
    /// A solid, opaque line of width 2.
    pub fn solid(colour: RGBColor) -> Self {
        Self {
            colour,
            opacity: 1.0,
            dash: Dash::Solid,
            width: 2,
        }
    }

    /// The same line with another stroke.
    pub fn with_dash(self, dash: Dash) -> Self {
        Self { dash, ..self }
    }

    /// The same line with another width.
    pub fn with_width(self, width: u32) -> Self {
        Self { width, ..self }
    }

    /// The same line with another opacity.
    pub fn with_opacity(self, opacity: f64) -> Self {
        Self { opacity, ..self }
    }

    fn shape(&self) -> ShapeStyle {
        self.colour.mix(self.opacity).stroke_width(self.width)
    }
}

/// The colour of a policy: its scheme's, or `None` for a policy of no known scheme.
pub fn scheme_colour(policy: &str) -> Option<RGBColor> {
    scheme_of(policy).map(|s| s.colour)
}

/// Styles for the lines of a figure, one per entry of `policies` (a policy may repeat, e.g.
/// once per objective). Each line takes its scheme's colour; lines of one colour after the
/// first are dashed, then dotted; policies of no known scheme take extra colours in order.
pub fn policy_styles(policies: &[&str]) -> Vec<LineStyle> {
    let mut unknown: Vec<&str> = Vec::new();
    let mut used: Vec<RGBColor> = Vec::new();
    policies
        .iter()
        .map(|p| {
            let colour = scheme_colour(p).unwrap_or_else(|| {
                let i = unknown.iter().position(|u| u == p).unwrap_or_else(|| {
                    unknown.push(p);
                    unknown.len() - 1
                });
                EXTRA_COLOURS[i % EXTRA_COLOURS.len()]
            });
            let same = used.iter().filter(|&&c| c == colour).count();
            used.push(colour);
            let dash = [Dash::Solid, Dash::Dashed, Dash::Dotted][same % 3];
            LineStyle::solid(colour).with_dash(dash)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Panels and figures
// ---------------------------------------------------------------------------------------------

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Linear.
    Linear,
    /// Base-10 logarithmic (non-positive values are left out).
    Log,
}

/// One axis of a panel.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// Label, with units.
    pub label: String,
    /// Mapping.
    pub scale: Scale,
    /// Fixed range; `None` fits the data.
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis fitted to the data.
    pub fn linear(label: impl Into<String>) -> Self {
        Self {
            label: label.into(),
            scale: Scale::Linear,
            range: None,
        }
    }

    /// A logarithmic axis fitted to the data.
    pub fn log(label: impl Into<String>) -> Self {
        Self {
            scale: Scale::Log,
            ..Self::linear(label)
        }
    }

    /// The same axis over a fixed range.
    pub fn range(self, lo: f64, hi: f64) -> Self {
        Self {
            range: Some((lo, hi)),
            ..self
        }
    }

    fn axis_units(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log if v > 0.0 => v.log10(),
            Scale::Log => f64::NAN,
        }
    }

    fn value_at(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log => 10f64.powf(v),
        }
    }
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
    /// Draw markers at the points instead of lines.
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

/// Pieces of a pixel polyline to stroke for a dash pattern.
fn dash_segments(points: &[(i32, i32)], dash: Dash) -> Vec<Vec<(i32, i32)>> {
    let (on, off) = match dash {
        Dash::Solid => return vec![points.to_vec()],
        Dash::Dashed => (10.0, 6.0),
        Dash::Dotted => (3.0, 4.0),
    };
    let mut out = Vec::new();
    let mut current: Vec<(i32, i32)> = Vec::new();
    // Position within the on/off cycle; the pattern runs on across the polyline's corners.
    let mut phase = 0.0f64;
    for w in points.windows(2) {
        let (a, b) = (
            (f64::from(w[0].0), f64::from(w[0].1)),
            (f64::from(w[1].0), f64::from(w[1].1)),
        );
        let len = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        let at = |t: f64| {
            let f = t / len;
            (
                (a.0 + f * (b.0 - a.0)).round() as i32,
                (a.1 + f * (b.1 - a.1)).round() as i32,
            )
        };
        let mut t = 0.0;
        while t < len {
            if phase < on {
                let step = (on - phase).min(len - t);
                if current.is_empty() {
                    current.push(at(t));
                }
                current.push(at(t + step));
                t += step;
                phase += step;
                if phase >= on {
                    out.push(std::mem::take(&mut current));
                }
            } else {
                let step = (on + off - phase).min(len - t);
                t += step;
                phase += step;
                if phase >= on + off {
                    phase = 0.0;
                }
            }
        }
    }
    if current.len() > 1 {
        out.push(current);
    }
    out
}

/// Splits a polyline at non-finite points and clips it to the rectangle
/// `[x0, x1] x [y0, y1]` (Liang-Barsky per segment).
pub fn clip_polyline(points: &[(f64, f64)], x: (f64, f64), y: (f64, f64)) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
    let inside = |p: (f64, f64)| p.0 >= x.0 && p.0 <= x.1 && p.1 >= y.0 && p.1 <= y.1;
    let flush = |current: &mut Vec<(f64, f64)>, out: &mut Vec<Vec<(f64, f64)>>| {
        if !current.is_empty() {
            out.push(std::mem::take(current));
        }
    };
    if points.len() == 1 && finite(&points[0]) && inside(points[0]) {
        return vec![points.to_vec()];
    }
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        if !finite(&a) || !finite(&b) {
            flush(&mut current, &mut out);
            continue;
        }
        let (dx, dy) = (b.0 - a.0, b.1 - a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        let mut visible = true;
        for (p, q) in [
            (-dx, a.0 - x.0),
            (dx, x.1 - a.0),
            (-dy, a.1 - y.0),
            (dy, y.1 - a.1),
        ] {
            if p == 0.0 {
                if q < 0.0 {
                    visible = false;
                    break;
                }
            } else {
                let r = q / p;
                if p < 0.0 {
                    t0 = t0.max(r);
                } else {
                    t1 = t1.min(r);
                }
            }
        }
        if !visible || t0 > t1 {
            flush(&mut current, &mut out);
            continue;
        }
        let start = (a.0 + t0 * dx, a.1 + t0 * dy);
        let end = (a.0 + t1 * dx, a.1 + t1 * dy);
        if current.last() != Some(&start) {
            flush(&mut current, &mut out);
            current.push(start);
        }
        current.push(end);
        if t1 < 1.0 {
            flush(&mut current, &mut out);
        }
    }
    flush(&mut current, &mut out);
    out
}

/// "Nice" tick positions (axis units) for an axis over `[lo, hi]` (axis units), three to seven.
fn ticks(axis: &Axis, lo: f64, hi: f64) -> Vec<f64> {
    if axis.scale == Scale::Linear {
        return linear_ticks(lo, hi);
    }
    let (a, b) = (lo.floor() as i32, hi.ceil() as i32);
    let within = |v: &f64| *v >= lo - 1e-9 && *v <= hi + 1e-9;
    for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0, 3.0][..]] {
        let t: Vec<f64> = (a..=b)
            .flat_map(|e| mantissas.iter().map(move |m| (m * 10f64.powi(e)).log10()))
            .filter(within)
            .collect();
        if (3..=7).contains(&t.len()) {
            return t;
        }
    }
    let decades: Vec<f64> = (a..=b).map(f64::from).filter(within).collect();
    if decades.len() >= 3 {
        let every = decades.len().div_ceil(6);
        return decades.into_iter().step_by(every).collect();
    }
    // Less than a factor of 3: linear steps, placed on the log axis.
    linear_ticks(10f64.powf(lo), 10f64.powf(hi))
        .into_iter()
        .filter(|&v| v > 0.0)
        .map(f64::log10)
        .collect()
}

fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = hi - lo;
    if !(span.is_finite() && span > 0.0) {
        return vec![lo];
    }
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick label: no trailing zeros, thousands as `k` and millions as `M` from 10,000 on.
pub fn tick_label(v: f64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    let a = v.abs();
    if a < 1e-12 {
        "0".into()
    } else if a >= 1e6 {
        format!("{}M", trim(format!("{:.2}", v / 1e6)))
    } else if a >= 1e4 {
        format!("{}k", trim(format!("{:.1}", v / 1e3)))
    } else if a >= 100.0 {
        trim(format!("{v:.1}"))
    } else {
        // Four significant digits at most, without float noise (0.30000000000000004).
        let digits = (3 - a.log10().floor() as i32).clamp(0, 8) as usize;
        trim(format!("{v:.digits$}"))
    }
}

/// The data range of a panel's axis, in axis units, padded by 4%.
fn fitted_range(axis: &Axis, values: impl Iterator<Item = f64>) -> (f64, f64) {
    if let Some((lo, hi)) = axis.range {
        return (axis.axis_units(lo), axis.axis_units(hi));
    }
    let (lo, hi) = values
        .map(|v| axis.axis_units(v))
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.04
    } else if axis.scale == Scale::Log {
        0.1
    } else if lo == 0.0 {
        1.0
    } else {
        0.1 * lo.abs()
    };
    (lo - pad, hi + pad)
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
            panel.markers,
            (x0, x1),
            (y0, y1),
        )?;
    }
    Ok(())
}

/// A linear coordinate (in axis units) whose ticks are ours: few, at round values.
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.lo) / (self.hi - self.lo);
        let size = limit.1 - limit.0;
        if size == 0 || !f.is_finite() {
            return limit.1;
        }
        limit.0 + (f64::from(size) * f + 1e-3).floor() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
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
    let (width, height, title_h, legend_h) = figure_size(fig);
    let root = BitMapBackend::new(out, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| d(e.to_string()))?;
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
            .map_err(|e| d(e.to_string()))?;
    }
    let (legend_area, grid) = rest.split_vertically(legend_h);
    draw_legend(&legend_area, &fig.legend).map_err(d)?;
    let columns = fig.columns.max(1);
    let rows = fig.panels.len().div_ceil(columns).max(1);
    let areas = grid.split_evenly((rows, columns));
    for (area, panel) in areas.iter().zip(&fig.panels) {
        draw_panel(area, panel).map_err(d)?;
    }
    root.present().map_err(|e| d(e.to_string()))?;
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

// ---------------------------------------------------------------------------------------------
// Training figures
// ---------------------------------------------------------------------------------------------

/// Shades of the MOCC colour from light to dark, one per omega of a sweep (all of them are
/// MOCC models).
fn omega_styles(n: usize) -> Vec<LineStyle> {
    let base = SCHEMES[0].colour;
    (0..n)
        .map(|i| {
            let t = if n > 1 {
                i as f64 / (n - 1) as f64
            } else {
                1.0
            };
            let shade = |c: u8| {
                let c = f64::from(c);
                let light = c + 0.6 * (255.0 - c);
                let dark = 0.6 * c;
                (light + t * (dark - light)).round() as u8
            };
            LineStyle::solid(RGBColor(shade(base.0), shade(base.1), shade(base.2)))
        })
        .collect()
}

/// The sweep figure: median reward against training time per omega, and the reward CDF per
/// omega.
pub fn sweep_figure(out: &Path, rows: &[(usize, f64, f64, Vec<f64>)]) -> Result<(), PlotError> {
    let styles = omega_styles(rows.len());
    let quality: Vec<Line> = rows
        .iter()
        .zip(&styles)
        .map(|(r, s)| Line {
            label: format!("omega = {}", r.0),
            points: vec![(r.1, r.2)],
            style: *s,
        })
        .collect();
    let cdfs: Vec<Line> = rows
        .iter()
        .zip(&styles)
        .map(|(r, s)| {
            let n = r.3.len().max(1) as f64;
            Line {
                label: format!("omega = {}", r.0),
                points: r
                    .3
                    .iter()
                    .enumerate()
                    .map(|(i, &x)| (x, (i + 1) as f64 / n))
                    .collect(),
                style: *s,
            }
        })
        .collect();
    let legend = legend_of(&quality);
    let mut scatter = Panel::new(
        "Quality against training time",
        Axis::linear("training wall time (s)"),
        Axis::linear("median normalized reward"),
        quality,
    );
    scatter.markers = true;
    let cdf = Panel::new(
        "CDF of the normalized reward on the evaluation grid",
        Axis::linear("normalized MOCC reward per MI (run mean)"),
        Axis::linear("fraction of runs").range(0.0, 1.0),
        cdfs,
    );
    draw_figure(
        out,
        &Figure {
            title: Some("MOCC omega sweep".into()),
            panels: vec![scatter, cdf],
            columns: 2,
            panel_size: (640, 480),
            legend,
        },
    )
}

/// The learning curve of a run: episodic return, utilization, RTT ratio and loss vs env steps.
pub fn learning_curve(run_dir: &Path, out: &Path) -> Result<(), PlotError> {
    let m = read_metrics(&run_dir.join("metrics.csv"))?;
    let get = |tag: &str| m.get(tag).cloned().unwrap_or_default();
    let colour = scheme_colour(&run_dir.to_string_lossy()).unwrap_or(REFERENCE);
    let series = [
        (
            "Mean episodic return (last 100 episodes)",
            Axis::linear("return (reward per episode)"),
            get("charts/episodic_return"),
        ),
        (
            "Link utilization (rollouts)",
            Axis::linear("utilization (fraction of capacity)"),
            get("network/utilization"),
        ),
        (
            "RTT / propagation RTT (rollouts)",
            Axis::linear("RTT ratio (x base RTT)"),
            get("network/rtt_ratio"),
        ),
        (
            "Loss ratio (rollouts)",
            Axis::linear("loss (fraction of packets)"),
            get("network/loss"),
        ),
    ];
    let panels = series
        .into_iter()
        .map(|(title, y, points)| {
            Panel::new(
                title,
                Axis::linear("environment steps"),
                y,
                vec![Line {
                    label: title.into(),
                    points,
                    style: LineStyle::solid(colour).with_width(1),
                }],
            )
        })
        .collect();
    draw_figure(
        out,
        &Figure {
            title: Some(format!("Learning curve: {}", run_dir.display())),
            panels,
            columns: 2,
            panel_size: (640, 380),
            legend: Vec::new(),
        },
    )
}

/// Where a test draws its figures: `$MOCC_KEEP_TEST_FIGURES` when set (kept, to look at), else
/// a temporary folder the test removes. Returns the folder and whether to keep it.
#[cfg(test)]
pub(crate) fn test_figure_dir(name: &str) -> (std::path::PathBuf, bool) {
    match std::env::var_os("MOCC_KEEP_TEST_FIGURES") {
        Some(d) => {
            let d = std::path::PathBuf::from(d);
            std::fs::create_dir_all(&d).unwrap();
            (d, true)
        }
        None => {
            let d = std::env::temp_dir().join(format!("mocc-{name}-{}", std::process::id()));
            std::fs::create_dir_all(&d).unwrap();
            (d, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_png(path: &Path) -> bool {
        std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n"))
    }

    #[test]
    fn draws_the_sweep_figure() {
        let (dir, keep) = test_figure_dir("sweep-fig");
        let rows: Vec<(usize, f64, f64, Vec<f64>)> = [
            (3, 37.4, 0.977),
            (6, 73.3, 0.972),
            (10, 125.3, 0.982),
            (36, 445.2, 0.982),
        ]
        .into_iter()
        .map(|(o, t, m)| {
            let rewards: Vec<f64> = (0..200)
                .map(|i| m - 0.05 + 0.06 * (i as f64 / 199.0).sqrt())
                .collect();
            (o, t, m, rewards)
        })
        .collect();
        let png = dir.join("mocc-sweep.png");
        sweep_figure(&png, &rows).unwrap();
        assert!(is_png(&png));
        // Four shades of the MOCC colour, from light to dark.
        let s = omega_styles(4);
        assert!(s.windows(2).all(|w| w[0].colour.0 > w[1].colour.0));
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn draws_a_png_from_metrics() {
        let (dir, keep) = test_figure_dir("plot");
        let mut csv = String::from("wall_time,step,tag,value\n");
        for i in 0..20 {
            csv.push_str(&format!("0,{},charts/episodic_return,{}\n", i * 100, i * i));
            csv.push_str(&format!("0,{},network/utilization,0.9\n", i * 100));
        }
        for i in 0..400 {
            let x = i as f64 / 400.0;
            let step = i * 20_000;
            csv.push_str(&format!(
                "0,{step},network/rtt_ratio,{}\n",
                1.05 + 2.0 * (-8.0 * x).exp()
            ));
            csv.push_str(&format!(
                "0,{step},network/loss,{}\n",
                0.03 + 0.1 * (-8.0 * x).exp()
            ));
        }
        std::fs::write(dir.join("metrics.csv"), csv).unwrap();
        let m = read_metrics(&dir.join("metrics.csv")).unwrap();
        assert_eq!(m["charts/episodic_return"][3], (300.0, 9.0));
        let png = dir.join("curve.png");
        learning_curve(&dir, &png).unwrap();
        assert!(is_png(&png));
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn each_known_scheme_has_its_own_stable_colour() {
        // Pinned: the same scheme must look the same in every figure and every version.
        let expect = [
            ("checkpoints/mocc-omega36", (0xd6, 0x27, 0x28)),
            ("exports/mocc36", (0xd6, 0x27, 0x28)),
            ("checkpoints/aurora", (0x1f, 0x77, 0xb4)),
            ("runs/aurora/", (0x1f, 0x77, 0xb4)),
            ("cubic", (0xff, 0x7f, 0x0e)),
            ("bbr", (0x2c, 0xa0, 0x2c)),
            ("copa", (0x94, 0x67, 0xbd)),
            ("vegas", (0x8c, 0x56, 0x4b)),
            ("vivace", (0xe3, 0x77, 0xc2)),
            ("const:300", (0x7f, 0x7f, 0x7f)),
        ];
        for (policy, (r, g, b)) in expect {
            assert_eq!(scheme_colour(policy), Some(RGBColor(r, g, b)), "{policy}");
        }
        for (i, a) in SCHEMES.iter().enumerate() {
            for b in &SCHEMES[i + 1..] {
                assert_ne!(a.colour, b.colour, "{} and {}", a.key, b.key);
            }
            assert!(!EXTRA_COLOURS.contains(&a.colour), "{}", a.key);
            assert!(!EXTRA_COLOURS.contains(&REFERENCE), "reference grey");
        }
        assert_eq!(scheme_colour("runs/adapt-a"), None);
        assert_eq!(display_name("checkpoints/aurora"), "Aurora");
        assert_eq!(
            display_name("checkpoints/mocc-omega36"),
            "MOCC (mocc-omega36)"
        );
        assert_eq!(display_name("bbr"), "BBR");
        assert_eq!(display_name("const:300"), "constant 300 pkt/s");
        assert!(is_classic("vivace") && !is_classic("checkpoints/aurora"));
    }

    #[test]
    fn styles_keep_scheme_colours_and_tell_repeats_apart() {
        let s = policy_styles(&[
            "checkpoints/mocc-omega36",
            "cubic",
            "exports/mocc36",
            "x",
            "y",
            "x",
        ]);
        assert_eq!(s[0].colour, SCHEMES[0].colour);
        assert_eq!(s[1].colour, SCHEMES[2].colour);
        // A second MOCC line keeps the MOCC colour, dashed.
        assert_eq!((s[2].colour, s[2].dash), (SCHEMES[0].colour, Dash::Dashed));
        assert_eq!(s[0].dash, Dash::Solid);
        // Unknown policies take extra colours; the same one keeps its colour.
        assert_eq!(s[3].colour, EXTRA_COLOURS[0]);
        assert_eq!(s[4].colour, EXTRA_COLOURS[1]);
        assert_eq!(s[5].colour, EXTRA_COLOURS[0]);
        // The order of the other lines does not change a scheme's colour.
        let t = policy_styles(&["vegas", "bbr", "checkpoints/mocc-omega36"]);
        assert_eq!(t[2].colour, s[0].colour);
        assert_eq!(t[1].colour, SCHEMES[3].colour);
    }

    #[test]
    fn ticks_are_few_and_labels_tidy() {
        let lin = Axis::linear("x");
        let shown: Vec<String> = ticks(&lin, 0.0, 1.0).into_iter().map(tick_label).collect();
        assert_eq!(shown, ["0", "0.2", "0.4", "0.6", "0.8", "1"]);
        let t = ticks(&lin, -3.0, 1234.0);
        assert!(t.len() <= 7 && t.len() >= 3, "{t:?}");
        assert_eq!(tick_label(0.30000000000000004), "0.3");
        assert_eq!(tick_label(1000.0), "1000");
        assert_eq!(tick_label(2_000_000.0), "2M");
        assert_eq!(tick_label(25_000.0), "25k");
        assert_eq!(tick_label(0.005), "0.005");
        assert_eq!(tick_label(-0.0), "0");
        let log = Axis::log("x");
        let shown: Vec<String> = ticks(&log, 2f64.log10(), 1000f64.log10())
            .into_iter()
            .map(|v| tick_label(log.value_at(v)))
            .collect();
        assert_eq!(shown, ["3", "10", "30", "100", "300", "1000"]);
        let shown: Vec<String> = ticks(&log, 0.0, 30f64.log10())
            .into_iter()
            .map(|v| tick_label(log.value_at(v)))
            .collect();
        assert_eq!(shown, ["1", "2", "5", "10", "20"]);
    }

    #[test]
    fn lines_are_clipped_to_the_panel() {
        // A spike above the panel is cut at its top edge; a NaN breaks the line.
        let pts = [
            (0.0, 0.0),
            (1.0, 4.0),
            (2.0, 0.0),
            (3.0, f64::NAN),
            (4.0, 1.0),
            (5.0, 1.0),
        ];
        let pieces = clip_polyline(&pts, (0.0, 5.0), (0.0, 2.0));
        assert_eq!(pieces.len(), 3, "{pieces:?}");
        assert_eq!(pieces[0], vec![(0.0, 0.0), (0.5, 2.0)]);
        assert_eq!(pieces[1], vec![(1.5, 2.0), (2.0, 0.0)]);
        assert_eq!(pieces[2], vec![(4.0, 1.0), (5.0, 1.0)]);
        for p in pieces.iter().flatten() {
            assert!(p.1 <= 2.0 && p.1 >= 0.0);
        }
    }

    #[test]
    fn dashes_alternate() {
        let segs = dash_segments(&[(0, 0), (100, 0)], Dash::Dashed);
        assert!(segs.len() >= 6, "{segs:?}");
        assert_eq!(segs[0], vec![(0, 0), (10, 0)]);
        assert_eq!(segs[1][0], (16, 0));
        assert_eq!(dash_segments(&[(0, 0), (5, 5)], Dash::Solid).len(), 1);
    }

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
}
