//! Online adaptation to a new objective with requirement replay (MOCC §4.3, design.md §5).
//!
//! A pretrained model fine-tunes with PPO on the new objective. With replay, every update also
//! trains on one objective drawn uniformly from the pool of objectives seen before (the
//! landmarks of the pretrained run plus every objective adapted to): the VecEnv's envs are
//! split, `replay_fraction` of them running the drawn objective, and the PPO loss is the sum of
//! the two objectives' losses (`mocc_agents::grouped_ppo_loss`).

use crate::landmarks::Objective;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// Loss group of the envs on the new objective.
pub const CURRENT_GROUP: u8 = 0;
/// Loss group of the envs on the replayed objective.
pub const REPLAY_GROUP: u8 = 1;

/// The `adapt:` section of a training config.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptConfig {
    /// The new objective (throughput, latency, loss weights; positive, summing to 1).
    pub objective: Objective,
    /// Replay an objective from the pool in every update.
    #[serde(default = "default_replay")]
    pub replay: bool,
    /// Fraction of the envs running the replayed objective (the rest run the new one).
    #[serde(default = "default_replay_fraction")]
    pub replay_fraction: f64,
    /// Objectives seen before, drawn uniformly once per update.
    #[serde(default)]
    pub pool: Vec<Objective>,
}

fn default_replay() -> bool {
    true
}
fn default_replay_fraction() -> f64 {
    0.5
}

/// Checks an objective: three positive finite weights summing to 1 within 1e-6.
pub fn validate_objective(field: &str, w: &Objective) -> Result<(), String> {
    mocc_policy::export::validate_objective(w).map_err(|m| format!("{field}: {m}"))
}

impl AdaptConfig {
    /// Checks every value for a run of `envs` envs; the message starts with the field.
    pub fn validate(&self, envs: usize) -> Result<(), String> {
        validate_objective("adapt.objective", &self.objective)?;
        for (i, w) in self.pool.iter().enumerate() {
            validate_objective(&format!("adapt.pool[{i}]"), w)?;
        }
        if self.replay {
            if self.pool.is_empty() {
                return Err("adapt.pool: replay needs at least one objective in the pool".into());
            }
            if !(self.replay_fraction > 0.0 && self.replay_fraction < 1.0) {
                return Err(format!(
                    "adapt.replay_fraction: must lie in (0, 1) (got {})",
                    self.replay_fraction
                ));
            }
            let k = self.replay_envs(envs);
            if k == 0 || k >= envs {
                return Err(format!(
                    "adapt.replay_fraction: {} of {envs} envs leaves no env for one of the two \
                     objectives (need >= 2 envs and a fraction that splits them)",
                    self.replay_fraction
                ));
            }
        }
        Ok(())
    }

    /// Envs running the replayed objective (0 without replay).
    pub fn replay_envs(&self, envs: usize) -> usize {
        if self.replay {
            (self.replay_fraction * envs as f64).round() as usize
        } else {
            0
        }
    }

    /// The pool objective replayed in update `update` of a run seeded `seed`: uniform over the
    /// pool, a pure function of (seed, update) so resumed runs draw the same sequence.
    pub fn replayed(&self, seed: u64, update: u64) -> Option<Objective> {
        (self.replay && !self.pool.is_empty())
            .then(|| self.pool[replay_index(seed, update, self.pool.len())])
    }

    /// Each env's objective and loss group in update `update`: the first envs run the new
    /// objective, the last `replay_envs` the replayed one.
    pub fn assignments(&self, envs: usize, seed: u64, update: u64) -> Vec<(Objective, u8)> {
        let k = self.replay_envs(envs);
        let replayed = self.replayed(seed, update);
        (0..envs)
            .map(|i| match replayed {
                Some(w) if i >= envs - k => (w, REPLAY_GROUP),
                _ => (self.objective, CURRENT_GROUP),
            })
            .collect()
    }

    /// The pool after this adaptation: the old pool plus the new objective (once).
    pub fn pool_after(&self) -> Vec<Objective> {
        let mut pool = self.pool.clone();
        if !pool.iter().any(|w| same_objective(w, &self.objective)) {
            pool.push(self.objective);
        }
        pool
    }
}

/// Equal within 1e-9 per weight.
pub fn same_objective(a: &Objective, b: &Objective) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9)
}

/// Uniform index in `0..len` for (seed, update).
pub fn replay_index(seed: u64, update: u64, len: usize) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_4E91_A7C0_0001);
    rng.set_stream(update);
    rng.random_range(0..len.max(1))
}

/// Parses `a,b,c` into an objective and validates it.
pub fn parse_objective(s: &str) -> Result<Objective, String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let [a, b, c] = parts.as_slice() else {
        return Err(format!(
            "expected three comma-separated weights (throughput, latency, loss), got {s:?}"
        ));
    };
    let num = |x: &str| {
        x.parse::<f64>()
            .map_err(|_| format!("not a number: {x:?} in {s:?}"))
    };
    let w = [num(a)?, num(b)?, num(c)?];
    mocc_policy::export::validate_objective(&w)?;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pool: Vec<Objective>) -> AdaptConfig {
        AdaptConfig {
            objective: [0.25, 0.45, 0.30],
            replay: true,
            replay_fraction: 0.5,
            pool,
        }
    }

    #[test]
    fn replay_draws_are_uniform_over_the_pool() {
        // Chi-square test of 20,000 draws over a pool of 10 (fixed seed, so deterministic):
        // 9 degrees of freedom, the 0.999 quantile is 27.88.
        let pool: Vec<Objective> = (1..=10)
            .map(|i| {
                let a = i as f64 / 20.0;
                [a, (1.0 - a) / 2.0, (1.0 - a) / 2.0]
            })
            .collect();
        let c = cfg(pool.clone());
        let draws = 20_000u64;
        let mut counts = [0u64; 10];
        for u in 0..draws {
            let w = c.replayed(7, u).unwrap();
            let k = pool.iter().position(|p| same_objective(p, &w)).unwrap();
            counts[k] += 1;
        }
        let expected = draws as f64 / 10.0;
        let chi2: f64 = counts
            .iter()
            .map(|&o| (o as f64 - expected).powi(2) / expected)
            .sum();
        assert!(chi2 < 27.88, "chi2 {chi2}, counts {counts:?}");
        // Draws depend on the update and are reproducible.
        let first: Vec<usize> = (0..20).map(|u| replay_index(7, u, 10)).collect();
        assert!(first.iter().any(|&k| k != first[0]), "{first:?}");
        assert_eq!(c.replayed(7, 123), c.replayed(7, 123));
    }

    #[test]
    fn envs_split_between_new_and_replayed_objective() {
        let c = cfg(vec![[0.6, 0.3, 0.1]]);
        let a = c.assignments(8, 1, 0);
        assert_eq!(a.iter().filter(|x| x.1 == REPLAY_GROUP).count(), 4);
        assert!(a[..4]
            .iter()
            .all(|x| x == &([0.25, 0.45, 0.30], CURRENT_GROUP)));
        assert!(a[4..].iter().all(|x| x == &([0.6, 0.3, 0.1], REPLAY_GROUP)));
        let off = AdaptConfig {
            replay: false,
            ..c.clone()
        };
        assert!(off
            .assignments(8, 1, 0)
            .iter()
            .all(|x| x.1 == CURRENT_GROUP));
        assert_eq!(c.pool_after().len(), 2);
        assert_eq!(cfg(vec![[0.25, 0.45, 0.30]]).pool_after().len(), 1);
    }

    #[test]
    fn validation_and_parsing_name_the_problem() {
        assert!(cfg(vec![])
            .validate(8)
            .unwrap_err()
            .starts_with("adapt.pool"));
        let c = AdaptConfig {
            replay_fraction: 0.01,
            ..cfg(vec![[0.6, 0.3, 0.1]])
        };
        assert!(c
            .validate(8)
            .unwrap_err()
            .starts_with("adapt.replay_fraction"));
        assert!(cfg(vec![[0.6, 0.3, 0.2]])
            .validate(8)
            .unwrap_err()
            .starts_with("adapt.pool[0]"));
        assert_eq!(
            parse_objective("0.25, 0.45,0.30").unwrap(),
            [0.25, 0.45, 0.30]
        );
        assert!(parse_objective("0.5,0.5").unwrap_err().contains("three"));
        assert!(parse_objective("0.5,0.5,0.5")
            .unwrap_err()
            .contains("sum to 1"));
        assert!(parse_objective("1,0,0").unwrap_err().contains("positive"));
        assert!(parse_objective("a,0.5,0.5")
            .unwrap_err()
            .contains("not a number"));
    }
}

/// What `mocc adapt` does.
#[derive(Debug, Clone, PartialEq)]
pub struct AdaptSpec {
    /// The pretrained checkpoint (or run folder).
    pub from: std::path::PathBuf,
    /// The new objective.
    pub objective: Objective,
    /// PPO iterations (updates).
    pub iterations: u64,
    /// Replay the pool.
    pub replay: bool,
    /// Fraction of envs on the replayed objective.
    pub replay_fraction: f64,
    /// The pool; default: the checkpoint's landmarks plus every objective it adapted to.
    pub pool: Option<Vec<Objective>>,
    /// Seed (default: the checkpoint's).
    pub seed: Option<u64>,
}

/// File in an adaptation's run folder holding the pool after it (objectives seen so far).
pub const POOL_FILE: &str = "pool.json";

/// The objectives a checkpoint has seen: its landmarks (MOCC runs), its adaptation's pool and
/// objective (adapted runs), else its scenario's objective.
pub fn seen_objectives(config: &crate::config::TrainConfig) -> Result<Vec<Objective>, String> {
    if let Some(a) = &config.adapt {
        return Ok(a.pool_after());
    }
    if let Some(m) = &config.mocc {
        let l = crate::landmarks::Landmarks::from_spec(&m.landmarks)?;
        return Ok(l.points().to_vec());
    }
    match &config.scenario {
        crate::config::ScenarioRef::Inline(s) => Ok(vec![s.objective]),
        crate::config::ScenarioRef::Path(_) => Ok(Vec::new()),
    }
}

/// Reads a pool file: a YAML or JSON list of objectives (a `pool.json` an adaptation wrote).
pub fn read_pool(path: &std::path::Path) -> Result<Vec<Objective>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let pool: Vec<Objective> =
        serde_saphyr::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    for (i, w) in pool.iter().enumerate() {
        validate_objective(&format!("{}: [{i}]", path.display()), w)?;
    }
    Ok(pool)
}

/// The training config of an adaptation: the pretrained run's config (scenario, networks,
/// PPO settings, envs) with the landmark schedule replaced by the `adapt` section and a budget
/// of `iterations` updates.
pub fn adaptation_config(
    state: &crate::checkpoint::CheckpointState,
    spec: &AdaptSpec,
) -> Result<crate::config::LoadedConfig, crate::config::ConfigError> {
    let mut config = state.config.clone();
    let pool = match &spec.pool {
        Some(p) => p.clone(),
        None => seen_objectives(&state.config).map_err(crate::config::ConfigError::Override)?,
    };
    config.mocc = None;
    config.adapt = Some(AdaptConfig {
        objective: spec.objective,
        replay: spec.replay,
        replay_fraction: spec.replay_fraction,
        pool,
    });
    if let crate::config::ScenarioRef::Inline(s) = &mut config.scenario {
        s.objective = spec.objective;
    }
    config.seed = spec.seed.unwrap_or(config.seed);
    let batch = (config.ppo.num_steps * config.envs) as u64;
    config.budget.env_steps = spec.iterations.max(1) * batch;
    let loaded = crate::config::LoadedConfig {
        config,
        path: state.config_path.clone(),
    };
    loaded.validate()?;
    Ok(loaded)
}

/// A trainer ready to adapt `spec.from` into `run_dir`, with the pool written to
/// `run_dir/pool.json`.
pub fn start_adaptation(
    spec: &AdaptSpec,
    run_dir: &std::path::Path,
) -> Result<crate::trainer::Trainer, crate::trainer::TrainError> {
    let ckpt = crate::checkpoint::resolve(&spec.from)?;
    let (state, _) = crate::checkpoint::load(&ckpt)?;
    let loaded = adaptation_config(&state, spec)?;
    let mut trainer = crate::trainer::Trainer::new(&loaded, run_dir)?;
    trainer.load_pretrained(&ckpt)?;
    let pool = loaded
        .config
        .adapt
        .as_ref()
        .map(AdaptConfig::pool_after)
        .unwrap_or_default();
    let path = run_dir.join(POOL_FILE);
    let json = serde_json::to_string_pretty(&pool)
        .map_err(|e| crate::trainer::TrainError::Incompatible(e.to_string()))?;
    std::fs::write(&path, json + "\n")
        .map_err(|source| crate::trainer::TrainError::Io { path, source })?;
    Ok(trainer)
}
