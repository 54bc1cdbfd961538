//! `mocc sweep`: one MOCC model per omega and seed (budget proportional to omega), each
//! evaluated on a suite; quality against training time (the paper's Figure 16). Under `mpirun`
//! the runs are spread over the ranks (run `i` on rank `i mod N`), each trained by its rank
//! alone, and rank 0 collects the rows.

use crate::config::LoadedConfig;
use crate::landmarks::{denominator_for_omega, LandmarkSpec, Landmarks};
use crate::trainer::World;
use crate::trainer::{TrainError, Trainer};
use mocc_eval::evaluate;
use mocc_eval::results::EvalError;
use mocc_eval::suite::Suite;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Errors of a sweep.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// Bad arguments or config.
    #[error("{0}")]
    Invalid(String),
    /// Training failed.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// Evaluation failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
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

/// One row of sweep.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    /// Landmarks.
    pub omega: usize,
    /// The training seed.
    pub seed: u64,
    /// Training wall seconds.
    pub wall_seconds: f64,
    /// Env steps trained.
    pub env_steps: u64,
    /// Mean normalized reward over the suite's runs.
    pub mean: f64,
    /// 10th percentile.
    pub p10: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Every run's reward, sorted (for the CDF).
    #[serde(skip)]
    pub rewards: Vec<f64>,
}

/// Quantile by linear interpolation of a sorted slice.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl SweepRow {
    /// The row and its rewards as 64-bit words (floats by their bits, so that non-finite
    /// values travel too), as it goes from its rank to rank 0.
    fn to_words(&self) -> Vec<u64> {
        let mut words = vec![self.omega as u64, self.seed, self.env_steps];
        let floats = [
            self.wall_seconds,
            self.mean,
            self.p10,
            self.p25,
            self.p50,
            self.p75,
            self.p90,
        ];
        words.extend(floats.iter().map(|f| f.to_bits()));
        words.push(self.rewards.len() as u64);
        words.extend(self.rewards.iter().map(|f| f.to_bits()));
        words
    }

    /// The rows in `words` (several [`SweepRow::to_words`] one after the other).
    fn from_words(mut words: &[u64]) -> Result<Vec<Self>, String> {
        let mut rows = Vec::new();
        while !words.is_empty() {
            let short = || "a truncated sweep row from another rank".to_string();
            let head = words.get(..11).ok_or_else(short)?;
            let n = head[10] as usize;
            let rewards = words.get(11..11 + n).ok_or_else(short)?;
            let f = |i: usize| f64::from_bits(head[i]);
            rows.push(SweepRow {
                omega: head[0] as usize,
                seed: head[1],
                env_steps: head[2],
                wall_seconds: f(3),
                mean: f(4),
                p10: f(5),
                p25: f(6),
                p50: f(7),
                p75: f(8),
                p90: f(9),
                rewards: rewards.iter().map(|&b| f64::from_bits(b)).collect(),
            });
            words = &words[11 + n..];
        }
        Ok(rows)
    }
}

/// Trains and evaluates one model per omega and seed (omega-major; the config's seed when
/// `seeds` is empty). The budget of each is the config's budget scaled by omega / (the config's
/// omega), so every landmark gets the same share. Runs are spread over the ranks of `world`
/// (run `i` on rank `i mod N`, each trained by its rank alone); `on_done` sees each rank's
/// own rows; rank 0 returns every row, in run order, the others `None`.
pub fn sweep_on(
    base: &LoadedConfig,
    plan: &SweepPlan,
    suite: &Suite,
    out: &Path,
    world: &World,
    mut on_done: impl FnMut(&SweepRow),
) -> Result<Option<Vec<SweepRow>>, SweepError> {
    let (omegas, seeds) = (&plan.omegas[..], &plan.seeds[..]);
    let runs = sweep_runs(base, omegas, seeds)?;
    if !plan.resume && world.rank() == 0 && holds_runs(out) {
        return Err(SweepError::Invalid(format!(
            "{}: holds the runs of an earlier sweep; continue it with --resume (the same \
             arguments), or choose another --out",
            out.display()
        )));
    }
    std::fs::create_dir_all(out).map_err(|source| SweepError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let several_seeds = seeds.len() > 1;
    let mut mine = Vec::new();
    for (i, (cfg, omega)) in runs.iter().enumerate() {
        if i % world.ranks() != world.rank() {
            continue;
        }
        let seed = cfg.config.seed;
        let name = if several_seeds {
            format!("omega-{omega}-s{seed}")
        } else {
            format!("omega-{omega}")
        };
        let row = train_and_evaluate(cfg, *omega, suite, &out.join(name), plan.resume)?;
        on_done(&row);
        mine.push(row);
    }
    gather_rows(mine, runs.len(), world)
}

/// What a sweep trains: the landmark counts, the seeds (empty: the config's), and whether to
/// continue what an interrupted sweep left in its folder.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SweepPlan {
    /// Landmark counts.
    pub omegas: Vec<usize>,
    /// Training seeds (empty: the config's).
    pub seeds: Vec<u64>,
    /// Continue an interrupted sweep: finished runs are evaluated again, interrupted ones
    /// resumed from their newest checkpoint.
    pub resume: bool,
}

/// Whether `out` holds a run folder of a sweep (`omega-*` with checkpoints).
fn holds_runs(out: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(out) else {
        return false;
    };
    entries.flatten().any(|e| {
        e.file_name().to_string_lossy().starts_with("omega-") && has_checkpoints(&e.path())
    })
}

/// Refuses an omega or seed given twice and an omega that is no landmark count (C(n-1, 2) for
/// some n >= 4): the arguments of a sweep, checked before any file is read.
pub fn check_plan(omegas: &[usize], seeds: &[u64]) -> Result<(), SweepError> {
    if let Some(o) = first_repeat(omegas) {
        return Err(SweepError::Invalid(format!("--omega {o}: given twice")));
    }
    if let Some(seed) = first_repeat(seeds) {
        return Err(SweepError::Invalid(format!("--seeds {seed}: given twice")));
    }
    match omegas.iter().find(|&&o| denominator_for_omega(o).is_none()) {
        Some(o) => Err(SweepError::Invalid(format!(
            "--omega {o}: not C(n-1, 2) for any n >= 4 (valid: 3, 6, 10, 15, 21, 28, 36, ...)"
        ))),
        None => Ok(()),
    }
}

/// Each run's config (budget scaled, landmarks and seed set) and omega, omega-major.
fn sweep_runs(
    base: &LoadedConfig,
    omegas: &[usize],
    seeds: &[u64],
) -> Result<Vec<(LoadedConfig, usize)>, SweepError> {
    let Some(mocc) = &base.config.mocc else {
        return Err(SweepError::Invalid(format!(
            "{}: a sweep needs a `mocc:` section",
            base.path.display()
        )));
    };
    check_plan(omegas, seeds)?;
    let base_omega = Landmarks::from_spec(&mocc.landmarks)
        .map_err(SweepError::Invalid)?
        .len();
    let per_landmark = base.config.budget.env_steps as f64 / base_omega as f64;
    let seeds = if seeds.is_empty() {
        vec![base.config.seed]
    } else {
        seeds.to_vec()
    };
    let mut runs = Vec::new();
    for &omega in omegas {
        for &seed in &seeds {
            let mut cfg = base.clone();
            if let Some(m) = &mut cfg.config.mocc {
                m.landmarks = LandmarkSpec::Omega(omega);
            }
            cfg.config.budget.env_steps = ((per_landmark * omega as f64).round() as u64).max(1);
            cfg.config.seed = seed;
            cfg.validate()
                .map_err(|e| SweepError::Invalid(e.to_string()))?;
            runs.push((cfg, omega));
        }
    }
    Ok(runs)
}

/// What a sweep keeps of a finished run in its folder, so that `--resume` evaluates it again
/// instead of training it again.
const FINISHED_FILE: &str = "sweep-run.json";

/// A finished run's training record (the rest of its row is its evaluation, which is
/// deterministic and repeated on resume).
#[derive(Debug, Serialize, serde::Deserialize)]
struct FinishedRun {
    wall_seconds: f64,
    env_steps: u64,
    final_checkpoint: PathBuf,
}

/// The first value that appears twice in `xs`.
fn first_repeat<T: PartialEq + Copy>(xs: &[T]) -> Option<T> {
    xs.iter()
        .enumerate()
        .find(|(i, x)| xs[..*i].contains(x))
        .map(|(_, x)| *x)
}

/// Trains one run into `run_dir` (continuing what an interrupted sweep left there when
/// `resume`) and evaluates its final checkpoint on `suite`.
fn train_and_evaluate(
    cfg: &LoadedConfig,
    omega: usize,
    suite: &Suite,
    run_dir: &Path,
    resume: bool,
) -> Result<SweepRow, SweepError> {
    let finished = match finished_run(run_dir, resume)? {
        Some(done) => done,
        None => {
            let mut trainer = if resume && has_checkpoints(run_dir) {
                resume_run(cfg, run_dir)?
            } else {
                Trainer::new(cfg, run_dir)?
            };
            let summary = trainer.run(None, |_| {})?;
            drop(trainer);
            let done = FinishedRun {
                wall_seconds: summary.wall_seconds,
                env_steps: summary.env_steps,
                final_checkpoint: summary.final_checkpoint,
            };
            save_finished(run_dir, &done)?;
            done
        }
    };
    evaluate_run(cfg, omega, suite, &finished)
}

fn has_checkpoints(run_dir: &Path) -> bool {
    let dir = run_dir.join(crate::checkpoint::CHECKPOINTS_DIR);
    crate::checkpoint::list(&dir).is_ok_and(|l| !l.is_empty())
}

/// The record of a run an earlier sweep finished (only when resuming).
fn finished_run(run_dir: &Path, resume: bool) -> Result<Option<FinishedRun>, SweepError> {
    let path = run_dir.join(FINISHED_FILE);
    if !resume || !path.is_file() {
        return Ok(None);
    }
    let text = mocc_policy::error::read_text(&path).map_err(|e| SweepError::Io {
        path: path.clone(),
        source: e.source,
    })?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| SweepError::Invalid(format!("{}: {e}", path.display())))
}

fn save_finished(run_dir: &Path, done: &FinishedRun) -> Result<(), SweepError> {
    let path = run_dir.join(FINISHED_FILE);
    let json = serde_json::to_vec_pretty(done)
        .map_err(|e| SweepError::Invalid(format!("{}: {e}", path.display())))?;
    mocc_outputs::write_file_atomic(&path, &json).map_err(|e| SweepError::Io {
        path: e.path,
        source: e.source,
    })
}

/// Continues the run an interrupted sweep left in `run_dir`, which must be this sweep's run
/// (the same resolved config).
fn resume_run(cfg: &LoadedConfig, run_dir: &Path) -> Result<Trainer, SweepError> {
    let ckpt = crate::checkpoint::Checkpoint::open(run_dir).map_err(TrainError::from)?;
    let wanted = cfg
        .resolved()
        .map_err(|e| SweepError::Invalid(e.to_string()))?
        .config;
    let same = serde_json::to_value(&wanted).ok() == serde_json::to_value(&ckpt.state.config).ok();
    if !same {
        return Err(SweepError::Invalid(format!(
            "{}: was trained with another config than this sweep's run (other --set, config \
             or seeds?); resume with the same arguments, or choose another --out",
            run_dir.display()
        )));
    }
    drop(ckpt);
    Ok(Trainer::resume(run_dir)?)
}

/// The sweep row of a finished run: its final checkpoint's rewards on `suite`.
fn evaluate_run(
    cfg: &LoadedConfig,
    omega: usize,
    suite: &Suite,
    finished: &FinishedRun,
) -> Result<SweepRow, SweepError> {
    let policy = crate::checkpoint_policy::load_policy(&finished.final_checkpoint)
        .map_err(EvalError::from)?;
    let mut rewards: Vec<f64> = evaluate(&policy, suite)?
        .iter()
        .map(|r| r.metrics.mocc_reward)
        .collect();
    rewards.sort_by(f64::total_cmp);
    Ok(SweepRow {
        omega,
        seed: cfg.config.seed,
        wall_seconds: finished.wall_seconds,
        env_steps: finished.env_steps,
        mean: rewards.iter().sum::<f64>() / rewards.len().max(1) as f64,
        p10: quantile(&rewards, 0.1),
        p25: quantile(&rewards, 0.25),
        p50: quantile(&rewards, 0.5),
        p75: quantile(&rewards, 0.75),
        p90: quantile(&rewards, 0.9),
        rewards,
    })
}

/// Every rank's rows on rank 0, in run order (rank `r` holds runs `r, r + N, ...`).
fn gather_rows(
    mine: Vec<SweepRow>,
    runs: usize,
    world: &World,
) -> Result<Option<Vec<SweepRow>>, SweepError> {
    if world.ranks() == 1 {
        return Ok(Some(mine));
    }
    let bytes: Vec<u8> = mine
        .iter()
        .flat_map(SweepRow::to_words)
        .flat_map(u64::to_le_bytes)
        .collect();
    let Some(all) = world.gather_bytes(&bytes) else {
        return Ok(None);
    };
    let mut per_rank = Vec::new();
    for part in all {
        let words: Vec<u64> = part
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        per_rank.push(
            SweepRow::from_words(&words)
                .map_err(SweepError::Invalid)?
                .into_iter(),
        );
    }
    let ranks = per_rank.len();
    let mut rows = Vec::with_capacity(runs);
    for i in 0..runs {
        if let Some(row) = per_rank[i % ranks].next() {
            rows.push(row);
        }
    }
    Ok(Some(rows))
}

/// The rows of each omega pooled over seeds, in omega order of first appearance: the mean
/// training time, every run's rewards (sorted) and their median, for the sweep figure.
pub fn pooled_by_omega(rows: &[SweepRow]) -> Vec<(usize, f64, f64, Vec<f64>)> {
    let mut omegas: Vec<usize> = Vec::new();
    for r in rows {
        if !omegas.contains(&r.omega) {
            omegas.push(r.omega);
        }
    }
    omegas
        .into_iter()
        .map(|o| {
            let of: Vec<&SweepRow> = rows.iter().filter(|r| r.omega == o).collect();
            let wall = of.iter().map(|r| r.wall_seconds).sum::<f64>() / of.len() as f64;
            let mut rewards: Vec<f64> = of.iter().flat_map(|r| r.rewards.clone()).collect();
            rewards.sort_by(f64::total_cmp);
            (o, wall, quantile(&rewards, 0.5), rewards)
        })
        .collect()
}

/// Writes sweep.csv.
pub fn write_csv(path: &Path, rows: &[SweepRow]) -> Result<(), SweepError> {
    let io = |source| SweepError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut text = String::from("omega,wall_seconds,env_steps,mean,p10,p25,p50,p75,p90,seed\n");
    for r in rows {
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{},{},{}\n",
            r.omega, r.wall_seconds, r.env_steps, r.mean, r.p10, r.p25, r.p50, r.p75, r.p90, r.seed
        ));
    }
    mocc_outputs::write_file_atomic(path, text.as_bytes()).map_err(|e| io(e.source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_travel_as_words_non_finite_values_included() {
        let row = |omega: usize, rewards: Vec<f64>| SweepRow {
            omega,
            seed: 7,
            wall_seconds: 1.5,
            env_steps: 384,
            mean: f64::NAN,
            p10: f64::NEG_INFINITY,
            p25: 0.25,
            p50: 0.5,
            p75: 0.75,
            p90: f64::INFINITY,
            rewards,
        };
        let rows = [row(3, vec![0.1, f64::NAN]), row(6, Vec::new())];
        let words: Vec<u64> = rows.iter().flat_map(SweepRow::to_words).collect();
        let back = SweepRow::from_words(&words).expect("whole rows");
        assert_eq!(back.len(), 2);
        for (a, b) in rows.iter().zip(&back) {
            assert_eq!(a.to_words(), b.to_words(), "bit for bit");
        }
        assert!(SweepRow::from_words(&words[..5]).is_err());
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&v, 0.5), 3.0);
        assert_eq!(quantile(&v, 0.25), 2.0);
        assert_eq!(quantile(&v, 0.1), 1.4);
        assert_eq!(quantile(&v, 1.0), 5.0);
        assert!(quantile(&[], 0.5).is_nan());
    }
}
