//! `mocc simulate`: one sender at a fixed rate (or a constant action) for N MIs.

use crate::actor::LoadedPolicy;
use mocc_gym::reward::RewardKind;
use mocc_gym::{Action, Env, Scenario, ScenarioConfig, ScenarioError, StepInfo};
use mocc_policy::{Mode, MonitorInterval};
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
    /// Whether the MI belongs to a base-RTT probe (no decision follows it; its reward is the
    /// one it would have given).
    pub probe: bool,
    /// Whether the sender's mode after the MI is competitive (a paired export's competitive
    /// network takes its next decision).
    pub competitive: bool,
    /// The MI's observation row (scaled feature values, in the scenario's feature order).
    #[serde(skip)]
    pub features: Vec<f32>,
    /// The raw statistics a sender has at the end of the MI (what a controller is fed).
    #[serde(skip)]
    pub raw: mocc_policy::MonitorInterval,
}

impl MiRow {
    /// The MI's mean RTT, None where it had no RTT sample (the simulator's 0 there is no
    /// RTT): what CSV rows write as an empty cell.
    pub fn rtt_sample(&self) -> Option<f64> {
        (self.mean_rtt_s > 0.0).then_some(self.mean_rtt_s)
    }
}

/// The run: its MIs and simulated seconds; its rates and loss over the whole run (packets
/// over seconds, lost over sent), its RTT over the packets delivered, its reward per MI.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimulationReport {
    /// Number of MIs.
    pub mis: usize,
    /// Simulated seconds the MIs cover (their lengths summed).
    pub duration_s: f64,
    /// Mean MI length (s).
    pub mean_mi_s: f64,
    /// Packets sent over the run's seconds.
    pub send_pps: f64,
    /// Packets delivered over the run's seconds (never negative).
    pub thr_pps: f64,
    /// Mean RTT of the delivered packets (s); None (JSON null) when nothing was delivered.
    pub mean_rtt_s: Option<f64>,
    /// Packets lost over packets sent; None when nothing was sent.
    pub loss: Option<f64>,
    /// Mean reward per MI, of the kind `reward_kind` names.
    pub reward: f64,
    /// The reward `reward` is: the scenario's (`aurora`), or MOCC's under the run's objective
    /// (`mocc`).
    pub reward_kind: RewardKind,
}

/// Why a simulation stopped early.
#[derive(Debug, thiserror::Error)]
pub enum SimulationError {
    /// The scenario, objective or horizon is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The row sink failed (its error names the output).
    #[error(transparent)]
    Output(std::io::Error),
}

/// Where rows go as they are simulated (a file writer, or a `Vec`): runs of any length stream
/// through in constant memory.
pub type RowSink<'a> = dyn FnMut(&MiRow) -> std::io::Result<()> + 'a;

/// Runs the simulation; the episode limit is ignored (one long connection). With a fixed rate
/// the sender also starts (and warms up) at that rate.
pub fn simulate(spec: &SimulationSpec) -> Result<(Vec<MiRow>, SimulationReport), ScenarioError> {
    let mut rows = Vec::new();
    let report = simulate_into(spec, &mut collect_into(&mut rows)).map_err(into_scenario)?;
    Ok((rows, report))
}

/// [`simulate`], handing each row to `sink` instead of keeping it.
pub fn simulate_into(
    spec: &SimulationSpec,
    sink: &mut RowSink<'_>,
) -> Result<SimulationReport, SimulationError> {
    let scenario = match spec.action {
        Action::Rate(r) => Arc::new(spec.scenario.with_agent_start_rate(r)?),
        Action::Delta(_) => spec.scenario.clone(),
    };
    run(
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
        sink,
    )
}

/// A sink that appends to `rows`.
fn collect_into(rows: &mut Vec<MiRow>) -> impl FnMut(&MiRow) -> std::io::Result<()> + '_ {
    |row| {
        rows.push(row.clone());
        Ok(())
    }
}

/// The error of a run whose sink cannot fail.
fn into_scenario(e: SimulationError) -> ScenarioError {
    match e {
        SimulationError::Scenario(e) => e,
        SimulationError::Output(e) => ScenarioError::invalid("output", e.to_string()),
    }
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
    /// Whether a run that has recorded `mis` MIs, the last ending at `last_end_s`, is over.
    fn reached(self, mis: usize, last_end_s: Option<f64>) -> bool {
        match self {
            Horizon::Mis(n) => mis >= n,
            Horizon::Seconds(s) => last_end_s.is_some_and(|t| t >= s),
        }
    }
}

/// Runs a trained policy (checkpoint or export; or a baseline, which replaces the agent
/// sender) as the agent sender of `scenario`, acting with its mean action under `objective`,
/// over a [`Horizon`] (a number of MIs or a simulated duration). The scenario's observation,
/// metrics, action rule and MI sizing are replaced by the ones the policy was trained with.
pub fn simulate_policy_for(
    scenario: &ScenarioConfig,
    policy: &LoadedPolicy,
    objective: [f64; 3],
    horizon: Horizon,
    seed: u64,
) -> Result<(Vec<MiRow>, SimulationReport), ScenarioError> {
    let mut rows = Vec::new();
    let report = simulate_policy_into(
        scenario,
        policy,
        objective,
        horizon,
        seed,
        &mut collect_into(&mut rows),
    )
    .map_err(into_scenario)?;
    Ok((rows, report))
}

/// [`simulate_policy_for`], handing each row to `sink` instead of keeping it.
pub fn simulate_policy_into(
    scenario: &ScenarioConfig,
    policy: &LoadedPolicy,
    objective: [f64; 3],
    horizon: Horizon,
    seed: u64,
    sink: &mut RowSink<'_>,
) -> Result<SimulationReport, SimulationError> {
    if let Horizon::Seconds(s) = horizon {
        if !(s.is_finite() && s > 0.0) {
            return Err(
                ScenarioError::invalid("duration_s", format!("must be > 0 (got {s})")).into(),
            );
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
    run(
        scenario,
        horizon,
        seed,
        |env, k| {
            let a = policy.act(&[env.slot_mode(k)], env.slot_observation(k), &w)[0];
            Action::Delta(f64::from(a))
        },
        sink,
    )
}

/// Steps one env until `horizon` of the first learned sender's MIs, choosing the action of
/// every learned sender that decides (the scenario may hold several) from the env's state, and
/// hands each MI's row to `sink`: the MIs of its base-RTT probes too (no decision follows them,
/// their reward is the one they would have given).
fn run(
    scenario: Arc<Scenario>,
    horizon: Horizon,
    seed: u64,
    mut decide: impl FnMut(&Env, usize) -> Action,
    sink: &mut RowSink<'_>,
) -> Result<SimulationReport, SimulationError> {
    let k = scenario.config().observation.features.len();
    // One long connection: no learned sender leaves at the episode's MI limit.
    let scenario = Arc::new(scenario.with_episode_mis(u32::MAX));
    let mut sums = ReportSums {
        reward_kind: scenario.config().reward,
        ..ReportSums::default()
    };
    let mut env = Env::new(scenario, seed, 0);
    let mut last_end_s = None;
    // The reset's startup and probe MIs come first; then each step's.
    let mut closed = step_mis(&env);
    loop {
        // The newest history rows are these MIs' (the step's last, its probe's before it).
        let rows = env
            .observation()
            .chunks(k.max(1))
            .rev()
            .take(closed.len())
            .rev();
        let missing = closed.len() - rows.len();
        let features = std::iter::repeat_n(None, missing).chain(rows.map(Some));
        for (closed_mi, features) in closed.into_iter().zip(features) {
            if horizon.reached(sums.mis, last_end_s) {
                break;
            }
            let row = mi_row(sums.mis + 1, &closed_mi, features, k);
            sums.add(&row);
            last_end_s = Some(row.time_s);
            sink(&row).map_err(SimulationError::Output)?;
        }
        if horizon.reached(sums.mis, last_end_s) {
            break;
        }
        env.step_driving(&mut decide);
        closed = step_mis(&env);
        if env.slot_completion(0).is_none() && closed.is_empty() {
            // The first learned sender left (its stop time): its connection is over.
            break;
        }
    }
    Ok(sums.report())
}

/// One MI a step closed: its values, its raw statistics, whether a probe sent it and the
/// sender's mode after it.
struct ClosedMi {
    info: StepInfo,
    raw: MonitorInterval,
    probe: bool,
    mode: Mode,
}

/// The first learned sender's MIs a [`Env::step_driving`] (or the reset) closed, in order:
/// its startup's and base-RTT probe's, then the step's, unless the sender left (or none).
fn step_mis(env: &Env) -> Vec<ClosedMi> {
    let probes = env.slot_probe_mis(0).iter().map(|p| ClosedMi {
        info: p.info,
        raw: p.mi,
        probe: true,
        mode: p.mode,
    });
    let step = env.slot_completion(0).map(|step| ClosedMi {
        info: step.info,
        raw: *env.last_mi(env.slot_sender(0)),
        probe: false,
        mode: env.slot_mode(0),
    });
    probes.chain(step).collect()
}

/// Row `mi` of a run: the MI's values, its observation row (NaN where the history no longer
/// holds it) and its raw statistics.
fn mi_row(mi: usize, closed: &ClosedMi, features: Option<&[f32]>, k: usize) -> MiRow {
    let info = &closed.info;
    MiRow {
        mi,
        time_s: info.time_s,
        duration_s: info.duration_s,
        send_pps: info.send_pps,
        thr_pps: info.metric_thr_pps,
        delivered_pps: info.throughput_pps,
        capacity_pps: info.capacity_pps,
        base_rtt_s: info.base_rtt_s,
        mean_rtt_s: info.mean_rtt_s,
        loss: info.loss,
        reward: info.reward,
        probe: closed.probe,
        competitive: closed.mode == Mode::Competitive,
        features: features.map_or_else(|| vec![f32::NAN; k], <[f32]>::to_vec),
        raw: closed.raw,
    }
}

/// Running sums of what the report gives: packets sent, delivered and lost, RTT weighted by
/// the packets delivered, rewards.
#[derive(Debug, Default)]
struct ReportSums {
    mis: usize,
    duration_s: f64,
    sent: f64,
    delivered: f64,
    lost: f64,
    rtt_weight: f64,
    rtt_sum: f64,
    reward: f64,
    reward_kind: RewardKind,
}

impl ReportSums {
    fn add(&mut self, r: &MiRow) {
        let sent = r.send_pps * r.duration_s;
        let delivered = r.delivered_pps * r.duration_s;
        self.mis += 1;
        self.duration_s += r.duration_s;
        self.sent += sent;
        self.delivered += delivered;
        self.lost += r.loss * sent;
        if let Some(rtt) = r.rtt_sample().filter(|_| delivered > 0.0) {
            self.rtt_weight += delivered;
            self.rtt_sum += rtt * delivered;
        }
        self.reward += r.reward;
    }

    /// The run's totals as rates and ratios; undefined ones are None, never 0.
    fn report(&self) -> SimulationReport {
        let seconds = self.duration_s.max(f64::MIN_POSITIVE);
        SimulationReport {
            mis: self.mis,
            duration_s: self.duration_s,
            mean_mi_s: self.duration_s / self.mis.max(1) as f64,
            send_pps: self.sent / seconds,
            thr_pps: self.delivered / seconds,
            mean_rtt_s: (self.rtt_weight > 0.0).then(|| self.rtt_sum / self.rtt_weight),
            loss: (self.sent > 0.0).then(|| self.lost / self.sent),
            reward: self.reward / self.mis.max(1) as f64,
            reward_kind: self.reward_kind,
        }
    }
}

/// Writes the per-MI CSV header: the fixed columns (`probe` is 1 for a base-RTT probe's MI,
/// `competitive` 1 when the sender's mode after the MI is competitive), then one column per
/// feature (spaces become `_`).
pub fn write_csv_header<W: Write + ?Sized>(
    out: &mut W,
    feature_names: &[&str],
) -> std::io::Result<()> {
    let mut header = String::from(
        "mi,time_s,duration_s,send_pps,thr_pps,mean_rtt_s,loss,reward,probe,competitive",
    );
    for name in feature_names {
        header.push(',');
        header.push_str(&name.replace(' ', "_"));
    }
    writeln!(out, "{header}")
}

/// Writes one row under [`write_csv_header`].
pub fn write_csv_row<W: Write + ?Sized>(out: &mut W, r: &MiRow) -> std::io::Result<()> {
    write!(
        out,
        "{},{},{},{},{},{},{},{},{},{}",
        r.mi,
        r.time_s,
        r.duration_s,
        r.send_pps,
        r.thr_pps,
        mocc_outputs::csv::number(r.rtt_sample()),
        r.loss,
        r.reward,
        u8::from(r.probe),
        u8::from(r.competitive)
    )?;
    for v in &r.features {
        write!(out, ",{v}")?;
    }
    writeln!(out)
}

/// Writes the raw MI statistics' header ([`mocc_policy::MonitorInterval::CSV_HEADER`]).
pub fn write_raw_csv_header<W: Write + ?Sized>(out: &mut W) -> std::io::Result<()> {
    writeln!(out, "{}", mocc_policy::MonitorInterval::CSV_HEADER)
}

/// Writes one MI's raw statistics under [`write_raw_csv_header`].
pub fn write_raw_csv_row<W: Write + ?Sized>(out: &mut W, r: &MiRow) -> std::io::Result<()> {
    writeln!(out, "{}", r.raw.to_csv_row())
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
        if slot.replace(v).is_some() {
            return Err(ScenarioError::invalid(
                format!("--network {}", key.trim()),
                "given twice",
            ));
        }
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

    /// With base-RTT probes every MI of the connection has its row, the probe's too: the MIs
    /// are back to back, and the probe's are paced at a quarter of the rate around them.
    #[test]
    fn a_probing_policy_has_a_row_for_every_mi() {
        let dir = std::env::temp_dir().join(format!("mocc-sim-probes-{}", std::process::id()));
        crate::test_exports::probing_export(&dir);
        let policy = LoadedPolicy::load(&dir).unwrap();
        let link = ScenarioConfig::fixed_link(600.0, 0.03, 40.0, 0.0);
        let (rows, report) =
            simulate_policy_for(&link, &policy, [0.6, 0.3, 0.1], Horizon::Mis(400), 0).unwrap();
        assert_eq!((rows.len(), report.mis), (400, 400));
        for (i, pair) in rows.windows(2).enumerate() {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(b.mi, a.mi + 1);
            let start = b.time_s - b.duration_s;
            assert!(
                (start - a.time_s).abs() < 1e-9,
                "a gap before row {i}: {a:?} {b:?}"
            );
            assert_eq!(b.raw.send_end_s, b.time_s, "row {i}'s raw statistics");
            assert!(b.features.iter().all(|f| f.is_finite()), "row {i}");
        }
        // A probe's MIs: 4 in a row (the default), sent at a quarter of the agent's rate.
        let mut rates: Vec<f64> = rows.iter().map(|r| r.send_pps).collect();
        rates.sort_by(f64::total_cmp);
        let median = rates[rates.len() / 2];
        let in_probe: Vec<bool> = rows.iter().map(|r| r.send_pps < 0.4 * median).collect();
        let runs: Vec<usize> = in_probe
            .split(|&p| !p)
            .map(<[bool]>::len)
            .filter(|&n| n > 0)
            .collect();
        assert!(runs.len() > 10, "{} probes", runs.len());
        let whole = &runs[..runs.len() - usize::from(*in_probe.last().unwrap())];
        assert!(whole.iter().all(|&n| n == 4), "probe lengths {runs:?}");
        // The rows that say they are a probe's are those MIs.
        let flagged: Vec<bool> = rows.iter().map(|r| r.probe).collect();
        assert_eq!(flagged, in_probe);
        let _ = std::fs::remove_dir_all(dir);
    }

    /// A first learned sender that leaves (its stop time) while another goes on ends the
    /// run: no row after its last MI, even with a horizon past that.
    #[test]
    fn the_run_ends_when_the_first_learned_sender_leaves() {
        let policy = LoadedPolicy::load(&crate::test_exports::shipped_dir()).unwrap();
        let mut cfg = ScenarioConfig::fixed_link(600.0, 0.03, 40.0, 0.0);
        let agent = cfg.senders[0];
        cfg.senders = vec![
            mocc_gym::SenderConfig {
                stop_time_s: Some(mocc_gym::Range::Fixed(2.0)),
                ..agent
            },
            agent,
        ];
        let (rows, report) =
            simulate_policy_for(&cfg, &policy, [0.6, 0.3, 0.1], Horizon::Seconds(10.0), 0).unwrap();
        assert!(rows.len() > 20, "{} rows", rows.len());
        assert_eq!(report.mis, rows.len());
        let last = rows.last().unwrap();
        // Its last MI is the first to close after 2 s (MIs last about half an RTT here).
        assert!(last.time_s >= 2.0 && last.time_s < 2.2, "{last:?}");
        assert!(rows.iter().all(|r| r.time_s > 0.0 && r.duration_s > 0.0));
    }

    /// The shipped pair beside Cubic on 4 BDP: its rows say when it is competitive. It turns
    /// so at the end of a probe (a probe row), and only a row whose RTT is within 1.1 of the
    /// lowest seen turns it back.
    #[test]
    fn a_pair_reports_its_mode_per_mi() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints/mocc-pair");
        let policy = LoadedPolicy::load(&dir).unwrap();
        let mut cfg = ScenarioConfig::fixed_link(800.0, 0.02, 128.0, 0.0);
        cfg.senders.push(mocc_gym::SenderConfig {
            controller: mocc_gym::ControllerConfig::Cubic,
            ..mocc_gym::SenderConfig::default()
        });
        let objective = [0.34, 0.33, 0.33];
        let (rows, _) =
            simulate_policy_for(&cfg, &policy, objective, Horizon::Seconds(30.0), 0).unwrap();
        let turns: Vec<usize> = (1..rows.len())
            .filter(|&i| rows[i].competitive != rows[i - 1].competitive)
            .collect();
        assert!(turns.len() >= 2, "{} mode changes", turns.len());
        let mut lowest = f64::INFINITY;
        for (i, r) in rows.iter().enumerate() {
            if r.mean_rtt_s > 0.0 {
                lowest = lowest.min(r.mean_rtt_s);
            }
            if i == 0 || r.competitive == rows[i - 1].competitive {
                continue;
            }
            if r.competitive {
                assert!(r.probe, "row {i} turned competitive outside a probe");
            } else {
                assert!(
                    r.mean_rtt_s <= 1.1 * lowest * (1.0 + 1e-9),
                    "row {i}: {r:?}"
                );
            }
        }
    }

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
        assert!(
            parse_network_spec("bw_pps=100,bw_pps=200,delay_s=0.05,queue_pkts=2")
                .unwrap_err()
                .to_string()
                .contains("bw_pps: given twice")
        );
        assert!(parse_network_spec("bw_pps=x")
            .unwrap_err()
            .to_string()
            .contains("bw_pps"));
    }
}
