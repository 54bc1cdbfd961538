//! What an evaluation reports: per-run network metrics and rewards ([`RunMetrics`], summed
//! over a run's MIs by [`RunSums`]), result rows with their policy, network, objective and
//! seed, their means, results.csv, and the errors of evaluating.

use crate::actor::{LoadedPolicy, PolicyLoadError};
use crate::mi_stats::MiStats;
use crate::suite::SuiteError;
use mocc_gym::reward::{aurora_reward, mocc_reward};
use mocc_gym::{MiOutcome, ScenarioError, StepInfo};
use serde::Serialize;

/// Errors of evaluation.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The suite file is unreadable or invalid; the message names the field.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// The policy could not be loaded.
    #[error(transparent)]
    Policy(#[from] PolicyLoadError),
    /// A scenario built from the suite is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A figure or its CSV could not be written.
    #[error(transparent)]
    Output(#[from] mocc_plot::chart::PlotError),
}

/// The per-run network metrics and rewards, also used for their means over runs:
/// utilization and throughput over the whole run, the others means over the run's MIs.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct RunMetrics {
    /// Delivered packets over the packets the link could carry in the run (its capacity
    /// integrated over the run's time).
    pub utilization: f64,
    /// Delivered packets over the run's seconds.
    pub thr_pps: f64,
    /// Mean RTT over MIs with samples (s).
    pub mean_rtt_s: f64,
    /// Mean RTT / propagation RTT over MIs with samples.
    pub rtt_ratio: f64,
    /// Mean loss ratio.
    pub loss: f64,
    /// Mean Aurora reward per MI.
    pub aurora_reward: f64,
    /// Mean MOCC reward per MI under the run's objective.
    pub mocc_reward: f64,
    /// Unweighted mean of the MIs' utilizations, as Aurora reports it (short MIs count as
    /// much as long ones, so it is not the run's share of the link: that is `utilization`).
    pub mi_utilization: f64,
    /// Unweighted mean of the MIs' delivery rates (packets/s), as Aurora reports it.
    pub mi_thr_pps: f64,
}

impl RunMetrics {
    /// Column names, in CSV order.
    pub const COLUMNS: &'static str =
        "utilization,thr_pps,mean_rtt_s,rtt_ratio,loss,aurora_reward,mocc_reward,mi_utilization,\
         mi_thr_pps";

    /// The values in [`Self::COLUMNS`] order.
    pub fn values(&self) -> [f64; 9] {
        [
            self.utilization,
            self.thr_pps,
            self.mean_rtt_s,
            self.rtt_ratio,
            self.loss,
            self.aurora_reward,
            self.mocc_reward,
            self.mi_utilization,
            self.mi_thr_pps,
        ]
    }

    fn from_values(v: [f64; 9]) -> Self {
        Self {
            utilization: v[0],
            thr_pps: v[1],
            mean_rtt_s: v[2],
            rtt_ratio: v[3],
            loss: v[4],
            aurora_reward: v[5],
            mocc_reward: v[6],
            mi_utilization: v[7],
            mi_thr_pps: v[8],
        }
    }

    /// Component-wise mean over the items where the metric is defined (NaN where no item
    /// defines it); [`Self::undefined_in`] says how many each mean leaves out.
    pub fn mean<'a>(items: impl IntoIterator<Item = &'a RunMetrics>) -> Self {
        let mut sum = [0.0; 9];
        let mut n = [0usize; 9];
        for m in items {
            for ((s, k), v) in sum.iter_mut().zip(n.iter_mut()).zip(m.values()) {
                if v.is_finite() {
                    *s += v;
                    *k += 1;
                }
            }
        }
        let mut means = [f64::NAN; 9];
        for ((m, s), k) in means.iter_mut().zip(sum).zip(n) {
            if k > 0 {
                *m = s / k as f64;
            }
        }
        Self::from_values(means)
    }

    /// For each column some item leaves undefined (a run that delivered nothing has no RTT),
    /// how many items leave it undefined.
    pub fn undefined_in<'a>(
        items: impl IntoIterator<Item = &'a RunMetrics>,
    ) -> std::collections::BTreeMap<String, usize> {
        let columns: Vec<&str> = Self::COLUMNS.split(',').collect();
        let mut out = std::collections::BTreeMap::new();
        for m in items {
            for (name, v) in columns.iter().zip(m.values()) {
                if !v.is_finite() {
                    *out.entry((*name).to_string()).or_insert(0) += 1;
                }
            }
        }
        out
    }
}

/// One row of results.csv.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalRow {
    /// Policy name.
    pub policy: String,
    /// Network label.
    pub network: String,
    /// Objective weight on throughput.
    pub w_thr: f64,
    /// Objective weight on latency.
    pub w_lat: f64,
    /// Objective weight on loss.
    pub w_loss: f64,
    /// Seed.
    pub seed: u64,
    /// The run's metrics.
    #[serde(flatten)]
    pub metrics: RunMetrics,
}

impl EvalRow {
    /// The row of `policy` on `network` under objective `w` and `seed`.
    pub fn new(
        policy: &LoadedPolicy,
        network: String,
        w: [f64; 3],
        seed: u64,
        metrics: RunMetrics,
    ) -> Self {
        Self {
            policy: policy.name().to_string(),
            network,
            w_thr: w[0],
            w_lat: w[1],
            w_loss: w[2],
            seed,
            metrics,
        }
    }
}

/// One policy's metric means over its rows (`mocc eval` prints one per policy last).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalSummary {
    /// The policy.
    pub policy: String,
    /// Its runs.
    pub runs: usize,
    /// For each metric some run leaves undefined (no RTT where nothing was delivered), how
    /// many runs its mean omits.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub omitted: std::collections::BTreeMap<String, usize>,
    /// Means over the runs where each is defined.
    #[serde(flatten)]
    pub metrics: RunMetrics,
}

/// What `mocc eval` writes to `--out`: results.csv (the marker) and figures and CSV files
/// beside it; a previous evaluation there is replaced as a whole.
pub const EVAL_OUTPUTS: mocc_outputs::Replaceable = mocc_outputs::Replaceable {
    what: "an evaluation's outputs",
    owns: |name, is_dir| {
        !is_dir && (name.ends_with(".csv") || name.ends_with(".png") || name == RULES_JSON)
    },
    marker: RESULTS_CSV,
    command: Some("mocc eval"),
};

/// The file in an evaluation's folder with each learned policy's rule: the one it ran under,
/// the one its weights were trained under, the parts between them declared untrained, and
/// the overlay `mocc eval --rule` applied.
pub const RULES_JSON: &str = "rules.json";

/// The file of result rows in an evaluation's folder.
pub const RESULTS_CSV: &str = "results.csv";

/// One run's sums: the network statistics and both rewards per MI, and the run's totals
/// (delivered packets over the time-integrated capacity) for utilization and throughput.
#[derive(Default)]
pub struct RunSums {
    net: MiStats,
    aurora: f64,
    mocc: f64,
    totals: Option<RunTotals>,
}

/// Delivered packets, capacity in packets and seconds of a whole run.
#[derive(Clone, Copy)]
struct RunTotals {
    delivered: f64,
    capacity: f64,
    seconds: f64,
}

impl RunSums {
    /// Sets the run's totals: `delivered` packets over `capacity` packets the link could carry
    /// in `seconds`.
    pub fn set_totals(&mut self, delivered: f64, capacity: f64, seconds: f64) {
        self.totals = Some(RunTotals {
            delivered,
            capacity,
            seconds,
        });
    }

    /// Adds one MI's statistics and its rewards under objective `w`.
    pub fn add(&mut self, i: &StepInfo, w: &[f64; 3]) {
        let o = MiOutcome {
            throughput_pps: i.metric_thr_pps,
            delivered_pps: i.throughput_pps,
            mean_rtt_s: i.mean_rtt_s,
            loss: i.loss,
            capacity_pps: i.capacity_pps,
            base_rtt_s: i.base_rtt_s,
            ..MiOutcome::default()
        };
        self.net.add(i);
        self.aurora += aurora_reward(&o);
        self.mocc += mocc_reward(&o, w);
    }

    /// The run's metrics: utilization and throughput from its totals (which every run sets:
    /// without them both are NaN rather than a per-MI mean passing for them), the rest means
    /// over its MIs.
    pub fn metrics(&self) -> RunMetrics {
        let n = self.net.mis().max(1) as f64;
        let (utilization, thr_pps) = match self.totals {
            Some(t) => (
                if t.capacity > 0.0 {
                    t.delivered / t.capacity
                } else {
                    0.0
                },
                t.delivered / t.seconds.max(1e-9),
            ),
            None => (f64::NAN, f64::NAN),
        };
        RunMetrics {
            utilization,
            thr_pps,
            mean_rtt_s: self.net.mean_rtt_s(),
            rtt_ratio: self.net.rtt_ratio(),
            loss: self.net.loss(),
            aurora_reward: self.aurora / n,
            mocc_reward: self.mocc / n,
            mi_utilization: self.net.utilization(),
            mi_thr_pps: self.net.throughput_pps(),
        }
    }
}

/// Each policy's means over its rows, in the order policies first appear (none for a policy
/// without rows: nothing was measured).
pub fn summarize(rows: &[EvalRow]) -> Vec<EvalSummary> {
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.policy.as_str()) {
            names.push(&r.policy);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let own: Vec<&RunMetrics> = rows
                .iter()
                .filter(|r| r.policy == name)
                .map(|r| &r.metrics)
                .collect();
            EvalSummary {
                policy: name.to_string(),
                runs: own.len(),
                omitted: RunMetrics::undefined_in(own.iter().copied()),
                metrics: RunMetrics::mean(own),
            }
        })
        .collect()
}

/// The median of the finite values of `xs` (NaN for none): the one median of evaluation,
/// experiments and benchmarks.
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.retain(|x| x.is_finite());
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    }
}

/// Writes results.csv.
pub fn write_csv<W: std::io::Write>(mut out: W, rows: &[EvalRow]) -> std::io::Result<()> {
    writeln!(
        out,
        "policy,network,w_thr,w_lat,w_loss,seed,{}",
        RunMetrics::COLUMNS
    )?;
    for r in rows {
        write!(
            out,
            "{},{},{},{},{},{}",
            mocc_outputs::csv::cell(&r.policy),
            mocc_outputs::csv::cell(&r.network),
            r.w_thr,
            r.w_lat,
            r.w_loss,
            r.seed
        )?;
        for v in r.metrics.values() {
            write!(out, ",{}", mocc_outputs::csv::number(Some(v)))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_of_the_finite_values() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(vec![f64::NAN, 5.0, f64::INFINITY, 1.0]), 3.0);
        assert!(median(Vec::new()).is_nan());
        assert!(median(vec![f64::NAN]).is_nan());
    }
}
