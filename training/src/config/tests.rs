//! Unit tests of loading training configs: overrides, validation and scenarios.

use super::{LoadedConfig, Preset};
use std::path::Path;

const MIN: &str = "scenario: ../configs/aurora-env.yaml\nbudget: {env_steps: 100}\n";

#[test]
fn overrides_reach_into_a_scenario_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    let c = LoadedConfig::load(
        &dir.join("mocc-shared.yaml"),
        &["scenario.reward_terms.fair_share=0.3".into()],
    )
    .unwrap();
    let s = c.scenario().unwrap();
    assert_eq!(s.config().reward_terms.fair_share, 0.3);
    // The rest of the file is kept.
    assert_eq!(s.config().senders.len(), 7);
    // A scenario with a relative trace still finds it.
    let t = LoadedConfig::from_yaml(
        "scenario: scenarios/trace.yaml\nbudget: {env_steps: 10}\n",
        &dir.join("inline.yaml"),
        &["scenario.episode_mis=20".into()],
    )
    .unwrap();
    assert_eq!(t.scenario().unwrap().config().episode_mis, 20);
}

#[test]
fn overrides_apply_and_validate() {
    let c = LoadedConfig::from_yaml(
        MIN,
        Path::new("x/train.yaml"),
        &[
            "ppo.learning_rate=0.001".into(),
            "envs=4".into(),
            "agent.preset=mocc".into(),
        ],
    )
    .unwrap();
    assert_eq!(c.config.ppo.learning_rate, 0.001);
    assert_eq!(c.config.envs, 4);
    assert_eq!(c.config.agent.preset, Preset::Mocc);
    let e = LoadedConfig::from_yaml(MIN, Path::new("t.yaml"), &["ppo.gamma=2".into()]).unwrap_err();
    assert!(e.to_string().contains("t.yaml: ppo.gamma"), "{e}");
    let e =
        LoadedConfig::from_yaml(MIN, Path::new("t.yaml"), &["ppo.gama=0.9".into()]).unwrap_err();
    assert!(e.to_string().contains("gama"), "{e}");
    let e = LoadedConfig::from_yaml(MIN, Path::new("t.yaml"), &["nokey".into()]).unwrap_err();
    assert!(e.to_string().starts_with("--set"), "{e}");
}

/// The named field's error for `yaml` (no overrides), as text.
fn error_of(yaml: &str) -> String {
    match LoadedConfig::from_yaml(yaml, Path::new("t.yaml"), &[]) {
        Ok(_) => panic!("accepted: {yaml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unknown_fields_and_bad_values_are_named() {
    for (yaml, field) in [
        (
            "scenario: a.yaml\nbudget: {env_steps: 1}\nenvz: 3\n",
            "envz",
        ),
        (
            "scenario: a.yaml\nbudget: {env_steps: 0}\n",
            "budget.env_steps",
        ),
        (
            "scenario: a.yaml\nbudget: {env_steps: 10}\nagent: {preference: []}\n",
            "agent.preference",
        ),
        (
            "scenario: a.yaml\nbudget: {env_steps: 10}\nagent: {min_log_std: 9}\n",
            "agent.min_log_std",
        ),
    ] {
        let e = error_of(yaml);
        assert!(e.contains(field), "{field}: {e}");
    }
    let c = LoadedConfig::from_yaml(
        "scenario: a.yaml\nbudget: {env_steps: 10}\nagent: {min_log_std: -1.5}\n",
        Path::new("t.yaml"),
        &[],
    )
    .expect("valid");
    assert_eq!(c.config.agent.architecture(30).min_log_std, Some(-1.5));
}

#[test]
fn inline_scenarios_parse() {
    let c = LoadedConfig::from_yaml(
        "scenario: {link: {bandwidth_pps: 200}, reward: mocc}\nbudget: {env_steps: 10}\n",
        Path::new("t.yaml"),
        &[],
    )
    .unwrap();
    let s = c.scenario().unwrap();
    assert_eq!(s.config().reward, mocc_gym::RewardKind::Mocc);
}

#[test]
fn training_refuses_a_mode_switch() {
    let c = LoadedConfig::from_yaml(
        "scenario: {action: {probe_rtt: {interval_s: 3}, mode_switch: {}}}
\
         budget: {env_steps: 10}\n",
        Path::new("t.yaml"),
        &[],
    )
    .expect("the config itself is valid");
    let e = c.scenario().expect_err("refused").to_string();
    assert!(e.contains("scenario.action.mode_switch"), "{e}");
}
