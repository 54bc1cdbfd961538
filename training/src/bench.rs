//! `mocc bench env`: simulator throughput on a VecEnv with a constant action; `mocc bench train`:
//! learning throughput at a number of learned flows per bottleneck; `mocc bench
//! policy`: the runtime's decision latency; `mocc bench numerics`: this machine's numerics
//! fingerprints and the cost of portable numerics.

use mocc_eval::results::median;
use mocc_gym::{Scenario, VecEnv, VecEnvError};
use mocc_policy::Mode;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// What to measure.
#[derive(Debug, Clone)]
pub struct EnvBenchSpec {
    /// The scenario.
    pub scenario: Arc<Scenario>,
    /// Envs in the batch.
    pub envs: usize,
    /// Worker threads.
    pub threads: usize,
    /// Total env steps (rounded up to a multiple of `envs`).
    pub steps: u64,
    /// Constant action.
    pub action: f32,
    /// Seed.
    pub seed: u64,
}

/// Measured rates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EnvBenchReport {
    /// Env steps (MIs) per second, auto-resets included.
    pub env_steps_per_sec: f64,
    /// Simulator events (sends, ack and loss arrivals) per second.
    pub events_per_sec: f64,
    /// Packets sent per second.
    pub packets_per_sec: f64,
    /// Env steps taken.
    pub env_steps: u64,
    /// Wall seconds of the stepping loop.
    pub wall_seconds: f64,
    /// Envs.
    pub envs: usize,
    /// Threads.
    pub threads: usize,
}

/// Steps a fresh VecEnv and reports rates (construction and initial reset are not timed). An
/// env step is a completed MI of a learned sender (one per env and step with one learned
/// sender; with several, every ready lane acts and each completion counts).
pub fn bench_env(spec: &EnvBenchSpec) -> Result<EnvBenchReport, VecEnvError> {
    let mut venv = VecEnv::new(spec.scenario.clone(), spec.envs, spec.seed, spec.threads)?;
    let mut actions = vec![spec.action; venv.lanes()];
    let iterations = spec.steps.div_ceil(spec.envs as u64).max(1);
    let before = venv.counters();
    let mut env_steps = 0u64;
    let start = Instant::now();
    for _ in 0..iterations {
        let ready = venv.ready_lanes().len();
        actions.resize(ready, spec.action);
        let step = venv.step(&actions)?;
        env_steps += step.completed.iter().filter(|&&c| c).count() as u64;
    }
    let wall = start.elapsed().as_secs_f64().max(1e-12);
    let after = venv.counters();
    Ok(EnvBenchReport {
        env_steps_per_sec: env_steps as f64 / wall,
        events_per_sec: (after.events - before.events) as f64 / wall,
        packets_per_sec: (after.packets - before.packets) as f64 / wall,
        env_steps,
        wall_seconds: wall,
        envs: spec.envs,
        threads: spec.threads,
    })
}

/// What `mocc bench policy` measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PolicyBenchReport {
    /// Median wall nanoseconds per `Controller::on_monitor_interval` call (features, history,
    /// normalization, network, rate rule) over the repeats.
    pub ns_per_decision: f64,
    /// Fastest repeat's nanoseconds per decision.
    pub min_ns_per_decision: f64,
    /// Decisions per repeat.
    pub decisions: u64,
    /// Timed repeats.
    pub repeats: u32,
    /// Observation length of the policy.
    pub obs_len: usize,
    /// Whether the policy takes the objective.
    pub takes_objective: bool,
    /// With a checkpoint to compare: median nanoseconds per batch-1 decision of the libtorch
    /// model (normalization and forward pass, as `mocc eval` runs checkpoints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tch_ns_per_decision: Option<f64>,
    /// `tch_ns_per_decision / ns_per_decision`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup_vs_tch: Option<f64>,
}

/// Records the MIs of one episode in which the policy itself drives a sender over a fixed
/// link (bw 500 pkt/s, 30 ms one-way delay, 50-packet queue): realistic controller inputs,
/// every MI the sender closes in order. With base-RTT probes the probe's MIs are among them,
/// and a controller takes no decision after those (the benchmark then times calls, not only
/// decisions); the shipped exports do not probe.
pub fn record_policy_mis(
    policy: &Arc<mocc_policy::Policy>,
    steps: u32,
    seed: u64,
) -> Result<Vec<mocc_policy::MonitorInterval>, mocc_gym::ScenarioError> {
    let mut cfg = mocc_eval::actor::export_scenario(policy);
    let fixed = mocc_gym::ScenarioConfig::fixed_link(500.0, 0.03, 50.0, 0.0);
    cfg.link = fixed.link;
    cfg.senders = fixed.senders;
    cfg.flow_count = None;
    cfg.episode_mis = steps.max(1);
    let scenario = Arc::new(Scenario::new(cfg, None)?);
    let mut env = mocc_gym::Env::new(scenario, seed, 0);
    let objective = policy.spec().default_objective.map(|w| w as f32);
    let mut ws = policy.workspace();
    let mut mis = Vec::with_capacity(steps as usize);
    for _ in 0..steps {
        env.step_driving(|env, k| {
            let obs = env.slot_observation(k);
            let a = policy.mean_action_in(env.slot_mode(k), obs, &objective, &mut ws);
            mocc_gym::Action::Delta(f64::from(a))
        });
        // A base-RTT probe's MIs precede the step's.
        mis.extend(env.slot_probe_mis(0).iter().map(|p| p.mi));
        mis.push(*env.last_mi(0));
    }
    Ok(mis)
}

/// Times a controller replaying recorded MIs: `repeats` runs of `decisions` calls each; with
/// `checkpoint`, also the libtorch model deciding on the same observations one at a time.
pub fn bench_policy(
    policy: Arc<mocc_policy::Policy>,
    checkpoint: Option<&mocc_eval::actor::LoadedPolicy>,
    decisions: u64,
    repeats: u32,
    seed: u64,
) -> Result<PolicyBenchReport, mocc_gym::ScenarioError> {
    if decisions == 0 {
        return Err(mocc_gym::ScenarioError::invalid(
            "--decisions",
            "must be >= 1 (got 0)",
        ));
    }
    if repeats == 0 {
        return Err(mocc_gym::ScenarioError::invalid(
            "--repeats",
            "must be >= 1 (got 0)",
        ));
    }
    let mis = record_policy_mis(&policy, 400, seed)?;
    let objective = policy.spec().default_objective;
    let mut controller = bench_controller(&policy, objective)?;
    let compared = match checkpoint {
        Some(c) => Some((c, same_model_inputs(c, &policy, &mis, objective)?)),
        None => None,
    };
    let mut per_repeat = Vec::with_capacity(repeats as usize);
    let mut sink = 0.0;
    for _ in 0..repeats {
        controller.reset(BENCH_START_RATE_PPS);
        let start = Instant::now();
        for k in 0..decisions {
            let mi = &mis[(k % mis.len() as u64) as usize];
            sink += controller.on_monitor_interval(std::hint::black_box(mi));
        }
        per_repeat.push(start.elapsed().as_nanos() as f64 / decisions as f64);
    }
    std::hint::black_box(sink);
    per_repeat.sort_by(f64::total_cmp);
    let ns_per_decision = per_repeat[per_repeat.len() / 2];
    let tch_ns_per_decision = compared.map(|(c, observations)| {
        time_checkpoint(c, &observations, objective, decisions.min(20_000), repeats)
    });
    Ok(PolicyBenchReport {
        ns_per_decision,
        min_ns_per_decision: per_repeat[0],
        decisions,
        repeats,
        obs_len: policy.obs_len(),
        takes_objective: policy.takes_objective(),
        tch_ns_per_decision,
        speedup_vs_tch: tch_ns_per_decision.map(|t| t / ns_per_decision),
    })
}

/// Largest difference between the export's and the checkpoint's mean actions on the same
/// inputs for them to count as one model (float32 forward passes on two runtimes).
const SAME_MODEL_TOLERANCE: f32 = 1e-3;

/// The observations a controller of the export holds after each of `mis`, decision or not (its
/// MI clock: warm-up MIs unrecorded, probe rules applied), after checking that `checkpoint` is the model `policy` was
/// exported from: the same observation length and the same mean actions on every one of them.
fn same_model_inputs(
    checkpoint: &mocc_eval::actor::LoadedPolicy,
    policy: &Arc<mocc_policy::Policy>,
    mis: &[mocc_policy::MonitorInterval],
    objective: [f64; 3],
) -> Result<Vec<Vec<f32>>, mocc_gym::ScenarioError> {
    let mismatch = |m: String| {
        mocc_gym::ScenarioError::invalid(
            "--compare-checkpoint",
            format!("{} is not the model of this export: {m}", checkpoint.name()),
        )
    };
    if checkpoint.baseline().is_some() {
        return Err(mismatch("a baseline has no model".into()));
    }
    let obs_len = checkpoint.scenario().observation.obs_len();
    if obs_len != policy.obs_len() {
        return Err(mismatch(format!(
            "observations of {obs_len} values against the export's {}",
            policy.obs_len()
        )));
    }
    let observations = controller_observations(policy, objective, mis)?;
    let w = objective.map(|v| v as f32);
    let mut ws = policy.workspace();
    for (k, obs) in observations.iter().enumerate() {
        let exported = policy.mean_action(obs, &w, &mut ws);
        let trained = checkpoint.act(&[Mode::Cooperative], obs, &w)[0];
        if (exported - trained).abs().is_nan() || (exported - trained).abs() > SAME_MODEL_TOLERANCE
        {
            return Err(mismatch(format!(
                "at MI {k} the export acts {exported} and the checkpoint {trained}"
            )));
        }
    }
    Ok(observations)
}

/// The observation a [`mocc_policy::Controller`] of `policy`, reset as [`bench_policy`] resets
/// it, holds after each of `mis`.
fn controller_observations(
    policy: &Arc<mocc_policy::Policy>,
    objective: [f64; 3],
    mis: &[mocc_policy::MonitorInterval],
) -> Result<Vec<Vec<f32>>, mocc_gym::ScenarioError> {
    let mut controller = bench_controller(policy, objective)?;
    Ok(mis
        .iter()
        .map(|mi| {
            controller.on_monitor_interval(mi);
            controller.observation().to_vec()
        })
        .collect())
}

/// A controller of `policy` deciding for `objective`, reset at [`BENCH_START_RATE_PPS`].
fn bench_controller(
    policy: &Arc<mocc_policy::Policy>,
    objective: [f64; 3],
) -> Result<mocc_policy::Controller, mocc_gym::ScenarioError> {
    let mut controller = mocc_policy::Controller::new(policy.clone(), objective)
        .map_err(|e| mocc_gym::ScenarioError::invalid("default_objective", e.to_string()))?;
    controller.reset(BENCH_START_RATE_PPS);
    Ok(controller)
}

/// The rate (packets/s) the benchmarked controller starts from.
const BENCH_START_RATE_PPS: f64 = 100.0;

/// Median nanoseconds per batch-1 decision of a checkpoint on `observations`.
fn time_checkpoint(
    checkpoint: &mocc_eval::actor::LoadedPolicy,
    observations: &[Vec<f32>],
    objective: [f64; 3],
    decisions: u64,
    repeats: u32,
) -> f64 {
    let w = objective.map(|v| v as f32);
    let mut per_repeat = Vec::with_capacity(repeats as usize);
    let mut sink = 0.0f32;
    for _ in 0..repeats {
        let start = Instant::now();
        for k in 0..decisions {
            let obs = &observations[(k % observations.len() as u64) as usize];
            sink += checkpoint.act(&[Mode::Cooperative], std::hint::black_box(obs), &w)[0];
        }
        per_repeat.push(start.elapsed().as_nanos() as f64 / decisions as f64);
    }
    std::hint::black_box(sink);
    per_repeat.sort_by(f64::total_cmp);
    per_repeat[per_repeat.len() / 2]
}

/// One kind of numerics in [`NumericsBenchReport`].
#[derive(Debug, Clone, Serialize)]
pub struct NumericsEntry {
    /// The fingerprint: SHA-256 of the fixed update's loss, gradients and weights.
    pub fingerprint: String,
    /// The fixed update's loss.
    pub loss: f64,
    /// Its gradient norm.
    pub grad_norm: f64,
    /// Median milliseconds of the fixed update (a MOCC network, 256 rows, built, one PPO
    /// loss, backward pass and Adam step).
    pub update_ms: f64,
    /// Digests of the update's stages (`init`, `forward`, `loss`, `gradient`, `step`): the
    /// first that differs between two machines is where their arithmetic parts.
    pub stages: std::collections::BTreeMap<String, String>,
}

/// What `mocc bench numerics` prints: this machine's fingerprints and what each kind costs.
#[derive(Debug, Clone, Serialize)]
pub struct NumericsBenchReport {
    /// The CPU's model name.
    pub cpu: String,
    /// ATen's kernel build in force (`ATEN_CPU_CAPABILITY`; `mocc bench numerics` pins
    /// `default` unless the environment names another).
    pub aten_cpu_capability: String,
    /// Native numerics (libtorch's fastest kernels).
    pub native: NumericsEntry,
    /// Portable numerics (no MKL).
    pub portable: NumericsEntry,
    /// Median portable update time over the native one.
    pub portable_cost_ratio: f64,
    /// Timed repeats of each side (alternated).
    pub repeats: u32,
}

/// Fingerprints both kinds of numerics and times their fixed update, alternating the two
/// sides `repeats` times; medians. Sets libtorch to one intra-op thread (as trainers run).
pub fn bench_numerics(repeats: u32) -> Result<NumericsBenchReport, mocc_gym::ScenarioError> {
    use mocc_agents::{fingerprint, Numerics};
    if repeats == 0 {
        return Err(mocc_gym::ScenarioError::invalid(
            "--repeats",
            "must be >= 1 (got 0)",
        ));
    }
    let timed = |numerics: Numerics| {
        let start = Instant::now();
        let f = fingerprint(numerics);
        (f, start.elapsed().as_secs_f64() * 1e3)
    };
    let (native, first_native_ms) = timed(Numerics::Native);
    let (portable, first_portable_ms) = timed(Numerics::Portable);
    let (mut native_ms, mut portable_ms) = (vec![first_native_ms], vec![first_portable_ms]);
    for _ in 1..repeats {
        native_ms.push(timed(Numerics::Native).1);
        portable_ms.push(timed(Numerics::Portable).1);
    }
    let (native_ms, portable_ms) = (median(native_ms), median(portable_ms));
    let entry = |f: mocc_agents::Fingerprint, update_ms| NumericsEntry {
        fingerprint: f.digest,
        loss: f.loss,
        grad_norm: f.grad_norm,
        update_ms,
        stages: f.stages.into_iter().collect(),
    };
    Ok(NumericsBenchReport {
        cpu: mocc_agents::fingerprint::cpu_model(),
        aten_cpu_capability: std::env::var(mocc_agents::numerics::ATEN_CAPABILITY_VAR)
            .unwrap_or_else(|_| "unset (the CPU's best)".to_string()),
        native: entry(native, native_ms),
        portable: entry(portable, portable_ms),
        portable_cost_ratio: portable_ms / native_ms,
        repeats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The libtorch side is compared and timed on what the export's controller holds: its
    /// warm-up MIs (two in the shipped export) leave the history empty, as a deployed
    /// controller's do.
    #[test]
    fn compared_observations_are_the_controllers() {
        let shipped =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-paths");
        let policy = Arc::new(mocc_policy::Policy::load(&shipped).expect("shipped export"));
        assert_eq!(policy.spec().monitor_interval.warmup_mis, 2);
        let mis = record_policy_mis(&policy, 20, 3).expect("recorded MIs");
        let objective = policy.spec().default_objective;
        // The export loaded as the model to compare: the same actions, whatever the inputs.
        let model = mocc_eval::actor::LoadedPolicy::load(&shipped).expect("shipped model");
        let observations = same_model_inputs(&model, &policy, &mis, objective).expect("one model");
        assert_eq!(observations.len(), mis.len());
        let fresh = bench_controller(&policy, objective).expect("controller");
        assert_eq!(
            observations[0],
            fresh.observation(),
            "after the first warm-up MI"
        );
        assert_eq!(observations[1], fresh.observation(), "after the second");
        assert_ne!(
            observations[2],
            fresh.observation(),
            "the first recorded MI"
        );
    }
}

/// What `mocc bench train` measured at one number of learned flows per bottleneck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TrainBenchRow {
    /// Learned flows in every episode.
    pub flows: u32,
    /// Env steps (decisions of any flow) per wall second, updates included.
    pub env_steps_per_sec: f64,
    /// PPO updates per wall second.
    pub updates_per_sec: f64,
    /// Env steps taken.
    pub env_steps: u64,
    /// Updates taken.
    pub updates: u64,
    /// Wall seconds of the training loop.
    pub wall_seconds: f64,
    /// Of which in the simulator, in inference and in the update.
    pub sim_seconds: f64,
    /// Inference seconds.
    pub inference_seconds: f64,
    /// Update seconds.
    pub update_seconds: f64,
}

/// The override that holds every episode of a `learned_flows:` scenario at `flows` flows.
pub fn fixed_flows_override(flows: u32) -> String {
    format!("scenario.learned_flows.count={{min: {flows}, max: {flows}}}")
}

/// Trains `loaded` for `updates` updates in `run_dir` (a fresh folder the caller removes) and
/// reports the rates; `flows` is what the row is labelled with.
pub fn bench_train(
    loaded: &crate::config::LoadedConfig,
    flows: u32,
    updates: u64,
    run_dir: &std::path::Path,
) -> Result<TrainBenchRow, crate::trainer::TrainError> {
    let mut trainer = crate::trainer::Trainer::new(loaded, run_dir)?;
    let summary = trainer.run(Some(updates), |_| {})?;
    let wall = summary.wall_seconds.max(1e-9);
    let done = trainer.counters().updates;
    Ok(TrainBenchRow {
        flows,
        env_steps_per_sec: summary.env_steps as f64 / wall,
        updates_per_sec: done as f64 / wall,
        env_steps: summary.env_steps,
        updates: done,
        wall_seconds: summary.wall_seconds,
        sim_seconds: summary.sim_seconds,
        inference_seconds: summary.inference_seconds,
        update_seconds: summary.update_seconds,
    })
}
