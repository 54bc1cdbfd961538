//! `mocc experiment adaptation`: the paper's adaptation experiments (MOCC §6.4).
//!
//! 1. Speed: on k new objectives, a MOCC-pretrained model adapting (with replay) against a
//!    from-scratch single-objective policy (Aurora-style, the same layer sizes, no objective
//!    input). Reward is the mean per-step reward of each iteration's rollout on the new
//!    objective, smoothed by a trailing moving average. Both methods are measured against one
//!    target: 99% of the maximum reward gain, `R0 + 0.99 (R* - R0)`, where `R0` is the
//!    from-scratch policy's first reward (a randomly initialized policy) and `R*` the best
//!    smoothed reward either method reached. Iterations to reach it are counted from 1 (0 when
//!    the first rollout already does).
//! 2. Forgetting: while adapting to the first new objective, every `snapshot_every` iterations
//!    the model is evaluated deterministically on an old objective (by default the pool
//!    objective whose throughput/latency trade-off is farthest from the new one's): MOCC with replay, MOCC without replay, and a single-objective policy
//!    first trained on the old objective then fine-tuned on the new one. The worst relative
//!    drop of each is reported.

use crate::adaptation::{start_adaptation, AdaptSpec};
use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::config::{ConfigError, LoadedConfig, Preset};
use crate::eval::{evaluate, EvalError, LoadedPolicy, Suite};
use crate::landmarks::Objective;
use crate::plot::{draw_figure, legend_of, policy_styles, Axis, Figure, Line, Panel};
use crate::trainer::{TrainError, Trainer};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Errors of the experiment.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    /// Bad arguments.
    #[error("{0}")]
    Invalid(String),
    /// Training failed.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// A checkpoint could not be read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// A config could not be built.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Evaluation failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// Drawing failed.
    #[error(transparent)]
    Plot(#[from] crate::plot::PlotError),
    /// Writing outputs failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// What to run.
#[derive(Debug, Clone)]
pub struct AdaptationExperiment {
    /// The MOCC-pretrained checkpoint.
    pub from: PathBuf,
    /// New objectives (default: `k` drawn from the simplex away from the pool).
    pub objectives: Vec<Objective>,
    /// Adaptation iterations of the MOCC model per objective.
    pub iterations: u64,
    /// Iterations of each from-scratch policy (also the old-objective pretraining of the
    /// single-objective forgetting baseline).
    pub scratch_iterations: u64,
    /// Iterations of each forgetting run.
    pub forgetting_iterations: u64,
    /// Evaluate the old objective every this many iterations.
    pub snapshot_every: u64,
    /// Suite of the forgetting evaluation (its objectives are replaced by the old one).
    pub suite: Suite,
    /// Trailing moving-average window of the reward curves.
    pub smoothing: usize,
    /// The old objective of the forgetting runs (default: the pool objective whose throughput
    /// and latency weights differ most from the first new objective's).
    pub old_objective: Option<Objective>,
    /// Output folder.
    pub out: PathBuf,
}

/// Draws `k` objectives uniformly from the simplex (each weight >= 0.05), each at least 0.05
/// (max-norm) away from every objective in `avoid`.
pub fn sample_new_objectives(k: usize, seed: u64, avoid: &[Objective]) -> Vec<Objective> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(k);
    while out.len() < k {
        let (a, b): (f64, f64) = (rng.random(), rng.random());
        let (lo, hi) = (a.min(b), a.max(b));
        let w = [lo, hi - lo, 1.0 - hi];
        if w.iter().any(|&x| x < 0.05) {
            continue;
        }
        let rounded = w.map(|x| (x * 1e4).round() / 1e4);
        let fixed = [rounded[0], rounded[1], 1.0 - rounded[0] - rounded[1]];
        let far = |p: &Objective| fixed.iter().zip(p).any(|(x, y)| (x - y).abs() >= 0.05);
        if avoid.iter().all(far) && out.iter().all(far) {
            out.push(fixed);
        }
    }
    out
}

/// A reward curve: one value per iteration, with the wall seconds elapsed at its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Curve {
    /// Mean per-step rollout reward on the objective, per iteration.
    pub rewards: Vec<f64>,
    /// Wall seconds since the run started, at the end of each iteration.
    pub seconds: Vec<f64>,
}

impl Curve {
    /// Trailing moving average over `window` iterations.
    pub fn smoothed(&self, window: usize) -> Vec<f64> {
        let w = window.max(1);
        (0..self.rewards.len())
            .map(|i| {
                let lo = (i + 1).saturating_sub(w);
                let s = &self.rewards[lo..=i];
                s.iter().sum::<f64>() / s.len() as f64
            })
            .collect()
    }
}

/// Iterations (from 1; 0 when the first value already does) until `smoothed` reaches
/// `target`; `None` if it never does.
pub fn iterations_to(smoothed: &[f64], target: f64) -> Option<usize> {
    smoothed.iter().position(|&r| r >= target)
}

/// `max(0, (before - worst after) / |before|)`.
pub fn worst_relative_drop(before: f64, after: &[f64]) -> f64 {
    let worst = after.iter().copied().fold(f64::INFINITY, f64::min);
    if !worst.is_finite() || before == 0.0 {
        return 0.0;
    }
    ((before - worst) / before.abs()).max(0.0)
}

/// Per-objective results of the speed comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ObjectiveResult {
    /// The new objective.
    pub objective: Objective,
    /// First rollout reward of the MOCC model.
    pub mocc_initial: f64,
    /// First rollout reward of the from-scratch policy.
    pub scratch_initial: f64,
    /// The common target (99% of the maximum gain).
    pub target: f64,
    /// MOCC's iterations to the target (`None`: not within its budget).
    pub mocc_iterations: Option<usize>,
    /// The from-scratch policy's iterations to the target.
    pub scratch_iterations: Option<usize>,
    /// MOCC's wall seconds to the target.
    pub mocc_seconds: Option<f64>,
}

/// The experiment's summary (the JSON `mocc experiment adaptation` prints last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentReport {
    /// Median over objectives of MOCC's initial reward / the from-scratch policy's.
    pub initial_ratio: f64,
    /// Median over objectives of scratch iterations / MOCC iterations to the target (a run
    /// that never reached it counts with its whole budget).
    pub speedup_iterations: f64,
    /// Median over objectives of MOCC's wall seconds to the target.
    pub adapt_seconds: f64,
    /// Worst relative drop on the old objective, MOCC with replay.
    pub forgetting_with_replay: f64,
    /// Same without replay.
    pub forgetting_without_replay: f64,
    /// Same for the single-objective policy.
    pub forgetting_single_objective: f64,
    /// The old objective of the forgetting runs.
    pub old_objective: Objective,
    /// Per-objective details.
    pub objectives: Vec<ObjectiveResult>,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// Trains to the end of the trainer's budget, recording the curve.
fn run_curve(trainer: &mut Trainer) -> Result<Curve, TrainError> {
    let start = Instant::now();
    let mut curve = Curve::default();
    trainer.run(None, |p| {
        curve.rewards.push(p.rollout_reward);
        curve.seconds.push(start.elapsed().as_secs_f64());
    })?;
    Ok(curve)
}

/// A from-scratch single-objective config on `objective`: the pretrained run's scenario and
/// PPO settings, an Aurora-style network with the same layer sizes and no objective input.
fn scratch_config(
    base: &LoadedConfig,
    objective: Objective,
    iterations: u64,
) -> Result<LoadedConfig, ConfigError> {
    let mut c = base.config.clone();
    let arch = c.agent.architecture(1);
    c.agent.preset = Preset::Aurora;
    c.agent.pi = Some(arch.pi);
    c.agent.vf = Some(arch.vf);
    c.agent.preference = None;
    c.mocc = None;
    c.adapt = None;
    if let crate::config::ScenarioRef::Inline(s) = &mut c.scenario {
        s.objective = objective;
    }
    c.budget.env_steps = iterations.max(1) * (c.ppo.num_steps * c.envs) as u64;
    c.logging.tensorboard = false;
    c.checkpoint.every_updates = iterations.max(1);
    let loaded = LoadedConfig {
        config: c,
        path: base.path.clone(),
    };
    loaded.validate()?;
    Ok(loaded)
}

/// Mean MOCC reward of a checkpoint on the suite under `objective`.
fn old_objective_reward(
    ckpt: &Path,
    suite: &Suite,
    objective: Objective,
) -> Result<f64, ExperimentError> {
    let policy = LoadedPolicy::load(ckpt)?;
    let mut s = suite.clone();
    s.objectives = Some(vec![objective]);
    let rows = evaluate(&policy, &s)?;
    Ok(rows.iter().map(|r| r.metrics.mocc_reward).sum::<f64>() / rows.len().max(1) as f64)
}

/// Old-objective reward before adapting and after every `every` iterations.
fn forgetting_curve(
    spec: &AdaptSpec,
    run_dir: &Path,
    suite: &Suite,
    old: Objective,
    iterations: u64,
    every: u64,
) -> Result<Vec<(u64, f64)>, ExperimentError> {
    let mut points = vec![(0, old_objective_reward(&spec.from, suite, old)?)];
    let mut trainer = start_adaptation(spec, run_dir)?;
    let mut done = 0;
    while done < iterations {
        let n = every.min(iterations - done);
        let summary = trainer.run(Some(n), |_| {})?;
        done += n;
        points.push((
            done,
            old_objective_reward(&summary.final_checkpoint, suite, old)?,
        ));
    }
    Ok(points)
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ExperimentError + '_ {
    move |source| ExperimentError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Runs everything, writing adaptation.csv/png and forgetting.csv/png into `out`.
pub fn run_adaptation_experiment(
    exp: &AdaptationExperiment,
    mut log: impl FnMut(&str),
) -> Result<ExperimentReport, ExperimentError> {
    check_experiment(exp)?;
    let ckpt = Checkpoint::open(&exp.from)?;
    let base = ckpt.loaded_config();
    if !base.config.agent.architecture(1).takes_objective() {
        return Err(ExperimentError::Invalid(format!(
            "{}: not a MOCC model (its network does not take the objective)",
            ckpt.path.display()
        )));
    }
    let pool =
        crate::adaptation::seen_objectives(&base.config).map_err(ExperimentError::Invalid)?;
    std::fs::create_dir_all(&exp.out).map_err(io_err(&exp.out))?;
    let curves = adaptation_curves(exp, &base, &ckpt.path, &mut log)?;
    let results: Vec<ObjectiveResult> = curves
        .iter()
        .map(|(w, mocc, scratch)| compare(*w, mocc, scratch, exp.smoothing))
        .collect();
    write_adaptation_csv(&exp.out.join("adaptation.csv"), &curves, exp.smoothing)?;
    adaptation_figure(&exp.out.join("adaptation.png"), &curves, exp.smoothing)?;

    let new = exp.objectives[0];
    let old = exp
        .old_objective
        .unwrap_or_else(|| default_old_objective(&pool, &new));
    log(&format!(
        "forgetting: adapting to {new:?}, evaluating {old:?}"
    ));
    let [with_replay, without_replay, single] =
        forgetting_curves(exp, &base, &ckpt.path, old, new, &mut log)?;
    let forgetting = [
        ("mocc_replay", &with_replay),
        ("mocc_no_replay", &without_replay),
        ("single_objective", &single),
    ];
    write_forgetting_csv(&exp.out.join("forgetting.csv"), &forgetting)?;
    forgetting_figure(&exp.out.join("forgetting.png"), &forgetting, old, new)?;
    let drop = |c: &[(u64, f64)]| {
        worst_relative_drop(c[0].1, &c[1..].iter().map(|p| p.1).collect::<Vec<_>>())
    };
    Ok(ExperimentReport {
        initial_ratio: median(
            results
                .iter()
                .map(|r| r.mocc_initial / r.scratch_initial)
                .collect(),
        ),
        speedup_iterations: median(results.iter().map(|r| speedup(exp, r)).collect()),
        adapt_seconds: median(
            results
                .iter()
                .map(|r| r.mocc_seconds.unwrap_or(f64::NAN))
                .collect(),
        ),
        forgetting_with_replay: drop(&with_replay),
        forgetting_without_replay: drop(&without_replay),
        forgetting_single_objective: drop(&single),
        old_objective: old,
        objectives: results,
    })
}

fn check_experiment(exp: &AdaptationExperiment) -> Result<(), ExperimentError> {
    if exp.objectives.is_empty() {
        return Err(ExperimentError::Invalid("no new objectives".into()));
    }
    if exp.iterations == 0 || exp.scratch_iterations == 0 || exp.forgetting_iterations == 0 {
        return Err(ExperimentError::Invalid(
            "iteration counts must be >= 1".into(),
        ));
    }
    Ok(())
}

/// Iterations a from-scratch policy needed over those MOCC needed to reach the target (each
/// counted as its whole budget when it never did).
fn speedup(exp: &AdaptationExperiment, r: &ObjectiveResult) -> f64 {
    let s = r
        .scratch_iterations
        .unwrap_or(exp.scratch_iterations as usize) as f64;
    let m = r.mocc_iterations.unwrap_or(exp.iterations as usize) as f64;
    s / m.max(1.0)
}

/// For every new objective: MOCC adapting from `ckpt` (with replay) and a single-objective
/// policy from scratch, each with its reward curve.
fn adaptation_curves(
    exp: &AdaptationExperiment,
    base: &LoadedConfig,
    ckpt: &Path,
    log: &mut impl FnMut(&str),
) -> Result<Vec<(Objective, Curve, Curve)>, ExperimentError> {
    let mut curves = Vec::new();
    for (k, &w) in exp.objectives.iter().enumerate() {
        log(&format!(
            "objective {}/{}: {w:?}",
            k + 1,
            exp.objectives.len()
        ));
        let adapt = AdaptSpec {
            from: ckpt.to_path_buf(),
            objective: w,
            iterations: exp.iterations,
            replay: true,
            replay_fraction: 0.5,
            pool: None,
            seed: None,
        };
        let mut trainer = start_adaptation(&adapt, &exp.out.join(format!("mocc-{k}")))?;
        let mocc = run_curve(&mut trainer)?;
        let scratch_cfg = scratch_config(base, w, exp.scratch_iterations)?;
        let mut trainer = Trainer::new(
            &scratch_cfg.resolved()?,
            &exp.out.join(format!("scratch-{k}")),
        )?;
        let scratch = run_curve(&mut trainer)?;
        curves.push((w, mocc, scratch));
    }
    Ok(curves)
}

/// The old objective's reward while adapting to `new`: MOCC with replay, MOCC without, and a
/// single-objective policy trained on `old` first.
fn forgetting_curves(
    exp: &AdaptationExperiment,
    base: &LoadedConfig,
    ckpt: &Path,
    old: Objective,
    new: Objective,
    log: &mut impl FnMut(&str),
) -> Result<[Vec<(u64, f64)>; 3], ExperimentError> {
    let spec = |from: &Path, replay: bool, pool: Option<Vec<Objective>>| AdaptSpec {
        from: from.to_path_buf(),
        objective: new,
        iterations: exp.forgetting_iterations,
        replay,
        replay_fraction: 0.5,
        pool,
        seed: None,
    };
    let curve = |spec: &AdaptSpec, dir: &str| {
        forgetting_curve(
            spec,
            &exp.out.join(dir),
            &exp.suite,
            old,
            exp.forgetting_iterations,
            exp.snapshot_every,
        )
    };
    let with_replay = curve(&spec(ckpt, true, None), "forget-replay")?;
    let without_replay = curve(&spec(ckpt, false, None), "forget-noreplay")?;
    log("forgetting: training the single-objective policy on the old objective");
    let pre_cfg = scratch_config(base, old, exp.scratch_iterations)?;
    let mut pre = Trainer::new(&pre_cfg.resolved()?, &exp.out.join("single-old"))?;
    let pre_summary = pre.run(None, |_| {})?;
    let single = curve(
        &spec(&pre_summary.final_checkpoint, false, Some(vec![old])),
        "forget-single",
    )?;
    Ok([with_replay, without_replay, single])
}

/// The pool objective whose throughput and latency weights differ most from `new`'s: the
/// application whose trade-off adapting to `new` would move away from. The loss weight is left
/// out because `1 - loss` is close to 1 for every reasonable policy on most networks, so a
/// loss-heavy old objective barely registers forgetting.
pub fn default_old_objective(pool: &[Objective], new: &Objective) -> Objective {
    let distance = |w: &Objective| (w[0] - new[0]).abs() + (w[1] - new[1]).abs();
    pool.iter()
        .copied()
        .max_by(|a, b| distance(a).total_cmp(&distance(b)))
        .unwrap_or([1.0 / 3.0; 3])
}

/// Compares one objective's curves against the common 99%-of-maximum-gain target.
pub fn compare(
    objective: Objective,
    mocc: &Curve,
    scratch: &Curve,
    window: usize,
) -> ObjectiveResult {
    let sm = mocc.smoothed(window);
    let ss = scratch.smoothed(window);
    let r0 = scratch.rewards.first().copied().unwrap_or(0.0);
    let best = sm
        .iter()
        .chain(&ss)
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let target = r0 + 0.99 * (best - r0);
    let mocc_iterations = iterations_to(&sm, target);
    ObjectiveResult {
        objective,
        mocc_initial: mocc.rewards.first().copied().unwrap_or(f64::NAN),
        scratch_initial: r0,
        target,
        mocc_iterations,
        scratch_iterations: iterations_to(&ss, target),
        mocc_seconds: mocc_iterations.map(|i| mocc.seconds.get(i).copied().unwrap_or(0.0)),
    }
}

fn write_adaptation_csv(
    path: &Path,
    curves: &[(Objective, Curve, Curve)],
    window: usize,
) -> Result<(), ExperimentError> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(io_err(path))?);
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
    f.write_all(text.as_bytes())
        .and_then(|()| f.flush())
        .map_err(io_err(path))
}

fn write_forgetting_csv(
    path: &Path,
    runs: &[(&str, &Vec<(u64, f64)>)],
) -> Result<(), ExperimentError> {
    let mut text = String::from("method,iteration,old_objective_reward\n");
    for (name, points) in runs {
        for (i, r) in points.iter() {
            text.push_str(&format!("{name},{i},{r}\n"));
        }
    }
    std::fs::write(path, text).map_err(io_err(path))
}

fn adaptation_figure(
    path: &Path,
    curves: &[(Objective, Curve, Curve)],
    window: usize,
) -> Result<(), ExperimentError> {
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

fn forgetting_figure(
    path: &Path,
    runs: &[(&str, &Vec<(u64, f64)>)],
    old: Objective,
    new: Objective,
) -> Result<(), ExperimentError> {
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
    fn sampled_objectives_are_valid_distinct_and_away_from_the_pool() {
        let pool = vec![[0.6, 0.3, 0.1], [1.0 / 3.0; 3]];
        let ws = sample_new_objectives(6, 3, &pool);
        assert_eq!(ws.len(), 6);
        for w in &ws {
            mocc_policy::objective::validate(w).unwrap();
            assert!(w.iter().all(|&x| x >= 0.049), "{w:?}");
            for p in &pool {
                assert!(w.iter().zip(p).any(|(a, b)| (a - b).abs() >= 0.05));
            }
        }
        assert_eq!(ws, sample_new_objectives(6, 3, &pool), "seeded");
    }

    #[test]
    fn the_default_old_objective_has_the_opposite_trade_off() {
        let pool = vec![[0.1, 0.1, 0.8], [0.8, 0.1, 0.1], [0.4, 0.3, 0.3]];
        // Latency-leaning new objective: the throughput-heavy one, not the loss-heavy one.
        assert_eq!(
            default_old_objective(&pool, &[0.26, 0.563, 0.177]),
            [0.8, 0.1, 0.1]
        );
    }

    #[test]
    fn curve_metrics_on_hand_values() {
        let c = Curve {
            rewards: vec![0.0, 1.0, 2.0, 3.0],
            seconds: vec![1.0, 2.0, 3.0, 4.0],
        };
        assert_eq!(c.smoothed(2), vec![0.0, 0.5, 1.5, 2.5]);
        assert_eq!(iterations_to(&[0.1, 0.5, 0.9], 0.5), Some(1));
        assert_eq!(iterations_to(&[0.1, 0.5], 0.95), None);
        assert!((worst_relative_drop(0.8, &[0.7, 0.6, 0.9]) - 0.25).abs() < 1e-12);
        assert_eq!(worst_relative_drop(0.8, &[0.9]), 0.0);
        // MOCC starts near the best; scratch climbs from 0.2 to 0.8 over 4 iterations.
        let mocc = Curve {
            rewards: vec![0.79, 0.8, 0.8],
            seconds: vec![0.5, 1.0, 1.5],
        };
        let scratch = Curve {
            rewards: vec![0.2, 0.4, 0.6, 0.8, 0.8],
            seconds: vec![0.1; 5],
        };
        let r = compare([0.2, 0.3, 0.5], &mocc, &scratch, 1);
        // target = 0.2 + 0.99 * 0.6 = 0.794
        assert!((r.target - 0.794).abs() < 1e-12);
        assert_eq!(r.mocc_iterations, Some(1));
        assert_eq!(r.scratch_iterations, Some(3));
        assert_eq!(r.mocc_seconds, Some(1.0));
        assert!((r.mocc_initial / r.scratch_initial - 3.95).abs() < 1e-9);
    }

    #[test]
    fn adaptation_and_forgetting_figures_draw() {
        let (dir, keep) = crate::plot::test_figure_dir("experiment-figs");
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
