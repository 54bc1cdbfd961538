//! PNG figures drawn with plotters (text in the bundled DejaVu Sans, so no system fonts are
//! needed).

use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Once;

static FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

fn register_font() {
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
