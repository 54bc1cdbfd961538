//! `mocc simulate`: one sender at a fixed rate (or a constant action) for N MIs.

use crate::actor::LoadedPolicy;
use mocc_gym::{Action, Env, Scenario, ScenarioConfig, ScenarioError};
use serde::Serialize;
use std::io::Write;
use std::sync::Arc;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimulationSpec {
    /// The scenario (its agent sender is the one driven).
    pub scenario: Arc<Scenario>,
    /// Fixed rate or constant action, applied every MI.
    pub action: Action,
    /// MIs to record after the reset's warm-up MIs.
    pub steps: usize,
    /// Seed of the env (index 0).
    pub seed: u64,
}

/// One MI of the run (Aurora's per-MI values), plus the observation row of that MI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MiRow {
    /// MI number, from 1.
    pub mi: usize,
    /// End time (s).
    pub time_s: f64,
    /// Length (s).
    pub duration_s: f64,
    /// Sending rate (packets/s).
    pub send_pps: f64,
    /// Throughput as the scenario's metrics define it (Aurora: one packet fewer than acked, so
    /// it can be negative).
    pub thr_pps: f64,
    /// Packets delivered per second: packets acknowledged during the MI / the MI's length
    /// (never negative; what the time-series figures plot).
    pub delivered_pps: f64,
    /// Bottleneck capacity over the MI (packets/s).
    pub capacity_pps: f64,
    /// Propagation RTT at the MI's end (s).
    pub base_rtt_s: f64,
    /// Mean RTT (s).
    pub mean_rtt_s: f64,
    /// Loss ratio.
    pub loss: f64,
    /// Reward of the scenario's kind.
    pub reward: f64,
    /// The MI's observation row (scaled feature values, in the scenario's feature order).
    #[serde(skip)]
    pub features: Vec<f32>,
    /// The raw statistics a sender has at the end of the MI (what a controller is fed).
    #[serde(skip)]
    pub raw: mocc_policy::MonitorInterval,
}

/// Unweighted means over MIs of the per-MI columns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimulationReport {
    /// Number of MIs.
    pub mis: usize,
    /// Mean MI length (s).
    pub duration_s: f64,
    /// Mean sending rate (packets/s).
    pub send_pps: f64,
    /// Mean throughput (packets/s).
    pub thr_pps: f64,
    /// Mean RTT (s).
    pub mean_rtt_s: f64,
    /// Mean loss ratio.
    pub loss: f64,
    /// Mean reward.
    pub reward: f64,
}

/// Runs the simulation; the episode limit is ignored (one long connection). With a fixed rate
/// the sender also starts (and warms up) at that rate.
pub fn simulate(spec: &SimulationSpec) -> Result<(Vec<MiRow>, SimulationReport), ScenarioError> {
    let scenario = match spec.action {
        Action::Rate(r) => Arc::new(spec.scenario.with_agent_start_rate(r)?),
        Action::Delta(_) => spec.scenario.clone(),
    };
    Ok(run(
        scenario,
        Horizon::Mis(spec.steps),
        spec.seed,
        |_, k| {
            if k == 0 {
                spec.action
            } else {
                Action::Delta(0.0)
            }
        },
    ))
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Horizon {
    /// This many MIs.
    Mis(usize),
    /// Until the first MI that ends at or after this simulated time (s), so runs of schemes with
    /// different MI lengths cover the same time.
    Seconds(f64),
}

impl Horizon {
    fn reached(self, rows: &[MiRow]) -> bool {
        match self {
            Horizon::Mis(n) => rows.len() >= n,
            Horizon::Seconds(s) => rows.last().is_some_and(|r| r.time_s >= s),
        }
    }
}

/// Runs a trained policy (checkpoint or export; or a baseline, which replaces the agent
/// sender) as the agent sender of `scenario`, acting with
/// its mean action under `objective`. The scenario's observation, metrics, action rule and MI
/// sizing are replaced by the ones the policy was trained with.
pub fn simulate_policy(
    scenario: &ScenarioConfig,
    policy: &LoadedPolicy,
    objective: [f64; 3],
    steps: usize,
    seed: u64,
) -> Result<(Vec<MiRow>, SimulationReport), ScenarioError> {
    simulate_policy_for(scenario, policy, objective, Horizon::Mis(steps), seed)
}

/// [`simulate_policy`] over a [`Horizon`] (a number of MIs or a simulated duration).
pub fn simulate_policy_for(
    scenario: &ScenarioConfig,
    policy: &LoadedPolicy,
    objective: [f64; 3],
    horizon: Horizon,
    seed: u64,
) -> Result<(Vec<MiRow>, SimulationReport), ScenarioError> {
    if let Horizon::Seconds(s) = horizon {
        if !(s.is_finite() && s > 0.0) {
            return Err(ScenarioError::invalid(
                "duration_s",
                format!("must be > 0 (got {s})"),
            ));
        }
    }
    mocc_gym::config::validate_objective("--objective", &objective)?;
    let trained = policy.scenario();
    let mut cfg = scenario.clone();
    cfg.observation = trained.observation.clone();
    cfg.metrics = trained.metrics;
    cfg.action = trained.action;
    cfg.monitor_interval = trained.monitor_interval;
    cfg.warmup_mis = trained.warmup_mis;
    cfg.objective = objective;
    if let Some(b) = policy.baseline() {
        let i = cfg.agent_index();
        cfg.senders[i] = *b;
    }
    let scenario = Arc::new(Scenario::new(cfg, None)?);
    let w = objective.map(|v| v as f32);
    Ok(run(scenario, horizon, seed, |env, k| {
        Action::Delta(f64::from(policy.act(env.slot_observation(k), &w)[0]))
    }))
}

/// Steps one env until `horizon` of the first learned sender's MIs, choosing the action of
/// every learned sender that decides (the scenario may hold several) from the env's state.
fn run(
    scenario: Arc<Scenario>,
    horizon: Horizon,
    seed: u64,
    mut decide: impl FnMut(&Env, usize) -> Action,
) -> (Vec<MiRow>, SimulationReport) {
    let k = scenario.config().observation.features.len();
    // One long connection: no learned sender leaves at the episode's MI limit.
    let scenario = Arc::new(scenario.with_episode_mis(u32::MAX));
    let mut env = Env::new(scenario, seed, 0);
    let mut rows = Vec::with_capacity(match horizon {
        Horizon::Mis(n) => n,
        Horizon::Seconds(_) => 1024,
    });
    while !horizon.reached(&rows) {
        let step = env.step_driving(&mut decide);
        let obs = env.observation();
        rows.push(MiRow {
            mi: rows.len() + 1,
            time_s: step.info.time_s,
            duration_s: step.info.duration_s,
            send_pps: step.info.send_pps,
            thr_pps: step.info.metric_thr_pps,
            delivered_pps: step.info.throughput_pps,
            capacity_pps: step.info.capacity_pps,
            base_rtt_s: step.info.base_rtt_s,
            mean_rtt_s: step.info.mean_rtt_s,
            loss: step.info.loss,
            reward: step.reward,
            features: obs[obs.len() - k..].to_vec(),
            raw: *env.last_mi(env.slot_sender(0)),
        });
    }
    let report = summarize(&rows);
    (rows, report)
}

fn summarize(rows: &[MiRow]) -> SimulationReport {
    let n = rows.len().max(1) as f64;
    let mean = |f: fn(&MiRow) -> f64| rows.iter().map(f).sum::<f64>() / n;
    SimulationReport {
        mis: rows.len(),
        duration_s: mean(|r| r.duration_s),
        send_pps: mean(|r| r.send_pps),
        thr_pps: mean(|r| r.thr_pps),
        mean_rtt_s: mean(|r| r.mean_rtt_s),
        loss: mean(|r| r.loss),
        reward: mean(|r| r.reward),
    }
}

/// Writes the rows as CSV: the fixed columns, then one column per feature (spaces become `_`).
pub fn write_csv<W: Write>(
    mut out: W,
    rows: &[MiRow],
    feature_names: &[&str],
) -> std::io::Result<()> {
    let mut header = String::from("mi,time_s,duration_s,send_pps,thr_pps,mean_rtt_s,loss,reward");
    for name in feature_names {
        header.push(',');
        header.push_str(&name.replace(' ', "_"));
    }
    writeln!(out, "{header}")?;
    for r in rows {
        write!(
            out,
            "{},{},{},{},{},{},{},{}",
            r.mi, r.time_s, r.duration_s, r.send_pps, r.thr_pps, r.mean_rtt_s, r.loss, r.reward
        )?;
        for v in &r.features {
            write!(out, ",{v}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Writes the raw MI statistics, one row per MI ([`mocc_policy::MonitorInterval::CSV_HEADER`]).
pub fn write_raw_csv<W: Write>(mut out: W, rows: &[MiRow]) -> std::io::Result<()> {
    writeln!(out, "{}", mocc_policy::MonitorInterval::CSV_HEADER)?;
    for r in rows {
        writeln!(out, "{}", r.raw.to_csv_row())?;
    }
    Ok(())
}

/// Parses `bw_pps=B,delay_s=D,queue_pkts=Q,loss=L` into a fixed single-bottleneck scenario.
pub fn parse_network_spec(spec: &str) -> Result<ScenarioConfig, ScenarioError> {
    let (mut bw, mut delay, mut queue, mut loss) = (None, None, None, None);
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').ok_or_else(|| {
            ScenarioError::invalid("--network", format!("expected key=value, got {part:?}"))
        })?;
        let v: f64 = value.trim().parse().map_err(|_| {
            ScenarioError::invalid(
                format!("--network {}", key.trim()),
                format!("not a number: {value:?}"),
            )
        })?;
        let slot = match key.trim() {
            "bw_pps" => &mut bw,
            "delay_s" => &mut delay,
            "queue_pkts" => &mut queue,
            "loss" => &mut loss,
            other => {
                return Err(ScenarioError::invalid(
                    "--network",
                    format!("unknown key {other:?} (expected bw_pps, delay_s, queue_pkts, loss)"),
                ))
            }
        };
        *slot = Some(v);
    }
    let need = |v: Option<f64>, name: &str| {
        v.ok_or_else(|| ScenarioError::invalid("--network", format!("missing {name}")))
    };
    Ok(ScenarioConfig::fixed_link(
        need(bw, "bw_pps")?,
        need(delay, "delay_s")?,
        need(queue, "queue_pkts")?,
        loss.unwrap_or(0.0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_spec_parses_and_rejects() {
        let c = parse_network_spec("bw_pps=100, delay_s=0.05,queue_pkts=2,loss=0.01").unwrap();
        assert_eq!(c.link.bandwidth_pps, mocc_gym::Range::Fixed(100.0));
        assert!(parse_network_spec("bw_pps=100,delay_s=0.05")
            .unwrap_err()
            .to_string()
            .contains("missing queue_pkts"));
        assert!(parse_network_spec("bw=1")
            .unwrap_err()
            .to_string()
            .contains("unknown key"));
        assert!(parse_network_spec("bw_pps=x")
            .unwrap_err()
            .to_string()
            .contains("bw_pps"));
    }
}
