//! A run's scalar log: TensorBoard and metrics.csv behind [`Recorders`], with failed writes kept
//! as warnings (logging never stops training), and the scalars each update logs.

use crate::config::LoggingConfig;
use crate::recorder::{CsvRecorder, Recorders, TensorBoardRecorder};
use mocc_agents::LossStats;
use mocc_eval::mi_stats::MiStats;
use std::path::Path;

/// The log of one run.
#[derive(Default)]
pub struct RunLog {
    recorders: Recorders,
    warnings: Vec<String>,
}

impl RunLog {
    /// Opens the sinks `logging` asks for in `run_dir`; a sink that cannot open becomes a
    /// warning.
    pub fn open(run_dir: &Path, logging: &LoggingConfig) -> Self {
        let mut log = Self::default();
        if logging.csv {
            match CsvRecorder::open(&run_dir.join(crate::recorder::METRICS_CSV)) {
                Ok(r) => log.recorders.push(Box::new(r)),
                Err(e) => log.warn(format!("metrics.csv disabled: {e}")),
            }
        }
        if logging.tensorboard {
            match TensorBoardRecorder::create(run_dir) {
                Ok(r) => log.recorders.push(Box::new(r)),
                Err(e) => log.warn(format!("TensorBoard logging disabled: {e}")),
            }
        }
        log
    }

    /// Records scalars at `step` (env steps).
    pub fn scalars<S: AsRef<str>>(
        &mut self,
        step: u64,
        scalars: impl IntoIterator<Item = (S, f64)>,
    ) {
        for (tag, v) in scalars {
            let tag = tag.as_ref();
            for e in self.recorders.scalar(tag, step, v) {
                self.warnings.push(format!("log write failed ({tag}): {e}"));
            }
        }
    }

    /// Flushes every sink.
    pub fn flush(&mut self) {
        for e in self.recorders.flush() {
            self.warnings.push(format!("log flush failed: {e}"));
        }
    }

    /// Keeps a warning for the caller.
    pub fn warn(&mut self, message: String) {
        self.warnings.push(message);
    }

    /// Warnings accumulated since the last call.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }
}

/// The scalars of one update, CleanRL's names: speed, schedule values, losses, the recent
/// episodic return, the reward scale (when scaling), and the rollout's network statistics.
pub fn update_scalars(
    losses: &LossStats,
    sps: f64,
    mean_return: Option<f64>,
    reward_scale: Option<f64>,
    net: &MiStats,
) -> Vec<(&'static str, f64)> {
    let mut scalars = vec![
        ("charts/SPS", sps),
        ("charts/learning_rate", losses.learning_rate),
        ("charts/ent_coef", losses.ent_coef),
        ("losses/policy_loss", losses.pg_loss),
        ("losses/value_loss", losses.v_loss),
        ("losses/entropy", losses.entropy),
        ("losses/approx_kl", losses.approx_kl),
        ("losses/clipfrac", losses.clipfrac),
        ("losses/explained_variance", losses.explained_variance),
        ("losses/grad_norm", losses.grad_norm),
    ];
    if let Some(r) = mean_return {
        scalars.push(("charts/episodic_return", r));
    }
    if let Some(s) = reward_scale {
        scalars.push(("charts/reward_scale", s));
    }
    scalars.extend(net.scalars());
    scalars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_scalars_appear_only_when_known() {
        let l = LossStats::default();
        let bare = update_scalars(&l, 10.0, None, None, &MiStats::default());
        assert_eq!(bare.len(), 10);
        assert_eq!(bare[0], ("charts/SPS", 10.0));
        let full = update_scalars(&l, 10.0, Some(1.5), Some(0.1), &MiStats::default());
        assert!(full.contains(&("charts/episodic_return", 1.5)));
        assert!(full.contains(&("charts/reward_scale", 0.1)));
    }

    #[test]
    fn a_log_without_sinks_takes_scalars_and_keeps_warnings() {
        let mut log = RunLog::default();
        log.scalars(1, [("a", 1.0)]);
        log.warn("w".into());
        log.flush();
        assert_eq!(log.take_warnings(), vec!["w".to_string()]);
        assert!(log.take_warnings().is_empty());
    }
}
