//! A batch of environments stepped in parallel into preallocated flat buffers.
//!
//! Auto-reset follows Gymnasium's same-step convention: when an env's episode ends, the step
//! reports its reward, `terminated`/`truncated` and the final observation (in
//! [`VecEnv::final_observations`]), and the returned observation is already the first one of the
//! next episode. Each env owns its RNG (seed, env index), so results do not depend on the number
//! of threads.

use crate::env::{Action, Env, EnvSnapshot, StepInfo};
use crate::scenario::Scenario;
use crate::sim::SimCounters;
use rayon::prelude::*;
use std::sync::Arc;

/// Errors of batch construction and stepping.
#[derive(Debug, thiserror::Error)]
pub enum VecEnvError {
    /// Zero envs or a thread pool that failed to start.
    #[error("{0}")]
    Setup(String),
    /// An input slice of the wrong length.
    #[error("{what}: expected {expected} values, got {got}")]
    Shape {
        /// Which input.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Actual length.
        got: usize,
    },
}

/// Per-env results of the last step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Slot {
    reward: f32,
    terminated: bool,
    truncated: bool,
    info: StepInfo,
}

/// `n` environments of one scenario.
pub struct VecEnv {
    envs: Vec<Env>,
    pool: rayon::ThreadPool,
    obs_len: usize,
    obs: Vec<f32>,
    final_obs: Vec<f32>,
    objectives: Vec<f32>,
    slots: Vec<Slot>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    infos: Vec<StepInfo>,
}

/// A borrowed view of one step's results.
#[derive(Debug, Clone, Copy)]
pub struct VecStep<'a> {
    /// Observations `[n, obs_len]`, row-major (next episode's first one where an episode ended).
    pub observations: &'a [f32],
    /// Rewards `[n]`.
    pub rewards: &'a [f32],
    /// Terminations `[n]`.
    pub terminated: &'a [bool],
    /// Truncations `[n]` (time limit).
    pub truncated: &'a [bool],
    /// Final observations `[n, obs_len]`, meaningful where `terminated || truncated`.
    pub final_observations: &'a [f32],
    /// Per-env statistics `[n]`.
    pub infos: &'a [StepInfo],
}

impl VecEnv {
    /// `n` envs seeded with (seed, index), stepped by a pool of `threads` workers.
    pub fn new(
        scenario: Arc<Scenario>,
        n: usize,
        seed: u64,
        threads: usize,
    ) -> Result<Self, VecEnvError> {
        if n == 0 {
            return Err(VecEnvError::Setup("envs: must be >= 1 (got 0)".into()));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .build()
            .map_err(|e| VecEnvError::Setup(format!("threads: {e}")))?;
        let envs: Vec<Env> = pool.install(|| {
            (0..n)
                .into_par_iter()
                .map(|i| Env::new(scenario.clone(), seed, i as u64))
                .collect()
        });
        let obs_len = scenario.obs_len();
        let mut v = Self {
            obs: vec![0.0; n * obs_len],
            final_obs: vec![0.0; n * obs_len],
            objectives: vec![0.0; n * 3],
            slots: vec![Slot::default(); n],
            rewards: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
            infos: vec![StepInfo::default(); n],
            envs,
            pool,
            obs_len,
        };
        v.gather_observations();
        v.gather_objectives();
        Ok(v)
    }

    /// Number of envs.
    pub fn len(&self) -> usize {
        self.envs.len()
    }

    /// Never true (a batch holds at least one env).
    pub fn is_empty(&self) -> bool {
        self.envs.is_empty()
    }

    /// Length of one observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }

    /// The envs (read-only).
    pub fn envs(&self) -> &[Env] {
        &self.envs
    }

    /// Current observations `[n, obs_len]`.
    pub fn observations(&self) -> &[f32] {
        &self.obs
    }

    /// Final observations of the episodes that ended at the last step.
    pub fn final_observations(&self) -> &[f32] {
        &self.final_obs
    }

    /// Objectives `[n, 3]` (throughput, latency, loss weights).
    pub fn objectives(&self) -> &[f32] {
        &self.objectives
    }

    /// Sets env `i`'s objective.
    pub fn set_objective(&mut self, i: usize, w: [f64; 3]) {
        self.envs[i].set_objective(w);
        for (k, x) in w.iter().enumerate() {
            self.objectives[i * 3 + k] = *x as f32;
        }
    }

    /// Simulation work summed over envs.
    pub fn counters(&self) -> SimCounters {
        self.envs.iter().fold(SimCounters::default(), |acc, e| {
            let c = e.counters();
            SimCounters {
                events: acc.events + c.events,
                packets: acc.packets + c.packets,
            }
        })
    }

    /// Captures every env's state.
    pub fn snapshot(&self) -> Vec<EnvSnapshot> {
        self.envs.iter().map(Env::snapshot).collect()
    }

    /// Restores every env from snapshots of a batch of the same size and scenario.
    pub fn restore(&mut self, snaps: Vec<EnvSnapshot>) -> Result<(), VecEnvError> {
        if snaps.len() != self.envs.len() {
            return Err(VecEnvError::Shape {
                what: "env snapshots",
                expected: self.envs.len(),
                got: snaps.len(),
            });
        }
        let scenario = self.envs[0].scenario().clone();
        let envs = snaps
            .into_iter()
            .map(|s| Env::restore(scenario.clone(), s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(VecEnvError::Setup)?;
        self.envs = envs;
        self.final_obs.fill(0.0);
        self.gather_observations();
        self.gather_objectives();
        Ok(())
    }

    /// Resets every env; env `i` is reseeded with (seed, i). Returns the observations.
    pub fn reset(&mut self, seed: u64) -> &[f32] {
        self.pool.install(|| {
            self.envs.par_iter_mut().for_each(|e| e.reset(Some(seed)));
        });
        self.gather_observations();
        &self.obs
    }

    fn gather_observations(&mut self) {
        let d = self.obs_len;
        for (e, out) in self.envs.iter().zip(self.obs.chunks_exact_mut(d)) {
            out.copy_from_slice(e.observation());
        }
    }

    fn gather_objectives(&mut self) {
        for (e, out) in self.envs.iter().zip(self.objectives.chunks_exact_mut(3)) {
            for (o, w) in out.iter_mut().zip(e.objective()) {
                *o = w as f32;
            }
        }
    }

    /// Steps every env with its action (Aurora deltas), auto-resetting finished episodes.
    pub fn step(&mut self, actions: &[f32]) -> Result<VecStep<'_>, VecEnvError> {
        if actions.len() != self.envs.len() {
            return Err(VecEnvError::Shape {
                what: "actions",
                expected: self.envs.len(),
                got: actions.len(),
            });
        }
        self.step_with(|i| Action::Delta(f64::from(actions[i])));
        Ok(self.view())
    }

    /// Steps every env with `action(i)`.
    pub fn step_with(&mut self, action: impl Fn(usize) -> Action + Sync) {
        let d = self.obs_len;
        let envs = &mut self.envs;
        let obs = &mut self.obs;
        let final_obs = &mut self.final_obs;
        let slots = &mut self.slots;
        self.pool.install(|| {
            envs.par_iter_mut()
                .zip(obs.par_chunks_exact_mut(d))
                .zip(final_obs.par_chunks_exact_mut(d))
                .zip(slots.par_iter_mut())
                .enumerate()
                .for_each(|(i, (((env, o), fo), slot))| {
                    let step = env.step(action(i));
                    *slot = Slot {
                        reward: step.reward as f32,
                        terminated: step.terminated,
                        truncated: step.truncated,
                        info: step.info,
                    };
                    if step.terminated || step.truncated {
                        fo.copy_from_slice(env.observation());
                        env.reset(None);
                    }
                    o.copy_from_slice(env.observation());
                });
        });
        for (i, s) in self.slots.iter().enumerate() {
            self.rewards[i] = s.reward;
            self.terminated[i] = s.terminated;
            self.truncated[i] = s.truncated;
            self.infos[i] = s.info;
        }
    }

    /// The results of the last step.
    pub fn view(&self) -> VecStep<'_> {
        VecStep {
            observations: &self.obs,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: &self.truncated,
            final_observations: &self.final_obs,
            infos: &self.infos,
        }
    }
}
