//! Figures of a run's own outputs: the learning curve from metrics.csv (`mocc plot curve`) and
//! the omega sweep (`mocc sweep`). Every figure follows one standard (design.md, section 7): at
//! most [`mocc_plot::style::MAX_LINES_PER_PANEL`] lines per panel (small multiples otherwise), the legend outside
//! the plotting areas ([`mocc_plot::chart`]), one colour per scheme in every figure
//! ([`mocc_plot::style::SCHEMES`]), units on every axis.

use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, legend_of, Figure, Line, Panel, PlotError};
use mocc_plot::style::{scheme_colour, LineStyle, REFERENCE, SCHEMES};
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Reads a run's metrics.csv into `tag -> [(step, value)]`.
pub fn read_metrics(path: &Path) -> Result<BTreeMap<String, Vec<(f64, f64)>>, PlotError> {
    let err = |message: String| PlotError::Input {
        path: path.to_path_buf(),
        message,
    };
    let text = mocc_policy::error::read_text_within(path, mocc_policy::error::MAX_MODEL_BYTES)
        .map_err(|e| err(e.source.to_string()))?;
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
    let metrics = run_dir.join(crate::recorder::METRICS_CSV);
    let m = read_metrics(&metrics)?;
    if m.is_empty() {
        return Err(PlotError::Input {
            path: metrics,
            message: "no rows: the run has not logged an update yet".into(),
        });
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use mocc_plot::testing::test_figure_dir;

    fn is_png(path: &Path) -> bool {
        std::fs::read(path).is_ok_and(|b| b.starts_with(b"\x89PNG\r\n\x1a\n"))
    }

    #[test]
    fn draws_the_sweep_figure() {
        let (dir, keep) = test_figure_dir("sweep-fig").expect("a folder for the figures");
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
        let (dir, keep) = test_figure_dir("plot").expect("a folder for the figures");
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
}
