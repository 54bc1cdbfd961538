//! The runtime of exported policies from Python: `Policy` (an export folder, its mean action),
//! `Controller` (fed finished MIs, it returns the next pacing rate) and `PacketController`
//! (fed packet events, it cuts MIs by the gym's rule). Each is the `mocc_policy` type itself,
//! so its results are the Rust runtime's, bit for bit.

use crate::errors::{policy_error, value_error};
use mocc_policy::{MiLedger, Mode, MonitorInterval, PolicyDriver, RttSummary, OBJECTIVE_DIM};
use numpy::{PyArray1, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::Arc;

/// An exported policy (a folder with `policy.json` and `policy.safetensors`).
#[pyclass(module = "mocc._mocc", frozen)]
pub struct Policy {
    inner: Arc<mocc_policy::Policy>,
}

#[pymethods]
impl Policy {
    /// Loads and checks an export folder.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let policy = py
            .detach(|| mocc_policy::Policy::load(&path))
            .map_err(policy_error)?;
        Ok(Self {
            inner: Arc::new(policy),
        })
    }

    /// Length of the observation it reads (`history_len x features`).
    #[getter]
    fn obs_len(&self) -> usize {
        self.inner.obs_len()
    }

    /// Whether its actions depend on the objective (a MOCC policy).
    #[getter]
    fn takes_objective(&self) -> bool {
        self.inner.takes_objective()
    }

    /// The features of one MI, in order.
    #[getter]
    fn features(&self) -> Vec<&'static str> {
        self.inner.features().names()
    }

    /// MIs in the history.
    #[getter]
    fn history_len(&self) -> usize {
        self.inner.spec().observation.config.history_len
    }

    /// The objective it acts for when given none.
    #[getter]
    fn default_objective(&self) -> [f64; OBJECTIVE_DIM] {
        self.inner.spec().default_objective
    }

    /// Whether it is a pair (a cooperative and a competitive policy and the switch between).
    #[getter]
    fn paired(&self) -> bool {
        self.inner.competitive().is_some()
    }

    /// The action rule's rate step and limits: `(delta_scale, min_rate_pps, max_rate_pps)`.
    #[getter]
    fn rate_rule(&self) -> (f64, f64, f64) {
        let r = self.inner.action_rule();
        (r.delta_scale, r.min_rate_pps, r.max_rate_pps)
    }

    /// The export folder.
    #[getter]
    fn source(&self) -> PathBuf {
        self.inner.source().to_path_buf()
    }

    /// The deterministic action (the Gaussian's mean) for raw observations: `obs` is one row
    /// (`[obs_len]`, returns a float) or a batch (`[n, obs_len]`, returns `[n]`). `objective`
    /// is one row of 3 weights or `[n, 3]`; `None` takes the policy's default, or the last 3
    /// values of rows of `obs_len + 3` (what `mocc.make_vec` observes in MOCC scenarios).
    /// `mode` picks a pair's policy: `"cooperative"` (default) or `"competitive"`.
    #[pyo3(signature = (obs, objective=None, mode="cooperative"))]
    fn act<'py>(
        &self,
        py: Python<'py>,
        obs: PyReadonlyArrayDyn<'py, f32>,
        objective: Option<PyReadonlyArrayDyn<'py, f64>>,
        mode: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mode = parse_mode(mode)?;
        let d = self.inner.obs_len();
        let shape = obs.shape().to_vec();
        let (rows, width, single) = match shape.as_slice() {
            [w] => (1, *w, true),
            [n, w] => (*n, *w, false),
            _ => {
                return Err(value_error(format!(
                    "obs: expected 1 or 2 dimensions, got {shape:?}"
                )))
            }
        };
        let embedded = width == d + OBJECTIVE_DIM;
        if width != d && !embedded {
            return Err(value_error(format!(
                "obs: rows of {d} values (or {} with the objective at the end), got {width}",
                d + OBJECTIVE_DIM
            )));
        }
        let obs = obs.as_array();
        let flat: Vec<f32> = obs.iter().copied().collect();
        let objectives =
            self.objectives_for(rows, objective, embedded.then_some(&flat[..]), width)?;
        let mut ws = self.inner.workspace();
        let actions: Vec<f32> = (0..rows)
            .map(|i| {
                let row = &flat[i * width..i * width + d];
                self.inner
                    .mean_action_in(mode, row, &objectives[i], &mut ws)
            })
            .collect();
        if single {
            Ok(actions[0].into_pyobject(py)?.into_any())
        } else {
            Ok(PyArray1::from_vec(py, actions).into_any())
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "Policy({:?}, obs_len={}, takes_objective={})",
            self.inner.source(),
            self.inner.obs_len(),
            self.inner.takes_objective()
        )
    }
}

impl Policy {
    /// One objective input per row: given, embedded at the end of the rows, or the default.
    fn objectives_for(
        &self,
        rows: usize,
        objective: Option<PyReadonlyArrayDyn<'_, f64>>,
        embedded: Option<&[f32]>,
        width: usize,
    ) -> PyResult<Vec<[f32; OBJECTIVE_DIM]>> {
        if let Some(w) = objective {
            let shape = w.shape().to_vec();
            let values: Vec<f64> = w.as_array().iter().copied().collect();
            let per_row = match shape.as_slice() {
                [3] => false,
                [n, 3] if *n == rows => true,
                _ => {
                    return Err(value_error(format!(
                        "objective: expected shape (3,) or ({rows}, 3), got {shape:?}"
                    )))
                }
            };
            return (0..rows)
                .map(|i| {
                    let k = if per_row { i * 3 } else { 0 };
                    let w = [values[k], values[k + 1], values[k + 2]];
                    mocc_policy::objective::validate(&w)
                        .map_err(|m| value_error(format!("objective: {m}")))?;
                    Ok(w.map(|x| x as f32))
                })
                .collect();
        }
        if let Some(flat) = embedded {
            let d = width - OBJECTIVE_DIM;
            return Ok((0..rows)
                .map(|i| {
                    let w = &flat[i * width + d..(i + 1) * width];
                    [w[0], w[1], w[2]]
                })
                .collect());
        }
        Ok(vec![
            self.inner.spec().default_objective.map(|x| x as f32);
            rows
        ])
    }
}

fn parse_mode(mode: &str) -> PyResult<Mode> {
    match mode {
        "cooperative" => Ok(Mode::Cooperative),
        "competitive" => Ok(Mode::Competitive),
        other => Err(value_error(format!(
            "mode: expected \"cooperative\" or \"competitive\", got {other:?}"
        ))),
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Cooperative => "cooperative",
        Mode::Competitive => "competitive",
    }
}

/// The objective given, or the policy's default; checked.
fn objective_or_default(
    policy: &mocc_policy::Policy,
    objective: Option<[f64; OBJECTIVE_DIM]>,
) -> PyResult<[f64; OBJECTIVE_DIM]> {
    let w = objective.unwrap_or(policy.spec().default_objective);
    mocc_policy::objective::validate(&w).map_err(|m| value_error(format!("objective: {m}")))?;
    Ok(w)
}

/// One connection's rate controller, fed one finished MI at a time (`mocc_policy::Controller`).
#[pyclass(module = "mocc._mocc")]
pub struct Controller {
    inner: mocc_policy::Controller,
}

#[pymethods]
impl Controller {
    /// A controller of `policy` for `objective` (3 weights; default: the policy's). Call
    /// `start` before the first MI.
    #[new]
    #[pyo3(signature = (policy, objective=None))]
    fn new(policy: &Policy, objective: Option<[f64; OBJECTIVE_DIM]>) -> PyResult<Self> {
        let w = objective_or_default(&policy.inner, objective)?;
        let inner = mocc_policy::Controller::new(policy.inner.clone(), w)
            .map_err(|e| value_error(format!("objective: {e}")))?;
        Ok(Self { inner })
    }

    /// Starts a connection at `start_rate_pps` on a path whose one-way delay is estimated at
    /// `one_way_delay_s` (0: unknown); returns the first MI's rate (packets/s).
    #[pyo3(signature = (start_rate_pps, one_way_delay_s=0.0))]
    fn start(&mut self, start_rate_pps: f64, one_way_delay_s: f64) -> f64 {
        self.inner.start(start_rate_pps, one_way_delay_s)
    }

    /// Folds in a finished MI and returns the next MI's rate (packets/s). Times in seconds;
    /// the receive span defaults to the send span (as the gym forms MIs). RTTs are either the
    /// samples in arrival order (`rtt_samples`) or their summary `rtt = (count, mean_s,
    /// first_half_mean_s, second_half_mean_s)`.
    #[pyo3(signature = (bytes_sent, bytes_acked, bytes_lost, send_start_s, send_end_s,
                        recv_start_s=None, recv_end_s=None, rtt_samples=None, rtt=None))]
    #[allow(clippy::too_many_arguments)]
    fn on_monitor_interval(
        &mut self,
        bytes_sent: f64,
        bytes_acked: f64,
        bytes_lost: f64,
        send_start_s: f64,
        send_end_s: f64,
        recv_start_s: Option<f64>,
        recv_end_s: Option<f64>,
        rtt_samples: Option<Vec<f64>>,
        rtt: Option<(u64, f64, f64, f64)>,
    ) -> PyResult<f64> {
        let rtt = match (rtt_samples, rtt) {
            (Some(_), Some(_)) => {
                return Err(value_error("give rtt_samples or rtt, not both"));
            }
            (Some(samples), None) => RttSummary::from_samples(&samples),
            (None, Some((count, mean_s, first_half_mean_s, second_half_mean_s))) => RttSummary {
                count,
                mean_s,
                first_half_mean_s,
                second_half_mean_s,
            },
            (None, None) => RttSummary::default(),
        };
        let mi = MonitorInterval {
            bytes_sent,
            bytes_acked,
            bytes_lost,
            send_start_s,
            send_end_s,
            recv_start_s: recv_start_s.unwrap_or(send_start_s),
            recv_end_s: recv_end_s.unwrap_or(send_end_s),
            rtt,
            // A caller's own MIs carry no acknowledgement times (`on_acked`'s do).
            ack_span: None,
            train_pps: None,
        };
        Ok(self.inner.on_monitor_interval(&mi))
    }

    /// Switches the objective (from the next decision on).
    fn set_objective(&mut self, objective: [f64; OBJECTIVE_DIM]) -> PyResult<()> {
        self.inner
            .set_objective(objective)
            .map_err(|e| value_error(format!("objective: {e}")))
    }

    /// The objective in force.
    #[getter]
    fn objective(&self) -> [f64; OBJECTIVE_DIM] {
        self.inner.objective()
    }

    /// The pacing rate now (packets/s): the agent's, or a base-RTT probe's share of it.
    #[getter]
    fn rate_pps(&self) -> f64 {
        self.inner.rate_pps()
    }

    /// The rate the agent last chose (packets/s).
    #[getter]
    fn agent_rate_pps(&self) -> f64 {
        self.inner.agent_rate_pps()
    }

    /// Whether the next MI is a base-RTT probe MI.
    #[getter]
    fn probing(&self) -> bool {
        self.inner.probing()
    }

    /// Which of a pair's policies takes the next decision.
    #[getter]
    fn mode(&self) -> &'static str {
        mode_name(self.inner.mode())
    }

    /// The last action (before the rate rule), or `None` before the first decision.
    #[getter]
    fn last_action(&self) -> Option<f32> {
        self.inner.last_action()
    }

    /// Length of the next MI at the current rate (s).
    #[getter]
    fn mi_duration_s(&self) -> f64 {
        self.inner.mi_duration_s()
    }

    /// The raw observation the next decision will see.
    fn observation<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, self.inner.observation())
    }
}

/// One connection's controller fed packet events (`mocc_policy::MiLedger` over the policy):
/// it cuts MIs by the gym's rule and returns each closed MI's next rate.
#[pyclass(module = "mocc._mocc")]
pub struct PacketController {
    inner: MiLedger<PolicyDriver>,
}

#[pymethods]
impl PacketController {
    /// A controller of `policy` for `objective` (default: the policy's) that starts at
    /// `start_rate_pps`. Call `start` before the first packet.
    #[new]
    #[pyo3(signature = (policy, start_rate_pps, objective=None))]
    fn new(
        policy: &Policy,
        start_rate_pps: f64,
        objective: Option<[f64; OBJECTIVE_DIM]>,
    ) -> PyResult<Self> {
        let w = objective_or_default(&policy.inner, objective)?;
        let controller = mocc_policy::Controller::new(policy.inner.clone(), w)
            .map_err(|e| value_error(format!("objective: {e}")))?;
        Ok(Self {
            inner: MiLedger::new(PolicyDriver::new(controller, start_rate_pps)),
        })
    }

    /// Starts the first MI at `now_s` (any clock in seconds), the one-way delay estimated at
    /// `one_way_delay_s` (0: unknown); returns the rate to send at (packets/s).
    #[pyo3(signature = (now_s, one_way_delay_s=0.0))]
    fn start(&mut self, now_s: f64, one_way_delay_s: f64) -> f64 {
        self.inner.start(now_s, one_way_delay_s)
    }

    /// A packet left at `t`. Returns the MI it closed (a dict), or `None`. A transport that
    /// knows passes `app_limited=True` when the packet left its application with no more data
    /// waiting: while the application limits the sender the rate is held (it grows to at most
    /// twice what the application sends).
    #[pyo3(signature = (t, app_limited=false))]
    fn on_sent<'py>(
        &mut self,
        py: Python<'py>,
        t: f64,
        app_limited: bool,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        closed_mi(py, self.inner.on_sent_limited(t, app_limited))
    }

    /// A packet was acknowledged at `t` with an RTT sample `rtt_s`. Returns the MI it closed.
    fn on_acked<'py>(
        &mut self,
        py: Python<'py>,
        t: f64,
        rtt_s: f64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        closed_mi(py, self.inner.on_acked(t, rtt_s))
    }

    /// `n` packets were found lost at `t`. Returns the MI it closed.
    #[pyo3(signature = (t, n=1))]
    fn on_lost<'py>(
        &mut self,
        py: Python<'py>,
        t: f64,
        n: u64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        closed_mi(py, self.inner.on_lost(t, n))
    }

    /// From now on no event closes the MI in progress (the flow stopped sending).
    fn hold(&mut self) {
        self.inner.hold();
    }

    /// Switches the objective (from the next decision on).
    fn set_objective(&mut self, objective: [f64; OBJECTIVE_DIM]) -> PyResult<()> {
        self.inner
            .driver_mut()
            .controller_mut()
            .set_objective(objective)
            .map_err(|e| value_error(format!("objective: {e}")))
    }

    /// The rate to send at (packets/s).
    #[getter]
    fn rate_pps(&self) -> f64 {
        self.inner.rate_pps()
    }

    /// When the MI in progress ends at the earliest (its first event at or after this closes
    /// it).
    #[getter]
    fn mi_end_s(&self) -> f64 {
        self.inner.mi_end_s()
    }

    /// The last action, or `None` before the first decision.
    #[getter]
    fn last_action(&self) -> Option<f32> {
        self.inner.driver().controller().last_action()
    }
}

/// A closed MI as a dict: the statistics the controller got, the rate it was sent at and the
/// next rate.
fn closed_mi<'py>(
    py: Python<'py>,
    closed: Option<mocc_policy::ClosedMi>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(c) = closed else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    let mi = &c.mi;
    d.set_item("bytes_sent", mi.bytes_sent)?;
    d.set_item("bytes_acked", mi.bytes_acked)?;
    d.set_item("bytes_lost", mi.bytes_lost)?;
    d.set_item("send_start_s", mi.send_start_s)?;
    d.set_item("send_end_s", mi.send_end_s)?;
    d.set_item("recv_start_s", mi.recv_start_s)?;
    d.set_item("recv_end_s", mi.recv_end_s)?;
    d.set_item(
        "rtt",
        (
            mi.rtt.count,
            mi.rtt.mean_s,
            mi.rtt.first_half_mean_s,
            mi.rtt.second_half_mean_s,
        ),
    )?;
    d.set_item("rate_pps", c.rate_pps)?;
    d.set_item("next_rate_pps", c.next_rate_pps)?;
    d.set_item("app_limit", c.app_limit.as_str())?;
    Ok(Some(d))
}
