//! The adaptation experiment's outputs: adaptation.csv and forgetting.csv, and their figures
//! (MOCC adapting against from-scratch policies; the old objective's reward while adapting).

use crate::adaptation_metrics::Curve;
use crate::landmarks::Objective;
use mocc_plot::axes::Axis;
use mocc_plot::chart::{draw_figure, legend_of, Figure, Line, Panel, PlotError};
use mocc_plot::style::policy_styles;
use std::path::Path;

pub fn write_adaptation_csv(
    path: &Path,
    curves: &[(Objective, Curve, Curve)],
    window: usize,
) -> Result<(), PlotError> {
    let mut text =
        String::from("method,objective,w_thr,w_lat,w_loss,iteration,reward,smoothed,seconds\n");
    for (k, (w, mocc, scratch)) in curves.iter().enumerate() {
        for (name, c) in [("mocc", mocc), ("scratch", scratch)] {
            for (i, s) in c.smoothed(window).iter().enumerate() {
                text.push_str(&format!(
                    "{name},{k},{},{},{},{},{},{s},{}\n",
                    w[0],
                    w[1],
                    w[2],
                    i + 1,
                    c.rewards[i],
                    c.seconds[i]
                ));
            }
        }
    }
    write_text(path, &text)
}

/// Writes a whole file atomically (the previous version stays until the new one is complete).
fn write_text(path: &Path, text: &str) -> Result<(), PlotError> {
    mocc_outputs::write_file_atomic(path, text.as_bytes()).map_err(|e| PlotError::Write {
        path: e.path,
        source: e.source,
    })
}

pub fn write_forgetting_csv(
    path: &Path,
    runs: &[(&str, &Vec<(u64, f64)>)],
) -> Result<(), PlotError> {
    let mut text = String::from("method,iteration,old_objective_reward\n");
    for (name, points) in runs {
        for (i, r) in points.iter() {
            text.push_str(&format!("{name},{i},{r}\n"));
        }
    }
    write_text(path, &text)
}

pub fn adaptation_figure(
    path: &Path,
    curves: &[(Objective, Curve, Curve)],
    window: usize,
) -> Result<(), PlotError> {
    let mean_curve = |pick: fn(&(Objective, Curve, Curve)) -> &Curve| -> Vec<(f64, f64)> {
        let smoothed: Vec<Vec<f64>> = curves.iter().map(|c| pick(c).smoothed(window)).collect();
        let len = smoothed.iter().map(Vec::len).min().unwrap_or(0);
        (0..len)
            .map(|i| {
                let m = smoothed.iter().map(|s| s[i]).sum::<f64>() / smoothed.len() as f64;
                ((i + 1) as f64, m)
            })
            .collect()
    };
    let mocc = mean_curve(|c| &c.1);
    let scratch = mean_curve(|c| &c.2);
    // MOCC in its colour; the from-scratch policy is Aurora-style (no objective input).
    let styles = policy_styles(&["mocc", "aurora"]);
    let lines = vec![
        Line {
            label: "MOCC pretrained, adapting with replay".into(),
            points: mocc.clone(),
            style: styles[0],
        },
        Line {
            label: "single-objective policy from scratch".into(),
            points: scratch,
            style: styles[1],
        },
    ];
    let legend = legend_of(&lines);
    let y = Axis::linear("reward per MI on the new objective (0 to 1)");
    let mut panels = vec![Panel::new(
        "every iteration",
        Axis::linear("PPO iteration"),
        y.clone(),
        lines.clone(),
    )];
    // MOCC's few iterations, side by side with the same iterations of the scratch policy.
    if let Some(&(last, _)) = mocc.last() {
        panels.push(Panel::new(
            format!("first {last} iterations"),
            Axis::linear("PPO iteration").range(0.0, last),
            y,
            lines,
        ));
    }
    draw_figure(
        path,
        &Figure {
            title: Some(format!(
                "Adaptation to {} new objectives: mean rollout reward (moving average of {window})",
                curves.len()
            )),
            columns: panels.len(),
            panels,
            panel_size: (620, 440),
            legend,
        },
    )?;
    Ok(())
}

pub fn forgetting_figure(
    path: &Path,
    runs: &[(&str, &Vec<(u64, f64)>)],
    old: Objective,
    new: Objective,
) -> Result<(), PlotError> {
    let labels = [
        "MOCC with replay",
        "MOCC without replay",
        "single-objective policy",
    ];
    // Both MOCC runs in MOCC's colour (without replay dashed); the single-objective policy is
    // Aurora-style.
    let styles = policy_styles(&["mocc", "mocc", "aurora"]);
    let lines: Vec<Line> = runs
        .iter()
        .zip(labels)
        .zip(styles)
        .map(|(((_, p), l), style)| Line {
            label: l.to_string(),
            points: p.iter().map(|&(i, r)| (i as f64, r)).collect(),
            style,
        })
        .collect();
    let legend = legend_of(&lines);
    let panel = Panel::new(
        "",
        Axis::linear("adaptation iteration"),
        Axis::linear("eval reward per MI, old objective (0 to 1)"),
        lines,
    );
    draw_figure(
        path,
        &Figure {
            title: Some(format!(
                "Old objective ({:.2}, {:.2}, {:.2}) while adapting to ({:.2}, {:.2}, {:.2})",
                old[0], old[1], old[2], new[0], new[1], new[2]
            )),
            panels: vec![panel],
            columns: 1,
            panel_size: (1000, 480),
            legend,
        },
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptation_and_forgetting_figures_draw() {
        let (dir, keep) = mocc_plot::testing::test_figure_dir("experiment-figs")
            .expect("a folder for the figures");
        let wave = |i: usize, a: f64| a * ((i as f64) * 0.7).sin();
        let curves: Vec<(Objective, Curve, Curve)> = (0..3)
            .map(|k| {
                let mocc = Curve {
                    rewards: (0..60)
                        .map(|i| {
                            0.966 + 0.01 * (1.0 - (-(i as f64) / 15.0).exp()) + wave(i + k, 0.003)
                        })
                        .collect(),
                    seconds: (0..60).map(|i| 0.17 * (i + 1) as f64).collect(),
                };
                let scratch = Curve {
                    rewards: (0..600)
                        .map(|i| {
                            0.83 + 0.1 * (1.0 - (-(i as f64) / 40.0).exp()) + wave(i + k, 0.01)
                        })
                        .collect(),
                    seconds: (0..600).map(|i| 0.1 * (i + 1) as f64).collect(),
                };
                ([0.26, 0.563, 0.177], mocc, scratch)
            })
            .collect();
        let png = dir.join("adaptation.png");
        adaptation_figure(&png, &curves, 5).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
        let point = |i: u64, r: f64| (i, r);
        let replay: Vec<(u64, f64)> = (0..9)
            .map(|i| point(8 * i, 0.9833 - 0.0005 * (i % 3) as f64))
            .collect();
        let no_replay: Vec<(u64, f64)> = (0..9)
            .map(|i| point(8 * i, 0.9834 + 0.0003 * (i % 2) as f64))
            .collect();
        let single: Vec<(u64, f64)> = (0..9)
            .map(|i| point(8 * i, 0.952 - 0.002 * i as f64))
            .collect();
        let runs = [
            ("mocc_replay", &replay),
            ("mocc_no_replay", &no_replay),
            ("single_objective", &single),
        ];
        let png = dir.join("forgetting.png");
        forgetting_figure(&png, &runs, [0.8, 0.1, 0.1], [0.26, 0.563, 0.177]).unwrap();
        assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
        if !keep {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
