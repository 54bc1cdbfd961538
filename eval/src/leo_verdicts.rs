//! The LEO study's verdicts: each learned scheme against the targets (utilization, delay
//! inflation and goodput ratio at the reference reconfiguration interval, better than each
//! classic scheme on two of the three; Figure 7's many flows against Copa).
//!
//! Figure 7's targets are those of its suite, configs/eval/leo-flows.yaml (compiled in:
//! [`figure7_targets`]), judged by [`crate::targets`] as `mocc eval` judges them; the
//! single-flow thresholds below are the `leo` target's of the sharing suites
//! (configs/eval/shared.yaml and its validation twin), which a test holds equal.

use crate::fairness_outputs::FairnessSummary;
use crate::leo_study::{LeoPart, LeoStudy, LeoSummary};
use crate::suite::Suite;
use crate::targets::{assess, SuiteResults, Target};
use serde::Serialize;

/// Figure 7's suite as the repository holds it (configs/eval/leo-flows.yaml).
pub const FIGURE7_SUITE: &str = include_str!("../../configs/eval/leo-flows.yaml");

/// Figure 7's suite, parsed and validated.
pub fn figure7_suite() -> Result<Suite, String> {
    let suite: Suite = serde_saphyr::from_str(FIGURE7_SUITE)
        .map_err(|e| format!("configs/eval/leo-flows.yaml: {e}"))?;
    suite
        .validate()
        .map_err(|e| format!("configs/eval/leo-flows.yaml: {e}"))?;
    Ok(suite)
}

/// Figure 7's targets (configs/eval/leo-flows.yaml's `targets:`).
pub fn figure7_targets() -> Result<Vec<Target>, String> {
    Ok(figure7_suite()?.targets)
}

/// A learned scheme's standing against the targets for the LEO study.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeoVerdict {
    /// The learned scheme.
    pub policy: String,
    /// The reconfiguration interval judged (s).
    pub reconfiguration_every_s: f64,
    /// One flow on the LEO path: median utilization (target >= 0.85).
    pub utilization: f64,
    /// ... median delay inflation (target <= 1.3).
    pub delay_inflation: Option<f64>,
    /// Two flows on the LEO path: median goodput ratio (target >= 0.8).
    pub goodput_ratio: Option<f64>,
    /// All three targets met.
    pub meets_targets: bool,
    /// Per classic scheme: on how many of the three it is better than that scheme.
    pub better_than: Vec<(String, usize)>,
    /// Better than every classic scheme on at least two of the three.
    pub better_than_every_classic: bool,
    /// Figure 7's runs: per flow count, its numbers and whether it meets Jain >= 0.95,
    /// utilization >= 0.95 and latency ratio <= 1.1, and whether Copa's point dominates it.
    pub many_flows: Vec<ManyFlowsVerdict>,
}

/// One flow count of the many-flows verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ManyFlowsVerdict {
    /// Flows.
    pub flows: usize,
    /// Median per-second Jain's index.
    pub jain_index: f64,
    /// Mean utilization.
    pub utilization: f64,
    /// Mean RTT over the base RTT.
    pub rtt_ratio: Option<f64>,
    /// Every Figure 7 target for this flow count met (configs/eval/leo-flows.yaml: Jain >=
    /// 0.95, utilization >= 0.95, RTT ratio <= 1.1); false when no target names the count.
    pub meets_targets: bool,
    /// Copa's operating point is at least as good on utilization and on RTT ratio and better
    /// on one (None when Copa did not run).
    pub behind_copa: Option<bool>,
}

/// The single-flow utilization target.
pub const TARGET_UTILIZATION: f64 = 0.85;
/// The single-flow delay-inflation target.
pub const TARGET_DELAY_INFLATION: f64 = 1.3;
/// The two-flow goodput-ratio target.
pub const TARGET_GOODPUT_RATIO: f64 = 0.8;

/// The verdict of every learned scheme of `summaries` (`classic` says which are classic), its
/// many-flows runs judged by `targets` (Figure 7's).
pub fn verdicts(
    study: &LeoStudy,
    summaries: &[LeoSummary],
    many_flows: &[FairnessSummary],
    targets: &[Target],
    classic: impl Fn(&str) -> bool,
) -> Vec<LeoVerdict> {
    let Some(every) = study.reference_interval_s() else {
        return Vec::new();
    };
    let find = |part: LeoPart, policy: &str| {
        summaries
            .iter()
            .find(|s| s.part == part && s.x == every && s.policy == policy)
            .map(|s| s.median)
    };
    let three = |policy: &str| {
        let single = find(LeoPart::Single, policy);
        let two = find(LeoPart::TwoFlows, policy);
        (
            single.map(|m| m.utilization),
            single.and_then(|m| m.delay_inflation),
            two.and_then(|m| m.goodput_ratio),
        )
    };
    let mut policies: Vec<&str> = Vec::new();
    for s in summaries {
        if !policies.contains(&s.policy.as_str()) {
            policies.push(&s.policy);
        }
    }
    let classics: Vec<&str> = policies.iter().copied().filter(|p| classic(p)).collect();
    policies
        .iter()
        .copied()
        .filter(|p| !classic(p))
        .map(|p| {
            let (u, d, g) = three(p);
            let better_than: Vec<(String, usize)> = classics
                .iter()
                .map(|c| {
                    let (cu, cd, cg) = three(c);
                    let wins = [
                        higher(u, cu),
                        higher(cd, d), // lower inflation is better
                        higher(g, cg),
                    ];
                    (c.to_string(), wins.iter().filter(|w| **w).count())
                })
                .collect();
            LeoVerdict {
                policy: p.to_string(),
                reconfiguration_every_s: every,
                utilization: u.unwrap_or(f64::NAN),
                delay_inflation: d,
                goodput_ratio: g,
                meets_targets: u.is_some_and(|u| u >= TARGET_UTILIZATION)
                    && d.is_some_and(|d| d <= TARGET_DELAY_INFLATION)
                    && g.is_some_and(|g| g >= TARGET_GOODPUT_RATIO),
                better_than_every_classic: better_than.iter().all(|(_, w)| *w >= 2),
                better_than,
                many_flows: many_flows_verdicts(p, many_flows, targets),
            }
        })
        .collect()
}

/// Whether `a` is known and above `b` (or `b` is unknown).
fn higher(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a > b,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The many-flows verdicts of `policy`, each run judged by the targets that select its flow
/// count, beside Copa's runs of the same flow counts.
fn many_flows_verdicts(
    policy: &str,
    rows: &[FairnessSummary],
    targets: &[Target],
) -> Vec<ManyFlowsVerdict> {
    let copa = |flows: usize| {
        rows.iter()
            .find(|r| r.flows == flows && r.policy.eq_ignore_ascii_case("copa"))
    };
    rows.iter()
        .filter(|r| r.policy == policy)
        .map(|r| {
            let behind_copa = copa(r.flows).map(|c| {
                let rtt = r.rtt_ratio.unwrap_or(f64::INFINITY);
                let c_rtt = c.rtt_ratio.unwrap_or(f64::INFINITY);
                c.utilization >= r.utilization
                    && c_rtt <= rtt
                    && (c.utilization > r.utilization || c_rtt < rtt)
            });
            let own: Vec<Target> = targets
                .iter()
                .filter(|t| {
                    t.checks
                        .iter()
                        .all(|c| c.flows.as_ref().is_some_and(|f| f.contains(&r.flows)))
                })
                .cloned()
                .collect();
            let run = std::slice::from_ref(r);
            let results = SuiteResults {
                fairness: run,
                ..SuiteResults::default()
            };
            let outcomes = assess(&own, "leo-flows", policy, &results);
            ManyFlowsVerdict {
                flows: r.flows,
                jain_index: r.median_jain_index,
                utilization: r.utilization,
                rtt_ratio: r.rtt_ratio,
                meets_targets: !outcomes.is_empty() && outcomes.iter().all(|o| o.met),
                behind_copa,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leo_study::LeoMetrics;

    fn summary(part: LeoPart, policy: &str, u: f64, d: f64, g: Option<f64>) -> LeoSummary {
        LeoSummary {
            part,
            x: 15.0,
            policy: policy.into(),
            seeds: 1,
            median: LeoMetrics {
                utilization: u,
                goodput_mbps: 0.0,
                delay_inflation: Some(d),
                retransmission_rate: 0.0,
                jain_index: 1.0,
                goodput_ratio: g,
                second_flow_share: None,
            },
        }
    }

    #[test]
    fn verdicts_count_wins_against_each_classic() {
        let rows = vec![
            summary(LeoPart::Single, "mocc", 0.9, 1.2, None),
            summary(LeoPart::TwoFlows, "mocc", 0.0, 0.0, Some(0.85)),
            // Cubic: higher utilization, worse delay and sharing: two wins of three for mocc.
            summary(LeoPart::Single, "cubic", 0.95, 2.0, None),
            summary(LeoPart::TwoFlows, "cubic", 0.0, 0.0, Some(0.5)),
            // BBR: better on all but sharing: one win.
            summary(LeoPart::Single, "bbr", 0.95, 1.1, None),
            summary(LeoPart::TwoFlows, "bbr", 0.0, 0.0, Some(0.8)),
        ];
        let flows = vec![
            FairnessSummary {
                policy: "mocc".into(),
                network: "n".into(),
                flows: 5,
                median_jain_index: 0.99,
                utilization: 0.93,
                max_min_rate_ratio: 1.1,
                rtt_ratio: Some(1.2),
                run: 0,
            },
            FairnessSummary {
                policy: "copa".into(),
                network: "n".into(),
                flows: 5,
                median_jain_index: 0.999,
                utilization: 0.99,
                max_min_rate_ratio: 1.0,
                rtt_ratio: Some(1.05),
                run: 0,
            },
        ];
        let targets = figure7_targets().unwrap();
        let v = verdicts(&LeoStudy::standard(), &rows, &flows, &targets, |p| {
            p != "mocc"
        });
        assert_eq!(v.len(), 1);
        let v = &v[0];
        assert!(v.meets_targets);
        assert_eq!(
            v.better_than,
            vec![("cubic".to_string(), 2), ("bbr".to_string(), 1)]
        );
        assert!(!v.better_than_every_classic);
        assert_eq!(v.many_flows.len(), 1);
        assert!(!v.many_flows[0].meets_targets);
        assert_eq!(v.many_flows[0].behind_copa, Some(true));
    }

    #[test]
    fn figure7_suite_is_the_studys_many_flows_runs() {
        let suite = figure7_suite().unwrap();
        assert_eq!(
            suite.fairness.as_ref(),
            Some(&LeoStudy::standard().many_flows)
        );
        let names: Vec<&str> = suite.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["flows-5", "flows-10", "flows-20"]);
    }

    #[test]
    fn a_run_meets_figure7_only_inside_every_bound() {
        let targets = figure7_targets().unwrap();
        let run = |jain: f64, utilization: f64, rtt: f64| FairnessSummary {
            policy: "mocc".into(),
            network: "n".into(),
            flows: 10,
            median_jain_index: jain,
            utilization,
            max_min_rate_ratio: 1.0,
            rtt_ratio: Some(rtt),
            run: 0,
        };
        for (r, meets) in [
            (run(0.99, 0.96, 1.05), true),
            (run(0.94, 0.96, 1.05), false),
            (run(0.99, 0.94, 1.05), false),
            (run(0.99, 0.96, 1.2), false),
        ] {
            let v = many_flows_verdicts("mocc", &[r], &targets);
            assert_eq!(v[0].meets_targets, meets, "{v:?}");
        }
        // A count no target names is not met.
        let mut odd = run(0.99, 0.96, 1.05);
        odd.flows = 7;
        assert!(!many_flows_verdicts("mocc", &[odd], &targets)[0].meets_targets);
    }

    #[test]
    fn the_sharing_suites_leo_target_is_the_studys_single_flow_target() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for suite in [
            "configs/eval/shared.yaml",
            "configs/eval/validation/shared.yaml",
        ] {
            let s = Suite::load(&root.join(suite)).unwrap();
            let leo = s.targets.iter().find(|t| t.name == "leo").unwrap();
            let bound = |metric: &str| {
                leo.checks
                    .iter()
                    .find(|c| c.metric.to_string() == metric)
                    .unwrap()
                    .clone()
            };
            assert_eq!(
                bound("results.utilization").at_least,
                Some(TARGET_UTILIZATION),
                "{suite}"
            );
            assert_eq!(
                bound("results.rtt_ratio").at_most,
                Some(TARGET_DELAY_INFLATION),
                "{suite}"
            );
        }
    }
}
