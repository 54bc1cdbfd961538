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
use crate::adaptation_metrics::{
    compare, default_old_objective, worst_relative_drop, Curve, ObjectiveResult,
};
use crate::checkpoint::{Checkpoint, CheckpointError};
use crate::config::{ConfigError, LoadedConfig, Preset};
use crate::experiment_outputs::{
    adaptation_figure, forgetting_figure, write_adaptation_csv, write_forgetting_csv,
};
use crate::landmarks::Objective;
use crate::trainer::{TrainError, Trainer};
use mocc_eval::evaluate;
use mocc_eval::results::{median, EvalError};
use mocc_eval::suite::Suite;
use serde::de::DeserializeOwned;
use serde::Serialize;
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
    Plot(#[from] mocc_plot::chart::PlotError),
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
    /// Continue an interrupted experiment in `out`: the sub-runs it finished are taken from
    /// their `result.json`, an unfinished one is trained again from its start (its timing is
    /// part of what is measured).
    pub resume: bool,
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
    let policy = crate::checkpoint_policy::load_policy(ckpt).map_err(EvalError::from)?;
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

/// The file in a sub-run's folder that holds its result once it finished.
const RESULT_FILE: &str = "result.json";

/// The sub-runs of an experiment, by folder name prefix.
const SUB_RUNS: [&str; 6] = [
    "mocc-",
    "scratch-",
    "forget-replay",
    "forget-noreplay",
    "single-old",
    "forget-single",
];

/// Runs the sub-run `name` of the experiment in `exp.out/name` with `run`, keeping its result
/// in the folder's `result.json`. Resuming, a finished sub-run's result is read back instead,
/// and an unfinished one is trained again from its start (its folder, which holds only what a
/// run writes, is cleared first).
fn sub_run<T: Serialize + DeserializeOwned>(
    exp: &AdaptationExperiment,
    name: &str,
    run: impl FnOnce(&Path) -> Result<T, ExperimentError>,
) -> Result<T, ExperimentError> {
    let dir = exp.out.join(name);
    let file = dir.join(RESULT_FILE);
    if exp.resume {
        if let Some(done) = read_result(&file) {
            return Ok(done);
        }
        clear_unfinished(&dir)?;
    }
    let result = run(&dir)?;
    let json = serde_json::to_vec(&result)
        .map_err(|e| ExperimentError::Invalid(format!("{}: {e}", file.display())))?;
    mocc_outputs::write_file_atomic(&file, &json).map_err(|e| ExperimentError::Io {
        path: e.path,
        source: e.source,
    })?;
    Ok(result)
}

/// A finished sub-run's result (None when it did not finish or the file does not parse).
fn read_result<T: DeserializeOwned>(file: &Path) -> Option<T> {
    let text = mocc_policy::error::read_text(file).ok()?;
    serde_json::from_str(&text).ok()
}

/// Removes the folder of a sub-run that did not finish, after checking that it holds only what
/// a run writes.
fn clear_unfinished(dir: &Path) -> Result<(), ExperimentError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !crate::run_folder::is_run_entry(&name) && name != RESULT_FILE {
            return Err(ExperimentError::Invalid(format!(
                "{}: holds {name:?}, which no run of the experiment writes; it is not cleared",
                dir.display()
            )));
        }
    }
    std::fs::remove_dir_all(dir).map_err(io_err(dir))
}

/// Whether `out` holds a sub-run of an earlier experiment.
fn holds_sub_runs(out: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(out) else {
        return false;
    };
    entries.flatten().any(|e| {
        let name = e.file_name().to_string_lossy().into_owned();
        SUB_RUNS.iter().any(|p| name.starts_with(p)) && e.path().is_dir()
    })
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
    if !exp.resume && holds_sub_runs(&exp.out) {
        return Err(ExperimentError::Invalid(format!(
            "{}: holds the runs of an earlier experiment; continue it with --resume (the same \
             arguments), or choose another --out",
            exp.out.display()
        )));
    }
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
        let mocc = sub_run(exp, &format!("mocc-{k}"), |dir| {
            Ok(run_curve(&mut start_adaptation(&adapt, dir)?)?)
        })?;
        let scratch_cfg = scratch_config(base, w, exp.scratch_iterations)?.resolved()?;
        let scratch = sub_run(exp, &format!("scratch-{k}"), |dir| {
            Ok(run_curve(&mut Trainer::new(&scratch_cfg, dir)?)?)
        })?;
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
        sub_run(exp, dir, |run_dir| {
            forgetting_curve(
                spec,
                run_dir,
                &exp.suite,
                old,
                exp.forgetting_iterations,
                exp.snapshot_every,
            )
        })
    };
    let with_replay = curve(&spec(ckpt, true, None), "forget-replay")?;
    let without_replay = curve(&spec(ckpt, false, None), "forget-noreplay")?;
    log("forgetting: training the single-objective policy on the old objective");
    let pre_cfg = scratch_config(base, old, exp.scratch_iterations)?.resolved()?;
    let pretrained: PathBuf = sub_run(exp, "single-old", |dir| {
        let mut pre = Trainer::new(&pre_cfg, dir)?;
        Ok(pre.run(None, |_| {})?.final_checkpoint)
    })?;
    let single = curve(&spec(&pretrained, false, Some(vec![old])), "forget-single")?;
    Ok([with_replay, without_replay, single])
}
