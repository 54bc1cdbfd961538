//! Every bad scenario value is refused with an error naming the field (and the file); the
//! shipped configs load.

use mocc_gym::{Scenario, ScenarioConfig, ScenarioError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

fn err_of(yaml: &str) -> ScenarioError {
    match Scenario::from_yaml_str(yaml, Path::new("bad.yaml")) {
        Ok(s) => panic!("accepted:\n{yaml}\nas {:?}", s.config()),
        Err(e) => e,
    }
}

/// The error names `bad.yaml` and contains every one of `needles`.
#[track_caller]
fn assert_err(yaml: &str, needles: &[&str]) -> String {
    let msg = err_of(yaml).to_string();
    assert!(
        msg.contains("bad.yaml"),
        "no file name in {msg:?} for:\n{yaml}"
    );
    for n in needles {
        assert!(msg.contains(n), "{n:?} missing from {msg:?} for:\n{yaml}");
    }
    msg
}

/// An `Invalid` error for exactly `field`.
#[track_caller]
fn assert_invalid(yaml: &str, field: &str) {
    let e = err_of(yaml);
    match &e {
        ScenarioError::Invalid { path, field: f, .. } => {
            assert_eq!(f, field, "{e}");
            assert_eq!(path.as_deref(), Some(Path::new("bad.yaml")), "{e}");
        }
        other => panic!("expected an invalid {field}, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("bad.yaml: {field}: ")),
        "{msg:?} for:\n{yaml}"
    );
}

#[test]
fn bandwidth_must_be_positive() {
    assert_invalid("link: {bandwidth_pps: -5}", "link.bandwidth_pps");
    assert_invalid("link: {bandwidth_pps: 0}", "link.bandwidth_pps");
    assert_invalid(
        "link: {bandwidth_pps: {min: 0, max: 10}}",
        "link.bandwidth_pps.min",
    );
    // Non-finite values are refused (by the parser's float policy).
    assert_err("link: {bandwidth_pps: {min: 10, max: .inf}}", &[]);
    assert_err("link: {bandwidth_pps: .nan}", &[]);
}

#[test]
fn delay_queue_and_loss_domains() {
    assert_invalid("link: {delay_s: 0}", "link.delay_s");
    assert_invalid("link: {queue_pkts: 0}", "link.queue_pkts");
    assert_invalid("link: {queue_pkts: 0.5}", "link.queue_pkts");
    assert_invalid(
        "link: {queue_pkts: {min: 0, max: 4}}",
        "link.queue_pkts.min",
    );
    assert_invalid("link: {loss: 1.5}", "link.loss");
    assert_invalid("link: {loss: -0.1}", "link.loss");
    assert_invalid("link: {loss: {min: 0, max: 2}}", "link.loss.max");
    assert_invalid("link: {latency_noise: -1}", "link.latency_noise");
    assert_invalid("link: {cross_traffic_loss: 1.5}", "link.cross_traffic_loss");
    assert_invalid(
        "link: {cross_traffic_loss: {min: 0, max: 2}}",
        "link.cross_traffic_loss.max",
    );
    assert_invalid(
        "link: {cross_traffic_loss: 0, schedule: [{time_s: 1, loss: 0.1}]}",
        "link.cross_traffic_loss",
    );
    // The boundaries themselves are valid.
    for ok in [
        "link: {loss: 0}",
        "link: {loss: 1}",
        "link: {queue_pkts: 1}",
        "link: {bandwidth_pps: {min: 5, max: 5}}",
        "link: {cross_traffic_loss: 0, schedule: [{time_s: 1, bandwidth_pps: 200}]}",
    ] {
        Scenario::from_yaml_str(ok, Path::new("ok.yaml")).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}

#[test]
fn min_greater_than_max() {
    let yaml = "link: {delay_s: {min: 0.5, max: 0.1}}";
    assert_invalid(yaml, "link.delay_s.min");
    assert_err(yaml, &["greater than"]);
    assert_invalid(
        "senders: [{start_rate: {bandwidth_factor: {min: 2, max: 1}}}]",
        "senders[0].start_rate.bandwidth_factor.min",
    );
}

#[test]
fn unknown_fields_are_named() {
    assert_err("bogus_field: 1", &["bogus_field"]);
    assert_err("link: {bandwith_pps: 5}", &["bandwith_pps"]);
    assert_err("monitor_interval: {rtt_factr: 0.5}", &["rtt_factr"]);
    assert_err("observation: {histroy_len: 3}", &["histroy_len"]);
    assert_err("action: {step_size: 0.1}", &["step_size"]);
    assert!(matches!(
        err_of("link: {bandwith_pps: 5}"),
        ScenarioError::Parse { .. }
    ));
    // A typo inside a range names the key, the expected ones and the line.
    assert_err(
        "link:\n  bandwidth_pps: {min: 1, maxx: 2}\n",
        &["line 2", "maxx", "max"],
    );
    assert_err(
        "link:\n  queue_pkts: {exp_min: 0, exp_mx: 2}\n",
        &["line 2", "exp_mx", "exp_max"],
    );
    assert_err("link:\n  loss: {min: 0}\n", &["line 2", "max"]);
    assert_err(
        "link:\n  queue_pkts: {min: 1, exp_max: 2}\n",
        &["line 2", "exp_max", "min"],
    );
    assert_err("senders: [{controller: agnt}]", &["agnt"]);
}

fn temp_file(tag: &str, contents: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "mocc-gym-config-errors-{}-{}-{tag}.trace",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

fn trace_yaml(path: &Path) -> String {
    format!("link: {{trace: \"{}\"}}", path.display())
}

#[test]
fn missing_trace_file_names_the_path() {
    let path = std::env::temp_dir().join(format!(
        "mocc-gym-config-errors-{}-does-not-exist.trace",
        std::process::id()
    ));
    let e = err_of(&trace_yaml(&path));
    assert!(matches!(e, ScenarioError::Io(_)), "{e:?}");
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}

#[test]
fn malformed_trace_lines_show_file_and_line() {
    let cases = [
        ("malformed", "1\n2\nabc\n4\n", 3),
        ("negative", "5\n-1\n", 2),
        ("decreasing", "1\n5\n7\n6\n", 4),
        ("fraction", "1\n2.5\n", 2),
    ];
    for (tag, text, line) in cases {
        let path = temp_file(tag, text);
        let e = err_of(&trace_yaml(&path));
        let _ = std::fs::remove_file(&path);
        match &e {
            ScenarioError::Trace { line: l, .. } => assert_eq!(*l, line, "{tag}: {e}"),
            other => panic!("{tag}: expected a trace error, got {other:?}"),
        }
        let want = format!("{}:{line}:", path.display());
        assert!(e.to_string().starts_with(&want), "{tag}: {e} (want {want})");
    }
}

#[test]
fn empty_trace_is_refused() {
    for (tag, text) in [("empty", ""), ("blank", "\n \n\n")] {
        let path = temp_file(tag, text);
        let e = err_of(&trace_yaml(&path));
        let _ = std::fs::remove_file(&path);
        assert!(matches!(e, ScenarioError::Trace { line: 0, .. }), "{e:?}");
        let msg = e.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("no delivery opportunity"), "{msg}");
    }
    // A trace whose only timestamps are 0 has no period.
    let path = temp_file("zero", "0\n0\n");
    let e = err_of(&trace_yaml(&path));
    let _ = std::fs::remove_file(&path);
    assert!(matches!(e, ScenarioError::Trace { .. }), "{e:?}");
}

#[test]
fn senders_and_their_presence() {
    assert_invalid("senders: []", "senders");
    // Without an agent the first sender is the observed one (evaluating a classic sender).
    let s = Scenario::from_yaml_str(
        "senders: [{controller: cubic}, {controller: constant, start_rate: {pps: 10}}]",
        Path::new("ok.yaml"),
    )
    .expect("a scenario without agent loads");
    assert!(!s.config().has_agent());
    assert_eq!(s.config().agent_index(), 0);
    // Several learned senders share a link; each is observed.
    let s = Scenario::from_yaml_str(
        "senders: [{controller: agent}, {controller: cubic}, {controller: agent, probability: 0.5}]",
        Path::new("ok.yaml"),
    )
    .expect("several agents load");
    assert_eq!(s.config().observed_senders(), vec![0, 2]);
    assert_invalid(
        "senders: [{controller: agent, probability: 0.5}, {controller: agent}]",
        "senders[0].probability",
    );
    assert_invalid(
        "senders: [{controller: agent}, {controller: agent, probability: 1.5}]",
        "senders[1].probability",
    );
    assert_invalid(
        "senders: [{controller: agent, start_time_s: {min: 1, max: 5}, stop_time_s: 4}]",
        "senders[0].stop_time_s",
    );
    assert_invalid(
        "senders: [{controller: agent, start_time_s: {min: 5, max: 1}}]",
        "senders[0].start_time_s.min",
    );
    assert_invalid(
        "link: {changes: {every_s: 5, outage_s: 6}}",
        "link.changes.outage_s",
    );
    assert_invalid("link: {jitter_s: -0.001}", "link.jitter_s");
    assert_invalid("mi_jitter: 0.9", "mi_jitter");
    assert_invalid("reward_terms: {fair_share: -1}", "reward_terms.fair_share");
    assert_invalid(
        "reward_terms: {starvation: -0.5}",
        "reward_terms.starvation",
    );
    // Aurora's reward has no capacity to divide by.
    assert_invalid(
        "reward: aurora\nreward_capacity: fair_share",
        "reward_capacity",
    );
    Scenario::from_yaml_str(
        "reward: mocc\nreward_capacity: fair_share",
        Path::new("ok.yaml"),
    )
    .unwrap();
    assert_err(
        "reward: mocc\nreward_capacity: half",
        &["half", "fair_share"],
    );
    assert_invalid(
        "senders: [{controller: agent}, {controller: constant, start_rate: {pps: 0}}]",
        "senders[1].start_rate.pps",
    );
    assert_invalid(
        "senders: [{controller: agent, start_time_s: -1}]",
        "senders[0].start_time_s",
    );
    assert_invalid(
        "senders: [{controller: agent}, {controller: {on_off: {on_s: 0, off_s: 1}}}]",
        "senders[1].controller.on_off.on_s",
    );
}

#[test]
fn objective_must_be_positive_and_sum_to_one() {
    assert_invalid("objective: [0.5, 0.5, 0.5]", "objective");
    assert_err("objective: [0.5, 0.5, 0.5]", &["sum to 1"]);
    assert_invalid("objective: [1.2, -0.1, -0.1]", "objective");
    assert_invalid("objective: [1, 0, 0]", "objective");
    Scenario::from_yaml_str("objective: [0.5, 0.25, 0.25]", Path::new("ok.yaml")).unwrap();
}

#[test]
fn feature_list_errors() {
    assert_err("observation: {features: []}", &["empty", "line 1"]);
    assert_err(
        "observation: {features: [send rate, bogus metric]}",
        &["bogus metric"],
    );
    assert_err(
        "observation: {features: [send rate, send rate]}",
        &["twice"],
    );
}

#[test]
fn observation_and_monitor_interval_domains() {
    assert_invalid("observation: {history_len: 0}", "observation.history_len");
    assert_invalid(
        "observation: {latency_baseline: {windowed_min: {seconds: 0}}}",
        "observation.latency_baseline.windowed_min.seconds",
    );
    assert_invalid(
        "observation: {latency_baseline: {drain_aware: {seconds: -1}}}",
        "observation.latency_baseline.drain_aware.seconds",
    );
    assert_invalid(
        "observation: {latency_baseline: {drain_aware: {seconds: 5, drain_fraction: 0}}}",
        "observation.latency_baseline.drain_aware.drain_fraction",
    );
    assert_invalid(
        "observation: {latency_baseline: {drain_aware: {seconds: 5, drain_fraction: 0.95}}}",
        "observation.latency_baseline.drain_aware.drain_fraction",
    );
    assert_invalid(
        "observation: {latency_baseline: {windowed_min: {seconds: 3601}}}",
        "observation.latency_baseline.windowed_min.seconds",
    );
    assert_invalid(
        "monitor_interval: {initial_delay_factor: 0}",
        "monitor_interval.initial_delay_factor",
    );
    assert_invalid(
        "monitor_interval: {rtt_factor: -0.5}",
        "monitor_interval.rtt_factor",
    );
    assert_invalid(
        "monitor_interval: {min_packets: -1}",
        "monitor_interval.min_packets",
    );
    assert_invalid("episode_mis: 0", "episode_mis");
    assert_invalid("action: {min_rate_pps: 0}", "action");
    assert_err("action: {min_rate_pps: 0}", &["min_rate_pps"]);
    let yaml = "action: {binomial_increase: {k: 0, reference_pps: 300}}";
    assert_invalid(yaml, "action");
    assert_err(yaml, &["binomial_increase.k"]);
    let yaml = "action: {binomial_increase: {k: 0.5, reference_pps: -1}}";
    assert_err(yaml, &["binomial_increase.reference_pps"]);
}

#[test]
fn schedule_and_outage_domains() {
    let yaml = "link:\n  schedule:\n    - {time_s: 2, bandwidth_pps: 50}\n    - {time_s: 2, bandwidth_pps: 60}\n";
    assert_invalid(yaml, "link.schedule[1].time_s");
    let yaml = "link:\n  schedule:\n    - {time_s: 3, bandwidth_pps: 50}\n    - {time_s: 1, bandwidth_pps: 60}\n";
    assert_invalid(yaml, "link.schedule[1].time_s");
    assert_invalid(
        "link: {schedule: [{time_s: 1, bandwidth_pps: 0}]}",
        "link.schedule[0].bandwidth_pps",
    );
    assert_invalid(
        "link: {schedule: [{time_s: 1, loss: 2}]}",
        "link.schedule[0].loss",
    );
    assert_invalid(
        "link: {schedule: [{time_s: 4, delay_s: 0.1}], schedule_period_s: 4}",
        "link.schedule_period_s",
    );
    assert_invalid(
        "link: {outages: [{start_s: 1, duration_s: 0}]}",
        "link.outages[0].duration_s",
    );
    assert_invalid(
        "link: {outages: [{start_s: 1, duration_s: 2, period_s: 2}]}",
        "link.outages[0].period_s",
    );
}

#[test]
fn aurora_env_yaml_is_the_default() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/aurora-env.yaml");
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.config(), &ScenarioConfig::default());
    assert_eq!(s.source(), Some(path.as_path()));
}

/// Scenario files: `configs/aurora-env.yaml` and everything in `configs/scenarios/` (the other
/// files in `configs/` are training configs, checked by the `mocc` crate's tests).
#[test]
fn shipped_scenarios_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let mut paths = vec![root.join("aurora-env.yaml")];
    for entry in std::fs::read_dir(root.join("scenarios")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            paths.push(path);
        }
    }
    assert!(paths.len() >= 5, "{paths:?}");
    for path in paths {
        Scenario::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn missing_scenario_file_is_an_io_error() {
    let path = std::env::temp_dir().join("mocc-gym-config-errors-no-such-scenario.yaml");
    let e = Scenario::load(&path).unwrap_err();
    assert!(matches!(e, ScenarioError::Io(_)));
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
}
