//! `mocc net compare`'s sharing sections: a suite's `fairness:` and `friendliness:` runs in the
//! simulator and, `repeats` times each, on a real emulated path, summarized by the same code
//! from per-second delivery rates ([`mocc_eval::flows::FlowRates`]): median Jain's index,
//! utilization, the fastest flow's rate over the slowest's and the RTT ratio over the seconds
//! all flows run; the scheme's rate over one Cubic flow's after the first seconds. On the real
//! path a learned flow is an export's controller over UDP, Cubic and BBR are the kernel's.

use crate::compare::{kernel_tcp, CompareError};
use crate::path::{rate_driver, seconds_between};
use crate::run::{run_timed_flows, FlowSender, TimedFlow};
use mocc_eval::actor::LoadedPolicy;
use mocc_eval::fairness_outputs::{
    case_folder, fairness_rates, write_flow_csvs, write_flow_mis, FairnessSummary, MIS_DIR,
};
use mocc_eval::flow_figures::{friendliness_cubic, friendliness_rates_of, friendliness_run};
use mocc_eval::flows::{FlowNetwork, FlowRates};
use mocc_eval::results::EvalError;
use mocc_eval::suite::{FairnessSpec, FriendlinessSpec};
use mocc_gym::sim::SenderTotals;
use mocc_net::timing::monotonic_ns;
use mocc_net::transport::{FlowOutcome, MiRecord};
use mocc_net::{PathSpec, Topology};
use mocc_policy::{RttTally, BYTES_PER_PACKET};
use serde::Serialize;
use std::path::Path;

/// Which side of the comparison a row is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The simulator (deterministic: run 0 as scheduled, later runs with jittered starts).
    Sim,
    /// The real path (run `k` of the repeats).
    Real,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Sim => "sim",
            Side::Real => "real",
        }
    }
}

/// One fairness run of one side: a row of fairness-compare.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FairnessRow {
    /// Simulator or real path.
    pub side: Side,
    /// The run's summary (policy, network, flows, the statistics, and its run: 0.. for the
    /// simulator's runs of the case, 1.. for the real ones).
    #[serde(flatten)]
    pub summary: FairnessSummary,
}

/// One friendliness run of one side: a row of friendliness-compare.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FriendlinessRow {
    /// The scheme beside Cubic.
    pub policy: String,
    /// The bottleneck's label (with its buffer).
    pub network: String,
    /// Simulator or real path.
    pub side: Side,
    /// 0 for the simulator, 1.. for the real runs.
    pub run: u32,
    /// The scheme's mean delivery rate after the first seconds (packets/s).
    pub policy_pps: f64,
    /// Cubic's (packets/s).
    pub cubic_pps: f64,
    /// The first over the second.
    pub ratio: f64,
}

/// fairness-compare.csv's header line.
pub const FAIRNESS_CSV_HEADER: &str =
    "policy,network,flows,side,run,median_jain_index,utilization,max_min_rate_ratio,rtt_ratio\n";

/// friendliness-compare.csv's header line.
pub const FRIENDLINESS_CSV_HEADER: &str = "policy,network,side,run,policy_pps,cubic_pps,ratio\n";

impl FairnessRow {
    /// The row as a CSV line (with its newline).
    pub fn csv_line(&self) -> String {
        let s = &self.summary;
        format!(
            "{},{},{},{},{},{},{},{},{}\n",
            mocc_outputs::csv::cell(&s.policy),
            mocc_outputs::csv::cell(&s.network),
            s.flows,
            self.side.name(),
            s.run,
            mocc_outputs::csv::number(Some(s.median_jain_index)),
            s.utilization,
            s.max_min_rate_ratio,
            s.rtt_ratio.map(|r| r.to_string()).unwrap_or_default()
        )
    }
}

impl FriendlinessRow {
    /// The row as a CSV line (with its newline).
    pub fn csv_line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{}\n",
            mocc_outputs::csv::cell(&self.policy),
            mocc_outputs::csv::cell(&self.network),
            self.side.name(),
            self.run,
            self.policy_pps,
            self.cubic_pps,
            self.ratio
        )
    }
}

/// Where `mocc net compare` writes the real runs' MIs of a suite with `fairness.record_mis`
/// (the simulated runs' go to [`MIS_DIR`], as `mocc eval` writes them).
pub const REAL_MIS_DIR: &str = "fairness-mis-real";

/// Every network and flow count of `spec` for `policy`: the simulator's runs (`spec.runs`,
/// starts jittered after the first), then `repeats` real runs, each row handed to `on_row` as
/// soon as it is measured. Learned flows start at half the link, as in `mocc eval`; flows with
/// an extra RTT of their own are refused (the real path has one delay line for every flow).
/// With `spec.record_mis`, every learned flow's MIs of each run go under `out`: the
/// simulator's to `MIS_DIR/<case>/flow-<k>.csv` (as `mocc eval` writes them), the real path's
/// to `REAL_MIS_DIR/<case>/flow-<k>.csv` (as `mocc net run` writes its `mis-<k>.csv`), `<case>`
/// being [`case_folder`]'s `<policy>/<network>/<n>-flows-run-<r>` (real runs from 1).
pub fn compare_fairness(
    policy: &str,
    spec: &FairnessSpec,
    repeats: u32,
    out: &Path,
    mut progress: impl FnMut(&str),
    mut on_row: impl FnMut(&FairnessRow) -> Result<(), CompareError>,
) -> Result<Vec<FairnessRow>, CompareError> {
    if spec.extra_rtt_s.iter().any(|&r| r != 0.0) {
        return Err(CompareError::Policy(
            "fairness.extra_rtt_s: flows of different base RTTs have no real-path twin (one \
             delay line carries every flow)"
                .into(),
        ));
    }
    let loaded = LoadedPolicy::load(Path::new(policy)).map_err(EvalError::from)?;
    let own = loaded.scenario().objective;
    let mut rows = Vec::new();
    let mut emit = |row: FairnessRow, rows: &mut Vec<FairnessRow>| {
        on_row(&row)?;
        rows.push(row);
        Ok::<(), CompareError>(())
    };
    for net in spec.all_networks() {
        let label = net.label();
        for &n in &spec.flows {
            for run in 0..spec.runs {
                let sim = fairness_rates(spec, &net, &loaded, n, run)?;
                if spec.record_mis {
                    let case = out.join(MIS_DIR).join(case_folder(policy, &net, n, run));
                    write_flow_mis(&case, &sim)?;
                }
                let summary = FairnessSummary::of(policy, &label, &sim).in_run(run);
                emit(
                    FairnessRow {
                        side: Side::Sim,
                        summary,
                    },
                    &mut rows,
                )?;
            }
            let flows: Vec<PlannedFlow> = (0..n)
                .map(|k| PlannedFlow {
                    objective: spec.objective_of(k, own),
                    start_s: spec.start_of(k, n),
                    stop_s: spec.stop_of(k, n).unwrap_or(spec.duration_s),
                    cubic: false,
                })
                .collect();
            for run in 1..=repeats {
                progress(&format!(
                    "{policy}: {n} flows on {label}, real run {run} of {repeats}"
                ));
                let (rates, records) = real_run(policy, &net, &flows, spec.duration_s)?;
                if spec.record_mis {
                    let case = out
                        .join(REAL_MIS_DIR)
                        .join(case_folder(policy, &net, n, run));
                    let texts: Vec<Option<String>> = records
                        .iter()
                        .map(|r| (!r.is_empty()).then(|| MiRecord::csv_text(r)))
                        .collect();
                    write_flow_csvs(&case, &texts)?;
                }
                let summary = FairnessSummary::of(policy, &label, &rates).in_run(run);
                emit(
                    FairnessRow {
                        side: Side::Real,
                        summary,
                    },
                    &mut rows,
                )?;
            }
        }
    }
    Ok(rows)
}

/// Every buffer of `spec` for `policy` beside one Cubic flow (the simulator's model there,
/// the kernel's on the real path): the simulator's run, then `repeats` real runs.
pub fn compare_friendliness(
    policy: &str,
    spec: &FriendlinessSpec,
    repeats: u32,
    mut progress: impl FnMut(&str),
    mut on_row: impl FnMut(&FriendlinessRow) -> Result<(), CompareError>,
) -> Result<Vec<FriendlinessRow>, CompareError> {
    let loaded = LoadedPolicy::load(Path::new(policy)).map_err(EvalError::from)?;
    let cubic = friendliness_cubic(spec)?;
    let objective = spec.objective.unwrap_or(loaded.scenario().objective);
    let mut rows = Vec::new();
    for (_, net) in spec.networks() {
        let label = net.label();
        let row = |side, run, rates: &FlowRates| {
            let (a, b) = friendliness_rates_of(rates);
            FriendlinessRow {
                policy: policy.to_string(),
                network: label.clone(),
                side,
                run,
                policy_pps: a,
                cubic_pps: b,
                ratio: a / b.max(1e-9),
            }
        };
        let sim = row(
            Side::Sim,
            0,
            &friendliness_run(spec, &net, &loaded, &cubic)?,
        );
        on_row(&sim)?;
        rows.push(sim);
        let flows = [
            PlannedFlow {
                objective,
                start_s: 0.0,
                stop_s: spec.duration_s,
                cubic: false,
            },
            PlannedFlow {
                objective,
                start_s: 0.0,
                stop_s: spec.duration_s,
                cubic: true,
            },
        ];
        for run in 1..=repeats {
            progress(&format!(
                "{policy} beside Cubic on {label}, real run {run} of {repeats}"
            ));
            let real = row(
                Side::Real,
                run,
                &real_run(policy, &net, &flows, spec.duration_s)?.0,
            );
            on_row(&real)?;
            rows.push(real);
        }
    }
    Ok(rows)
}

/// One flow of a real sharing run.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PlannedFlow {
    /// The objective a learned flow decides for.
    objective: [f64; 3],
    /// When it starts (s into the run).
    start_s: f64,
    /// When it stops (s into the run).
    stop_s: f64,
    /// Kernel Cubic instead of the compared scheme.
    cubic: bool,
}

/// Runs `flows` of `policy` together on a fresh real path of `net` for `duration_s` and
/// returns their delivery rates per second and each flow's MI records (none for a kernel TCP
/// flow).
fn real_run(
    policy: &str,
    net: &FlowNetwork,
    flows: &[PlannedFlow],
    duration_s: f64,
) -> Result<(FlowRates, Vec<Vec<MiRecord>>), CompareError> {
    let path = path_of(net);
    let senders = flows
        .iter()
        .map(|f| sender(policy, f, path.bandwidth_pps / 2.0))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = flows
        .iter()
        .map(|f| if f.cubic { "cubic" } else { policy }.to_string())
        .collect();
    let topology = Topology::create(&path)?;
    let run_start_ns = monotonic_ns();
    let outcomes = std::thread::scope(|scope| {
        let timed = flows
            .iter()
            .zip(senders)
            .zip(&names)
            .map(|((f, sender), name)| TimedFlow {
                name,
                sender,
                start_s: f.start_s,
                length_s: f.stop_s - f.start_s,
            })
            .collect();
        run_timed_flows(scope, &topology, timed)
    });
    topology.close()?;
    let outcomes = outcomes.map_err(|e| CompareError::Policy(e.to_string()))?;
    let origins: Vec<f64> = outcomes
        .iter()
        .map(|o| seconds_between(run_start_ns, o.origin_ns))
        .collect();
    let rates = rates_per_second(&outcomes, &origins, flows, duration_s, &path);
    Ok((rates, outcomes.into_iter().map(|o| o.mis).collect()))
}

/// The sender of a planned flow: kernel Cubic, the kernel's twin of a classic scheme, or the
/// scheme's rate driver under the flow's objective from `start_rate_pps`.
fn sender(
    policy: &str,
    flow: &PlannedFlow,
    start_rate_pps: f64,
) -> Result<FlowSender, CompareError> {
    if flow.cubic {
        return Ok(FlowSender::Tcp("cubic".into()));
    }
    match kernel_tcp(policy) {
        Some(cc) => Ok(FlowSender::Tcp(cc.to_string())),
        None => rate_driver(policy, Some(flow.objective), start_rate_pps)
            .map(FlowSender::Controlled)
            .map_err(CompareError::Policy),
    }
}

/// The real path of a multi-flow network.
fn path_of(net: &FlowNetwork) -> PathSpec {
    PathSpec {
        bandwidth_pps: net.bw_pps,
        delay_s: net.delay_s,
        queue_pkts: net.queue_pkts.round() as u32,
        loss: net.loss,
    }
}

/// Per-second delivery rates of real flows, as the simulator's multi-flow runs give them:
/// each MI's acknowledged packets spread over the seconds its acknowledgements span (flow k's
/// MI times are offsets from `origins[k]`, seconds into the run), its RTT samples counted in
/// the second it ends against the path's propagation RTT, the link's capacity every second.
fn rates_per_second(
    outcomes: &[FlowOutcome],
    origins: &[f64],
    flows: &[PlannedFlow],
    duration_s: f64,
    path: &PathSpec,
) -> FlowRates {
    let windows = duration_s.ceil().max(1.0) as usize;
    let base_rtt_s = 2.0 * path.delay_s;
    let mut rates = vec![vec![0.0; windows]; outcomes.len()];
    let mut rtts = vec![vec![RttTally::default(); windows]; outcomes.len()];
    for (k, (o, &origin)) in outcomes.iter().zip(origins).enumerate() {
        for r in &o.mis {
            let from = origin + r.mi.recv_start_s;
            let to = origin + r.mi.recv_end_s;
            spread(&mut rates[k], from, to, r.mi.bytes_acked / BYTES_PER_PACKET);
            let second = (to.max(0.0) as usize).min(windows - 1);
            rtts[k][second].add(&r.mi.rtt, base_rtt_s);
        }
    }
    FlowRates {
        window_s: 1.0,
        rates,
        rtts,
        capacity_pps: vec![path.bandwidth_pps; windows],
        totals: outcomes
            .iter()
            .map(|o| SenderTotals {
                sent: o.sent,
                acked: o.acked,
                lost: o.lost,
            })
            .collect(),
        starts: flows.iter().map(|f| f.start_s).collect(),
        stops: flows
            .iter()
            .map(|f| (f.stop_s < duration_s).then_some(f.stop_s))
            .collect(),
        // The real runs' MIs stay in their own records (`mocc net run`'s mis-N.csv).
        mis: Vec::new(),
    }
}

/// Adds `packets` to the one-second windows of `rates` in proportion to how much of
/// `[from, to]` each covers (all to `from`'s window for an instant); time outside the windows
/// counts nowhere.
fn spread(rates: &mut [f64], from: f64, to: f64, packets: f64) {
    if packets <= 0.0 {
        return;
    }
    if to <= from {
        if let Some(w) = window_of(rates.len(), from) {
            rates[w] += packets;
        }
        return;
    }
    let mut t = from;
    while t < to {
        let second = t.floor();
        let end = (second + 1.0).min(to);
        if let Some(w) = window_of(rates.len(), t) {
            rates[w] += packets * (end - t) / (to - from);
        }
        t = end;
    }
}

fn window_of(windows: usize, t: f64) -> Option<usize> {
    (t >= 0.0 && (t as usize) < windows).then_some(t as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_splits_an_interval_by_the_seconds_it_covers() {
        let mut rates = vec![0.0; 3];
        // 10 packets acknowledged over [0.5, 2.5]: a quarter in second 0, half in 1, a
        // quarter in 2.
        spread(&mut rates, 0.5, 2.5, 10.0);
        assert_eq!(rates, vec![2.5, 5.0, 2.5]);
        // An instant counts whole in its second; time past the last second counts nowhere.
        spread(&mut rates, 1.2, 1.2, 1.0);
        assert_eq!(rates[1], 6.0);
        spread(&mut rates, 2.5, 4.5, 4.0);
        assert_eq!(rates[2], 3.5);
        spread(&mut rates, -1.0, -0.5, 4.0);
        assert_eq!(rates.iter().sum::<f64>(), 12.0);
    }
}
