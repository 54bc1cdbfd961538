//! The command line under hostile but fair use (issue 19): absurd numbers, corrupted or edited
//! inputs, two writers on one run, full disks. Each case fails with an error naming what is
//! wrong, never a panic, a hang or a silent loss.

mod common;

use common::mocc;

use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The command failed with a one-line error (no panic, no backtrace) that names `needle`.
fn fails_naming(out: &Output, needle: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "succeeded; stderr: {err}");
    assert_eq!(out.status.code(), Some(1), "not a clean exit: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains(needle), "{needle:?} not in: {err}");
    err
}

fn succeeds(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "failed: {err}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A fresh path `<tmp>/mocc-rel-<pid>-<name>` (removed if it exists).
fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("mocc-rel-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    let _ = std::fs::remove_file(&p);
    p
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Trains `configs/tiny.yaml` (one checkpoint per update, three updates) into `run`.
fn train_tiny(run: &Path, extra: &[&str]) {
    let mut args = vec!["train", "configs/tiny.yaml", "--out", s(run)];
    args.extend_from_slice(extra);
    succeeds(&mocc(&args));
}

/// `mocc train configs/tiny.yaml --out RUN --set OVERRIDE`.
fn train_tiny_set(run: &Path, set: &str) -> Output {
    mocc(&["train", "configs/tiny.yaml", "--out", s(run), "--set", set])
}

const NET: &str = "bw_pps=100,delay_s=0.05,queue_pkts=10";

#[test]
fn absurd_rates_and_links_are_refused_by_name() {
    let out = mocc(&["simulate", "--network", NET, "--rate", "1e7"]);
    fails_naming(
        &out,
        "--rate: must be a number of packets/s in [0.001, 1000000]",
    );
    let out = mocc(&["simulate", "--network", NET, "--policy", "const:1e9"]);
    fails_naming(&out, "const:RATE must be a number of packets/s");
    for (network, field) in [
        (
            "bw_pps=1e-300,delay_s=0.05,queue_pkts=10",
            "link.bandwidth_pps",
        ),
        ("bw_pps=100,delay_s=1e5,queue_pkts=10", "link.delay_s"),
        (
            "bw_pps=100,delay_s=0.05,queue_pkts=2.5",
            "whole number of packets",
        ),
        (
            "bw_pps=100,bw_pps=200,delay_s=0.05,queue_pkts=10",
            "bw_pps: given twice",
        ),
    ] {
        let out = mocc(&["simulate", "--network", network, "--rate", "100"]);
        let err = fails_naming(&out, field);
        assert!(err.len() < 300, "a bound prints short: {err}");
    }
}

/// Runs mocc and fails the test if it has not exited within `limit` (a hang guard, not a speed
/// test: the bound is a hundred times what the run needs).
fn finishes_within(args: &[&str], limit: std::time::Duration) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mocc runs");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("mocc {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn the_largest_allowed_values_finish() {
    // A queue of 10^7 packets behind a 1 pkt/s link with 10 s of delay, paced at 10^6 pkt/s:
    // the RTT rule would size MIs of hours; MIs are capped (60 s, 10^6 packets).
    let out = finishes_within(
        &[
            "simulate",
            "--network",
            "bw_pps=1,delay_s=10,queue_pkts=10000000",
            "--rate",
            "1e6",
            "--steps",
            "5",
        ],
        std::time::Duration::from_secs(120),
    );
    let json: serde_json::Value =
        serde_json::from_str(succeeds(&out).lines().last().unwrap()).unwrap();
    assert!(json["mean_mi_s"].as_f64().unwrap() <= 1.0 + 1e-9, "{json}");
}

#[test]
fn envs_and_threads_are_bounded_before_anything_is_allocated() {
    let run = temp("bounds");
    let out = train_tiny_set(&run, "envs=100000000");
    fails_naming(&out, "envs: at most 65536");
    let out = train_tiny_set(&run, "threads=100000");
    fails_naming(&out, "threads: at most");
    let out = mocc(&["bench", "env", "--envs", "100000000", "--steps", "10"]);
    fails_naming(&out, "envs: at most 65536");
    let out = mocc(&["bench", "env", "--action", "nan", "--steps", "10"]);
    fails_naming(&out, "--action: must be finite");
    assert!(!run.exists(), "a refused run leaves no folder");
}

#[test]
fn simulate_streams_rows_and_checks_every_write() {
    // Rows are written as they are simulated (no allocation for the most steps); the first
    // buffer flush into a full device is an error naming the file.
    let out = mocc(&[
        "simulate",
        "--network",
        NET,
        "--rate",
        "100",
        "--steps",
        "10000000",
        "--out",
        "/dev/full",
    ]);
    fails_naming(&out, "cannot write /dev/full");
    // The result line on stdout is checked as well.
    let full = File::create("/dev/full").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args([
            "simulate",
            "--network",
            NET,
            "--rate",
            "100",
            "--steps",
            "3",
        ])
        .stdout(Stdio::from(full))
        .output()
        .unwrap();
    fails_naming(&out, "cannot write to stdout");
}

#[test]
fn inline_scenario_errors_name_the_field_and_empty_scenarios_are_refused() {
    let run = temp("inline");
    let out = train_tiny_set(&run, "scenario.bogus=1");
    fails_naming(
        &out,
        "--set scenario.bogus=1: scenario.bogus: unknown field `bogus`",
    );
    let out = train_tiny_set(&run, "ppo.gamma=abc");
    fails_naming(&out, "--set ppo.gamma=abc: ppo.gamma: invalid type");
    // Inline in the file: the field is named, not "did not match any variant".
    let cfg = temp("inline.yaml");
    std::fs::write(
        &cfg,
        "scenario: {episode_mis: 50, bogus: 1}\nbudget: {env_steps: 64}\n",
    )
    .unwrap();
    let out = mocc(&["train", s(&cfg), "--out", s(&run)]);
    let err = fails_naming(&out, "unknown field `bogus`");
    assert!(!err.contains("did not match any variant"), "{err}");
    let empty = temp("empty-scenario.yaml");
    std::fs::write(&empty, "# nothing here\n").unwrap();
    let out = mocc(&["simulate", "--scenario", s(&empty), "--rate", "100"]);
    fails_naming(&out, "empty scenario");
    std::fs::write(
        &cfg,
        format!("scenario: {}\nbudget: {{env_steps: 64}}\n", s(&empty)),
    )
    .unwrap();
    let out = mocc(&[
        "train",
        s(&cfg),
        "--out",
        s(&run),
        "--set",
        "scenario.episode_mis=9",
    ]);
    fails_naming(&out, "empty scenario");
    assert!(!run.exists());
    for f in [cfg, empty] {
        std::fs::remove_file(f).unwrap();
    }
}

#[test]
fn a_scenario_trace_resolves_against_the_scenario_file() {
    for policy in ["cubic", "const:300"] {
        let out = mocc(&[
            "simulate",
            "--scenario",
            "configs/scenarios/trace.yaml",
            "--policy",
            policy,
            "--steps",
            "3",
        ]);
        succeeds(&out);
    }
}

#[test]
fn messages_say_each_thing_once_and_name_missing_paths() {
    let out = mocc(&["train", "/no/such/config.yaml"]);
    let err = fails_naming(&out, "/no/such/config.yaml");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    let out = mocc(&["export", "/no/such/run", "--out", s(&temp("x"))]);
    let err = fails_naming(&out, "no such file or folder");
    assert!(!err.contains("no checkpoint here"), "{err}");
    let out = mocc(&[
        "simulate",
        "--network",
        "bw_pps=100,delay_s=0.05,queue_pkts=1e30",
        "--rate",
        "1",
    ]);
    let err = fails_naming(&out, "link.queue_pkts");
    assert!(!err.contains("000000000000"), "{err}");
}

#[test]
fn corrupted_checkpoints_are_refused_by_every_command() {
    let run = temp("corrupt");
    train_tiny(&run, &[]);
    let ckpt = run.join("checkpoints/ckpt-00000003");
    let weights = ckpt.join("model.safetensors");
    let state = ckpt.join("state.json");
    let good_weights = std::fs::read(&weights).unwrap();
    let good_state = std::fs::read_to_string(&state).unwrap();
    let export_to = temp("corrupt-export");
    let commands: [Vec<&str>; 2] = [
        vec!["export", s(&ckpt), "--out", s(&export_to)],
        vec![
            "simulate",
            "--network",
            NET,
            "--policy",
            s(&ckpt),
            "--steps",
            "3",
        ],
    ];
    // One flipped bit in the last weight's bytes.
    let mut flipped = good_weights.clone();
    let last = flipped.len() - 2;
    flipped[last] ^= 0x40;
    std::fs::write(&weights, &flipped).unwrap();
    for c in &commands {
        fails_naming(&mocc(c), "SHA-256");
    }
    let resume = mocc(&["train", "--resume", s(&ckpt)]);
    fails_naming(&resume, "SHA-256");
    std::fs::write(&weights, &good_weights).unwrap();
    // Statistics that cannot be, each named.
    let mut json: serde_json::Value = serde_json::from_str(&good_state).unwrap();
    json["obs_norm"]["var"][0] = serde_json::json!(-1.0);
    std::fs::write(&state, json.to_string()).unwrap();
    for c in &commands {
        fails_naming(&mocc(c), "obs_norm.var[0]");
    }
    let mut json: serde_json::Value = serde_json::from_str(&good_state).unwrap();
    json["obs_norm"]["mean"].as_array_mut().unwrap().pop();
    std::fs::write(&state, json.to_string()).unwrap();
    for c in &commands {
        fails_naming(&mocc(c), "obs_norm.mean");
    }
    std::fs::write(&state, &good_state).unwrap();
    succeeds(&mocc(&commands[1]));
    assert!(
        !export_to.exists(),
        "no export was written from a corrupted checkpoint"
    );
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn resume_refuses_an_edited_trace() {
    let dir = temp("trace-run");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("link.trace");
    std::fs::copy("configs/traces/step-12mbps.trace", &trace).unwrap();
    let cfg = dir.join("cfg.yaml");
    std::fs::write(
        &cfg,
        "scenario: {episode_mis: 30, link: {trace: link.trace, delay_s: 0.02, queue_pkts: 50}}\n\
         agent: {preset: aurora}\nppo: {num_steps: 32, num_minibatches: 2, update_epochs: 1}\n\
         envs: 2\nbudget: {env_steps: 128}\nseed: 3\ndevice: cpu\nthreads: 1\n\
         checkpoint: {every_updates: 1, keep_last: 2}\n",
    )
    .unwrap();
    let run = dir.join("run");
    succeeds(&mocc(&[
        "train",
        s(&cfg),
        "--out",
        s(&run),
        "--set",
        "budget.env_steps=64",
    ]));
    let mut text = std::fs::read_to_string(&trace).unwrap();
    text.push_str("99999\n");
    std::fs::write(&trace, text).unwrap();
    let out = mocc(&["train", "--resume", s(&run)]);
    fails_naming(
        &out,
        "link.trace: this input changed since the run started (SHA-256",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// (step, tag) pairs of a metrics.csv.
fn metric_rows(run: &Path) -> Vec<(u64, String)> {
    std::fs::read_to_string(run.join("metrics.csv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            (c[1].parse().unwrap(), c[2].to_string())
        })
        .collect()
}

#[test]
fn resume_rolls_metrics_back_to_the_checkpoint() {
    let run = temp("rollback");
    train_tiny(&run, &["--set", "checkpoint.keep_last=3"]);
    let full = metric_rows(&run);
    // As if killed after logging update 3 but before its checkpoint landed.
    std::fs::remove_dir_all(run.join("checkpoints/ckpt-00000003")).unwrap();
    succeeds(&mocc(&["train", "--resume", s(&run)]));
    let resumed = metric_rows(&run);
    assert_eq!(resumed.len(), full.len(), "no row twice");
    let steps: Vec<u64> = resumed.iter().map(|r| r.0).collect();
    assert!(
        steps.windows(2).all(|w| w[0] <= w[1]),
        "steps never go back: {steps:?}"
    );
    let mut pairs = resumed.clone();
    pairs.sort();
    pairs.dedup();
    assert_eq!(pairs.len(), resumed.len(), "a (step, tag) pair repeats");
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_run_folder_has_one_writer() {
    let run = temp("locked");
    train_tiny(&run, &[]);
    assert!(
        !run.join("mocc.lock").exists(),
        "a finished run leaves its lock file"
    );
    // Another process holds the folder's lock (as a running `mocc train` does).
    let lock = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(run.join("mocc.lock"))
        .unwrap();
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => panic!("a finished run still holds its lock"),
        Err(TryLockError::Error(e)) => panic!("{e}"),
    }
    let out = mocc(&["train", "--resume", s(&run)]);
    fails_naming(&out, "the run folder is in use");
    let out = mocc(&["train", "configs/tiny.yaml", "--out", s(&run)]);
    fails_naming(&out, "the run folder is in use");
    drop(lock);
    succeeds(&mocc(&["train", "--resume", s(&run)]));
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn bench_policy_refuses_empty_budgets_and_another_model() {
    let a = temp("bench-a");
    let b = temp("bench-b");
    train_tiny(&a, &[]);
    train_tiny(&b, &["--set", "seed=8"]);
    let export = temp("bench-export");
    succeeds(&mocc(&["export", s(&a), "--out", s(&export)]));
    for (flag, value) in [("--decisions", "0"), ("--repeats", "0")] {
        let out = mocc(&["bench", "policy", "--policy", s(&export), flag, value]);
        fails_naming(&out, &format!("{flag}: must lie in [1, "));
    }
    let small = ["--decisions", "100", "--repeats", "1"];
    let mut args = vec![
        "bench",
        "policy",
        "--policy",
        s(&export),
        "--compare-checkpoint",
        s(&b),
    ];
    args.extend(small);
    fails_naming(&mocc(&args), "is not the model of this export");
    let mut args = vec![
        "bench",
        "policy",
        "--policy",
        s(&export),
        "--compare-checkpoint",
        s(&a),
    ];
    args.extend(small);
    let json: serde_json::Value =
        serde_json::from_str(succeeds(&mocc(&args)).lines().last().unwrap()).unwrap();
    assert!(json["speedup_vs_tch"].as_f64().unwrap() > 0.0, "{json}");
    for d in [a, b, export] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[test]
fn plot_curve_refuses_an_empty_log_and_creates_its_folder() {
    let run = temp("plot");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("metrics.csv"), "wall_time,step,tag,value\n").unwrap();
    fails_naming(&mocc(&["plot", "curve", s(&run)]), "no rows");
    std::fs::write(
        run.join("metrics.csv"),
        "wall_time,step,tag,value\n1,10,charts/episodic_return,1\n1,20,charts/episodic_return,2\n",
    )
    .unwrap();
    let png = run.join("new/folder/curve.png");
    succeeds(&mocc(&["plot", "curve", s(&run), "--out", s(&png)]));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    std::fs::remove_dir_all(&run).unwrap();
}

#[test]
fn a_refused_sweep_leaves_no_folder() {
    let out_dir = temp("sweep");
    let out = mocc(&[
        "sweep",
        "configs/tiny-mocc.yaml",
        "--omega",
        "7",
        "--out",
        s(&out_dir),
    ]);
    fails_naming(&out, "--omega 7");
    assert!(!out_dir.exists());
}

/// Writes `text` to a fresh file `name` and returns its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let p = temp(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn utilization_is_delivered_packets_over_the_links_capacity() {
    // A constant rate R on a 100 pkt/s link delivers R packets a second: utilization R / 100,
    // however few acks an MI holds (an unweighted mean of per-MI rates said 0.0665 for every
    // R up to 5).
    let suite = temp_file(
        "util-suite.yaml",
        "networks:\n  - {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}\nseeds: [0]\nsteps: 200\n",
    );
    let out = temp("util-eval");
    let mut args = vec!["eval", "--suite", s(&suite), "--out", s(&out)];
    for p in ["const:0.5", "const:2", "const:50"] {
        args.extend(["--policy", p]);
    }
    succeeds(&mocc(&args));
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let rate: f64 = cells[0].trim_start_matches("const:").parse().unwrap();
        let util: f64 = cells[col("utilization")].parse().unwrap();
        let thr: f64 = cells[col("thr_pps")].parse().unwrap();
        // Within the packets still in flight at the end (one RTT's worth) and a start-up MI.
        assert!(
            (util - rate / 100.0).abs() <= 0.15 * rate / 100.0 + 0.002,
            "{line}"
        );
        assert!((thr - rate).abs() <= 0.15 * rate + 0.2, "{line}");
        assert!(
            cells[col("mi_utilization")].parse::<f64>().is_ok(),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&suite);
}

#[test]
fn every_duration_count_and_input_has_a_stated_maximum() {
    let net = "network: {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}";
    for (section, field) in [
        (
            format!("fairness:\n  {net}\n  flows: [2]\n  stagger_s: 1\n  duration_s: 1e12\n"),
            "fairness.duration_s",
        ),
        (
            format!("friendliness:\n  {net}\n  buffers_bdp: [1]\n  duration_s: 1e12\n"),
            "friendliness.duration_s",
        ),
        (
            format!(
                "timeseries: [{{scenario: {}/configs/aurora-env.yaml, duration_s: 1e9}}]\n",
                env!("CARGO_MANIFEST_DIR")
            ),
            "timeseries[0].duration_s",
        ),
        (
            "networks: [{bw_pps: 100, delay_s: 0.05, queue_pkts: 10}]\nsteps: 4294967295\n".into(),
            "steps: must lie in [1, 1000000]",
        ),
    ] {
        let suite = temp_file("max-suite.yaml", &format!("{section}seeds: [0]\n"));
        let out = mocc(&[
            "eval",
            "--policy",
            "cubic",
            "--suite",
            s(&suite),
            "--out",
            s(&temp("max-eval")),
        ]);
        fails_naming(&out, field);
        let _ = std::fs::remove_file(&suite);
    }
    // Endless inputs are refused after a bounded read.
    for args in [
        vec!["eval", "--policy", "cubic", "--suite", "/dev/zero"],
        vec!["train", "/dev/zero"],
        vec!["simulate", "--scenario", "/dev/zero", "--rate", "10"],
    ] {
        fails_naming(&mocc(&args), "larger than 64 MiB");
    }
    // Rates the clock cannot resolve are refused where they are configured.
    let scenario = temp_file(
        "max-rate.yaml",
        "link: {bandwidth_pps: 100, delay_s: 0.05, queue_pkts: 10}\naction: {max_rate_pps: 1e30}\n",
    );
    let out = mocc(&[
        "simulate",
        "--scenario",
        s(&scenario),
        "--action",
        "1e300",
        "--steps",
        "5",
    ]);
    fails_naming(&out, "max_rate_pps: must lie in [min_rate_pps 40, 1000000]");
    let _ = std::fs::remove_file(&scenario);
    // Counts have maxima.
    let huge = "18446744073709551615";
    for (args, flag) in [
        (
            vec![
                "simulate",
                "--network",
                NET,
                "--rate",
                "10",
                "--steps",
                huge,
            ],
            "--steps: must lie in [1, 10000000]",
        ),
        (
            vec!["bench", "env", "--steps", huge],
            "--steps: must lie in [1, 1000000000]",
        ),
        (
            vec![
                "bench",
                "policy",
                "--policy",
                "checkpoints/aurora",
                "--decisions",
                huge,
            ],
            "--decisions: must lie in [1, 1000000000]",
        ),
        (
            vec![
                "adapt",
                "--from",
                "checkpoints/mocc-omega36",
                "--objective",
                "0.5,0.3,0.2",
                "--iterations",
                "4294967296",
                "--out",
                "/nonexistent/x",
            ],
            "--iterations: must lie in [1, 1000000]",
        ),
        (
            vec![
                "experiment",
                "adaptation",
                "--from",
                "/nonexistent",
                "--iterations",
                "99999999",
            ],
            "--iterations: must lie in [1, 1000000]",
        ),
        (
            vec![
                "net",
                "run",
                "--link",
                NET,
                "--flow",
                "const:10",
                "--duration",
                "1e12",
                "--out",
                "/nonexistent/x",
            ],
            "--duration: must lie in (0, 86400] seconds",
        ),
        (
            vec![
                "net",
                "compare",
                "--policy",
                "cubic",
                "--suite",
                "configs/eval/aurora-12.yaml",
                "--repeats",
                "4294967295",
                "--out",
                "/nonexistent/x",
            ],
            "--repeats: must lie in [1, 1000]",
        ),
    ] {
        fails_naming(&mocc(&args), flag);
    }
}

#[test]
fn a_signal_ends_training_with_a_checkpoint_of_the_last_update() {
    for (signal, status) in [("INT", 130), ("TERM", 143)] {
        let run = temp(&format!("signal-{signal}"));
        // No checkpoint on the cadence before the end of a budget it will not reach.
        let child = Command::new(env!("CARGO_BIN_EXE_mocc"))
            .args(["train", "configs/tiny.yaml", "--out", s(&run)])
            .args(["--set", "budget.env_steps=100000000"])
            .args(["--set", "checkpoint.every_updates=100000"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let logged = || {
            std::fs::read_to_string(run.join("metrics.csv"))
                .is_ok_and(|t| t.lines().count() > 1 && t.ends_with('\n'))
        };
        while !logged() {
            assert!(
                std::time::Instant::now() < deadline,
                "no update logged in 60 s"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let pid = child.id().to_string();
        let sent = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status();
        assert!(sent.unwrap().success());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(status), "{err}");
        assert!(err.contains("interrupted: the last checkpoint is"), "{err}");
        let ckpts: Vec<String> = std::fs::read_dir(run.join("checkpoints"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("ckpt-"))
            .collect();
        assert_eq!(ckpts.len(), 1, "{ckpts:?}");
        // The checkpoint is the last update's: every logged row is at or before its steps.
        let state: serde_json::Value = serde_json::from_slice(
            &std::fs::read(run.join("checkpoints").join(&ckpts[0]).join("state.json")).unwrap(),
        )
        .unwrap();
        let steps = state["counters"]["env_steps"].as_u64().unwrap();
        let last = metric_rows(&run).iter().map(|(s, _)| *s).max().unwrap();
        assert_eq!(last, steps, "rows logged after the checkpoint");
        let _ = std::fs::remove_dir_all(&run);
    }
}

#[test]
fn messages_blame_the_right_file_and_cause() {
    // A value given on the command line is named by its flag, not by the run's config file.
    let pretrained = temp("adapt-from");
    succeeds(&mocc(&[
        "train",
        "configs/tiny-mocc.yaml",
        "--out",
        s(&pretrained),
    ]));
    let out = mocc(&[
        "adapt",
        "--from",
        s(&pretrained),
        "--objective",
        "0.5,0.3,0.2",
        "--replay-fraction",
        "nan",
        "--out",
        s(&temp("adapt-nan")),
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("--replay-fraction"), "{err}");
    assert!(!err.contains("configs/"), "blames a config file: {err}");
    let _ = std::fs::remove_dir_all(&pretrained);
    // A run folder where a file is says so, not "mocc.lock: File exists".
    let file = temp_file("run-is-a-file", "x");
    let out = mocc(&["train", "configs/tiny.yaml", "--out", s(&file)]);
    fails_naming(&out, "exists and is not a folder");
    let _ = std::fs::remove_file(&file);
    // A figure that cannot be written names the file and the cause in words.
    let suite = temp_file(
        "write-fail-suite.yaml",
        "fairness:\n  network: {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}\n  flows: [2]\n  \
         stagger_s: 1\n  duration_s: 4\nseeds: [0]\n",
    );
    let out = mocc(&[
        "eval",
        "--policy",
        "cubic",
        "--suite",
        s(&suite),
        "--out",
        "/proc/mocc-eval",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("drawing") && !err.contains("Os {"), "{err}");
    let _ = std::fs::remove_file(&suite);
}

#[test]
fn simulate_reports_the_run_and_the_reward_the_objective_asks_for() {
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["simulate", "--network", NET, "--steps", "40"];
        args.extend_from_slice(extra);
        serde_json::from_str(succeeds(&mocc(&args)).lines().last().unwrap()).unwrap()
    };
    let fixed = run(&["--rate", "50"]);
    assert_eq!(fixed["reward_kind"], "aurora", "{fixed}");
    let (mis, run_s, mean_mi) = (
        fixed["mis"].as_f64().unwrap(),
        fixed["duration_s"].as_f64().unwrap(),
        fixed["mean_mi_s"].as_f64().unwrap(),
    );
    assert!(
        (run_s - mis * mean_mi).abs() < 1e-9 && run_s > 1.0,
        "{fixed}"
    );
    let policy = ["--policy", "checkpoints/mocc-omega36"];
    let with_objective = run(&[policy[0], policy[1], "--objective", "0.6,0.3,0.1"]);
    assert_eq!(with_objective["reward_kind"], "mocc", "{with_objective}");
    let r = with_objective["reward"].as_f64().unwrap();
    assert!(
        (0.0..=1.0).contains(&r),
        "a MOCC reward lies in [0, 1]: {with_objective}"
    );
}

#[test]
fn a_run_log_that_never_ends_is_refused_by_plot() {
    let run = temp("endless-log");
    std::fs::create_dir_all(&run).unwrap();
    std::os::unix::fs::symlink("/dev/zero", run.join("metrics.csv")).unwrap();
    let png = run.join("curve.png");
    let out = finishes_within(
        &["plot", "curve", s(&run), "--out", s(&png)],
        std::time::Duration::from_secs(60),
    );
    fails_naming(&out, "larger than 1024 MiB");
    std::fs::remove_dir_all(&run).unwrap();
}

// Fourth round (issue 64): no command loses or mixes another's outputs, no undefined number
// is reported as 0, no hang on SIGTERM.

/// The JSON of a command's last stdout line.
fn last_json(out: &Output) -> serde_json::Value {
    let text = succeeds(out);
    serde_json::from_str(text.lines().last().expect("a JSON line")).expect("JSON")
}

#[test]
fn an_export_never_goes_into_a_runs_empty_checkpoints_folder() {
    let run = temp("export-into-run");
    train_tiny(&run, &[]);
    let ckpts = run.join("checkpoints");
    let first = ckpts.join("ckpt-00000001");
    let keep = temp("export-into-run-ckpt");
    common::copy_dir(&first, &keep);
    for e in std::fs::read_dir(&ckpts).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        }
    }
    fails_naming(
        &mocc(&["export", s(&keep), "--out", s(&ckpts)]),
        "holds the outputs of `mocc train`",
    );
    assert!(!ckpts.join("policy.json").exists());
    let _ = std::fs::remove_dir_all(&run);
    let _ = std::fs::remove_dir_all(&keep);
}

#[test]
fn a_resume_into_another_runs_folder_leaves_its_metrics_alone() {
    let (a, b) = (temp("resume-a"), temp("resume-b"));
    train_tiny(&a, &[]);
    train_tiny(&b, &[]);
    // b's checkpoints gone (a run killed before its first one), its log still there.
    for e in std::fs::read_dir(b.join("checkpoints")).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            std::fs::remove_dir_all(p).unwrap();
        }
    }
    let before = std::fs::read(b.join("metrics.csv")).unwrap();
    fails_naming(
        &mocc(&["train", "--resume", s(&a), "--out", s(&b)]),
        "holds another run's metrics.csv",
    );
    assert_eq!(std::fs::read(b.join("metrics.csv")).unwrap(), before);
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn a_killed_simulate_leaves_the_previous_file_whole() {
    let file = temp("simulate-out.csv");
    let args = [
        "simulate",
        "--network",
        NET,
        "--rate",
        "50",
        "--out",
        s(&file),
    ];
    succeeds(&mocc(&[&args[..], &["--steps", "50"]].concat()));
    let before = std::fs::read(&file).unwrap();
    let mut child = common::spawn_quiet(&[&args[..], &["--steps", "10000000"]].concat());
    std::thread::sleep(std::time::Duration::from_millis(700));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the complete file was replaced"
    );
    let _ = std::fs::remove_file(&file);
}

#[test]
fn simulate_reports_delivered_packets_over_time_and_no_rtt_without_deliveries() {
    // 100 packets/s on a lossless 200 packets/s link: every packet is delivered; the packets
    // in flight at the end (one RTT's, 60 ms of 1.56 s) are all that is missing.
    let j = last_json(&mocc(&[
        "simulate",
        "--network",
        "bw_pps=200,delay_s=0.03,queue_pkts=40",
        "--rate",
        "100",
        "--steps",
        "50",
    ]));
    let thr = j["thr_pps"].as_f64().unwrap();
    let secs = j["duration_s"].as_f64().unwrap();
    assert!(
        thr <= 100.0 + 1e-9 && thr >= 100.0 * (1.0 - 0.07 / secs),
        "{j}"
    );
    assert!(
        (j["send_pps"].as_f64().unwrap() - 100.0).abs() < 1e-6,
        "{j}"
    );
    assert_eq!(j["loss"].as_f64(), Some(0.0), "{j}");
    let lost = last_json(&mocc(&[
        "simulate",
        "--network",
        "bw_pps=200,delay_s=0.03,queue_pkts=40,loss=1",
        "--rate",
        "100",
        "--steps",
        "20",
    ]));
    assert_eq!(lost["thr_pps"].as_f64(), Some(0.0), "{lost}");
    assert!(
        lost["mean_rtt_s"].is_null(),
        "an RTT without deliveries: {lost}"
    );
    assert_eq!(lost["loss"].as_f64(), Some(1.0), "{lost}");
}

#[test]
fn a_run_that_delivers_nothing_has_no_rtt_and_summaries_say_they_omit_it() {
    let dir = temp("no-rtt");
    std::fs::create_dir_all(&dir).unwrap();
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}\n  \
         - {bw_pps: 100, delay_s: 0.05, queue_pkts: 10, loss: 1.0}\nseeds: [0]\nsteps: 20\n",
    )
    .unwrap();
    let out = mocc(&[
        "eval",
        "--policy",
        "const:50",
        "--suite",
        s(&suite),
        "--out",
        s(&dir.join("ev")),
    ]);
    let j = last_json(&out);
    let csv = std::fs::read_to_string(dir.join("ev/results.csv")).unwrap();
    let header = mocc_outputs::csv::split_line(csv.lines().next().unwrap());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(mocc_outputs::csv::split_line)
        .collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let lossy = rows.iter().find(|r| r[col("loss")] == "1").expect(&csv);
    assert_eq!(lossy[col("rtt_ratio")], "", "{csv}");
    assert_eq!(lossy[col("mean_rtt_s")], "", "{csv}");
    let clean = rows.iter().find(|r| r[col("loss")] != "1").expect(&csv);
    let ratio: f64 = clean[col("rtt_ratio")].parse().unwrap();
    assert!(ratio >= 1.0, "{csv}");
    // The summary's RTT is the one run that has it, and it says it left one out.
    let summary = &j["policies"][0];
    assert_eq!(summary["omitted"]["rtt_ratio"], 1, "{j}");
    assert!(
        (summary["rtt_ratio"].as_f64().unwrap() - ratio).abs() < 1e-9,
        "{j}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_with_commas_and_quotes_stay_in_their_columns() {
    let root = temp("csv-names");
    let run = root.join("run");
    train_tiny(&run, &[]);
    let export = root.join("pol,\"x\"");
    succeeds(&mocc(&["export", s(&run), "--out", s(&export)]));
    let suite = root.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 100, delay_s: 0.05, queue_pkts: 10}\nseeds: [0]\nsteps: 20\n",
    )
    .unwrap();
    let ev = root.join("ev");
    succeeds(&mocc(&[
        "eval",
        "--policy",
        s(&export),
        "--suite",
        s(&suite),
        "--out",
        s(&ev),
    ]));
    let csv = std::fs::read_to_string(ev.join("results.csv")).unwrap();
    let mut lines = csv.lines();
    let header = mocc_outputs::csv::split_line(lines.next().unwrap());
    let row = mocc_outputs::csv::split_line(lines.next().unwrap());
    assert_eq!(row.len(), header.len(), "{csv}");
    assert!(row[0].ends_with("/pol,\"x\""), "{csv}");
    let _ = std::fs::remove_dir_all(&root);
}

/// A fresh folder inside the repository's target/ (so that paths relative to where mocc runs
/// reach it): its relative path and its full path.
fn repo_scratch(name: &str) -> (String, PathBuf) {
    let rel = format!("target/mocc-rel-{}-{name}", std::process::id());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(&rel);
    let _ = std::fs::remove_dir_all(&root);
    (rel, root)
}

#[test]
fn time_series_of_scenarios_with_one_name_keep_both_outputs() {
    let (rel, root) = repo_scratch("series");
    for sub in ["a", "b"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
        std::fs::write(
            root.join(sub).join("link.yaml"),
            "link: {bandwidth_pps: 100, delay_s: 0.05, queue_pkts: 10, loss: 0}\n\
             senders:\n  - controller: agent\n",
        )
        .unwrap();
    }
    std::fs::write(
        root.join("suite.yaml"),
        "timeseries:\n  - {scenario: a/link.yaml, steps: 20}\n  \
         - {scenario: b/link.yaml, steps: 20}\n",
    )
    .unwrap();
    let ev = root.join("ev");
    succeeds(&mocc(&[
        "eval",
        "--policy",
        "const:50",
        "--suite",
        &format!("{rel}/suite.yaml"),
        "--out",
        s(&ev),
    ]));
    for f in ["timeseries-link.csv", "timeseries-link-2.csv"] {
        assert!(ev.join(f).is_file(), "{f} missing");
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_relative_trace_in_an_eval_scenario_is_read_once_resolved() {
    let (rel, root) = repo_scratch("trace");
    std::fs::create_dir_all(root.join("paths")).unwrap();
    // A Mahimahi trace (one packet delivery opportunity per line, in ms), beside the file.
    let trace: String = (1..=1000).map(|ms| format!("{ms}\n")).collect();
    std::fs::write(root.join("paths/one-per-ms.trace"), trace).unwrap();
    std::fs::write(
        root.join("paths/traced.yaml"),
        "link: {trace: one-per-ms.trace, delay_s: 0.05, queue_pkts: 10, loss: 0}\n\
         senders:\n  - controller: agent\n",
    )
    .unwrap();
    std::fs::write(
        root.join("suite.yaml"),
        "scenarios:\n  - {scenario: paths/traced.yaml, duration_s: 2}\nseeds: [0]\n",
    )
    .unwrap();
    succeeds(&mocc(&[
        "eval",
        "--policy",
        "const:50",
        "--suite",
        &format!("{rel}/suite.yaml"),
        "--out",
        s(&root.join("ev")),
    ]));
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn sizes_and_counts_beyond_their_bounds_are_named_before_anything_runs() {
    for (set, field) in [
        ("agent.vf=[300000, 64]", "agent.vf"),
        ("agent.pi=[64, 0]", "agent.pi"),
        ("ppo.update_epochs=100000", "ppo.update_epochs"),
        ("scenario.warmup_mis=4294967295", "warmup_mis"),
    ] {
        let run = temp("bounds");
        let start = std::time::Instant::now();
        fails_naming(&train_tiny_set(&run, set), field);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{set}"
        );
        assert!(!run.exists(), "{set}: a run folder was made");
    }
}

#[test]
fn sigterm_during_a_long_update_ends_training_within_seconds() {
    let run = temp("sigterm-update");
    // One update of many epochs: minutes long, far beyond the stop's bound.
    let mut child = common::spawn_quiet(&[
        "train",
        "configs/tiny.yaml",
        "--out",
        s(&run),
        "--set",
        "ppo.update_epochs=1000",
        "--set",
        "ppo.num_minibatches=64",
    ]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let sent = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    assert!(sent.unwrap().success());
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("still training 10 s after SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(143));
    // Nothing of the abandoned update is saved.
    let ckpts: Vec<_> = std::fs::read_dir(run.join("checkpoints"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("ckpt-")
        })
        .collect();
    assert!(ckpts.is_empty());
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn arguments_are_checked_before_files_and_defaults_do_not_depend_on_the_folder() {
    let elsewhere = temp("cwd");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/tiny-mocc.yaml");
    let out = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(["sweep", s(&config), "--omega", "0", "--out", "X"])
        .current_dir(&elsewhere)
        .output()
        .unwrap();
    fails_naming(&out, "--omega 0");
    assert!(!elsewhere.join("X").exists());
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/eval/validation");
    let err = fails_naming(
        &mocc(&["eval", "--suite", s(&folder), "--policy", "copa"]),
        "--suite",
    );
    assert!(err.contains("is a folder"), "{err}");
    let _ = std::fs::remove_dir_all(&elsewhere);
}
