//! Recipes from the command line on tiny budgets: a whole run and what it leaves, derived
//! seeds, determinism, resume after a kill between stages and after a stop inside one, every
//! bad input refused before anything trains, and a sweep over seeds with its report.

mod common;

use common::{copy_dir, mocc};
use std::path::{Path, PathBuf};
use std::process::Output;

const TINY: &str = "configs/recipes/tiny-pair.yaml";

fn temp_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("mocc-recipe-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    p
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

fn ok(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "mocc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a JSON line")).expect("JSON")
}

fn fails_naming(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded; stderr: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_recipe_leaves_an_export_its_stages_and_a_report() {
    let out = temp_path("whole");
    let line = ok(&mocc(&["train", TINY, "--out", s(&out)]));
    assert_eq!(line["recipe"]["seed"], 1);
    for entry in [
        "recipe.json",
        "recipe.yaml",
        "state.json",
        "report.json",
        "coop/checkpoints",
        "comp/checkpoints",
        "coop-export/policy.json",
        "pair/competitive/policy.json",
        "export/policy.json",
        "export/competitive/policy.json",
        "validation/shared-rtt/targets.csv",
    ] {
        assert!(out.join(entry).exists(), "no {entry}");
    }
    // The export names the recipe, its hash and seed; its rule is the trained one but for the
    // declared mode switch.
    let spec = json(&out.join("export/policy.json"));
    let p = &spec["provenance"];
    assert_eq!(p["recipe"]["file"], TINY);
    assert_eq!(p["recipe"]["seed"], 1);
    let sha = mocc_policy::export::sha256_hex(&bytes(Path::new(TINY)));
    assert_eq!(p["recipe"]["sha256"], sha.as_str());
    assert_eq!(p["untrained"][0]["part"], "action.mode_switch");
    assert_eq!(p["untrained"][0]["declared_by"], TINY);
    assert!(p["git_revision"].is_string());
    // Each stage trained with its own seed, derived from the recipe's.
    let state = json(&out.join("state.json"));
    let seed_of = |stage: &str| {
        state["done"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == stage)
            .unwrap()["seed"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(
        seed_of("coop"),
        mocc_training::recipe::stage_seed(1, "coop")
    );
    assert_ne!(seed_of("coop"), seed_of("comp"));
    let report = json(&out.join("report.json"));
    assert_eq!(report["count"]["of"], 1);
    assert_eq!(report["targets"][0]["target"], "rtts");
    // mocc eval runs the export, and says what it runs under untrained.
    let eval_out = out.join("eval");
    let e = mocc(&[
        "eval",
        "--policy",
        s(&out.join("export")),
        "--suite",
        "configs/eval/validation/shared-rtt.yaml",
        "--out",
        s(&eval_out),
    ]);
    ok(&e);
    let stderr = String::from_utf8_lossy(&e.stderr);
    assert!(stderr.contains("action.mode_switch"), "{stderr}");
    assert!(stderr.contains("meets"), "{stderr}");
    let rules = json(&eval_out.join("rules.json"));
    assert_eq!(
        rules["policies"][0]["untrained"][0]["part"],
        "action.mode_switch"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn one_seed_trains_the_same_export_twice_and_another_seed_another() {
    let (a, b, c) = (temp_path("det-a"), temp_path("det-b"), temp_path("det-c"));
    ok(&mocc(&["train", TINY, "--out", s(&a), "--set", "seed=7"]));
    ok(&mocc(&["train", TINY, "--out", s(&b), "--set", "seed=7"]));
    ok(&mocc(&["train", TINY, "--out", s(&c), "--set", "seed=8"]));
    for weights in ["policy.safetensors", "competitive/policy.safetensors"] {
        let w = |d: &Path| bytes(&d.join("export").join(weights));
        assert_eq!(w(&a), w(&b), "{weights}");
        assert_ne!(w(&a), w(&c), "{weights}");
    }
    let seed =
        |d: &Path| json(&d.join("export/policy.json"))["provenance"]["recipe"]["seed"].clone();
    assert_eq!(seed(&a), 7);
    assert_eq!(seed(&c), 8);
    for d in [a, b, c] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_run_killed_between_stages_resumes_without_training_a_finished_stage_again() {
    let whole = temp_path("resume-whole");
    ok(&mocc(&["train", TINY, "--out", s(&whole)]));
    // The state after the first stage: later stages' outputs gone, as after a kill there.
    let cut = temp_path("resume-cut");
    copy_dir(&whole, &cut);
    let mut state = json(&cut.join("state.json"));
    state["done"].as_array_mut().unwrap().truncate(1);
    std::fs::write(cut.join("state.json"), state.to_string()).unwrap();
    for later in [
        "comp",
        "coop-export",
        "comp-export",
        "pair",
        "export",
        "validation",
    ] {
        std::fs::remove_dir_all(cut.join(later)).unwrap();
    }
    std::fs::remove_file(cut.join("report.json")).unwrap();
    let first_stage = bytes(&cut.join("coop/metrics.csv"));
    let resumed = mocc(&["train", "--resume", s(&cut)]);
    ok(&resumed);
    let log = String::from_utf8_lossy(&resumed.stderr);
    assert!(log.contains("coop: done earlier"), "{log}");
    assert_eq!(
        bytes(&cut.join("coop/metrics.csv")),
        first_stage,
        "coop trained again"
    );
    for weights in ["policy.safetensors", "competitive/policy.safetensors"] {
        let w = |d: &Path| bytes(&d.join("export").join(weights));
        assert_eq!(w(&whole), w(&cut), "{weights}");
    }
    // Resuming a finished run trains nothing and reports the same.
    let again = mocc(&["train", TINY, "--resume", s(&cut)]);
    ok(&again);
    assert_eq!(
        json(&cut.join("report.json"))["count"],
        json(&whole.join("report.json"))["count"]
    );
    for d in [whole, cut] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_stage_stopped_by_sigterm_continues_where_it_stopped() {
    let whole = temp_path("term-whole");
    let sets = ["--set", "*.budget.env_steps=20000"];
    let mut args = vec!["train", TINY, "--out", s(&whole)];
    args.extend(sets);
    ok(&mocc(&args));
    let stopped = temp_path("term-stopped");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(["train", TINY, "--out", s(&stopped)])
        .args(sets)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mocc starts");
    // Stop it once the first stage has a checkpoint.
    let ckpts = stopped.join("coop/checkpoints");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while common::complete_checkpoints(&ckpts) < 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let done = child.wait_with_output().expect("waits");
    let stderr = String::from_utf8_lossy(&done.stderr);
    if done.status.success() {
        // The whole recipe finished before the signal: nothing to resume (a slow start).
        eprintln!("finished before SIGTERM: {stderr}");
    } else {
        assert_eq!(done.status.code(), Some(128 + libc::SIGTERM), "{stderr}");
        assert!(stderr.contains("mocc train --resume"), "{stderr}");
        ok(&mocc(&["train", "--resume", s(&stopped)]));
    }
    for weights in ["policy.safetensors", "competitive/policy.safetensors"] {
        let w = |d: &Path| bytes(&d.join("export").join(weights));
        assert_eq!(w(&whole), w(&stopped), "{weights}");
    }
    for d in [whole, stopped] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// A copy of the tiny recipe with `edit` applied, in a temporary folder, its relative paths
/// made absolute (they name configs under the repository's configs/).
fn recipe_variant(name: &str, edit: impl Fn(&str) -> String) -> PathBuf {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let text = std::fs::read_to_string(TINY)
        .unwrap()
        .replace("../", &format!("{}/", configs.display()));
    let dir = temp_path(&format!("variant-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, edit(&text)).unwrap();
    path
}

/// Removes a variant's folder.
fn drop_variant(path: &Path) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// An edit of a recipe's text.
type Edit = Box<dyn Fn(&str) -> String>;

#[test]
fn bad_recipes_are_refused_before_anything_trains() {
    let out = temp_path("bad");
    let cases: Vec<(&str, Edit, &str)> = vec![
        (
            "unknown-key",
            Box::new(|t: &str| t.replace("seed: 1", "seed: 1\nsede: 2")),
            "unknown field `sede`",
        ),
        (
            "missing-stage",
            Box::new(|t: &str| t.replace("init: coop", "init: start")),
            "stages[1].init: no stage is named \"start\"",
        ),
        (
            "cycle",
            Box::new(|t: &str| t.replace("  - name: coop\n", "  - name: coop\n    init: comp\n")),
            "a cycle: coop -> comp -> coop",
        ),
        (
            "wrong-kind",
            Box::new(|t: &str| t.replace("cooperative: coop-export", "cooperative: coop")),
            "\"coop\" is a training stage; this needs an export stage",
        ),
        (
            "undeclared",
            Box::new(|t: &str| {
                t.replace(
                    "untrained:\n  action.mode_switch",
                    "untrained:\n  action.startu",
                )
            }),
            "untrained.action.startu: no part of a sender's rule",
        ),
        (
            "missing-suite",
            Box::new(|t: &str| t.replace("shared-rtt.yaml", "nope.yaml")),
            "validation.suites[0]",
        ),
        (
            "stage-seed",
            Box::new(|t: &str| t.replace("set: {ppo.learning_rate: 0.001}", "set: {seed: 3}")),
            "stages[1].set.seed",
        ),
    ];
    for (name, edit, message) in cases {
        let path = recipe_variant(name, edit);
        let result = mocc(&["train", s(&path), "--out", s(&out)]);
        drop_variant(&path);
        fails_naming(&result, message);
        assert!(
            !out.exists(),
            "{name}: the refused recipe left {}",
            out.display()
        );
    }
    // A target on an unknown metric, in a validation suite the recipe names.
    let suite = temp_path("bad-metric-suite.yaml");
    std::fs::write(
        &suite,
        "fairness: {network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 30}, flows: [2], \
         stagger_s: 2, duration_s: 10}\n\
         targets: [{name: t, checks: [{metric: fairness.jain, at_least: 0.9}]}]\n",
    )
    .unwrap();
    let path = recipe_variant("bad-metric", |t| {
        let rtt =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/eval/validation/shared-rtt.yaml");
        t.replace(&rtt.display().to_string(), s(&suite))
    });
    let result = mocc(&["train", s(&path), "--out", s(&out)]);
    drop_variant(&path);
    let _ = std::fs::remove_file(&suite);
    fails_naming(&result, "fairness has no metric \"jain\"");
    // --set on paths that do not exist.
    for (set, message) in [
        ("nope.ppo.gamma=0.9", "no stage is named \"nope\""),
        ("coop.ppo.gamm=0.9", "unknown field `gamm`"),
        (
            "coop-export.x=1",
            "an export stage, which has nothing to set",
        ),
        (
            "pair.mode_switch.queue_ratoi=2",
            "unknown field `queue_ratoi`",
        ),
        ("coop.seed=3", "the recipe's seed gives every stage its own"),
    ] {
        let result = mocc(&["train", TINY, "--out", s(&out), "--set", set]);
        fails_naming(&result, message);
        assert!(!out.exists(), "--set {set} left {}", out.display());
    }
    // A pair stage's own field can be set.
    ok(&mocc(&[
        "train",
        TINY,
        "--out",
        s(&out),
        "--set",
        "pair.mode_switch.queue_ratio=1.2",
    ]));
    assert_eq!(
        json(&out.join("export/policy.json"))["action"]["mode_switch"]["queue_ratio"],
        1.2
    );
    // An existing --out without --resume; --resume with another seed or recipe.
    fails_naming(&mocc(&["train", TINY, "--out", s(&out)]), "already exists");
    fails_naming(
        &mocc(&["train", TINY, "--resume", s(&out), "--set", "seed=2"]),
        "seed 2 differs from the run's seed 1",
    );
    let other = recipe_variant("other", |t| {
        t.replace("ppo.learning_rate: 0.001", "ppo.learning_rate: 0.002")
    });
    let result = mocc(&["train", s(&other), "--resume", s(&out)]);
    drop_variant(&other);
    fails_naming(&result, "the recipe file differs");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_export_run_under_an_undeclared_part_is_refused_by_the_recipe() {
    // The recipe deploys a startup its training did not use and does not say so.
    let path = recipe_variant("undeclared-rule", |t| {
        t.replace("  scenario.action.startup: {}\n", "").replace(
            "export: pair\n",
            "export: pair\nrule: {action: {startup: {}}}\n",
        )
    });
    let out = temp_path("undeclared-rule");
    let result = mocc(&["train", s(&path), "--out", s(&out)]);
    // Refused before anything trains, naming the recipe's field.
    fails_naming(
        &result,
        "untrained: the export would run under action.startup, which its weights are not \
         trained with",
    );
    assert!(!out.join("coop").exists(), "nothing trained");
    // Declared, it goes through and the export says so.
    let declared = recipe_variant("declared-rule", |t| {
        t.replace("  scenario.action.startup: {}\n", "")
            .replace(
                "export: pair\n",
                "export: pair\nrule: {action: {startup: {}}}\n",
            )
            .replace(
                "untrained:\n",
                "untrained:\n  action.startup: deployed on fast links\n",
            )
    });
    let out2 = temp_path("declared-rule");
    let result = mocc(&["train", s(&declared), "--out", s(&out2)]);
    drop_variant(&path);
    drop_variant(&declared);
    ok(&result);
    let spec = json(&out2.join("export/policy.json"));
    let parts: Vec<&str> = spec["provenance"]["untrained"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["part"].as_str().unwrap())
        .collect();
    assert!(parts.contains(&"action.startup"), "{parts:?}");
    for d in [out, out2] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn a_sweep_over_seeds_reports_every_target_against_a_baseline() {
    let out = temp_path("sweep");
    let line = ok(&mocc(&[
        "sweep",
        TINY,
        "--seeds",
        "1-3",
        "--against",
        "copa",
        "--out",
        s(&out),
    ]));
    assert_eq!(line["seeds"], serde_json::json!([1, 2, 3]));
    for f in [
        "report.json",
        "report.md",
        "report.png",
        "seed-2/export/policy.json",
        "against/shared-rtt/targets.csv",
    ] {
        assert!(out.join(f).exists(), "no {f}");
    }
    let report = json(&out.join("report.json"));
    let check = &report["targets"][0]["checks"][0];
    assert_eq!(check["values"].as_array().unwrap().len(), 3);
    assert!(check["against"][0]["probability_of_improvement"].is_number());
    // Seed 2's run is the recipe's with --set seed=2.
    let single = temp_path("sweep-single");
    ok(&mocc(&[
        "train",
        TINY,
        "--out",
        s(&single),
        "--set",
        "seed=2",
    ]));
    assert_eq!(
        bytes(&out.join("seed-2/export/policy.safetensors")),
        bytes(&single.join("export/policy.safetensors"))
    );
    // A resume with other seeds is refused; with the same ones it reports again.
    fails_naming(
        &mocc(&[
            "sweep",
            TINY,
            "--seeds",
            "1-4",
            "--against",
            "copa",
            "--out",
            s(&out),
            "--resume",
        ]),
        "--seeds differ",
    );
    ok(&mocc(&[
        "sweep",
        TINY,
        "--seeds",
        "1-3",
        "--against",
        "copa",
        "--out",
        s(&out),
        "--resume",
    ]));
    fails_naming(
        &mocc(&["sweep", TINY, "--seeds", "1-3", "--out", s(&out)]),
        "already exists",
    );
    fails_naming(
        &mocc(&[
            "sweep",
            TINY,
            "--omega",
            "3",
            "--seeds",
            "1",
            "--out",
            s(&temp_path("x")),
        ]),
        "--omega and --suite belong to a config's sweep",
    );
    for d in [out, single] {
        let _ = std::fs::remove_dir_all(d);
    }
}
