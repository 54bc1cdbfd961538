use super::*;
use crate::targets::{Check, CheckOutcome, TargetOutcome};

fn check(yaml: &str) -> Check {
    serde_saphyr::from_str(yaml).unwrap()
}

/// One target with one check (`>= 0.95`) of value `v`, and a second target (`<= 1.5`) of value
/// `w`.
fn outcomes(policy: &str, v: f64, w: Option<f64>) -> Vec<TargetOutcome> {
    let at_least = check("{metric: fairness.median_jain_index, at_least: 0.95}");
    let at_most = check("{metric: results.rtt_ratio, of: mean, at_most: 1.5}");
    let one = |name: &str, c: Check, value: Option<f64>, group: &str| {
        let met = value.is_some_and(|x| c.meets(x));
        TargetOutcome {
            policy: policy.into(),
            suite: "s".into(),
            target: name.into(),
            group: Some(group.into()),
            met,
            checks: vec![CheckOutcome {
                margin: value.map(|x| c.margin(x)),
                check: c,
                value,
                cases: 1,
                met,
            }],
        }
    };
    vec![
        one("fair", at_least, Some(v), "sharing"),
        one("leo", at_most, w, "sharing"),
    ]
}

fn seeds() -> Vec<SeedTargets> {
    [
        (1, 0.99, Some(1.2)),
        (2, 0.90, Some(1.6)),
        (3, 0.97, None),
        (4, 0.96, Some(1.4)),
    ]
    .into_iter()
    .map(|(seed, v, w)| SeedTargets {
        seed,
        targets: outcomes("r", v, w),
    })
    .collect()
}

fn quick() -> Bootstrap {
    Bootstrap {
        replicates: 2000,
        ..Bootstrap::default()
    }
}

#[test]
fn a_report_by_hand() {
    let copa = AgainstTargets {
        policy: "copa".into(),
        targets: outcomes("copa", 0.96, Some(1.3)),
    };
    let r = seed_report("r", &seeds(), &[copa], quick()).unwrap();
    assert_eq!(r.seeds, [1, 2, 3, 4]);
    let fair = &r.targets[0];
    assert_eq!(fair.met, [true, false, true, true]);
    let c = &fair.checks[0];
    // Four values: one cut from each end, the mean of 0.96 and 0.97.
    assert!((c.iqm.unwrap() - 0.965).abs() < 1e-12, "{c:?}");
    let ci = c.ci95.unwrap();
    assert!(ci.low <= 0.965 && 0.965 <= ci.high && ci.low >= 0.90 && ci.high <= 0.99);
    // Margins against Copa's 0.01: 0.04 and 0.02 win, -0.05 loses, 0.01 ties.
    assert_eq!(c.against[0].probability_of_improvement, Some(2.5 / 4.0));
    assert_eq!(c.against[0].value, Some(0.96));
    assert!(fair.against[0].met);
    // Lower is better for an upper bound; a seed without a value loses: 1.2 beats 1.3, 1.6
    // and none lose, 1.4 loses.
    let leo = &r.targets[1];
    assert_eq!(
        leo.checks[0].values,
        [Some(1.2), Some(1.6), None, Some(1.4)]
    );
    assert_eq!(
        leo.checks[0].against[0].probability_of_improvement,
        Some(0.25)
    );
    assert_eq!(leo.met, [true, false, false, true]);
    // Seeds 1 and 4 meet both, 2 none, 3 one.
    let met: Vec<usize> = r.per_seed.iter().map(|s| s.met).collect();
    assert_eq!(met, [2, 0, 1, 2]);
    assert_eq!(r.seeds_meeting_at_least, [4, 3, 2]);
    assert_eq!(r.groups[0].group, "sharing");
    assert_eq!(r.groups[0].seeds_meeting_at_least, [4, 3, 2]);
    let md = r.markdown();
    assert!(md.contains("| 2 | 0 of 2 | 0 of 2 |"), "{md}");
    assert!(md.contains("sharing (of 2): >= 1: 3, >= 2: 2"), "{md}");
    assert!(md.contains("| fair (s) | min fairness.median_jain_index | >= 0.95 | 0.990 | 0.900 | 0.970 | 0.960 | 0.965 ["), "{md}");
    assert!(md.contains("| 0.960 | 0.62 |"), "{md}");
}

#[test]
fn seeds_that_judged_other_targets_are_refused() {
    let mut s = seeds();
    s[2].targets.pop();
    let e = seed_report("r", &s, &[], quick()).unwrap_err().to_string();
    assert!(e.contains("seed 3 judged other targets than seed 1"), "{e}");
    assert!(seed_report("r", &[], &[], quick()).is_err());
}

#[test]
fn the_figure_draws_a_panel_per_check() {
    let (dir, keep) = mocc_plot::testing::test_figure_dir("seed-report").unwrap();
    let copa = AgainstTargets {
        policy: "copa".into(),
        targets: outcomes("copa", 0.96, Some(1.3)),
    };
    let r = seed_report("mocc-pair", &seeds(), &[copa], quick()).unwrap();
    let png = dir.join("seed-report.png");
    r.figure(&png).unwrap();
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
    if !keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// A compared policy's line stays in a panel when its value lies within the seeds' own range
/// (values, interval, bounds) widened by that range's span on each side.
#[test]
fn a_panel_keeps_compared_lines_near_the_seeds() {
    let summary = CheckSummary {
        metric: "friendliness.ratio".into(),
        of: "min".into(),
        bound: "in [0.5, 2]".into(),
        at_least: Some(0.5),
        at_most: Some(2.0),
        network: None,
        values: vec![Some(0.7), None, Some(0.9)],
        iqm: Some(0.8),
        ci95: Some(Interval {
            low: 0.7,
            high: 0.9,
        }),
        against: vec![],
    };
    // Own values span 0.5 to 2 (the bounds): widened by 1.5 each side.
    let (lo, hi) = own_range(&summary);
    assert!(
        (lo - -1.0).abs() < 1e-12 && (hi - 3.5).abs() < 1e-12,
        "{lo} {hi}"
    );
    assert!(!(lo..=hi).contains(&11.5), "BBR's 11.5 is drawn off scale");
}
