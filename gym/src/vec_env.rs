//! A batch of environments stepped in parallel into preallocated flat buffers.
//!
//! Auto-reset follows Gymnasium's same-step convention: when an env's episode ends, the step
//! reports its reward, `terminated`/`truncated` and the final observation (in
//! [`VecEnv::final_observations`]), and the returned observation is already the first one of the
//! next episode. Each env owns its RNG (seed, env index), so results do not depend on the number
//! of threads.

use crate::agent_slot::SlotPhase;
use crate::crew::Crew;
use crate::env::{Action, Env, EnvSnapshot, StepInfo};
use crate::scenario::Scenario;
use crate::sim::SimCounters;
use shares::for_each_env;
use std::sync::{Arc, Mutex, PoisonError};

mod shares;

/// Errors of batch construction and stepping.
#[derive(Debug, thiserror::Error)]
pub enum VecEnvError {
    /// Zero envs or worker threads that failed to start.
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

/// Per-lane results of the last step.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Slot {
    completed: bool,
    ready: bool,
    reward: f32,
    terminated: bool,
    truncated: bool,
    info: StepInfo,
}

/// `n` environments of one scenario, each with one lane per learned sender (a scenario with
/// one learned sender has one lane per env).
///
/// Learned senders decide at the end of their own MIs, so lanes become ready at different
/// times (EnvPool's async mode, PettingZoo's parallel API with agents that act only when they
/// have an observation). A step takes one action for every ready lane, runs each env until one
/// of its senders decides or completes an MI, and reports per lane whether an MI completed
/// (its reward, ends and statistics) and whether the lane is ready (its observation). With one
/// learned sender and no base-RTT probes every lane completes and is ready at every step; a
/// probe holds its lane back (not ready, nothing completed) until it ends.
pub struct VecEnv {
    envs: Vec<Env>,
    /// Builds, resets and steps the envs, with the calling thread.
    crew: Crew,
    obs_len: usize,
    slots: usize,
    obs: Vec<f32>,
    final_obs: Vec<f32>,
    /// Length of a lane's global state (0: not gathered; see [`VecEnv::with_global_state`]).
    global_len: usize,
    global: Vec<f32>,
    final_global: Vec<f32>,
    objectives: Vec<f32>,
    lane_results: Vec<Slot>,
    lane_actions: Vec<Action>,
    rewards: Vec<f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
    completed: Vec<bool>,
    ready: Vec<bool>,
    ready_lanes: Vec<usize>,
    infos: Vec<StepInfo>,
    /// Per env: its episode ended and it began the next one during the last step.
    restarted: Vec<bool>,
}

/// A borrowed view of one step's results, per lane.
#[derive(Debug, Clone, Copy)]
pub struct VecStep<'a> {
    /// Observations `[lanes, obs_len]`, row-major, meaningful where `ready` (the next
    /// episode's first one where an episode ended).
    pub observations: &'a [f32],
    /// Rewards `[lanes]`, meaningful where `completed`.
    pub rewards: &'a [f32],
    /// Terminations `[lanes]`.
    pub terminated: &'a [bool],
    /// Truncations `[lanes]` (time limit or the sender left).
    pub truncated: &'a [bool],
    /// Final observations `[lanes, obs_len]`, meaningful where `terminated || truncated`.
    pub final_observations: &'a [f32],
    /// Per-lane statistics `[lanes]` of the completed MI.
    pub infos: &'a [StepInfo],
    /// Lanes whose MI (begun with their last action) completed during this step.
    pub completed: &'a [bool],
    /// Lanes that need an action now.
    pub ready: &'a [bool],
    /// Per env (not per lane): its episode ended (every learned sender done) and it began
    /// the next one, whose lanes the observations and `ready` already show.
    pub restarted: &'a [bool],
}

impl VecEnv {
    /// `n` envs seeded with (seed, index), stepped by `threads` threads (the caller's included).
    pub fn new(
        scenario: Arc<Scenario>,
        n: usize,
        seed: u64,
        threads: usize,
    ) -> Result<Self, VecEnvError> {
        Self::new_from(scenario, 0, n, seed, threads)
    }

    /// Envs `first..first + n` of the envs [`VecEnv::new`] would build for `first + n`: each
    /// env's RNG stream is its index, so processes that each step a share of the envs (one MPI
    /// rank each) together step exactly the envs of one process.
    pub fn new_from(
        scenario: Arc<Scenario>,
        first: usize,
        n: usize,
        seed: u64,
        threads: usize,
    ) -> Result<Self, VecEnvError> {
        crate::limits::check_envs(n).map_err(|m| VecEnvError::Setup(format!("envs: {m}")))?;
        crate::limits::check_threads(threads)
            .map_err(|m| VecEnvError::Setup(format!("threads: {m}")))?;
        let mut crew =
            Crew::new(threads - 1).map_err(|e| VecEnvError::Setup(format!("threads: {e}")))?;
        let built: Vec<Mutex<Option<Env>>> = (0..n).map(|_| Mutex::new(None)).collect();
        for_each_env(&mut crew, n, &|i| {
            *lock(&built[i]) = Some(Env::new(scenario.clone(), seed, (first + i) as u64));
        });
        let envs: Vec<Env> = built
            .into_iter()
            .map(|cell| {
                let env = cell.into_inner().unwrap_or_else(PoisonError::into_inner);
                env.expect("for_each_env builds every env")
            })
            .collect();
        let obs_len = scenario.obs_len();
        let slots = scenario.config().observed_senders().len();
        let lanes = n * slots;
        let mut v = Self {
            obs: vec![0.0; lanes * obs_len],
            final_obs: vec![0.0; lanes * obs_len],
            global_len: 0,
            global: Vec::new(),
            final_global: Vec::new(),
            objectives: vec![0.0; lanes * 3],
            lane_results: vec![Slot::default(); lanes],
            lane_actions: vec![Action::Delta(0.0); lanes],
            rewards: vec![0.0; lanes],
            terminated: vec![false; lanes],
            truncated: vec![false; lanes],
            completed: vec![false; lanes],
            ready: vec![false; lanes],
            ready_lanes: Vec::with_capacity(lanes),
            infos: vec![StepInfo::default(); lanes],
            restarted: vec![false; n],
            envs,
            crew,
            obs_len,
            slots,
        };
        v.gather_observations();
        v.gather_objectives();
        Ok(v)
    }

    /// The same batch, gathering each ready lane's global state beside its observation (what a
    /// centralized critic reads during training; [`crate::env::global_state`]), and the global
    /// state each ended trajectory ended on.
    pub fn with_global_state(mut self) -> Self {
        self.global_len = crate::env::global_state_len(self.slots);
        let n = self.lanes() * self.global_len;
        self.global = vec![0.0; n];
        self.final_global = vec![0.0; n];
        self.gather_observations();
        self
    }

    /// Length of a lane's global state (0 unless [`VecEnv::with_global_state`]).
    pub fn global_state_len(&self) -> usize {
        self.global_len
    }

    /// Global states `[lanes, global_state_len]` (meaningful for ready lanes).
    pub fn global_states(&self) -> &[f32] {
        &self.global
    }

    /// The global states the trajectories that ended at the last step ended on.
    pub fn final_global_states(&self) -> &[f32] {
        &self.final_global
    }

    /// Number of envs.
    pub fn len(&self) -> usize {
        self.envs.len()
    }

    /// Never true (a batch holds at least one env).
    pub fn is_empty(&self) -> bool {
        self.envs.is_empty()
    }

    /// Lanes per env: the scenario's learned senders (1 without several).
    pub fn slots_per_env(&self) -> usize {
        self.slots
    }

    /// Number of lanes (`envs * slots_per_env`); lane `e * slots_per_env + k` is env `e`'s
    /// slot `k`.
    pub fn lanes(&self) -> usize {
        self.envs.len() * self.slots
    }

    /// Length of one observation.
    pub fn obs_len(&self) -> usize {
        self.obs_len
    }

    /// The envs (read-only).
    pub fn envs(&self) -> &[Env] {
        &self.envs
    }

    /// Current observations `[lanes, obs_len]` (meaningful for ready lanes).
    pub fn observations(&self) -> &[f32] {
        &self.obs
    }

    /// Final observations of the episodes that ended at the last step.
    pub fn final_observations(&self) -> &[f32] {
        &self.final_obs
    }

    /// Objectives `[lanes, 3]` (throughput, latency, loss weights).
    pub fn objectives(&self) -> &[f32] {
        &self.objectives
    }

    /// The lanes that need an action, in increasing order.
    pub fn ready_lanes(&self) -> &[usize] {
        &self.ready_lanes
    }

    /// Sets lane `lane`'s objective.
    pub fn set_objective(&mut self, lane: usize, w: [f64; 3]) {
        self.envs[lane / self.slots].set_slot_objective(lane % self.slots, w);
        for (k, x) in w.iter().enumerate() {
            self.objectives[lane * 3 + k] = *x as f32;
        }
    }

    /// Lane `lane`'s objective.
    pub fn objective(&self, lane: usize) -> [f64; 3] {
        self.envs[lane / self.slots].slot_objective(lane % self.slots)
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
        self.final_global.fill(0.0);
        self.restarted.fill(false);
        self.gather_observations();
        self.gather_objectives();
        Ok(())
    }

    /// Resets every env; env `i` is reseeded with (seed, i). Returns the observations.
    pub fn reset(&mut self, seed: u64) -> &[f32] {
        let envs: Vec<Mutex<&mut Env>> = self.envs.iter_mut().map(Mutex::new).collect();
        for_each_env(&mut self.crew, envs.len(), &|i| {
            lock(&envs[i]).reset(Some(seed))
        });
        self.restarted.fill(false);
        self.gather_observations();
        &self.obs
    }

    fn gather_observations(&mut self) {
        let d = self.obs_len;
        self.ready_lanes.clear();
        for (e, env) in self.envs.iter().enumerate() {
            for k in 0..self.slots {
                let lane = e * self.slots + k;
                let ready = env.slot_phase(k) == SlotPhase::Ready;
                self.ready[lane] = ready;
                if ready {
                    self.obs[lane * d..(lane + 1) * d].copy_from_slice(env.slot_observation(k));
                    let g = self.global_len;
                    if g > 0 {
                        env.slot_global_state(k, &mut self.global[lane * g..(lane + 1) * g]);
                    }
                    self.ready_lanes.push(lane);
                }
            }
        }
    }

    fn gather_objectives(&mut self) {
        for (e, env) in self.envs.iter().enumerate() {
            for k in 0..self.slots {
                let lane = e * self.slots + k;
                for (o, w) in self.objectives[lane * 3..lane * 3 + 3]
                    .iter_mut()
                    .zip(env.slot_objective(k))
                {
                    *o = w as f32;
                }
            }
        }
    }

    /// Steps every env with an action (an Aurora delta) for each ready lane, in the order of
    /// [`VecEnv::ready_lanes`], auto-resetting finished episodes.
    pub fn step(&mut self, actions: &[f32]) -> Result<VecStep<'_>, VecEnvError> {
        if actions.len() != self.ready_lanes.len() {
            return Err(VecEnvError::Shape {
                what: "actions (one per ready lane)",
                expected: self.ready_lanes.len(),
                got: actions.len(),
            });
        }
        for (&lane, &a) in self.ready_lanes.iter().zip(actions) {
            self.lane_actions[lane] = Action::Delta(f64::from(a));
        }
        self.step_lanes(StepUntil::AnyDecision);
        Ok(self.view())
    }

    /// Steps a batch of one learned sender per env as [`Env::step`] steps one env: every env
    /// takes `actions[env]` and runs until its sender decides again (a base-RTT probe that
    /// follows the MI runs to its end), so that after every step every lane is ready and has
    /// completed an MI (Gymnasium's synchronous vector API). Finished episodes auto-reset as in
    /// [`VecEnv::step`]. Scenarios with several learned senders decide at different times and
    /// need [`VecEnv::step`].
    pub fn step_every_env(&mut self, actions: &[f32]) -> Result<VecStep<'_>, VecEnvError> {
        if self.slots != 1 {
            return Err(VecEnvError::Setup(format!(
                "a synchronous step needs one learned sender per env; this scenario has {} \
                 (step the lanes that are ready instead)",
                self.slots
            )));
        }
        if actions.len() != self.envs.len() {
            return Err(VecEnvError::Shape {
                what: "actions (one per env)",
                expected: self.envs.len(),
                got: actions.len(),
            });
        }
        for (slot, &a) in self.lane_actions.iter_mut().zip(actions) {
            *slot = Action::Delta(f64::from(a));
        }
        self.step_lanes(StepUntil::SenderReady);
        Ok(self.view())
    }

    /// Steps every env with `action(lane)` for each ready lane.
    pub fn step_with(&mut self, action: impl Fn(usize) -> Action) {
        for &lane in &self.ready_lanes {
            self.lane_actions[lane] = action(lane);
        }
        self.step_lanes(StepUntil::AnyDecision);
    }

    /// Resets env `i` with `seeds(i)`: `Some(s)` reseeds it with (s, i), `None` continues its
    /// RNG (Gymnasium's `reset(seed=None)`). Returns the observations.
    pub fn reset_each(&mut self, seeds: impl Fn(usize) -> Option<u64> + Sync) -> &[f32] {
        let envs: Vec<Mutex<&mut Env>> = self.envs.iter_mut().map(Mutex::new).collect();
        for_each_env(&mut self.crew, envs.len(), &|i| {
            lock(&envs[i]).reset(seeds(i))
        });
        self.final_obs.fill(0.0);
        self.final_global.fill(0.0);
        self.restarted.fill(false);
        self.gather_observations();
        &self.obs
    }

    /// Whether envs step on the calling thread: with one worker thread or one env there is
    /// nothing to run in parallel. Results are the same either way (each env steps alone).
    fn inline(&self) -> bool {
        self.envs.len() == 1 || self.crew.size() == 1
    }

    /// Steps every env with the actions in `lane_actions` until `until`, then gathers the
    /// lanes' results.
    fn step_lanes(&mut self, until: StepUntil) {
        let d = self.obs_len;
        let g = self.global_len;
        let k = self.slots;
        let inline = self.inline();
        let envs = &mut self.envs;
        let results = &mut self.lane_results;
        let actions = &self.lane_actions;
        let restarted = &mut self.restarted;
        // Empty global buffers (not gathered) give every env an empty share.
        let global_share = (g * k).max(1);
        let mut globals = self.global.chunks_mut(global_share);
        let mut final_globals = self.final_global.chunks_mut(global_share);
        let buffers: Vec<LaneBuffers<'_>> = self
            .obs
            .chunks_exact_mut(d * k)
            .zip(self.final_obs.chunks_exact_mut(d * k))
            .map(|(obs, final_obs)| LaneBuffers {
                obs,
                final_obs,
                global: globals.next().unwrap_or_default(),
                final_global: final_globals.next().unwrap_or_default(),
                obs_len: d,
                global_len: g,
            })
            .collect();
        if inline {
            // One thread, or one env: the hand-off would be all the cost.
            envs.iter_mut()
                .zip(buffers)
                .zip(results.chunks_exact_mut(k))
                .zip(actions.chunks_exact(k))
                .zip(restarted.iter_mut())
                .for_each(|((((env, mut buf), res), acts), again)| {
                    *again = step_env(env, acts, res, &mut buf, until);
                });
        } else {
            let jobs: Vec<Mutex<EnvJob<'_>>> = envs
                .iter_mut()
                .zip(buffers)
                .zip(results.chunks_exact_mut(k))
                .zip(actions.chunks_exact(k))
                .zip(restarted.iter_mut())
                .map(|((((env, buffers), results), actions), restarted)| {
                    Mutex::new(EnvJob {
                        env,
                        buffers,
                        results,
                        actions,
                        restarted,
                    })
                })
                .collect();
            for_each_env(&mut self.crew, jobs.len(), &|i| {
                let mut job = lock(&jobs[i]);
                let EnvJob {
                    env,
                    buffers,
                    results,
                    actions,
                    restarted,
                } = &mut *job;
                **restarted = step_env(env, actions, results, buffers, until);
            });
        }
        self.ready_lanes.clear();
        for (lane, s) in self.lane_results.iter().enumerate() {
            self.completed[lane] = s.completed;
            self.ready[lane] = s.ready;
            if s.ready {
                self.ready_lanes.push(lane);
            }
            if s.completed {
                self.rewards[lane] = s.reward;
                self.terminated[lane] = s.terminated;
                self.truncated[lane] = s.truncated;
                self.infos[lane] = s.info;
            } else {
                self.rewards[lane] = 0.0;
                self.terminated[lane] = false;
                self.truncated[lane] = false;
            }
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
            completed: &self.completed,
            ready: &self.ready,
            restarted: &self.restarted,
        }
    }
}

/// An env's cell: each index is claimed once, so the lock is never contended; it only lets a
/// worker reach its env through a shared reference.
fn lock<T>(cell: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    cell.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One env and its lanes' buffers, for the step of one worker.
struct EnvJob<'a> {
    env: &'a mut Env,
    buffers: LaneBuffers<'a>,
    results: &'a mut [Slot],
    actions: &'a [Action],
    restarted: &'a mut bool,
}

/// One env's share of the batch's per-lane buffers (its slots' rows).
struct LaneBuffers<'a> {
    obs: &'a mut [f32],
    final_obs: &'a mut [f32],
    /// Empty when global states are not gathered.
    global: &'a mut [f32],
    final_global: &'a mut [f32],
    obs_len: usize,
    global_len: usize,
}

/// How far one env runs in a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepUntil {
    /// Until one of its senders decides or completes an MI.
    AnyDecision,
    /// Until its (one) learned sender decides again.
    SenderReady,
}

/// One env's step: its slots' actions, their completions (final observations where a
/// trajectory ended), an auto-reset when the episode is over, and the ready slots'
/// observations.
fn step_env(
    env: &mut Env,
    actions: &[Action],
    results: &mut [Slot],
    buf: &mut LaneBuffers<'_>,
    until: StepUntil,
) -> bool {
    let (d, g) = (buf.obs_len, buf.global_len);
    env.step_slots(actions);
    for (k, res) in results.iter_mut().enumerate() {
        *res = match env.slot_completion(k) {
            Some(step) => {
                if step.terminated || step.truncated {
                    buf.final_obs[k * d..(k + 1) * d].copy_from_slice(env.slot_observation(k));
                    if g > 0 {
                        env.slot_global_state(k, &mut buf.final_global[k * g..(k + 1) * g]);
                    }
                }
                Slot {
                    completed: true,
                    ready: false,
                    reward: step.reward as f32,
                    terminated: step.terminated,
                    truncated: step.truncated,
                    info: step.info,
                }
            }
            None => Slot::default(),
        };
    }
    if until == StepUntil::SenderReady {
        // A base-RTT probe after the MI runs to its end; only a ready slot takes an action,
        // and probe MIs complete nothing, so the repeated action is never applied.
        while env.slot_phase(0) == SlotPhase::Running {
            env.step_slots(actions);
            debug_assert!(
                env.slot_completion(0).is_none(),
                "a probe MI completed a step"
            );
        }
    }
    let restarted = env.episode_over();
    if restarted {
        env.reset(None);
    }
    for (k, res) in results.iter_mut().enumerate() {
        res.ready = env.slot_phase(k) == SlotPhase::Ready;
        if res.ready {
            buf.obs[k * d..(k + 1) * d].copy_from_slice(env.slot_observation(k));
            if g > 0 {
                env.slot_global_state(k, &mut buf.global[k * g..(k + 1) * g]);
            }
        }
    }
    restarted
}
