//! The parity between the rule an export runs under and the rule its weights were trained
//! under: an undeclared difference is refused at load, a declared one is recorded with who
//! declared it, and the tools that change a rule (`Policy::with_rule`, capacity trains, a pair)
//! declare what they change.

use mocc_policy::{CapacityTrains, ModeSwitch, Policy, ProbeRtt, Startup, UntrainedPart};
use std::path::PathBuf;

mod common;
use common::random_policy;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mocc-rule-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A random MOCC-shaped export that records its rule as the trained one.
fn trained(dir: &std::path::Path, seed: u64) -> Policy {
    let (mut spec, tensors) = random_policy(true, seed);
    spec.action.probe_rtt = Some(ProbeRtt::every(0.5));
    spec.provenance.trained_rule = Some(spec.sender_rule());
    mocc_outputs::write_export(dir, spec, &tensors).expect("writes");
    Policy::load(dir).expect("loads")
}

fn trains() -> CapacityTrains {
    CapacityTrains {
        packets: 3,
        fraction: 0.95,
        window_s: 2.0,
        ratio_exponent: 1.0,
    }
}

#[test]
fn an_undeclared_difference_from_the_trained_rule_is_refused() {
    let root = temp_dir("undeclared");
    let policy = trained(&root.join("a"), 1);
    // Edit policy.json as a script would: a startup the weights never ran under.
    let spec_path = root.join("a/policy.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&spec_path).unwrap()).unwrap();
    json["action"]["startup"] = serde_json::to_value(Startup::default()).unwrap();
    std::fs::write(&spec_path, serde_json::to_string(&json).unwrap()).unwrap();
    let e = Policy::load(root.join("a")).unwrap_err().to_string();
    assert!(e.contains("action.startup"), "{e}");
    assert!(
        e.contains("provenance.untrained does not declare it"),
        "{e}"
    );
    // Declared, it loads and says so.
    json["provenance"]["untrained"] = serde_json::json!([
        {"part": "action.startup", "declared_by": "a test", "why": "to see it load"}
    ]);
    std::fs::write(&spec_path, serde_json::to_string(&json).unwrap()).unwrap();
    let loaded = Policy::load(root.join("a")).expect("a declared difference loads");
    assert_eq!(loaded.spec().provenance.untrained[0].part, "action.startup");
    // A declaration of a part that does not differ is refused too.
    json["action"]["startup"] = serde_json::Value::Null;
    std::fs::write(&spec_path, serde_json::to_string(&json).unwrap()).unwrap();
    let e = Policy::load(root.join("a")).unwrap_err().to_string();
    assert!(e.contains("nothing to declare"), "{e}");
    drop(policy);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn changing_a_rule_declares_what_changed_and_undoing_it_clears_it() {
    let root = temp_dir("with-rule");
    let policy = trained(&root.join("a"), 2);
    let trained_rule = policy.spec().sender_rule();
    let mut faster = trained_rule;
    faster.action.max_rate_pps = 4000.0;
    faster.action.startup = Some(Startup::default());
    let changed = policy
        .clone()
        .with_rule(faster, "recipe r.yaml", "fast links")
        .expect("a valid rule");
    let parts: Vec<&str> = changed
        .spec()
        .provenance
        .untrained
        .iter()
        .map(|u| u.part.as_str())
        .collect();
    assert_eq!(parts, ["action.max_rate_pps", "action.startup"]);
    assert_eq!(
        changed.spec().provenance.untrained[0],
        UntrainedPart {
            part: "action.max_rate_pps".into(),
            declared_by: "recipe r.yaml".into(),
            why: "fast links".into(),
        }
    );
    let back = changed
        .with_rule(trained_rule, "recipe r.yaml", "undo")
        .expect("the trained rule");
    assert!(back.spec().provenance.untrained.is_empty());
    // Capacity trains are declared by whoever adds them.
    let with_trains = policy
        .clone()
        .with_capacity_trains(Some(trains()), "mocc pair")
        .unwrap();
    assert_eq!(
        with_trains.spec().provenance.untrained[0].part,
        "observation.capacity_trains"
    );
    // A rule cannot add a mode switch to a single policy.
    let mut switched = trained_rule;
    switched.action.mode_switch = Some(ModeSwitch::default());
    let e = policy
        .with_rule(switched, "x", "y")
        .unwrap_err()
        .to_string();
    assert!(e.contains("only through `mocc pair`"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_pair_declares_its_mode_switch_and_round_trips_it() {
    let root = temp_dir("pair");
    let coop = trained(&root.join("a"), 3)
        .with_capacity_trains(Some(trains()), "recipe r.yaml")
        .unwrap();
    let comp = trained(&root.join("b"), 4)
        .with_capacity_trains(Some(trains()), "recipe r.yaml")
        .unwrap();
    let pair = mocc_outputs::write_pair(
        &root.join("pair"),
        &coop,
        &comp,
        ModeSwitch::default(),
        "recipe r.yaml",
    )
    .expect("pairs");
    let declared: Vec<(&str, &str)> = pair
        .spec()
        .provenance
        .untrained
        .iter()
        .map(|u| (u.part.as_str(), u.declared_by.as_str()))
        .collect();
    assert_eq!(
        declared,
        [
            ("observation.capacity_trains", "recipe r.yaml"),
            ("action.mode_switch", "recipe r.yaml")
        ]
    );
    let competitive = pair.competitive().unwrap().spec();
    assert_eq!(competitive.provenance.untrained.len(), 1);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn every_shipped_export_records_the_rule_it_was_trained_under() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../checkpoints");
    let mut seen = 0;
    for entry in std::fs::read_dir(&root).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("policy.json").is_file() {
            continue;
        }
        let policy = Policy::load(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let halves = std::iter::once(&policy).chain(policy.competitive());
        for half in halves {
            let p = &half.spec().provenance;
            let trained = p
                .trained_rule
                .unwrap_or_else(|| panic!("{}: no trained_rule", half.source().display()));
            let mut differing = trained.differing_parts(&half.spec().sender_rule());
            let mut declared: Vec<&str> = p.untrained.iter().map(|u| u.part.as_str()).collect();
            differing.sort_unstable();
            declared.sort_unstable();
            assert_eq!(differing, declared, "{}", half.source().display());
        }
        seen += 1;
    }
    assert!(seen >= 4, "{seen} exports under {}", root.display());
}
