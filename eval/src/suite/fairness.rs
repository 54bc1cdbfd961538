//! The `fairness:` section of an evaluation suite: n flows of one scheme on one or more
//! bottlenecks, when each starts and stops, and the runs of a case with jittered starts.

use super::positive_secs;
use crate::flows::FlowNetwork;
use serde::{Deserialize, Serialize};

/// The `fairness:` section of a suite: n flows of one scheme with staggered starts, on one or
/// more bottlenecks, optionally with different objectives or base RTTs per flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FairnessSpec {
    /// The bottleneck.
    pub network: FlowNetwork,
    /// More bottlenecks to run the same flows on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<FlowNetwork>,
    /// Flow counts to run (each 2..=[`MAX_FAIRNESS_FLOWS`]).
    pub flows: Vec<usize>,
    /// Seconds between flow starts (flow k starts at k x `stagger_s`; default 0).
    #[serde(default)]
    pub stagger_s: f64,
    /// Instead of `stagger_s`: the n flows of a run start evenly spaced within the first this
    /// many seconds, flow k at k x `starts_within_s` / n (the LEO study's "started evenly
    /// within the first 100 s").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_within_s: Option<f64>,
    /// How long each flow lasts (s): it stops sending this long after its start. Default: to
    /// the end of the run. Statistics cover the seconds all flows run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow_duration_s: Option<f64>,
    /// Length of each run (s).
    pub duration_s: f64,
    /// Objectives of the flows, flow k taking entry k (cycling); default: each policy's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objectives: Option<Vec<[f64; 3]>>,
    /// Round-trip time each flow's access path adds (s), flow k taking entry k (cycling):
    /// flows with different base RTTs. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_rtt_s: Vec<f64>,
    /// Runs of each case (default 1): run 0 starts the flows as scheduled; each later run
    /// moves every flow's start but the first by its own draw from
    /// [-`start_jitter_s`, +`start_jitter_s`] (seeded by the run and the flow). Where flows
    /// share a link, the outcome can hinge on start times a few milliseconds apart (a real
    /// path's timers never repeat them); the runs show the spread a single run hides.
    #[serde(default = "one_run", skip_serializing_if = "is_one_run")]
    pub runs: u32,
    /// How far a later run moves each flow's start (s; default 0, required > 0 with `runs`
    /// above 1).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_jitter_s: f64,
    /// Keep every MI of every learned flow (default false): `mocc eval` writes them to
    /// `fairness-mis/` (one CSV per flow and run: what the flow's loop saw and did, as
    /// `mocc net run` records it on the real path).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub record_mis: bool,
}

fn one_run() -> u32 {
    1
}

fn is_one_run(runs: &u32) -> bool {
    *runs == 1
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A draw in [0, 1) for (`run`, `flow`): ChaCha8 keyed by the run, one stream per flow, its
/// first 53 bits (the same on every machine).
fn unit_draw(run: u64, flow: u64) -> f64 {
    use rand_chacha::rand_core::RngCore;
    let bits = mocc_gym::env_rng(run, flow).next_u64() >> 11;
    bits as f64 / (1u64 << 53) as f64
}

/// The most runs a fairness case may have.
pub const MAX_FAIRNESS_RUNS: u32 = 1000;

/// The most flows a fairness run may have.
pub const MAX_FAIRNESS_FLOWS: usize = 32;

impl FairnessSpec {
    /// When flow `k` of a run of `n` starts (s).
    pub fn start_of(&self, k: usize, n: usize) -> f64 {
        match self.starts_within_s {
            Some(within) => k as f64 * within / n.max(1) as f64,
            None => k as f64 * self.stagger_s,
        }
    }

    /// When flow `k` of a run of `n` stops (s), if it stops before the run ends.
    pub fn stop_of(&self, k: usize, n: usize) -> Option<f64> {
        self.flow_duration_s.map(|d| self.start_of(k, n) + d)
    }

    /// When flow `k` of `n` starts in run `run` (0: as scheduled; later runs: moved by the
    /// run's draw for the flow, never before 0; the first flow never moves).
    pub fn start_in_run(&self, k: usize, n: usize, run: u32) -> f64 {
        let scheduled = self.start_of(k, n);
        if run == 0 || k == 0 || self.start_jitter_s == 0.0 {
            return scheduled;
        }
        let u = unit_draw(u64::from(run), k as u64);
        (scheduled + self.start_jitter_s * (2.0 * u - 1.0)).max(0.0)
    }

    /// When flow `k` of `n` stops in run `run`, if it stops before the run ends (its
    /// duration counts from its start in that run).
    pub fn stop_in_run(&self, k: usize, n: usize, run: u32) -> Option<f64> {
        self.flow_duration_s
            .map(|d| self.start_in_run(k, n, run) + d)
    }

    /// Every bottleneck: `network`, then `networks`.
    pub fn all_networks(&self) -> Vec<FlowNetwork> {
        std::iter::once(self.network)
            .chain(self.networks.iter().copied())
            .collect()
    }

    /// Flow `k`'s objective, given the policy's own.
    pub fn objective_of(&self, k: usize, own: [f64; 3]) -> [f64; 3] {
        match &self.objectives {
            Some(ws) if !ws.is_empty() => ws[k % ws.len()],
            _ => own,
        }
    }

    /// Flow `k`'s extra round-trip time (s).
    pub fn extra_rtt_of(&self, k: usize) -> f64 {
        if self.extra_rtt_s.is_empty() {
            0.0
        } else {
            self.extra_rtt_s[k % self.extra_rtt_s.len()]
        }
    }

    fn validate_runs(&self) -> Result<(), String> {
        if !(1..=MAX_FAIRNESS_RUNS).contains(&self.runs) {
            return Err(format!(
                "fairness.runs: must lie in [1, {MAX_FAIRNESS_RUNS}] (got {})",
                self.runs
            ));
        }
        if !(self.start_jitter_s.is_finite() && self.start_jitter_s >= 0.0) {
            return Err(format!(
                "fairness.start_jitter_s: must be >= 0 (got {})",
                self.start_jitter_s
            ));
        }
        if self.runs > 1 && self.start_jitter_s == 0.0 {
            return Err(format!(
                "fairness.start_jitter_s: runs: {} repeats one schedule; give a jitter > 0",
                self.runs
            ));
        }
        Ok(())
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.flows.is_empty()
            || self
                .flows
                .iter()
                .any(|&n| !(2..=MAX_FAIRNESS_FLOWS).contains(&n))
        {
            return Err(format!(
                "fairness.flows: each count must lie in [2, {MAX_FAIRNESS_FLOWS}] (got {:?})",
                self.flows
            ));
        }
        positive_secs("fairness.duration_s", self.duration_s)?;
        if !(self.stagger_s.is_finite() && self.stagger_s >= 0.0) {
            return Err(format!(
                "fairness.stagger_s: must be >= 0 (got {})",
                self.stagger_s
            ));
        }
        if let Some(within) = self.starts_within_s {
            positive_secs("fairness.starts_within_s", within)?;
            if self.stagger_s > 0.0 {
                return Err("fairness.starts_within_s: give it or stagger_s, not both".into());
            }
        }
        if let Some(d) = self.flow_duration_s {
            positive_secs("fairness.flow_duration_s", d)?;
        }
        self.validate_runs()?;
        for &n in &self.flows {
            let last_start = self.start_of(n - 1, n) + self.start_jitter_s;
            if last_start >= self.duration_s {
                return Err(format!(
                    "fairness.duration_s: must exceed the last flow's latest start ({last_start} s with {n} flows)"
                ));
            }
            if let Some(first_stop) = self.stop_of(0, n) {
                if first_stop <= last_start {
                    return Err(format!(
                        "fairness.flow_duration_s: the first of {n} flows stops at {first_stop} s, \
                         before the last starts ({last_start} s): they never all run"
                    ));
                }
            }
        }
        for (i, n) in self.all_networks().iter().enumerate() {
            n.validate()
                .map_err(|e| format!("fairness.networks[{i}]: {e}"))?;
        }
        for (i, w) in self.objectives.iter().flatten().enumerate() {
            mocc_gym::config::validate_objective(&format!("fairness.objectives[{i}]"), w)
                .map_err(|e| e.to_string())?;
        }
        for (i, x) in self.extra_rtt_s.iter().enumerate() {
            if !(x.is_finite() && *x >= 0.0 && *x <= 10.0) {
                return Err(format!(
                    "fairness.extra_rtt_s[{i}]: must lie in [0, 10] s (got {x})"
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_runs_start_and_stop_as_the_spec_says() {
        let read = |yaml: &str| serde_saphyr::from_str::<FairnessSpec>(yaml).unwrap();
        let base = "network: {bw_pps: 8333, delay_s: 0.025, queue_pkts: 2083}\nduration_s: 250\n";
        // The LEO study's Figure 7: evenly within 100 s, 150 s each, up to 32 flows.
        let leo = read(&format!(
            "{base}flows: [5, 32]\nstarts_within_s: 100\nflow_duration_s: 150\n"
        ));
        assert_eq!(leo.validate(), Ok(()));
        let starts: Vec<f64> = (0..5).map(|k| leo.start_of(k, 5)).collect();
        assert_eq!(starts, [0.0, 20.0, 40.0, 60.0, 80.0]);
        assert_eq!(leo.stop_of(4, 5), Some(230.0));
        assert_eq!(leo.start_of(31, 32), 96.875);
        // Staggered flows as before: k x stagger_s, to the end of the run.
        let staggered = read(&format!("{base}flows: [3]\nstagger_s: 5\n"));
        assert_eq!(staggered.validate(), Ok(()));
        assert_eq!(
            (staggered.start_of(2, 3), staggered.stop_of(2, 3)),
            (10.0, None)
        );
        let field = |yaml: String| {
            read(&yaml)
                .validate()
                .unwrap_err()
                .split(':')
                .next()
                .unwrap()
                .to_string()
        };
        assert_eq!(field(format!("{base}flows: [33]\n")), "fairness.flows");
        assert_eq!(field(format!("{base}flows: [1]\n")), "fairness.flows");
        assert_eq!(
            field(format!(
                "{base}flows: [4]\nstagger_s: 1\nstarts_within_s: 10\n"
            )),
            "fairness.starts_within_s"
        );
        // The first flow stops before the last starts: they never all run.
        assert_eq!(
            field(format!(
                "{base}flows: [5]\nstarts_within_s: 100\nflow_duration_s: 50\n"
            )),
            "fairness.flow_duration_s"
        );
        assert_eq!(
            field(format!("{base}flows: [5]\nstarts_within_s: 400\n")),
            "fairness.duration_s"
        );
        assert_eq!(
            field(format!("{base}flows: [5]\nflow_duration_s: -1\n")),
            "fairness.flow_duration_s"
        );
    }

    #[test]
    fn later_runs_move_every_start_but_the_first_within_the_jitter() {
        let read = |yaml: &str| serde_saphyr::from_str::<FairnessSpec>(yaml).unwrap();
        let base = "network: {bw_pps: 200, delay_s: 0.03, queue_pkts: 24}\nduration_s: 45\n";
        let spec = read(&format!(
            "{base}flows: [4]\nstagger_s: 5\nruns: 20\nstart_jitter_s: 0.05\nflow_duration_s: 30\n"
        ));
        assert_eq!(spec.validate(), Ok(()));
        let mut moved = Vec::new();
        for run in 0..spec.runs {
            assert_eq!(spec.start_in_run(0, 4, run), 0.0);
            for k in 1..4 {
                let start = spec.start_in_run(k, 4, run);
                let offset = start - spec.start_of(k, 4);
                assert!(offset.abs() <= 0.05, "run {run} flow {k}: {offset}");
                assert_eq!(spec.stop_in_run(k, 4, run), Some(start + 30.0));
                // The same draw every time (and on every machine: integer bits).
                assert_eq!(start.to_bits(), spec.start_in_run(k, 4, run).to_bits());
                if run == 0 {
                    assert_eq!(offset, 0.0);
                } else {
                    moved.push(offset);
                }
            }
        }
        // Draws spread over the interval, both ways, none repeated.
        assert!(moved.iter().any(|&o| o < -0.025) && moved.iter().any(|&o| o > 0.025));
        let mut distinct = moved.clone();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        assert_eq!(distinct.len(), moved.len());
        // A flow scheduled at 0 is never moved before 0.
        let together = read(&format!(
            "{base}flows: [3]\nruns: 5\nstart_jitter_s: 0.05\n"
        ));
        assert!((0..5).all(|run| together.start_in_run(2, 3, run) >= 0.0));
        // One run is the default and ignores the jitter's absence; more need one.
        let one = read(&format!("{base}flows: [2]\nstagger_s: 5\n"));
        assert_eq!((one.runs, one.start_in_run(1, 2, 0)), (1, 5.0));
        let error = |yaml: String| read(&yaml).validate().unwrap_err();
        assert!(
            error(format!("{base}flows: [2]\nruns: 3\n")).starts_with("fairness.start_jitter_s")
        );
        assert!(error(format!("{base}flows: [2]\nruns: 0\n")).starts_with("fairness.runs"));
        assert!(
            error(format!("{base}flows: [2]\nruns: 2\nstart_jitter_s: -0.1\n"))
                .starts_with("fairness.start_jitter_s")
        );
        // The latest start, jitter included, must leave time for all flows to run.
        assert!(error(format!(
            "{base}flows: [2]\nstagger_s: 44.99\nruns: 2\nstart_jitter_s: 0.05\n"
        ))
        .starts_with("fairness.duration_s"));
    }
}
