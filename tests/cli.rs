//! Smoke tests of the `mocc` command line on tiny budgets.

mod common;

use common::mocc;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn stdout_json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "mocc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let last = text.lines().last().expect("a JSON line");
    serde_json::from_str(last).expect("stdout's last line is JSON")
}

/// The command failed and its error message names `needle`.
fn assert_fails_naming(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "succeeded; stderr: {err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
}

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mocc-cli-{}-{name}", std::process::id()))
}

/// `mocc eval` of `policies` on `suite`, writing into `out`.
fn eval(policies: &[&str], suite: &Path, out: &Path) -> Output {
    let mut args = vec!["eval"];
    for p in policies {
        args.extend(["--policy", p]);
    }
    args.extend([
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    mocc(&args)
}

/// The runs of each policy in `mocc eval`'s summary line, in the order of `--policy`.
fn eval_runs(summary: &serde_json::Value) -> Vec<u64> {
    summary["policies"]
        .as_array()
        .unwrap_or_else(|| panic!("no policies in {summary}"))
        .iter()
        .map(|p| p["runs"].as_u64().unwrap())
        .collect()
}

/// Trains `config` (with `--set` pairs from `extra`) into a fresh `run` folder; returns the JSON
/// summary.
fn train_into(config: &str, run: &Path, extra: &[&str]) -> serde_json::Value {
    let _ = std::fs::remove_dir_all(run);
    let mut args = vec!["train", config, "--out", run.to_str().unwrap()];
    args.extend_from_slice(extra);
    stdout_json(&mocc(&args))
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        vec!["--help"],
        vec!["simulate", "--help"],
        vec!["bench", "--help"],
        vec!["bench", "env", "--help"],
        vec!["bench", "policy", "--help"],
        vec!["bench", "train", "--help"],
        vec!["bench", "numerics", "--help"],
        vec!["export", "--help"],
        vec!["pair", "--help"],
        vec!["adapt", "--help"],
        vec!["experiment", "adaptation", "--help"],
        vec!["experiment", "fig5", "--help"],
        vec!["experiment", "leo", "--help"],
        vec!["train", "--help"],
        vec!["eval", "--help"],
        vec!["sweep", "--help"],
        vec!["plot", "curve", "--help"],
        vec!["net", "run", "--help"],
        vec!["net", "compare", "--help"],
    ] {
        let out = mocc(&args);
        assert!(out.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("Usage"),
            "{args:?}"
        );
    }
}

#[test]
fn simulate_under_capacity_matches_hand_computation() {
    // 50 pkt/s into 100 pkt/s: no queue, no loss, RTT = 2 x 0.05 s.
    let csv = temp_path("under.csv");
    let out = mocc(&[
        "simulate",
        "--network",
        "bw_pps=100,delay_s=0.05,queue_pkts=2,loss=0",
        "--rate",
        "50",
        "--steps",
        "200",
        "--seed",
        "3",
        "--out",
        csv.to_str().unwrap(),
    ]);
    let j = stdout_json(&out);
    assert_eq!(j["mis"], 200);
    assert_eq!(j["loss"], 0.0);
    assert!(
        (j["mean_rtt_s"].as_f64().unwrap() - 0.1).abs() < 1e-9,
        "{j}"
    );
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "mi,time_s,duration_s,send_pps,thr_pps,mean_rtt_s,loss,reward,probe,competitive,\
         sent_latency_inflation,latency_ratio,send_ratio"
    );
    // An MI without RTT samples (the first, before any ACK) has an empty RTT cell.
    let rows: Vec<Vec<f64>> = lines
        .map(|r| {
            r.split(',')
                .map(|v| {
                    if v.is_empty() {
                        f64::NAN
                    } else {
                        v.parse().unwrap()
                    }
                })
                .collect()
        })
        .collect();
    assert_eq!(rows.len(), 200);
    assert!(rows
        .iter()
        .all(|r| r[5].is_nan() || (r[5] - 0.1).abs() < 1e-9));
    assert!(rows.iter().all(|r| r.len() == 13));
    // A fixed rate never probes, and has no competitive mode.
    assert!(rows.iter().all(|r| r[8] == 0.0 && r[9] == 0.0));
    // Aurora's per-MI throughput counts one packet fewer than acknowledged:
    // thr_pps + 1/duration is the delivery rate, 50 pkt/s on average.
    let delivered = rows.iter().map(|r| r[4] + 1.0 / r[2]).sum::<f64>() / 200.0;
    assert!((delivered - 50.0).abs() < 2.5, "{delivered}");
    // The run's throughput is delivered packets over its seconds: all 50 pkt/s but the
    // packets in flight at the end (one RTT's, 0.1 s of the run).
    let thr = j["thr_pps"].as_f64().unwrap();
    let run_s = j["duration_s"].as_f64().unwrap();
    assert!(
        thr <= 50.0 + 1e-9 && thr >= 50.0 * (1.0 - 0.11 / run_s),
        "{j}"
    );
    let _ = std::fs::remove_file(csv);
}

#[test]
fn simulate_over_capacity_loses_the_excess() {
    let j = stdout_json(&mocc(&[
        "simulate",
        "--network",
        "bw_pps=100,delay_s=0.05,queue_pkts=2",
        "--rate",
        "200",
        "--steps",
        "400",
    ]));
    // Delivery is capped at the link's 100 pkt/s: the run delivers 100 packets a second but
    // for the start (one RTT before the first delivery) and the end.
    let thr = j["thr_pps"].as_f64().unwrap();
    let per_mi_packet = 1.0 / j["mean_mi_s"].as_f64().unwrap();
    let mis = j["mis"].as_f64().unwrap();
    let run_s = j["duration_s"].as_f64().unwrap();
    assert!(
        (run_s / mis - 1.0 / per_mi_packet).abs() < 1e-9,
        "the run's seconds: {j}"
    );
    assert!(
        thr <= 100.0 + 1e-9 && thr > 100.0 * (1.0 - 0.15 / run_s),
        "{j}"
    );
    assert!((j["loss"].as_f64().unwrap() - 0.5).abs() < 0.05, "{j}");
}

#[test]
fn simulate_reports_bad_input() {
    let out = mocc(&[
        "simulate",
        "--network",
        "bw_pps=-1,delay_s=0.05,queue_pkts=2",
        "--rate",
        "10",
    ]);
    assert_fails_naming(&out, "link.bandwidth_pps");

    let out = mocc(&[
        "simulate",
        "--scenario",
        "no/such/file.yaml",
        "--action",
        "0",
    ]);
    assert_fails_naming(&out, "no/such/file.yaml");

    let out = mocc(&[
        "simulate",
        "--network",
        "bw_pps=100,delay_s=0.05,queue_pkts=2",
    ]);
    assert!(!out.status.success(), "a rate or an action is required");
}

#[test]
fn simulate_scenario_with_constant_action() {
    let j = stdout_json(&mocc(&[
        "simulate",
        "--scenario",
        "configs/aurora-env.yaml",
        "--action",
        "-1",
        "--steps",
        "50",
        "--seed",
        "9",
    ]));
    assert_eq!(j["mis"], 50);
    for key in [
        "duration_s",
        "send_pps",
        "thr_pps",
        "mean_rtt_s",
        "loss",
        "reward",
    ] {
        assert!(j[key].as_f64().is_some_and(f64::is_finite), "{key}: {j}");
    }
}

#[test]
fn bench_env_prints_rates() {
    let j = stdout_json(&mocc(&[
        "bench",
        "env",
        "--scenario",
        "configs/aurora-env.yaml",
        "--envs",
        "4",
        "--threads",
        "2",
        "--steps",
        "400",
    ]));
    for key in ["env_steps_per_sec", "events_per_sec", "packets_per_sec"] {
        assert!(j[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {j}");
    }
    assert_eq!(j["env_steps"], 400);
}

/// `mocc bench train` trains the shipped bench config at each flow count (tiny here) and prints
/// one row per count, in the order asked; a bad count is refused by name.
#[test]
fn bench_train_prints_a_row_per_flow_count() {
    let j = stdout_json(&mocc(&[
        "bench",
        "train",
        "--flows",
        "1,3",
        "--updates",
        "1",
        "--repeats",
        "1",
        "--set",
        "ppo.num_steps=16",
        "--set",
        "envs=2",
    ]));
    let rows = j.as_array().expect("a list of rows");
    assert_eq!(rows.len(), 2, "{j}");
    for (row, flows) in rows.iter().zip([1, 3]) {
        assert_eq!(row["flows"], flows, "{j}");
        assert_eq!(row["updates"], 1, "{j}");
        for key in [
            "env_steps",
            "env_steps_per_sec",
            "updates_per_sec",
            "wall_seconds",
        ] {
            assert!(row[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {j}");
        }
    }
    let out = mocc(&["bench", "train", "--flows", "0", "--updates", "1"]);
    assert_fails_naming(&out, "learned_flows.count");
}

#[test]
fn bench_numerics_prints_the_same_fingerprints_in_every_process() {
    let run = || stdout_json(&mocc(&["bench", "numerics", "--repeats", "2"]));
    let (first, second) = (run(), run());
    for kind in ["native", "portable"] {
        let f = first[kind]["fingerprint"].as_str().unwrap_or_default();
        assert!(
            f.len() == 64 && f.chars().all(|c| c.is_ascii_hexdigit()),
            "{first}"
        );
        assert_eq!(
            first[kind]["fingerprint"], second[kind]["fingerprint"],
            "{kind}"
        );
        assert!(
            first[kind]["update_ms"].as_f64().is_some_and(|t| t > 0.0),
            "{first}"
        );
    }
    assert_ne!(
        first["native"]["fingerprint"],
        first["portable"]["fingerprint"]
    );
    assert_eq!(first["aten_cpu_capability"], "default", "{first}");
    assert!(first["portable_cost_ratio"]
        .as_f64()
        .is_some_and(|r| r > 0.0));
    assert_fails_naming(&mocc(&["bench", "numerics", "--repeats", "0"]), "--repeats");
}

/// A portable run resumed in a new process (which pins the kernels when it opens the
/// checkpoint) ends with the bytes of the uninterrupted run.
#[test]
fn a_portable_run_resumed_in_a_new_process_ends_where_the_whole_run_does() {
    let whole = temp_path("portable-whole");
    train_into(
        "configs/tiny.yaml",
        &whole,
        &["--set", "ppo.numerics=portable"],
    );
    let split = temp_path("portable-split");
    let _ = std::fs::remove_dir_all(&split);
    common::copy_dir(&whole, &split);
    let last = "checkpoints/ckpt-00000003";
    std::fs::remove_dir_all(split.join(last)).expect("drop the last checkpoint");
    let out = mocc(&["train", "--resume", split.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let weights = |run: &Path| std::fs::read(run.join(last).join("model.safetensors")).unwrap();
    assert_eq!(weights(&whole), weights(&split));
    let _ = std::fs::remove_dir_all(&whole);
    let _ = std::fs::remove_dir_all(&split);
}

#[test]
fn train_tiny_config_end_to_end() {
    let out_dir = temp_path("train-run");
    let j = train_into(
        "configs/tiny.yaml",
        &out_dir,
        &["--set", "budget.env_steps=512"],
    );
    assert_eq!(j["env_steps"], 512);
    for key in [
        "wall_seconds",
        "steps_per_sec",
        "sim_seconds",
        "inference_seconds",
        "update_seconds",
    ] {
        assert!(j[key].as_f64().is_some_and(|v| v >= 0.0), "{key}: {j}");
    }
    let ckpt = PathBuf::from(j["final_checkpoint"].as_str().unwrap());
    assert!(ckpt.join("model.safetensors").exists() && ckpt.join("state.json").exists());
    assert!(out_dir.join("metrics.csv").exists());
    // Evaluate the run deterministically on a two-network suite.
    let suite = temp_path("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 200, delay_s: 0.05, queue_pkts: 20, loss: 0.01}\n  \
         - {bw_pps: 100, delay_s: 0.1, queue_pkts: 5}\nobjectives: [[0.6, 0.3, 0.1]]\n\
         seeds: [0, 1]\nsteps: 30\n",
    )
    .unwrap();
    let eval_dir = temp_path("eval");
    let run_eval = || {
        stdout_json(&mocc(&[
            "eval",
            "--policy",
            out_dir.to_str().unwrap(),
            "--suite",
            suite.to_str().unwrap(),
            "--out",
            eval_dir.to_str().unwrap(),
        ]))
    };
    let e = run_eval();
    assert_eq!(eval_runs(&e), [4]);
    let e0 = &e["policies"][0];
    let util = e0["utilization"].as_f64().unwrap();
    assert!(util > 0.0 && util <= 1.0 + 1e-9, "{e}");
    assert!(e0["rtt_ratio"].as_f64().unwrap() >= 1.0, "{e}");
    let mocc_reward = e0["mocc_reward"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&mocc_reward), "{e}");
    let csv = std::fs::read_to_string(eval_dir.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "policy,network,w_thr,w_lat,w_loss,seed,utilization,thr_pps,mean_rtt_s,rtt_ratio,\
         loss,aurora_reward,mocc_reward,mi_utilization,mi_thr_pps"
    );
    assert_eq!(lines.count(), 4);
    // The same evaluation twice gives the same numbers (deterministic policy and seeds).
    let e2 = run_eval();
    assert_eq!(e, e2);
    // The learning curve draws.
    let png = temp_path("curve.png");
    let out = mocc(&[
        "plot",
        "curve",
        out_dir.to_str().unwrap(),
        "--out",
        png.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let _ = std::fs::remove_file(png);
    let _ = std::fs::remove_file(suite);
    let _ = std::fs::remove_dir_all(eval_dir);
    // Resuming a finished run trains nothing more and reports the same step count.
    let j2 = stdout_json(&mocc(&["train", "--resume", out_dir.to_str().unwrap()]));
    assert_eq!(j2["env_steps"], 512);
    // Bad input is named.
    let out = mocc(&["train", "configs/tiny.yaml", "--set", "ppo.gamma=3"]);
    assert_fails_naming(&out, "ppo.gamma");
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn every_config_file_parses() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/configs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml")
            && path.file_name().unwrap() != "aurora-env.yaml"
        {
            mocc_training::config::LoadedConfig::load(&path, &[])
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
                .scenario()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
}

#[test]
fn a_killed_run_leaves_a_loadable_checkpoint_and_resumes() {
    let out_dir = temp_path("killed-run");
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args([
            "train",
            "configs/tiny.yaml",
            "--out",
            out_dir.to_str().unwrap(),
            "--set",
            "budget.env_steps=40000",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("mocc starts");
    // Wait until a few checkpoints are complete, then SIGKILL mid-run (likely mid-save).
    let ckpts = out_dir.join("checkpoints");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let n = common::complete_checkpoints(&ckpts);
        if n >= 2 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(37));
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    // The newest complete checkpoint resumes; shrink the budget so the test stays short.
    let j = stdout_json(&mocc(&["train", "--resume", out_dir.to_str().unwrap()]));
    let steps = j["env_steps"].as_u64().unwrap();
    assert_eq!(steps, 157 * 256, "{j}");
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn every_eval_suite_parses() {
    // configs/eval and its folders (the validation twins).
    let mut dirs = vec![PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/configs/eval"
    ))];
    let mut twins = 0;
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                mocc_eval::suite::Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
                twins += usize::from(dir.ends_with("validation"));
            }
        }
    }
    assert_eq!(twins, 3, "the three validation twins");
}

#[test]
fn mocc_sweep_writes_csv_and_figure() {
    let out = temp_path("sweep");
    let _ = std::fs::remove_dir_all(&out);
    let suite = temp_path("sweep-suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 200, delay_s: 0.05, queue_pkts: 20, loss: 0.01}\n\
         objectives: [[0.6, 0.3, 0.1], [0.2, 0.7, 0.1]]\nseeds: [0]\nsteps: 20\n",
    )
    .unwrap();
    // The sweep on tiny budgets, with `extra` flags.
    let sweep = |extra: &[&str]| {
        let mut a = vec![
            "sweep",
            "configs/tiny-mocc.yaml",
            "--omega",
            "3,6",
            "--suite",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--set",
            "budget.env_steps=384",
        ];
        a.extend_from_slice(extra);
        mocc(&a)
    };
    let o = sweep(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&o.stdout).lines().last().unwrap()).unwrap();
    assert_eq!(rows[0]["omega"], 3);
    assert_eq!(rows[1]["omega"], 6);
    // Budget per landmark is kept: omega 6 trains twice the steps of omega 3 (rounded up to
    // whole rollouts of 4 envs x 32 steps).
    assert_eq!(rows[0]["env_steps"], 384);
    assert_eq!(rows[1]["env_steps"], 768);
    for r in rows.as_array().unwrap() {
        let p10 = r["p10"].as_f64().unwrap();
        let p50 = r["p50"].as_f64().unwrap();
        let p90 = r["p90"].as_f64().unwrap();
        assert!(
            p10 <= p50 && p50 <= p90 && (0.0..=1.0).contains(&p50),
            "{r}"
        );
    }
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    assert!(csv.starts_with("omega,wall_seconds,env_steps,mean,p10,p25,p50,p75,p90,seed\n"));
    assert_eq!(csv.lines().count(), 3);
    assert!(std::fs::read(out.join("sweep.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
    // Interrupted during omega 6 (after its first checkpoint): a rerun is refused, --resume
    // keeps omega 3, finishes omega 6 and gives the same rewards.
    let six = out.join("omega-6");
    std::fs::remove_file(six.join("sweep-run.json")).unwrap();
    let mut ckpts: Vec<_> = std::fs::read_dir(six.join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    ckpts.sort();
    std::fs::remove_dir_all(ckpts.last().unwrap()).unwrap();
    assert_fails_naming(&sweep(&[]), "continue it with --resume");
    let again = sweep(&["--resume"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let resumed: serde_json::Value = serde_json::from_str(
        String::from_utf8_lossy(&again.stdout)
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    for (a, b) in rows
        .as_array()
        .unwrap()
        .iter()
        .zip(resumed.as_array().unwrap())
    {
        for key in ["omega", "env_steps", "mean", "p10", "p50", "p90"] {
            assert_eq!(a[key], b[key], "{key}: {a} against {b}");
        }
    }
    assert_fails_naming(
        &sweep(&["--seeds", "1,1", "--resume"]),
        "--seeds 1: given twice",
    );
    let bad = mocc(&[
        "sweep",
        "configs/tiny-mocc.yaml",
        "--omega",
        "7",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_fails_naming(&bad, "--omega 7");
    let _ = std::fs::remove_dir_all(out);
    let _ = std::fs::remove_file(suite);
}

#[test]
fn export_then_eval_simulate_and_bench_the_export() {
    let run = temp_path("export-run");
    let j = train_into("configs/tiny-mocc.yaml", &run, &[]);
    assert!(j["env_steps"].as_u64().unwrap() > 0, "{j}");
    let export = temp_path("export-out");
    let _ = std::fs::remove_dir_all(&export);
    let spec = stdout_json(&mocc(&[
        "export",
        run.to_str().unwrap(),
        "--out",
        export.to_str().unwrap(),
        "--torchscript",
    ]));
    assert_eq!(spec["format_version"], 1);
    assert_eq!(spec["architecture"]["objective_dim"], 3);
    assert_eq!(spec["provenance"]["config_name"], "tiny-mocc");
    assert_eq!(spec["provenance"]["env_steps"], j["env_steps"]);
    let rev = spec["provenance"]["git_revision"].as_str().unwrap();
    assert!(!rev.is_empty(), "{spec}");
    assert_eq!(spec["weights"]["sha256"].as_str().unwrap().len(), 64);
    for f in ["policy.json", "policy.safetensors", "policy.pt"] {
        assert!(export.join(f).is_file(), "{f}");
    }
    // The export and the checkpoint evaluate alike (f32 rounding differs, the dynamics are
    // the same) on a one-network suite.
    let suite = temp_path("export-suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 200, delay_s: 0.05, queue_pkts: 20}\n\
         objectives: [[0.6, 0.3, 0.1], [0.1, 0.8, 0.1]]\nseeds: [0]\nsteps: 40\n",
    )
    .unwrap();
    let eval_dir = temp_path("export-eval");
    let e = stdout_json(&mocc(&[
        "eval",
        "--policy",
        export.to_str().unwrap(),
        "--policy",
        run.to_str().unwrap(),
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        eval_dir.to_str().unwrap(),
    ]));
    assert_eq!(eval_runs(&e), [2, 2]);
    let csv = std::fs::read_to_string(eval_dir.join("results.csv")).unwrap();
    let util: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(6).unwrap().parse().unwrap())
        .collect();
    assert_eq!(util.len(), 4);
    for k in 0..2 {
        assert!(
            (util[k] - util[k + 2]).abs() < 0.02,
            "export vs checkpoint: {util:?}"
        );
    }
    // simulate --policy drives a sender with the export.
    let sim = stdout_json(&mocc(&[
        "simulate",
        "--network",
        "bw_pps=200,delay_s=0.05,queue_pkts=20",
        "--policy",
        export.to_str().unwrap(),
        "--objective",
        "0.6,0.3,0.1",
        "--steps",
        "50",
    ]));
    assert_eq!(sim["mis"], 50);
    assert!(sim["thr_pps"].as_f64().unwrap() > 0.0, "{sim}");
    let out = mocc(&[
        "simulate",
        "--network",
        "bw_pps=200,delay_s=0.05,queue_pkts=20",
        "--policy",
        export.to_str().unwrap(),
        "--objective",
        "0.6,0.6,0.1",
    ]);
    assert_fails_naming(&out, "sum to 1");
    // bench policy prints its JSON line.
    let b = stdout_json(&mocc(&[
        "bench",
        "policy",
        "--policy",
        export.to_str().unwrap(),
        "--decisions",
        "2000",
        "--repeats",
        "3",
        "--compare-checkpoint",
        run.to_str().unwrap(),
    ]));
    assert!(b["ns_per_decision"].as_f64().unwrap() > 0.0, "{b}");
    assert!(b["tch_ns_per_decision"].as_f64().unwrap() > 0.0, "{b}");
    assert!(b["speedup_vs_tch"].as_f64().is_some(), "{b}");
    assert_eq!(b["takes_objective"], true);
    // A tampered export is refused by name.
    let weights = export.join("policy.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    let out = mocc(&["bench", "policy", "--policy", export.to_str().unwrap()]);
    assert_fails_naming(&out, "SHA-256");
    let out = mocc(&[
        "export",
        "/nonexistent/run",
        "--out",
        export.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    for p in [&run, &export, &eval_dir] {
        let _ = std::fs::remove_dir_all(p);
    }
    let _ = std::fs::remove_file(suite);
}

#[test]
fn adapt_and_the_adaptation_experiment_end_to_end() {
    let run = temp_path("adapt-pre");
    train_into("configs/tiny-mocc.yaml", &run, &[]);
    // Bad objectives and a missing checkpoint are named.
    for (objective, message) in [
        ("0.5,0.5,0.5", "sum to 1"),
        ("1,0,0", "positive"),
        ("0.5,0.5", "three"),
        ("a,0.5,0.5", "not a number"),
    ] {
        let out = mocc(&[
            "adapt",
            "--from",
            run.to_str().unwrap(),
            "--objective",
            objective,
        ]);
        assert!(!out.status.success(), "{objective}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(message) && err.contains("--objective"),
            "{err}"
        );
    }
    let out = mocc(&[
        "adapt",
        "--from",
        "/nonexistent/run",
        "--objective",
        "0.2,0.3,0.5",
    ]);
    assert_fails_naming(&out, "/nonexistent/run");

    let adapted = temp_path("adapt-out");
    let _ = std::fs::remove_dir_all(&adapted);
    let j = stdout_json(&mocc(&[
        "adapt",
        "--from",
        run.to_str().unwrap(),
        "--objective",
        "0.25,0.45,0.30",
        "--iterations",
        "2",
        "--out",
        adapted.to_str().unwrap(),
    ]));
    assert_eq!(j["replay"], true);
    assert!(j["initial_reward"].as_f64().is_some_and(|r| r > 0.0), "{j}");
    let pool: Vec<[f64; 3]> =
        serde_json::from_str(&std::fs::read_to_string(adapted.join("pool.json")).unwrap()).unwrap();
    assert_eq!(pool.len(), 4, "omega = 3 landmarks + the new objective");

    let exp = temp_path("adapt-exp");
    let _ = std::fs::remove_dir_all(&exp);
    // The experiment on tiny budgets, with `extra` flags.
    let experiment = |extra: &[&str]| {
        let mut a = vec![
            "experiment",
            "adaptation",
            "--from",
            run.to_str().unwrap(),
            "--k",
            "2",
            "--iterations",
            "2",
            "--scratch-iterations",
            "3",
            "--forgetting-iterations",
            "2",
            "--snapshot-every",
            "1",
            "--out",
            exp.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        mocc(&a)
    };
    let r = stdout_json(&experiment(&[]));
    for key in [
        "initial_ratio",
        "speedup_iterations",
        "forgetting_with_replay",
        "forgetting_without_replay",
        "forgetting_single_objective",
    ] {
        assert!(r[key].as_f64().is_some_and(|v| v >= 0.0), "{key}: {r}");
    }
    assert!(r.get("adapt_seconds").is_some(), "{r}");
    for f in [
        "adaptation.csv",
        "adaptation.png",
        "forgetting.csv",
        "forgetting.png",
    ] {
        assert!(exp.join(f).is_file(), "{f}");
    }
    let forgetting = std::fs::read_to_string(exp.join("forgetting.csv")).unwrap();
    assert_eq!(forgetting.lines().count(), 1 + 3 * 3, "{forgetting}");
    // Interrupted in its last sub-run: a rerun is refused, --resume trains only that one and
    // ends at the same forgetting curves (training is deterministic).
    let last = exp.join("forget-single");
    std::fs::remove_file(last.join("result.json")).unwrap();
    let finished = std::fs::read(exp.join("scratch-0/result.json")).unwrap();
    assert_fails_naming(&experiment(&[]), "continue it with --resume");
    let resumed = stdout_json(&experiment(&["--resume"]));
    assert_eq!(
        std::fs::read(exp.join("scratch-0/result.json")).unwrap(),
        finished
    );
    assert!(last.join("result.json").is_file());
    for key in [
        "forgetting_with_replay",
        "forgetting_without_replay",
        "forgetting_single_objective",
    ] {
        assert_eq!(resumed[key], r[key], "{key}");
    }
    for p in [&run, &adapted, &exp] {
        let _ = std::fs::remove_dir_all(p);
    }
}

#[test]
fn experiment_fig5_runs_the_sweeps_for_every_scheme_it_is_given() {
    let suite = temp_path("fig5-tiny.yaml");
    std::fs::write(
        &suite,
        concat!(
            "sweeps:\n",
            "  base: {bw_pps: 300, delay_s: 0.03, queue_pkts: 60, loss: 0.0}\n",
            "  loss: [0.0, 0.05]\n",
            "seeds: [0]\n",
            "steps: 100\n"
        ),
    )
    .unwrap();
    let out_dir = temp_path("fig5-tiny");
    let _ = std::fs::remove_dir_all(&out_dir);
    let summary = stdout_json(&mocc(&[
        "experiment",
        "fig5",
        "--policy",
        "const:150",
        "--schemes",
        "bbr3,proteus-s,leocc",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert_eq!(eval_runs(&summary), [2; 4], "{summary}");
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    for policy in ["const:150", "bbr3", "proteus-s", "leocc"] {
        let rows = csv.lines().filter(|l| l.starts_with(&format!("{policy},")));
        assert_eq!(rows.count(), 2, "{policy}: {csv}");
    }
    assert!(out_dir.join("sweeps.png").is_file());
    let out = mocc(&[
        "experiment",
        "fig5",
        "--schemes",
        "bbr2",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_fails_naming(
        &out,
        "--schemes bbr2: not a classic scheme (cubic, cubic_unpaced",
    );
}

#[test]
fn eval_compares_baselines_and_names_bad_ones() {
    let suite = temp_path("baseline-suite.yaml");
    std::fs::write(
        &suite,
        concat!(
            "networks:\n",
            "  - {bw_pps: 300, delay_s: 0.03, queue_pkts: 300}\n",
            "  - {bw_pps: 300, delay_s: 0.05, queue_pkts: 100, loss: 0.02}\n",
            "steps: 300\n"
        ),
    )
    .unwrap();
    let out_dir = temp_path("baseline-eval");
    let e = stdout_json(&mocc(&[
        "eval",
        "--policy",
        "cubic",
        "--policy",
        "bbr",
        "--policy",
        "copa",
        "--policy",
        "vegas",
        "--policy",
        "vivace",
        "--policy",
        "const:150",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]));
    assert_eq!(eval_runs(&e), [2; 6]);
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    let row = |policy: &str, net: usize| -> Vec<f64> {
        let line = csv
            .lines()
            .filter(|l| l.starts_with(&format!("{policy},")))
            .nth(net)
            .unwrap_or_else(|| panic!("{policy} row {net} in {csv}"));
        line.split(',')
            .skip(6)
            .map(|v| v.parse().unwrap())
            .collect()
    };
    // Cubic fills the deep buffer (RTT ratio column 3), Copa does not; BBR keeps its rate
    // under 2% loss, Cubic does not (utilization column 0).
    assert!(row("cubic", 0)[3] > 2.0 * row("copa", 0)[3], "{csv}");
    assert!(row("cubic", 0)[3] > 2.0 * row("vivace", 0)[3], "{csv}");
    assert!(row("bbr", 1)[0] > 2.0 * row("cubic", 1)[0], "{csv}");
    // A constant 150 pkt/s sender on a 300 pkt/s link uses half of it.
    assert!((row("const:150", 0)[0] - 0.5).abs() < 0.02, "{csv}");
    let out = mocc(&[
        "eval",
        "--policy",
        "const:-3",
        "--suite",
        suite.to_str().unwrap(),
    ]);
    assert_fails_naming(&out, "const:RATE");
    let out = mocc(&[
        "eval",
        "--policy",
        "reno",
        "--suite",
        suite.to_str().unwrap(),
    ]);
    assert_fails_naming(&out, "reno");
    // The refusal lists the schemes there are.
    assert_fails_naming(
        &out,
        "bbr3, copa, vegas, allegro, vivace, proteus, proteus_s, leocc",
    );
    let sim = stdout_json(&mocc(&[
        "simulate",
        "--network",
        "bw_pps=300,delay_s=0.03,queue_pkts=300",
        "--policy",
        "cubic",
        "--steps",
        "300",
    ]));
    assert!(
        sim["mean_rtt_s"].as_f64().unwrap() > 0.12,
        "Cubic queues: {sim}"
    );
    let _ = std::fs::remove_file(suite);
    let _ = std::fs::remove_dir_all(out_dir);
}

#[test]
fn eval_draws_sweeps_fairness_friendliness_and_time_series() {
    let dir = temp_path("figs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("two-flow.yaml");
    std::fs::write(
        &scenario,
        concat!(
            "link: {bandwidth_pps: 300, delay_s: 0.01, queue_pkts: 30}\n",
            "senders:\n",
            "  - {controller: agent}\n",
            "  - {controller: {on_off: {on_s: 0.6, off_s: 0.3, cc: cubic}}, start_rate: {pps: 100}}\n",
        ),
    )
    .unwrap();
    std::fs::copy(&scenario, dir.join("two-flow-secs.yaml")).unwrap();
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        concat!(
            "sweeps:\n",
            "  base: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}\n",
            "  bw_pps: [100, 300]\n",
            "  queue_pkts: [5, 50]\n",
            "objectives: [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1]]\n",
            "steps: 50\n",
            "fairness: {network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}, flows: [2, 3], stagger_s: 2, duration_s: 10}\n",
            "friendliness: {network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}, duration_s: 10}\n",
            "timeseries:\n",
            "  - {scenario: two-flow.yaml, steps: 100}\n",
            "  - {scenario: two-flow-secs.yaml, duration_s: 2}\n",
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let run = mocc(&[
        "eval",
        "--policy",
        "checkpoints/mocc-omega36",
        "--policy",
        "bbr",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let e = stdout_json(&run);
    // Each figure is named as written (no `timeseries-*.png`).
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        err.contains("timeseries-two-flow-secs.png") && !err.contains('*'),
        "{err}"
    );
    // 4 sweep networks x 2 objectives x 1 seed x 2 policies.
    assert_eq!(eval_runs(&e), [8, 8]);
    for f in [
        "results.csv",
        "reward-cdf.png",
        "sweeps.png",
        "fairness.png",
        "friendliness.png",
        "timeseries-two-flow.png",
    ] {
        let bytes = std::fs::read(out.join(f)).unwrap_or_else(|_| panic!("{f} missing"));
        if f.ends_with(".png") {
            assert!(bytes.starts_with(b"\x89PNG"), "{f}");
        }
    }
    // Jain's index lies in [1/n, 1]; 2 policies x (8 + 6 seconds after the last start).
    let fairness = std::fs::read_to_string(out.join("fairness.csv")).unwrap();
    let jain: Vec<(usize, f64)> = fairness
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[1].parse().unwrap(), c[3].parse().unwrap())
        })
        .collect();
    assert_eq!(jain.len(), 2 * (8 + 6), "{fairness}");
    assert!(jain
        .iter()
        .all(|&(n, j)| j >= 1.0 / n as f64 - 1e-9 && j <= 1.0 + 1e-9));
    // The learned flows' RTT samples reach the rtt_ratio column (before the run's) every
    // second: at least the base RTT, at most a full 50-packet queue at 300 pkt/s over 40 ms
    // (5.2).
    for line in fairness
        .lines()
        .skip(1)
        .filter(|l| l.starts_with("checkpoints/mocc-omega36,"))
    {
        let rtt_ratio: f64 = line.rsplit(',').nth(1).unwrap().parse().unwrap();
        assert!((1.0 - 1e-9..5.25).contains(&rtt_ratio), "{line}");
    }
    let friendly = std::fs::read_to_string(out.join("friendliness.csv")).unwrap();
    assert_eq!(friendly.lines().count(), 3, "{friendly}");
    let series = std::fs::read_to_string(out.join("timeseries-two-flow.csv")).unwrap();
    assert_eq!(series.lines().count(), 1 + 2 * 100);
    // With duration_s both policies run until the MI that crosses 2 s, whatever their MIs.
    let series = std::fs::read_to_string(out.join("timeseries-two-flow-secs.csv")).unwrap();
    for policy in ["checkpoints/mocc-omega36", "bbr"] {
        let times: Vec<f64> = series
            .lines()
            .skip(1)
            .filter(|l| l.split(',').next() == Some(policy))
            .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
            .collect();
        let n = times.len();
        assert!(
            n >= 2 && times[n - 1] >= 2.0 && times[n - 2] < 2.0,
            "{policy}: {times:?}"
        );
    }
    assert!(out.join("timeseries-two-flow-secs.png").exists());
    // Bad sections are named.
    std::fs::write(
        &suite,
        "fairness: {network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}, flows: [1], stagger_s: 2, duration_s: 10}\n",
    )
    .unwrap();
    let bad = mocc(&[
        "eval",
        "--policy",
        "bbr",
        "--suite",
        suite.to_str().unwrap(),
    ]);
    assert_fails_naming(&bad, "fairness.flows");
    let _ = std::fs::remove_dir_all(dir);
}

/// The notebooks run on small outputs of this test run (`make test` installs Jupyter, pandas
/// and matplotlib into MOCC_PYTOOLS and sets MOCC_REQUIRE_NOTEBOOKS).
#[test]
fn notebooks_execute_on_small_outputs() {
    let dir = temp_path("notebooks");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let run = dir.join("run");
    train_into("configs/tiny.yaml", &run, &[]);
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        concat!(
            "sweeps:\n",
            "  base: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}\n",
            "  bw_pps: [100, 300]\n",
            "  delay_s: [0.01, 0.02]\n",
            "steps: 40\n",
            "fairness: {network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}, flows: [2], stagger_s: 2, duration_s: 6}\n",
        ),
    )
    .unwrap();
    let eval = dir.join("eval");
    stdout_json(&mocc(&[
        "eval",
        "--policy",
        run.to_str().unwrap(),
        "--policy",
        "cubic",
        "--suite",
        suite.to_str().unwrap(),
        "--out",
        eval.to_str().unwrap(),
    ]));
    let figures = dir.join("figures");
    std::fs::create_dir_all(&figures).unwrap();
    let out = Command::new("python3")
        .args([
            "-m",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--output-dir",
        ])
        .arg(dir.join("executed"))
        .args(["notebooks/training.ipynb", "notebooks/evaluation.ipynb"])
        .env(
            "PYTHONPATH",
            std::env::var("MOCC_PYTOOLS").unwrap_or_default(),
        )
        .env("MOCC_ROOT", env!("CARGO_MANIFEST_DIR"))
        .env("MOCC_RUN", &run)
        .env("MOCC_EVAL", &eval)
        .env("MOCC_FIGURES", &figures)
        .output();
    let required = std::env::var_os("MOCC_REQUIRE_NOTEBOOKS").is_some();
    match out {
        Ok(o) if o.status.success() => {
            for f in [
                "training-curves.png",
                "sweeps.png",
                "reward-cdf.png",
                "fairness.png",
            ] {
                let bytes = std::fs::read(figures.join(f)).unwrap_or_default();
                assert!(
                    bytes.starts_with(b"\x89PNG"),
                    "{f} not drawn by the notebooks"
                );
            }
        }
        Ok(o) if !required => eprintln!(
            "skipped: the notebooks need nbconvert, pandas and matplotlib (make test installs \
             them): {}",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ),
        other => panic!("the notebooks failed: {other:?}"),
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_multi_flow_run_trains_resumes_and_exports_through_the_cli() {
    let run = temp_path("shared-run");
    let j = train_into("configs/tiny-shared.yaml", &run, &[]);
    let steps = j["env_steps"].as_u64().unwrap();
    assert!(steps >= 1000, "{j}");
    // Resuming a finished run trains nothing more and reports the same count.
    let again = stdout_json(&mocc(&["train", "--resume", run.to_str().unwrap()]));
    assert_eq!(again["env_steps"].as_u64(), Some(steps), "{again}");
    let export = temp_path("shared-export");
    let _ = std::fs::remove_dir_all(&export);
    let spec = stdout_json(&mocc(&[
        "export",
        run.to_str().unwrap(),
        "--out",
        export.to_str().unwrap(),
    ]));
    assert_eq!(spec["action"]["max_rate_pps"], 2000.0, "{spec}");
    assert_eq!(spec["architecture"]["objective_dim"], 3);
    // The observation travels whole: metric version, features and drain-aware baseline.
    assert_eq!(spec["observation"]["metrics"], "delivered", "{spec}");
    assert_eq!(
        spec["observation"]["features"][3], "peak delivery ratio",
        "{spec}"
    );
    let baseline = &spec["observation"]["latency_baseline"]["drain_aware"];
    assert_eq!(baseline["seconds"], 2.0, "{spec}");
    assert_eq!(baseline["drain_fraction"], 0.5, "{spec}");
    let _ = std::fs::remove_dir_all(run);
    let _ = std::fs::remove_dir_all(export);
}

#[test]
fn init_starts_a_new_run_from_trained_weights() {
    let first = temp_path("init-first");
    train_into("configs/tiny-mocc.yaml", &first, &[]);
    let second = temp_path("init-second");
    let j = train_into(
        "configs/tiny-shared.yaml",
        &second,
        &[
            "--init",
            first.to_str().unwrap(),
            "--set",
            "scenario.observation.features=[sent latency inflation, latency ratio, send ratio]",
        ],
    );
    assert!(j["env_steps"].as_u64().unwrap() > 0, "{j}");
    // tiny-shared's own four features make a 40-value observation: refused, sizes named.
    let other_obs = temp_path("init-other-obs");
    let refused = mocc(&[
        "train",
        "configs/tiny-shared.yaml",
        "--out",
        other_obs.to_str().unwrap(),
        "--init",
        first.to_str().unwrap(),
    ]);
    assert_fails_naming(
        &refused,
        "observation size 30 does not match the scenario's 40",
    );
    // A checkpoint of another architecture is refused with its path named.
    let aurora = temp_path("init-aurora");
    train_into("configs/tiny.yaml", &aurora, &[]);
    let third = temp_path("init-third");
    let bad = mocc(&[
        "train",
        "configs/tiny-shared.yaml",
        "--out",
        third.to_str().unwrap(),
        "--init",
        aurora.to_str().unwrap(),
    ]);
    assert_fails_naming(&bad, "init-aurora");
    for d in [first, second, other_obs, aurora, third] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn eval_runs_scenarios_fairness_variants_and_friendliness_buffers() {
    let out = temp_path("shared-eval");
    let _ = std::fs::remove_dir_all(&out);
    let suite = temp_path("shared-suite.yaml");
    let leo = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/scenarios/leo.yaml");
    std::fs::write(
        &suite,
        format!(
            "seeds: [0, 1]\nscenarios:\n  - {{scenario: {}, duration_s: 20}}\n",
            leo.display()
        ) + "\
         fairness:\n  network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}\n  \
         networks: [{bw_pps: 600, delay_s: 0.01, queue_pkts: 30}]\n  flows: [2, 3]\n  \
         stagger_s: 2\n  duration_s: 10\n  extra_rtt_s: [0, 0.05]\n  runs: 2\n  \
         start_jitter_s: 0.1\n\
         friendliness:\n  network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 50}\n  \
         buffers_bdp: [1, 4]\n  duration_s: 10\n",
    )
    .unwrap();
    let j = stdout_json(&eval(&["cubic", "copa"], &suite, &out));
    let _ = std::fs::remove_file(&suite);
    // 2 policies x 1 scenario x 1 objective x 2 seeds.
    assert_eq!(eval_runs(&j), [2, 2], "{j}");
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    for line in results.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells[1], "leo", "{line}");
        let utilization: f64 = cells[6].parse().unwrap();
        assert!((0.1..=1.05).contains(&utilization), "{line}");
    }
    let fairness = std::fs::read_to_string(out.join("fairness.csv")).unwrap();
    assert!(fairness.starts_with(
        "policy,flows,second,jain_index,utilization,network,rate_1_pps,rate_2_pps,rate_3_pps,rtt_ratio,run\n"
    ));
    for line in fairness.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let flows: usize = cells[1].parse().unwrap();
        let rates: Vec<f64> = cells[6..6 + flows]
            .iter()
            .map(|c| c.parse().unwrap())
            .collect();
        let utilization: f64 = cells[4].parse().unwrap();
        let bw = if cells[5].starts_with("bw300") {
            300.0
        } else {
            600.0
        };
        // The utilization column is the flows' total delivery over the capacity.
        assert!(
            (rates.iter().sum::<f64>() / bw - utilization).abs() < 1e-9,
            "{line}"
        );
        let rtt_column = cells.len() - 2;
        assert!(
            cells[6 + flows..rtt_column].iter().all(|c| c.is_empty()),
            "{line}"
        );
        // RTT over the flows' base RTTs (40 and 90 ms on bw300, 20 and 70 ms on bw600, with
        // the second flow's extra 50 ms): at least 1, and a full queue adds at most 50/300 s
        // to 40 ms (ratio 5.2) or 30/600 s to 20 ms (3.5).
        let rtt_ratio: f64 = cells[rtt_column].parse().unwrap();
        assert!((1.0 - 1e-9..6.0).contains(&rtt_ratio), "{line}");
        assert!(["0", "1"].contains(&cells[rtt_column + 1]), "{line}");
    }
    let summary = std::fs::read_to_string(out.join("fairness-summary.csv")).unwrap();
    // 2 policies x 2 networks x 2 flow counts x 2 runs (the second with jittered starts).
    assert_eq!(summary.lines().count(), 1 + 16, "{summary}");
    assert!(summary
        .lines()
        .next()
        .unwrap()
        .ends_with(",max_min_rate_ratio,rtt_ratio,run"));
    let mut runs = Vec::new();
    for line in summary.lines().skip(1) {
        let mut cells = line.rsplit(',');
        runs.push(cells.next().unwrap().to_string());
        let rtt_ratio: f64 = cells.next().unwrap().parse().unwrap();
        assert!((1.0 - 1e-9..6.0).contains(&rtt_ratio), "{line}");
    }
    assert_eq!(runs.iter().filter(|r| *r == "1").count(), 8, "{summary}");
    let friendly = std::fs::read_to_string(out.join("friendliness.csv")).unwrap();
    let queues: Vec<&str> = friendly
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap())
        .collect();
    // 300 pkt/s x 40 ms = 12 packets: 1 and 4 BDP.
    assert_eq!(queues, ["12", "12", "48", "48"], "{friendly}");
    for png in [
        "fairness.png",
        "friendliness-1bdp.png",
        "friendliness-4bdp.png",
    ] {
        assert!(out.join(png).is_file(), "{png}");
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn eval_runs_many_flows_that_start_within_a_window_and_stop() {
    let out = temp_path("many-flows-eval");
    let _ = std::fs::remove_dir_all(&out);
    let suite = temp_path("many-flows-suite.yaml");
    // 12 Cubic flows started 1 s apart within 12 s, 16 s each: all run from 11 s to 16 s.
    std::fs::write(
        &suite,
        "fairness:\n  network: {bw_pps: 1200, delay_s: 0.01, queue_pkts: 60}\n  flows: [12]\n  \
         starts_within_s: 12\n  flow_duration_s: 16\n  duration_s: 20\n",
    )
    .unwrap();
    let j = stdout_json(&eval(&["cubic"], &suite, &out));
    let _ = std::fs::remove_file(&suite);
    assert_eq!(eval_runs(&j), Vec::<u64>::new(), "{j}");
    let fairness = std::fs::read_to_string(out.join("fairness.csv")).unwrap();
    let seconds: Vec<usize> = fairness
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(2).unwrap().parse().unwrap())
        .collect();
    assert_eq!(seconds, (11..16).collect::<Vec<_>>(), "{fairness}");
    for line in fairness.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        // Every one of the 12 flows delivers in every counted second.
        let rates: Vec<f64> = cells[6..18].iter().map(|c| c.parse().unwrap()).collect();
        assert!(rates.iter().all(|&r| r > 0.0), "{line}");
        let jain: f64 = cells[3].parse().unwrap();
        assert!((1.0 / 12.0 - 1e-9..=1.0 + 1e-9).contains(&jain), "{line}");
    }
    for png in ["fairness.png", "fairness-operating-points.png"] {
        let bytes = std::fs::read(out.join(png)).unwrap_or_default();
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn eval_records_every_mi_of_each_learned_flow_when_the_suite_asks() {
    let out = temp_path("flow-mis-eval");
    let _ = std::fs::remove_dir_all(&out);
    let suite = temp_path("flow-mis-suite.yaml");
    std::fs::write(
        &suite,
        "fairness:\n  network: {bw_pps: 600, delay_s: 0.02, queue_pkts: 60}\n  flows: [2]\n  \
         stagger_s: 1\n  duration_s: 4\n  record_mis: true\n",
    )
    .unwrap();
    let j = stdout_json(&eval(&["checkpoints/mocc-pair", "cubic"], &suite, &out));
    let _ = std::fs::remove_file(&suite);
    assert!(j["policies"].is_array(), "{j}");
    let run = out.join("fairness-mis/checkpoints_mocc-pair/bw600_d0.02_q60/2-flows-run-0");
    for (k, start_s) in [(1, 0.0), (2, 1.0)] {
        let text = std::fs::read_to_string(run.join(format!("flow-{k}.csv"))).unwrap();
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(&header[..3], &["closed_s", "next_rate_pps", "mode"]);
        let closed: Vec<f64> = lines
            .map(|l| {
                assert_eq!(l.split(',').count(), header.len(), "{l}");
                l.split(',').next().unwrap().parse().unwrap()
            })
            .collect();
        // Half-RTT MIs from the flow's start to the run's end. An MI closes at the first packet
        // event at or after its nominal end (PCC-RL's rule), and the run steps until its clock
        // reaches the end, so the last MI may close on the first event past 4 s: within one
        // packet interval of the slowest pacing allowed (the 40 pkt/s floor).
        assert!(closed.len() > 40, "flow {k}: {} MIs", closed.len());
        let last = closed[closed.len() - 1];
        assert!(
            closed[0] > start_s && last < 4.0 + 1.0 / 40.0,
            "flow {k}: first {} last {last}",
            closed[0]
        );
    }
    // Cubic has no MI clock: nothing recorded.
    assert!(!out.join("fairness-mis/cubic").exists());
    let _ = std::fs::remove_dir_all(out);
}

/// The shipped mocc-paths export with base-RTT probes added (declared untrained), written to
/// `dir`.
fn probing_copy(dir: &Path) {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/mocc-paths");
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let text = std::fs::read_to_string(shipped.join("policy.json")).unwrap();
    let mut spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    spec["action"]["probe_rtt"] = serde_json::json!({"interval_s": 3, "quiet_latency_ratio": 1.1});
    spec["provenance"]["untrained"] = serde_json::json!([{
        "part": "action.probe_rtt",
        "declared_by": "the CLI tests",
        "why": "to pair a shipped export's weights"
    }]);
    std::fs::write(dir.join("policy.json"), spec.to_string()).unwrap();
    let weights = "policy.safetensors";
    std::fs::copy(shipped.join(weights), dir.join(weights)).unwrap();
}

#[test]
fn pair_joins_two_exports_that_eval_runs_and_refuses_what_cannot_pair() {
    let root = temp_path("pair");
    let (a, b, pair) = (root.join("a"), root.join("b"), root.join("pair"));
    probing_copy(&a);
    probing_copy(&b);
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let j = stdout_json(&mocc(&[
        "pair",
        &s(&a),
        &s(&b),
        "--out",
        &s(&pair),
        "--probe-after-s",
        "2",
        "--competitive-max-loss",
        "0.15",
        "--capacity-trains",
        "3,0.95,2",
    ]));
    assert_eq!(j["action"]["mode_switch"]["queue_ratio"], 1.1, "{j}");
    // Both halves read the same observation: each sends and reads the trains.
    let trains = serde_json::json!({"packets": 3, "fraction": 0.95, "window_s": 2.0});
    assert_eq!(j["observation"]["capacity_trains"], trains, "{j}");
    let inner: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(pair.join("competitive/policy.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(inner["observation"]["capacity_trains"], trains);
    assert_eq!(j["action"]["mode_switch"]["probe_after_s"], 2.0, "{j}");
    assert_eq!(
        j["action"]["mode_switch"]["competitive_max_loss"], 0.15,
        "{j}"
    );
    assert!(pair.join("competitive/policy.safetensors").is_file());
    let suite = root.join("suite.yaml");
    std::fs::write(
        &suite,
        "friendliness:\n  network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 12}\n  \
         buffers_bdp: [1]\n  duration_s: 10\n",
    )
    .unwrap();
    let out = root.join("eval");
    stdout_json(&eval(&[&s(&pair)], &suite, &out));
    let friendly = std::fs::read_to_string(out.join("friendliness.csv")).unwrap();
    assert_eq!(friendly.lines().count(), 2, "{friendly}");
    // The shipped export has no probes; a queue ratio must exceed 1, a loss bound lie in (0, 1).
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("checkpoints/mocc-paths");
    let refused = root.join("refused");
    let out = mocc(&["pair", &s(&shipped), &s(&shipped), "--out", &s(&refused)]);
    assert_fails_naming(&out, "needs probe_rtt");
    for (flag, message) in [
        ("--queue-ratio", "must be finite and > 1"),
        ("--competitive-max-loss", "must lie in (0, 1)"),
    ] {
        let out = mocc(&["pair", &s(&a), &s(&b), "--out", &s(&refused), flag, "1"]);
        assert_fails_naming(&out, &format!("{flag}: {message}"));
    }
    for (value, message) in [
        ("3,0.95", "expected PACKETS,FRACTION,WINDOW_S"),
        ("1,0.95,2", "capacity_trains.packets must lie in [2, 8]"),
        ("3,x,2", "FRACTION: not a number"),
        ("3,0.95,0", "capacity_trains.window_s must lie in (0, 3600]"),
        (
            "3,0.95,2,2",
            "capacity_trains.ratio_exponent must lie in (0, 1]",
        ),
    ] {
        let args = ["pair", &s(&a), &s(&b), "--out", &s(&refused)];
        let out = mocc(&[&args[..], &["--capacity-trains", value]].concat());
        assert_fails_naming(&out, message);
    }
    assert!(!refused.join("policy.json").exists());
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn eval_fails_when_results_cannot_be_written_and_never_writes_through_a_link() {
    let out = temp_path("eval-full");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).unwrap();
    let suite = temp_path("eval-full-suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 200, delay_s: 0.05, queue_pkts: 20}\nsteps: 20\n",
    )
    .unwrap();
    // An --out below a file cannot be created: eval says which.
    let blocker = out.join("a-file");
    std::fs::write(&blocker, "x").unwrap();
    assert_fails_naming(&eval(&["cubic"], &suite, &blocker.join("eval")), "a-file");
    std::fs::remove_file(&blocker).unwrap();
    // An earlier evaluation whose results.csv is a link to /dev/full is replaced whole: the new
    // results are a file of their own, not written through the link.
    std::os::unix::fs::symlink("/dev/full", out.join("results.csv")).unwrap();
    let run = eval(&["cubic"], &suite, &out);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let meta = std::fs::symlink_metadata(out.join("results.csv")).unwrap();
    assert!(meta.is_file(), "results.csv is still a link");
    let _ = std::fs::remove_dir_all(out);
    let _ = std::fs::remove_file(suite);
}

/// The shipped recipe (what `make train` runs) on tiny budgets: `*.` overrides reaching every
/// training stage, the competitive half on clean paths, the pair's switch, every stage trained
/// under the rule the export deploys with (the mode switch alone declared), and the report on
/// the nine validation targets.
#[test]
fn the_shipped_recipe_builds_its_pair_on_a_tiny_budget() {
    let out = temp_path("shipped-recipe");
    let _ = std::fs::remove_dir_all(&out);
    let mut args = vec![
        "train",
        "configs/recipes/mocc-pair.yaml",
        "--out",
        out.to_str().unwrap(),
    ];
    for set in [
        "*.budget.env_steps=256",
        "*.envs=2",
        "*.ppo.num_steps=64",
        "*.ppo.num_minibatches=2",
        "*.mocc.landmarks.omega=3",
    ] {
        args.extend(["--set", set]);
    }
    let line = stdout_json(&mocc(&args));
    assert_eq!(line["count"]["of"], 9, "{line}");
    for run in ["start", "coop", "comp"] {
        let config = &newest_checkpoint_state(&out.join(run))["config"];
        assert_eq!(
            config["budget"]["env_steps"], 256,
            "{run}: --set reached it"
        );
    }
    let comp = newest_checkpoint_state(&out.join("comp"));
    let loss = &comp["config"]["scenario"]["link"]["cross_traffic_loss"];
    assert_eq!(
        loss["max"], 0.001,
        "the competitive half trains on clean paths: {loss}"
    );
    let spec = read_json(&out.join("export/policy.json"));
    assert_eq!(
        spec["action"]["mode_switch"]["probe_after_s"], 8.0,
        "{spec}"
    );
    // Deployed under the fast-link rule and capacity trains its stages did not train with:
    // each half's provenance keeps the trained rule and names every untrained part.
    for half in ["export/policy.json", "export/competitive/policy.json"] {
        let spec = read_json(&out.join(half));
        let trained = &spec["provenance"]["trained_rule"];
        assert_eq!(trained["action"]["max_rate_pps"], 5000.0, "{half}");
        assert!(trained["action"].get("startup").is_none(), "{half}");
        assert!(trained.get("capacity_trains").is_none(), "{half}");
        assert!(spec["action"]["startup"].is_object(), "{half}");
        assert_eq!(spec["action"]["max_rate_pps"], 100000.0, "{half}");
        assert_eq!(spec["observation"]["capacity_trains"]["packets"], 3);
    }
    let untrained: Vec<&str> = spec["provenance"]["untrained"]
        .as_array()
        .unwrap()
        .iter()
        .map(|part| {
            assert_eq!(part["declared_by"], "configs/recipes/mocc-pair.yaml");
            part["part"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        untrained,
        [
            "action.mode_switch",
            "action.max_rate_pps",
            "action.binomial_increase",
            "action.startup",
            "observation.capacity_trains"
        ]
    );
    let report = read_json(&out.join("report.json"));
    let groups = &report["count"]["groups"];
    assert_eq!(groups[0][0], "sharing");
    assert_eq!(groups[0][2], 7);
    assert_eq!(groups[1][0], "alone");
    assert_eq!(groups[1][2], 2);
    let _ = std::fs::remove_dir_all(out);
}

/// A JSON file (a path relative to the repository root, or absolute).
fn read_json(path: &Path) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The `state.json` of a run folder's newest checkpoint.
fn newest_checkpoint_state(run: &Path) -> serde_json::Value {
    let newest = mocc_training::checkpoint::resolve(run).expect("a checkpoint");
    let text = std::fs::read_to_string(newest.join("state.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// `mocc experiment leo --quick` runs the study for the shipped pair and one classic scheme:
/// every part in leo.csv, the figures, the many-flows runs, and one verdict for the learned
/// scheme as the last stdout line; with `--record-mis`, the learned flows' MIs of every run;
/// a scheme that is not classic is refused.
#[test]
fn experiment_leo_runs_every_part_of_the_study() {
    let out = temp_path("leo");
    let _ = std::fs::remove_dir_all(&out);
    let run = mocc(&[
        "experiment",
        "leo",
        "--quick",
        "--schemes",
        "copa",
        "--record-mis",
        "--out",
        out.to_str().unwrap(),
    ]);
    let j = stdout_json(&run);
    let verdicts = j.as_array().expect("a list of verdicts");
    assert_eq!(verdicts.len(), 1, "{j}");
    assert_eq!(verdicts[0]["better_than"][0][0], "copa", "{j}");
    assert_eq!(
        verdicts[0]["many_flows"].as_array().unwrap().len(),
        3,
        "{j}"
    );
    let csv = std::fs::read_to_string(out.join("leo.csv")).unwrap();
    for part in [
        "single",
        "two_flows",
        "bandwidth_steps",
        "rtt_steps",
        "random_loss",
        "rtt_fairness",
    ] {
        let rows = csv
            .lines()
            .filter(|l| l.starts_with(&format!("{part},")))
            .count();
        assert!(rows >= 2, "{part}: {rows} rows\n{csv}");
    }
    for png in [
        "leo-paths.png",
        "leo-micro.png",
        "leo-fairness.png",
        "many-flows/fairness-operating-points.png",
    ] {
        let bytes = std::fs::read(out.join(png)).unwrap_or_default();
        assert!(bytes.starts_with(b"\x89PNG"), "{png}");
    }
    // Both flows of the pair's two-flow run at 15 s, the second from its start (20 s in the
    // quick study); none for Copa, which has no MI clock; the many-flows runs as mocc eval's.
    let two = out.join("mis/two_flows-15/checkpoints_mocc-pair/seed-0");
    for (flow, starts_after) in [(1, 0.0), (2, 20.0)] {
        let text = std::fs::read_to_string(two.join(format!("flow-{flow}.csv"))).unwrap();
        let mut lines = text.lines();
        assert!(lines
            .next()
            .unwrap()
            .starts_with("closed_s,next_rate_pps,mode,"));
        let first: f64 = lines
            .next()
            .unwrap()
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(first > starts_after && first < starts_after + 1.0, "{text}");
    }
    assert!(!out.join("mis/two_flows-15/copa").exists());
    let many = out.join("many-flows/fairness-mis/checkpoints_mocc-pair/bw8333_d0.025_q2083");
    assert!(many.join("20-flows-run-0/flow-20.csv").is_file());
    let refused = mocc(&[
        "experiment",
        "leo",
        "--quick",
        "--schemes",
        "checkpoints/mocc-pair",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_fails_naming(&refused, "--schemes");
    let _ = std::fs::remove_dir_all(out);
}
