//! Online adaptation to a new objective with requirement replay (MOCC §4.3, design.md §5).
//!
//! A pretrained model fine-tunes with PPO on the new objective. With replay, every update also
//! trains on one objective drawn uniformly from the pool of objectives seen before (the
//! landmarks of the pretrained run plus every objective adapted to): the VecEnv's envs are
//! split, `replay_fraction` of them running the drawn objective, and the PPO loss is the sum of
//! the two objectives' losses (`mocc_agents::grouped_ppo_loss`).

use mocc_policy::objective::{self, validate_field, Objective};
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

impl AdaptConfig {
    /// Checks every value for a run of `envs` envs; the message starts with the field.
    pub fn validate(&self, envs: usize) -> Result<(), String> {
        validate_field("adapt.objective", &self.objective)?;
        for (i, w) in self.pool.iter().enumerate() {
            validate_field(&format!("adapt.pool[{i}]"), w)?;
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
        if !pool.iter().any(|w| objective::same(w, &self.objective)) {
            pool.push(self.objective);
        }
        pool
    }
}

/// Uniform index in `0..len` for (seed, update).
pub fn replay_index(seed: u64, update: u64, len: usize) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_4E91_A7C0_0001);
    rng.set_stream(update);
    rng.random_range(0..len.max(1))
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
            let k = pool.iter().position(|p| objective::same(p, &w)).unwrap();
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
    fn validation_names_the_field() {
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
    }
}
