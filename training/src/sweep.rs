//! `mocc sweep`: one MOCC model per omega (same seed, budget proportional to omega), each
//! evaluated on a suite; quality against training time (the paper's Figure 16).

use crate::actor::LoadedPolicy;
use crate::config::LoadedConfig;
use crate::eval::{evaluate, EvalError};
use crate::landmarks::{denominator_for_omega, LandmarkSpec, Landmarks};
use crate::suite::Suite;
use crate::trainer::{TrainError, Trainer};
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

/// Trains and evaluates one model per omega. The budget of each is the config's budget scaled
/// by omega / (the config's omega), so every landmark gets the same share.
pub fn sweep(
    base: &LoadedConfig,
    omegas: &[usize],
    suite: &Suite,
    out: &Path,
    mut on_done: impl FnMut(&SweepRow),
) -> Result<Vec<SweepRow>, SweepError> {
    let Some(mocc) = &base.config.mocc else {
        return Err(SweepError::Invalid(format!(
            "{}: a sweep needs a `mocc:` section",
            base.path.display()
        )));
    };
    for &o in omegas {
        if denominator_for_omega(o).is_none() {
            return Err(SweepError::Invalid(format!(
                "--omega {o}: not C(n-1, 2) for any n >= 4 (valid: 3, 6, 10, 15, 21, 28, 36, ...)"
            )));
        }
    }
    let base_omega = Landmarks::from_spec(&mocc.landmarks)
        .map_err(SweepError::Invalid)?
        .len();
    std::fs::create_dir_all(out).map_err(|source| SweepError::Io {
        path: out.to_path_buf(),
        source,
    })?;
    let per_landmark = base.config.budget.env_steps as f64 / base_omega as f64;
    let mut rows = Vec::new();
    for &omega in omegas {
        let mut cfg = base.clone();
        if let Some(m) = &mut cfg.config.mocc {
            m.landmarks = LandmarkSpec::Omega(omega);
        }
        cfg.config.budget.env_steps = ((per_landmark * omega as f64).round() as u64).max(1);
        cfg.validate()
            .map_err(|e| SweepError::Invalid(e.to_string()))?;
        let run_dir = out.join(format!("omega-{omega}"));
        let mut trainer = Trainer::new(&cfg, &run_dir)?;
        let summary = trainer.run(None, |_| {})?;
        drop(trainer);
        let policy = LoadedPolicy::load(&summary.final_checkpoint).map_err(EvalError::from)?;
        let mut rewards: Vec<f64> = evaluate(&policy, suite)?
            .iter()
            .map(|r| r.metrics.mocc_reward)
            .collect();
        rewards.sort_by(f64::total_cmp);
        let row = SweepRow {
            omega,
            wall_seconds: summary.wall_seconds,
            env_steps: summary.env_steps,
            mean: rewards.iter().sum::<f64>() / rewards.len().max(1) as f64,
            p10: quantile(&rewards, 0.1),
            p25: quantile(&rewards, 0.25),
            p50: quantile(&rewards, 0.5),
            p75: quantile(&rewards, 0.75),
            p90: quantile(&rewards, 0.9),
            rewards,
        };
        on_done(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// Writes sweep.csv.
pub fn write_csv(path: &Path, rows: &[SweepRow]) -> Result<(), SweepError> {
    let io = |source| SweepError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut text = String::from("omega,wall_seconds,env_steps,mean,p10,p25,p50,p75,p90\n");
    for r in rows {
        text.push_str(&format!(
            "{},{},{},{},{},{},{},{},{}\n",
            r.omega, r.wall_seconds, r.env_steps, r.mean, r.p10, r.p25, r.p50, r.p75, r.p90
        ));
    }
    std::fs::write(path, text).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

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
