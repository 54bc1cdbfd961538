//! `mocc._mocc.VecEnv`: a batch of simulated networks of one scenario file, stepped in Rust
//! with the GIL released, its results written once into fresh NumPy arrays.
//!
//! Two ways to step: [`VecEnv::step`] (one learned sender per env; every env takes an action
//! and runs until its sender decides again: Gymnasium's synchronous vector API) and
//! [`VecEnv::step_lanes`] (any number of learned senders; only the lanes that are ready act,
//! as senders with their own MI clocks decide at different times: PettingZoo's AEC API).

use crate::errors::{scenario_error, value_error};
use mocc_gym::{RewardKind, Scenario, SlotPhase, StepInfo, VecStep};
use mocc_policy::OBJECTIVE_DIM;
use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::path::PathBuf;
use std::sync::Arc;

/// The columns of a step's statistics, `STEP_INFO_NAMES` in Python.
const INFO_COLUMNS: usize = StepInfo::FIELD_NAMES.len();

/// A batch of `num_envs` environments of one scenario (see the module docs).
#[pyclass(module = "mocc._mocc")]
pub struct VecEnv {
    inner: mocc_gym::VecEnv,
    scenario: Arc<Scenario>,
    path: PathBuf,
    /// Whether observations end with the lane's objective (MOCC scenarios).
    with_objective: bool,
}

#[pymethods]
impl VecEnv {
    /// `num_envs` envs of the scenario file `scenario` (the YAML the CLI reads), env `i` seeded
    /// with (`seed`, `first_env + i`), stepped by `threads` threads (the caller's included):
    /// `first_env` picks the envs `first_env..first_env + num_envs` of a larger batch, so that
    /// single envs built one by one are the envs of one batch. `episode_mis`
    /// overrides the scenario's episode length. `objective_in_obs` appends each lane's
    /// objective to its observation (default: for `reward: mocc` scenarios).
    #[new]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments
    #[pyo3(signature = (scenario, num_envs, seed=0, threads=1, episode_mis=None,
                        objective_in_obs=None, first_env=0))]
    fn new(
        py: Python<'_>,
        scenario: PathBuf,
        num_envs: usize,
        seed: u64,
        threads: usize,
        episode_mis: Option<u32>,
        objective_in_obs: Option<bool>,
        first_env: usize,
    ) -> PyResult<Self> {
        let mut loaded = Scenario::load(&scenario).map_err(scenario_error)?;
        if let Some(mis) = episode_mis {
            if mis == 0 {
                return Err(value_error("episode_mis: must be at least 1"));
            }
            loaded = loaded.with_episode_mis(mis);
        }
        let loaded = Arc::new(loaded);
        let with_objective = objective_in_obs.unwrap_or(loaded.config().reward == RewardKind::Mocc);
        let batch = loaded.clone();
        let inner = py
            .detach(move || mocc_gym::VecEnv::new_from(batch, first_env, num_envs, seed, threads))
            .map_err(|e| value_error(e.to_string()))?;
        Ok(Self {
            inner,
            scenario: loaded,
            path: scenario,
            with_objective,
        })
    }

    /// Number of envs.
    #[getter]
    fn num_envs(&self) -> usize {
        self.inner.len()
    }

    /// Learned senders per env (lanes per env).
    #[getter]
    fn slots_per_env(&self) -> usize {
        self.inner.slots_per_env()
    }

    /// Number of lanes (`num_envs * slots_per_env`); lane `e * slots_per_env + k` is env `e`'s
    /// learned sender `k`.
    #[getter]
    fn lanes(&self) -> usize {
        self.inner.lanes()
    }

    /// Length of an observation row: the history (`history_len x features`, oldest MI first),
    /// then the 3 objective weights where `objective_in_obs`.
    #[getter]
    fn obs_len(&self) -> usize {
        self.row_len()
    }

    /// Length of the history part of an observation.
    #[getter]
    fn history_obs_len(&self) -> usize {
        self.inner.obs_len()
    }

    /// MIs in the history.
    #[getter]
    fn history_len(&self) -> usize {
        self.scenario.config().observation.history_len
    }

    /// The features of one MI, in order.
    #[getter]
    fn features(&self) -> Vec<&'static str> {
        self.scenario.config().observation.features.names()
    }

    /// Whether observations end with the objective.
    #[getter]
    fn objective_in_obs(&self) -> bool {
        self.with_objective
    }

    /// The scenario's reward: `"aurora"`, `"mocc"`, `"astraea"` or `"orca"`.
    #[getter]
    fn reward(&self) -> &'static str {
        match self.scenario.config().reward {
            RewardKind::Aurora => "aurora",
            RewardKind::Mocc => "mocc",
            RewardKind::Astraea => "astraea",
            RewardKind::Orca => "orca",
        }
    }

    /// MIs per episode (a truncation).
    #[getter]
    fn episode_mis(&self) -> u32 {
        self.scenario.config().episode_mis
    }

    /// The action rule's scale: an action `a` changes the rate by `delta_scale * a`.
    #[getter]
    fn delta_scale(&self) -> f64 {
        self.scenario.action_rule().delta_scale
    }

    /// The largest action that still changes anything: one that takes the rate from the rule's
    /// minimum to its maximum in one MI, `(max_rate / min_rate - 1) / delta_scale`; larger ones
    /// act as it does (the rule clamps the rate).
    #[getter]
    fn action_bound(&self) -> f64 {
        let rule = self.scenario.action_rule();
        (rule.max_rate_pps / rule.min_rate_pps - 1.0) / rule.delta_scale
    }

    /// The scenario file.
    #[getter]
    fn scenario(&self) -> PathBuf {
        self.path.clone()
    }

    /// The objective every lane starts with (the scenario's `objective`).
    #[getter]
    fn default_objective(&self) -> [f64; OBJECTIVE_DIM] {
        self.scenario.config().objective
    }

    /// Resets env `i` with `seeds[i]` (`None`: its RNG continues) and returns the observations
    /// `[lanes, obs_len]` (rows of lanes that are not ready are zeros).
    #[pyo3(signature = (seeds=None))]
    fn reset<'py>(
        &mut self,
        py: Python<'py>,
        seeds: Option<Vec<Option<u64>>>,
    ) -> PyResult<Bound<'py, PyArray2<f32>>> {
        let seeds = seeds.unwrap_or_else(|| vec![None; self.inner.len()]);
        if seeds.len() != self.inner.len() {
            return Err(value_error(format!(
                "seeds: expected {} values (one per env), got {}",
                self.inner.len(),
                seeds.len()
            )));
        }
        let inner = &mut self.inner;
        py.detach(|| {
            inner.reset_each(|i| seeds[i]);
        });
        Ok(self.observation_array(py, self.inner.observations(), None))
    }

    /// One synchronous step (one learned sender per env): `actions[i]` for env `i`, each env
    /// running until its sender decides again. Returns `(obs, rewards, terminated, truncated,
    /// infos, final_obs)`: `obs [num_envs, obs_len]` (a new episode's first where one ended),
    /// rewards (float64), the two flags, `infos [num_envs, len(STEP_INFO_NAMES)]` (the MI's
    /// statistics), and `final_obs [num_envs, obs_len]` (the ended episodes' last
    /// observations, meaningful where an episode ended) or `None` when none did.
    fn step<'py>(
        &mut self,
        py: Python<'py>,
        actions: PyReadonlyArray1<'py, f32>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        self.run(py, &actions, |v, a| v.step_every_env(a).map(|_| ()))?;
        let step = self.inner.view();
        let out = self.step_arrays(py, &step, None);
        PyTuple::new(py, out)
    }

    /// One step of the lanes that are ready (any number of learned senders): `actions` holds
    /// one action per lane of `ready_lanes()`, in order. Each env runs until one of its senders
    /// decides or completes an MI. Returns `(obs, rewards, terminated, truncated, infos,
    /// final_obs, completed, ready, restarted)`: per lane the first six as for `step` (rewards,
    /// flags and infos meaningful where `completed`, observations where `ready`), `completed`
    /// (the lane's MI closed in this step) and `ready` (it acts next); per env `restarted` (its
    /// episode ended, every learned sender done, and it began the next one, which `ready` and
    /// the observations already show).
    fn step_lanes<'py>(
        &mut self,
        py: Python<'py>,
        actions: PyReadonlyArray1<'py, f32>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        self.run(py, &actions, |v, a| v.step(a).map(|_| ()))?;
        let step = self.inner.view();
        let ready = step.ready.to_vec();
        let mut out = self.step_arrays(py, &step, Some(&ready));
        out.push(PyArray1::from_slice(py, step.completed).into_any());
        out.push(PyArray1::from_slice(py, step.ready).into_any());
        out.push(PyArray1::from_slice(py, step.restarted).into_any());
        PyTuple::new(py, out)
    }

    /// The lanes that act next, in increasing order.
    fn ready_lanes<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<usize>> {
        PyArray1::from_slice(py, self.inner.ready_lanes())
    }

    /// Where each lane's sender stands: `"absent"` (not in this episode), `"waiting"` (starts
    /// later), `"running"` (an MI is in progress), `"ready"` (acts next) or `"done"`.
    fn phases(&self) -> Vec<&'static str> {
        let k = self.inner.slots_per_env();
        (0..self.inner.lanes())
            .map(|lane| phase_name(self.inner.envs()[lane / k].slot_phase(lane % k)))
            .collect()
    }

    /// The lanes' objectives `[lanes, 3]` (throughput, latency, loss weights), as set (float64:
    /// a row read and set back is unchanged).
    fn objectives<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let rows: Vec<f64> = (0..self.inner.lanes())
            .flat_map(|lane| self.inner.objective(lane))
            .collect();
        PyArray1::from_vec(py, rows).reshape([self.inner.lanes(), OBJECTIVE_DIM])
    }

    /// Sets the lanes' objectives from `[lanes, 3]` weights (each row positive, summing to 1);
    /// they weigh the rewards of MIs that close from now on.
    fn set_objectives(&mut self, objectives: PyReadonlyArray2<'_, f64>) -> PyResult<()> {
        let lanes = self.inner.lanes();
        let shape = objectives.shape();
        if shape != [lanes, OBJECTIVE_DIM] {
            return Err(value_error(format!(
                "objectives: expected shape ({lanes}, {OBJECTIVE_DIM}), got {shape:?}"
            )));
        }
        let rows = objectives.as_array();
        let mut ws = Vec::with_capacity(lanes);
        for (lane, row) in rows.outer_iter().enumerate() {
            let w = [row[0], row[1], row[2]];
            mocc_policy::objective::validate(&w)
                .map_err(|m| value_error(format!("objectives[{lane}]: {m}")))?;
            ws.push(w);
        }
        for (lane, w) in ws.into_iter().enumerate() {
            self.inner.set_objective(lane, w);
        }
        Ok(())
    }

    /// Observations `[lanes, obs_len]` as they stand (rows of lanes that are not ready are
    /// zeros).
    fn observations<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<f32>> {
        let ready = self.inner.view().ready.to_vec();
        self.observation_array(py, self.inner.observations(), Some(&ready))
    }

    /// Simulation work so far, summed over envs: `(events, packets)`.
    fn counters(&self) -> (u64, u64) {
        let c = self.inner.counters();
        (c.events, c.packets)
    }

    fn __repr__(&self) -> String {
        format!(
            "VecEnv(scenario={:?}, num_envs={}, slots_per_env={}, obs_len={})",
            self.path,
            self.inner.len(),
            self.inner.slots_per_env(),
            self.row_len()
        )
    }
}

impl VecEnv {
    /// Runs `step` on the batch with a copy of `actions`, the GIL released.
    fn run(
        &mut self,
        py: Python<'_>,
        actions: &PyReadonlyArray1<'_, f32>,
        step: impl FnOnce(&mut mocc_gym::VecEnv, &[f32]) -> Result<(), mocc_gym::VecEnvError> + Send,
    ) -> PyResult<()> {
        let actions = actions
            .as_slice()
            .map_err(|e| value_error(format!("actions: {e}")))?
            .to_vec();
        let inner = &mut self.inner;
        py.detach(|| step(inner, &actions))
            .map_err(|e| value_error(e.to_string()))
    }

    fn row_len(&self) -> usize {
        self.inner.obs_len()
            + if self.with_objective {
                OBJECTIVE_DIM
            } else {
                0
            }
    }

    /// `[lanes, obs_len]` rows from `history` (`[lanes, history_obs_len]`) and the lanes'
    /// objectives; rows of lanes outside `only` (where given) are zeros.
    fn observation_array<'py>(
        &self,
        py: Python<'py>,
        history: &[f32],
        only: Option<&[bool]>,
    ) -> Bound<'py, PyArray2<f32>> {
        let lanes = self.inner.lanes();
        let d = self.inner.obs_len();
        let row = self.row_len();
        let array = PyArray2::<f32>::zeros(py, [lanes, row], false);
        {
            // SAFETY: the array was just created here and no other reference to it exists.
            let out = unsafe { array.as_slice_mut() }.expect("a new array is contiguous");
            let objectives = self.inner.objectives();
            for (lane, dst) in out.chunks_exact_mut(row).enumerate() {
                if only.is_some_and(|keep| !keep[lane]) {
                    continue;
                }
                dst[..d].copy_from_slice(&history[lane * d..(lane + 1) * d]);
                if self.with_objective {
                    dst[d..].copy_from_slice(&objectives[lane * 3..lane * 3 + 3]);
                }
            }
        }
        array
    }

    /// A step's first six results (see [`VecEnv::step`]).
    fn step_arrays<'py>(
        &self,
        py: Python<'py>,
        step: &VecStep<'_>,
        ready: Option<&[bool]>,
    ) -> Vec<Bound<'py, PyAny>> {
        let lanes = self.inner.lanes();
        let ended: Vec<bool> = (0..lanes)
            .map(|i| step.terminated[i] || step.truncated[i])
            .collect();
        let rewards: Vec<f64> = (0..lanes)
            .map(|i| {
                if step.completed[i] {
                    step.infos[i].reward
                } else {
                    0.0
                }
            })
            .collect();
        let infos = PyArray2::<f64>::zeros(py, [lanes, INFO_COLUMNS], false);
        {
            // SAFETY: the array was just created here and no other reference to it exists.
            let out = unsafe { infos.as_slice_mut() }.expect("a new array is contiguous");
            for (dst, info) in out.chunks_exact_mut(INFO_COLUMNS).zip(step.infos) {
                dst.copy_from_slice(&info.fields());
            }
        }
        let final_obs = if ended.iter().any(|&e| e) {
            self.observation_array(py, step.final_observations, Some(&ended))
                .into_any()
        } else {
            py.None().into_bound(py)
        };
        vec![
            self.observation_array(py, step.observations, ready)
                .into_any(),
            PyArray1::from_vec(py, rewards).into_any(),
            PyArray1::from_slice(py, step.terminated).into_any(),
            PyArray1::from_slice(py, step.truncated).into_any(),
            infos.into_any(),
            final_obs,
        ]
    }
}

fn phase_name(phase: SlotPhase) -> &'static str {
    match phase {
        SlotPhase::Absent => "absent",
        SlotPhase::Waiting => "waiting",
        SlotPhase::Running => "running",
        SlotPhase::Ready => "ready",
        SlotPhase::Done => "done",
    }
}

/// What the Rust `VecEnv` itself observes on `scenario` with `num_envs` envs seeded with
/// `seed` and stepped synchronously with `actions[t]` at step `t`: the observations before the
/// first step and after every step, `[steps + 1, num_envs, history_obs_len]`, and the rewards
/// `[steps, num_envs]` (float32, as the Rust trainer reads them). No Python runs between steps:
/// the reference the package's tests compare the Python classes against.
#[pyfunction]
#[pyo3(signature = (scenario, num_envs, seed, actions, episode_mis=None))]
pub fn reference_rollout<'py>(
    py: Python<'py>,
    scenario: PathBuf,
    num_envs: usize,
    seed: u64,
    actions: PyReadonlyArray2<'py, f32>,
    episode_mis: Option<u32>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let mut loaded = Scenario::load(&scenario).map_err(scenario_error)?;
    if let Some(mis) = episode_mis {
        loaded = loaded.with_episode_mis(mis);
    }
    let shape = actions.shape();
    if shape[1] != num_envs {
        return Err(value_error(format!(
            "actions: expected shape (steps, {num_envs}), got {shape:?}"
        )));
    }
    let steps = shape[0];
    let actions = actions.as_array().iter().copied().collect::<Vec<f32>>();
    let run = py.detach(move || -> Result<(Vec<f32>, Vec<f32>), String> {
        let mut v = mocc_gym::VecEnv::new(Arc::new(loaded), num_envs, seed, 1)
            .map_err(|e| e.to_string())?;
        let mut obs = v.observations().to_vec();
        let mut rewards = Vec::with_capacity(steps * num_envs);
        for t in 0..steps {
            let step = v
                .step_every_env(&actions[t * num_envs..(t + 1) * num_envs])
                .map_err(|e| e.to_string())?;
            obs.extend_from_slice(step.observations);
            rewards.extend_from_slice(step.rewards);
        }
        Ok((obs, rewards))
    });
    let (obs, rewards) = run.map_err(value_error)?;
    let d = obs.len() / ((steps + 1) * num_envs);
    let obs = PyArray1::from_vec(py, obs).reshape([steps + 1, num_envs, d])?;
    let rewards = PyArray1::from_vec(py, rewards).reshape([steps, num_envs])?;
    Ok((obs.into_any(), rewards.into_any()))
}
