//! PNG figures drawn with plotters (text in the bundled DejaVu Sans, so no system fonts are
//! needed).

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

/// One panel of a figure: a titled series.
pub struct Panel<'a> {
    /// Panel title.
    pub title: &'a str,
    /// Y axis label.
    pub y_label: &'a str,
    /// (x, y) points.
    pub points: &'a [(f64, f64)],
}

/// Draws panels stacked vertically, sharing the x axis label, into a PNG.
pub fn line_panels(out: &Path, x_label: &str, panels: &[Panel<'_>]) -> Result<(), PlotError> {
    register_font();
    let d = |e: &dyn std::fmt::Display| PlotError::Draw(format!("{}: {e}", out.display()));
    let height = 300 * panels.len().max(1) as u32;
    let root = BitMapBackend::new(out, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| d(&e))?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    for (area, p) in areas.iter().zip(panels) {
        let (x0, x1) = bounds(p.points.iter().map(|q| q.0));
        let (y0, y1) = bounds(p.points.iter().map(|q| q.1));
        let mut chart = ChartBuilder::on(area)
            .caption(p.title, ("sans-serif", 20))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| d(&e))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(p.y_label)
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|e| d(&e))?;
        chart
            .draw_series(LineSeries::new(p.points.iter().copied(), &BLUE))
            .map_err(|e| d(&e))?;
    }
    root.present().map_err(|e| d(&e))?;
    Ok(())
}

fn bounds(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = xs
        .filter(|x| x.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(x), b.max(x))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-9);
    (lo - pad, hi + pad)
}

/// A named series for multi-line charts.
pub struct Series<'a> {
    /// Legend label.
    pub label: String,
    /// (x, y) points.
    pub points: &'a [(f64, f64)],
}

/// One chart with several labelled series (lines, or markers when `points_only`).
pub fn multi_line(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series<'_>],
    points_only: bool,
) -> Result<(), String> {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = bounds(all.clone().map(|q| q.0));
    let (y0, y1) = bounds(all.map(|q| q.1));
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let anno = if points_only {
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|&(x, y)| Circle::new((x, y), 5, color.filled())),
                )
                .map_err(|e| e.to_string())?
        } else {
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
        };
        anno.label(s.label.clone()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3))
        });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 14))
        .draw()
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// The sweep figure: median reward against training time per omega, and the reward CDF per
/// omega.
pub fn sweep_figure(out: &Path, rows: &[(usize, f64, f64, Vec<f64>)]) -> Result<(), PlotError> {
    register_font();
    let d = |e: String| PlotError::Draw(format!("{}: {e}", out.display()));
    let root = BitMapBackend::new(out, (900, 900)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| d(e.to_string()))?;
    let (top, bottom) = root.split_vertically(450);
    let quality: Vec<Vec<(f64, f64)>> = rows.iter().map(|r| vec![(r.1, r.2)]).collect();
    let series: Vec<Series<'_>> = rows
        .iter()
        .zip(&quality)
        .map(|(r, q)| Series {
            label: format!("omega = {}", r.0),
            points: q,
        })
        .collect();
    multi_line(
        &top,
        "Quality vs training time",
        "training wall time (s)",
        "median normalized reward",
        &series,
        true,
    )
    .map_err(d)?;
    let cdfs: Vec<Vec<(f64, f64)>> = rows
        .iter()
        .map(|r| {
            let n = r.3.len().max(1) as f64;
            r.3.iter()
                .enumerate()
                .map(|(i, &x)| (x, (i + 1) as f64 / n))
                .collect()
        })
        .collect();
    let series: Vec<Series<'_>> = rows
        .iter()
        .zip(&cdfs)
        .map(|(r, c)| Series {
            label: format!("omega = {}", r.0),
            points: c,
        })
        .collect();
    multi_line(
        &bottom,
        "CDF of normalized reward on the evaluation grid",
        "normalized mocc reward",
        "fraction of runs",
        &series,
        false,
    )
    .map_err(d)?;
    root.present().map_err(|e| d(e.to_string()))?;
    Ok(())
}

/// The learning curve of a run: episodic return, utilization, RTT ratio and loss vs env steps.
pub fn learning_curve(run_dir: &Path, out: &Path) -> Result<(), PlotError> {
    let m = read_metrics(&run_dir.join("metrics.csv"))?;
    let get = |tag: &str| m.get(tag).cloned().unwrap_or_default();
    let series = [
        (
            "Mean episodic return (last 100 episodes)",
            "return",
            get("charts/episodic_return"),
        ),
        (
            "Link utilization (rollouts)",
            "utilization",
            get("network/utilization"),
        ),
        (
            "RTT / propagation RTT (rollouts)",
            "RTT ratio",
            get("network/rtt_ratio"),
        ),
        ("Loss ratio (rollouts)", "loss", get("network/loss")),
    ];
    let panels: Vec<Panel<'_>> = series
        .iter()
        .map(|(t, y, p)| Panel {
            title: t,
            y_label: y,
            points: p,
        })
        .collect();
    line_panels(out, "environment steps", &panels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_a_png_from_metrics() {
        let dir = std::env::temp_dir().join(format!("mocc-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut csv = String::from("wall_time,step,tag,value\n");
        for i in 0..20 {
            csv.push_str(&format!("0,{},charts/episodic_return,{}\n", i * 100, i * i));
            csv.push_str(&format!("0,{},network/utilization,0.9\n", i * 100));
        }
        std::fs::write(dir.join("metrics.csv"), csv).unwrap();
        let m = read_metrics(&dir.join("metrics.csv")).unwrap();
        assert_eq!(m["charts/episodic_return"][3], (300.0, 9.0));
        let png = dir.join("curve.png");
        learning_curve(&dir, &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let _ = std::fs::remove_dir_all(dir);
    }
}
