use super::*;
use crate::results::RunMetrics;
use crate::suite::Suite;

fn suite(yaml: &str) -> Suite {
    serde_saphyr::from_str(yaml).unwrap()
}

/// A suite with one network, a fairness section on two networks and a friendliness section.
const SUITE: &str = "
networks: [{bw_pps: 300, delay_s: 0.05, queue_pkts: 50}]
fairness:
  network: {bw_pps: 800, delay_s: 0.02, queue_pkts: 100}
  networks: [{bw_pps: 300, delay_s: 0.05, queue_pkts: 120}]
  flows: [2, 3]
  stagger_s: 5
  duration_s: 30
friendliness:
  network: {bw_pps: 600, delay_s: 0.025, queue_pkts: 30}
  buffers_bdp: [1, 4]
  duration_s: 30
";

fn with_targets(targets: &str) -> Result<(), String> {
    let mut s = suite(SUITE);
    s.targets = serde_saphyr::from_str(targets).map_err(|e| e.to_string())?;
    s.validate()
}

#[test]
fn metrics_parse_by_section_and_column() {
    let m: Metric = "fairness.median_jain_index".parse().unwrap();
    assert_eq!(m.section, Section::Fairness);
    assert_eq!(m.to_string(), "fairness.median_jain_index");
    let e = "results.jain".parse::<Metric>().unwrap_err();
    assert!(e.contains("results has no metric \"jain\""), "{e}");
    assert!(e.contains("utilization"), "{e}");
    let e = "leo.utilization".parse::<Metric>().unwrap_err();
    assert!(e.contains("unknown section \"leo\""), "{e}");
    assert!("utilization".parse::<Metric>().is_err());
}

#[test]
fn targets_are_checked_against_the_suite() {
    let ok = "[{name: fair, checks: [{metric: fairness.median_jain_index, \
              network: bw800_d0.02_q100, flows: [2], at_least: 0.95}]}]";
    assert_eq!(with_targets(ok), Ok(()));
    for (targets, message) in [
        (
            "[{name: t, checks: [{metric: results.utilization}]}]",
            "targets[0].checks[0]: give at_least, at_most or both",
        ),
        (
            "[{name: t, checks: [{metric: results.utilization, at_least: 2, at_most: 1}]}]",
            "at_least 2 is above at_most 1",
        ),
        (
            "[{name: t, checks: []}]",
            "targets[0].checks: at least one check is required",
        ),
        (
            "[{name: t, checks: [{metric: fairness.utilization, network: bw1_d1_q1, at_least: 1}]}]",
            "targets[0].checks[0].network: the suite's fairness cases have no network \"bw1_d1_q1\" \
             (they have bw800_d0.02_q100, bw300_d0.05_q120)",
        ),
        (
            "[{name: t, checks: [{metric: fairness.utilization, flows: [4], at_least: 1}]}]",
            "targets[0].checks[0].flows: the fairness section runs no case of 4 flows",
        ),
        (
            "[{name: t, checks: [{metric: results.utilization, flows: [2], at_least: 1}]}]",
            "flows: selects fairness runs only",
        ),
        (
            "[{name: t, checks: [{metric: fairness.utilization, of: spearman_w_thr, at_least: 1}]}]",
            "spearman_w_thr reads results only",
        ),
        (
            "[{name: t, checks: [{metric: results.loss, at_most: 1}]}, \
              {name: t, checks: [{metric: results.loss, at_most: 1}]}]",
            "targets[1].name: \"t\" names an earlier target too",
        ),
        (
            "[{name: ' ', checks: [{metric: results.loss, at_most: 1}]}]",
            "targets[0].name: must not be empty",
        ),
    ] {
        let e = with_targets(targets).unwrap_err();
        assert!(e.contains(message), "{targets}: {e}");
    }
    // A section the suite does not run.
    let mut s = suite("networks: [{bw_pps: 300, delay_s: 0.05, queue_pkts: 50}]");
    s.targets = serde_saphyr::from_str(
        "[{name: t, checks: [{metric: friendliness.ratio, at_least: 0.5}]}]",
    )
    .unwrap();
    let e = s.validate().unwrap_err();
    assert!(
        e.contains("friendliness.ratio needs the suite's friendliness section"),
        "{e}"
    );
    // Unknown keys are refused by the parser.
    assert!(
        with_targets("[{name: t, checks: [{metric: results.loss, at_most: 1, typo: 1}]}]").is_err()
    );
}

fn row(policy: &str, network: &str, w_thr: f64, utilization: f64) -> EvalRow {
    EvalRow {
        policy: policy.into(),
        network: network.into(),
        w_thr,
        w_lat: 0.9 - w_thr,
        w_loss: 0.1,
        seed: 0,
        metrics: RunMetrics {
            utilization,
            ..RunMetrics::default()
        },
    }
}

fn fair(policy: &str, flows: usize, jain: f64, ratio: f64, rtt: Option<f64>) -> FairnessSummary {
    FairnessSummary {
        policy: policy.into(),
        network: "bw800_d0.02_q100".into(),
        flows,
        median_jain_index: jain,
        utilization: 0.9,
        max_min_rate_ratio: ratio,
        rtt_ratio: rtt,
        run: 0,
    }
}

fn friendly(policy: &str, network: &str, ratio: f64) -> FriendlinessRow {
    FriendlinessRow {
        policy: policy.into(),
        network: network.into(),
        policy_pps: ratio * 100.0,
        cubic_pps: 100.0,
        ratio,
        queue_pkts: 30.0,
    }
}

fn check(yaml: &str) -> Check {
    serde_saphyr::from_str(yaml).unwrap()
}

#[test]
fn checks_reduce_the_selected_cases() {
    let rows = vec![
        row("p", "a", 0.2, 0.5),
        row("p", "a", 0.8, 0.9),
        row("p", "b", 0.2, 0.7),
        row("q", "a", 0.2, 0.1),
    ];
    let results = SuiteResults {
        rows: &rows,
        ..SuiteResults::default()
    };
    let value = |yaml: &str| check_value(&check(yaml), "p", &results);
    assert_eq!(
        value("{metric: results.utilization, at_least: 0}"),
        (Some(0.5), 3)
    );
    assert_eq!(
        value("{metric: results.utilization, of: max, at_least: 0}"),
        (Some(0.9), 3)
    );
    let (mean, n) = value("{metric: results.utilization, of: mean, network: a, at_least: 0}");
    assert!((mean.unwrap() - 0.7).abs() < 1e-12);
    assert_eq!(n, 2);
    assert_eq!(
        value("{metric: results.utilization, of: median, at_least: 0}"),
        (Some(0.7), 3)
    );
    // Means per w_thr: 0.2 -> 0.6, 0.8 -> 0.9: rising, rho = 1.
    assert_eq!(
        value("{metric: results.utilization, of: spearman_w_thr, at_least: 0.8}"),
        (Some(1.0), 3)
    );
    // No case of the policy: no value, not met.
    let none = check_value(
        &check("{metric: results.utilization, at_least: 0}"),
        "r",
        &results,
    );
    assert_eq!(none, (None, 0));
}

#[test]
fn fairness_and_friendliness_cases_by_hand() {
    let fairness = vec![
        fair("p", 2, 0.99, 1.25, Some(1.1)),
        fair("p", 3, 0.93, 2.5, Some(1.3)),
    ];
    let friendliness = vec![friendly("p", "one", 0.8), friendly("p", "four", 2.5)];
    let results = SuiteResults {
        fairness: &fairness,
        friendliness: &friendliness,
        ..SuiteResults::default()
    };
    let value = |yaml: &str| check_value(&check(yaml), "p", &results).0;
    assert_eq!(
        value("{metric: fairness.median_jain_index, at_least: 0.95}"),
        Some(0.93)
    );
    assert_eq!(
        value("{metric: fairness.median_jain_index, flows: [2], at_least: 0.95}"),
        Some(0.99)
    );
    // The slowest flow's rate over the fastest's: 1 / 2.5.
    assert_eq!(
        value("{metric: fairness.min_max_rate_ratio, at_least: 0.5}"),
        Some(0.4)
    );
    assert_eq!(
        value("{metric: fairness.rtt_ratio, of: max, at_most: 1.5}"),
        Some(1.3)
    );
    assert_eq!(
        value("{metric: friendliness.ratio, of: max, at_most: 2}"),
        Some(2.5)
    );
    assert_eq!(
        value("{metric: friendliness.ratio, network: one, at_least: 0.5}"),
        Some(0.8)
    );
    // A run without an RTT sample leaves the check without a value.
    let fairness = vec![
        fair("p", 2, 0.99, 1.0, None),
        fair("p", 3, 0.99, 1.0, Some(1.0)),
    ];
    let results = SuiteResults {
        fairness: &fairness,
        ..SuiteResults::default()
    };
    assert_eq!(
        check_value(
            &check("{metric: fairness.rtt_ratio, of: max, at_most: 1.5}"),
            "p",
            &results
        ),
        (None, 2)
    );
}

#[test]
fn margins_and_bounds() {
    let band = check("{metric: friendliness.ratio, at_least: 0.5, at_most: 2}");
    assert_eq!(band.margin(1.0), 0.5);
    assert_eq!(band.margin(1.8), 0.19999999999999996);
    assert!(band.meets(0.5) && band.meets(2.0));
    assert!(!band.meets(2.1) && !band.meets(f64::NAN));
    assert_eq!(band.bound_text(), "in [0.5, 2]");
    let upper = check("{metric: results.rtt_ratio, at_most: 1.5}");
    assert_eq!(upper.margin(1.2), 0.30000000000000004);
    assert_eq!(upper.bound_text(), "<= 1.5");
}

#[test]
fn assess_counts_targets_per_group() {
    let rows = vec![row("p", "a", 0.2, 0.95), row("p", "a", 0.8, 0.85)];
    let results = SuiteResults {
        rows: &rows,
        ..SuiteResults::default()
    };
    let targets: Vec<Target> = serde_saphyr::from_str(
        "[{name: full, group: alone, checks: [{metric: results.utilization, at_least: 0.9}]},
          {name: busy, group: alone, checks: [{metric: results.utilization, of: max, at_least: 0.9},
                                              {metric: results.utilization, at_least: 0.8}]},
          {name: follows, group: preference, checks: [{metric: results.utilization, of: spearman_w_thr, at_least: 0.8}]}]",
    )
    .unwrap();
    let out = assess(&targets, "grid", "p", &results);
    assert_eq!(
        out.iter().map(|o| o.met).collect::<Vec<_>>(),
        [false, true, false]
    );
    assert_eq!(out[0].checks[0].value, Some(0.85));
    assert!(!out[0].checks[0].met);
    // Falling utilization with w_thr: rho = -1.
    assert_eq!(out[2].checks[0].value, Some(-1.0));
    let count = TargetCount::of(&out);
    assert_eq!((count.met, count.of), (1, 3));
    assert_eq!(
        count.sentence(),
        "meets 1 of 3 targets (alone 1 of 2, preference 0 of 1)"
    );
    let csv = targets_csv(&out);
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");
    assert!(
        csv.lines()
            .nth(1)
            .unwrap()
            .starts_with("p,grid,full,alone,false,0,results.utilization,,,min,0.9,,0.85,2,false,"),
        "{csv}"
    );
}
