//! Which objective each env trains on, update after update: one trait, three plans.
//!
//! - [`FixedObjective`]: Aurora and single-objective runs; the scenario's objective throughout.
//! - [`LandmarkPlan`]: MOCC's two-phase landmark schedule ([`MoccSchedule`]).
//! - [`AdaptationPlan`]: online adaptation to a new objective, with requirement replay splitting
//!   the envs between the new objective and one drawn from the pool of seen objectives.
//!
//! The trainer asks the plan for assignments before each rollout and reports the rollout's mean
//! per-step rewards after each update; the plan answers with the scalars it wants logged.

use crate::adapt::{AdaptConfig, CURRENT_GROUP, REPLAY_GROUP};
use crate::config::TrainConfig;
use crate::landmarks::Objective;
use crate::schedule::{MoccSchedule, Phase};

/// An env's objective and loss group for one rollout.
pub type Assignment = (Objective, u8);

/// One rollout's mean per-step reward of every env, with the objective and group it ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EnvReward {
    /// The objective.
    pub objective: Objective,
    /// The loss group.
    pub group: u8,
    /// Mean reward per step.
    pub reward: f64,
}

impl EnvReward {
    /// As five numbers (objective, group, reward), to travel between ranks.
    pub fn to_numbers(&self) -> [f64; 5] {
        let [a, b, c] = self.objective;
        [a, b, c, f64::from(self.group), self.reward]
    }

    /// From [`EnvReward::to_numbers`]' five numbers.
    pub fn from_numbers(v: &[f64]) -> Self {
        Self {
            objective: [v[0], v[1], v[2]],
            group: v[3] as u8,
            reward: v[4],
        }
    }
}

/// A plan of objectives over training.
pub trait ObjectivePlan {
    /// Each env's objective and loss group for the rollout of update `update` (from 0); `None`
    /// leaves every env on the objective it has.
    fn assign(&mut self, envs: usize, update: u64) -> Option<Vec<Assignment>>;

    /// Learns from the rollout just trained on; returns scalars to log (tag, value).
    fn observe(&mut self, rewards: &[EnvReward]) -> Vec<(String, f64)>;

    /// Training is complete before the budget (MOCC: every landmark converged).
    fn finished(&self) -> bool {
        false
    }

    /// The landmark schedule's state, for checkpoints.
    fn schedule(&self) -> Option<&MoccSchedule> {
        None
    }
}

/// The plan of a config: adaptation, landmarks, or the scenario's fixed objective. A resumed
/// run passes the schedule its checkpoint saved.
pub fn plan_for(
    config: &TrainConfig,
    saved_schedule: Option<MoccSchedule>,
) -> Result<Box<dyn ObjectivePlan>, String> {
    if let Some(a) = &config.adapt {
        return Ok(Box::new(AdaptationPlan {
            config: a.clone(),
            seed: config.seed,
        }));
    }
    let Some(m) = &config.mocc else {
        return Ok(Box::new(FixedObjective));
    };
    let schedule = match saved_schedule {
        Some(mut s) => {
            s.reattach()?;
            s
        }
        None => MoccSchedule::new(m.clone())?,
    };
    Ok(Box::new(LandmarkPlan { schedule }))
}

/// The scenario's objective for every env, always.
#[derive(Debug, Clone, Copy, Default)]
pub struct FixedObjective;

impl ObjectivePlan for FixedObjective {
    fn assign(&mut self, _envs: usize, _update: u64) -> Option<Vec<Assignment>> {
        None
    }

    fn observe(&mut self, _rewards: &[EnvReward]) -> Vec<(String, f64)> {
        Vec::new()
    }
}

/// MOCC's landmark schedule: phase 1 on the bootstrap objectives, then the walk.
#[derive(Debug, Clone)]
pub struct LandmarkPlan {
    schedule: MoccSchedule,
}

impl ObjectivePlan for LandmarkPlan {
    fn assign(&mut self, envs: usize, _update: u64) -> Option<Vec<Assignment>> {
        let ws = self.schedule.assignments(envs);
        Some(ws.into_iter().map(|w| (w, CURRENT_GROUP)).collect())
    }

    fn observe(&mut self, rewards: &[EnvReward]) -> Vec<(String, f64)> {
        let s = &mut self.schedule;
        let pairs: Vec<(Objective, f64)> =
            rewards.iter().map(|r| (r.objective, r.reward)).collect();
        let landmark_before = (s.phase() == Phase::Traversal).then(|| s.current_landmark());
        let position_before = s.walk_position();
        s.observe(&pairs);
        let phase = match s.phase() {
            Phase::Bootstrap => 1.0,
            Phase::Traversal => 2.0,
            Phase::Converged => 3.0,
        };
        let mean_reward = pairs.iter().map(|r| r.1).sum::<f64>() / pairs.len().max(1) as f64;
        let mut scalars: Vec<(String, f64)> = vec![
            ("mocc/phase".into(), phase),
            ("mocc/walk_position".into(), position_before as f64),
            ("mocc/cycles".into(), s.cycles() as f64),
            ("mocc/mean_reward".into(), mean_reward),
        ];
        if let Some(l) = landmark_before {
            scalars.push(("mocc/landmark".into(), l as f64));
            if let Some(r) = s.landmark_rewards()[l] {
                scalars.push((format!("mocc/landmark_reward/{l:03}"), r));
            }
        }
        scalars
    }

    fn finished(&self) -> bool {
        self.schedule.converged()
    }

    fn schedule(&self) -> Option<&MoccSchedule> {
        Some(&self.schedule)
    }
}

/// Adaptation to `config.objective`, replaying one pool objective per update (MOCC §4.3).
#[derive(Debug, Clone)]
pub struct AdaptationPlan {
    config: AdaptConfig,
    seed: u64,
}

impl ObjectivePlan for AdaptationPlan {
    fn assign(&mut self, envs: usize, update: u64) -> Option<Vec<Assignment>> {
        Some(self.config.assignments(envs, self.seed, update))
    }

    fn observe(&mut self, rewards: &[EnvReward]) -> Vec<(String, f64)> {
        let (current, replay) = group_means(rewards);
        let mut scalars = vec![("adapt/reward_new_objective".to_string(), current)];
        if let Some(r) = replay {
            scalars.push(("adapt/reward_replayed_objective".to_string(), r));
        }
        scalars
    }
}

/// Mean per-step reward of the envs on the run's own objective (group 0) and of the replayed
/// objective's envs (group 1), if any ran it.
pub fn group_means(rewards: &[EnvReward]) -> (f64, Option<f64>) {
    let mean_of = |g: u8| {
        let rs: Vec<f64> = rewards
            .iter()
            .filter(|r| r.group == g)
            .map(|r| r.reward)
            .collect();
        (!rs.is_empty()).then(|| rs.iter().sum::<f64>() / rs.len() as f64)
    };
    (mean_of(CURRENT_GROUP).unwrap_or(0.0), mean_of(REPLAY_GROUP))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reward(group: u8, reward: f64) -> EnvReward {
        EnvReward {
            objective: [1.0 / 3.0; 3],
            group,
            reward,
        }
    }

    #[test]
    fn group_means_split_current_and_replayed_envs() {
        let rs = [reward(0, 1.0), reward(0, 3.0), reward(1, 0.5)];
        assert_eq!(group_means(&rs), (2.0, Some(0.5)));
        assert_eq!(group_means(&rs[..2]), (2.0, None));
        assert_eq!(group_means(&[]), (0.0, None));
    }

    #[test]
    fn the_fixed_plan_never_reassigns_and_never_finishes() {
        let mut p = FixedObjective;
        assert_eq!(p.assign(4, 0), None);
        assert!(p.observe(&[reward(0, 1.0)]).is_empty());
        assert!(!p.finished());
        assert!(p.schedule().is_none());
    }

    #[test]
    fn adaptation_assignments_follow_the_config_and_log_both_groups() {
        let config = AdaptConfig {
            objective: [0.6, 0.3, 0.1],
            replay: true,
            replay_fraction: 0.5,
            pool: vec![[0.2, 0.4, 0.4]],
        };
        let mut p = AdaptationPlan {
            config: config.clone(),
            seed: 9,
        };
        assert_eq!(p.assign(4, 3), Some(config.assignments(4, 9, 3)));
        let logged = p.observe(&[reward(0, 0.8), reward(1, 0.4)]);
        assert_eq!(
            logged,
            vec![
                ("adapt/reward_new_objective".to_string(), 0.8),
                ("adapt/reward_replayed_objective".to_string(), 0.4)
            ]
        );
    }
}
