//! Smoke tests of the `mocc` command line on tiny budgets.

use std::path::PathBuf;
use std::process::{Command, Output};

fn mocc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("mocc runs")
}

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

fn temp_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mocc-cli-{}-{name}", std::process::id()))
}

#[test]
fn every_subcommand_has_help() {
    for args in [
        vec!["--help"],
        vec!["simulate", "--help"],
        vec!["bench", "--help"],
        vec!["bench", "env", "--help"],
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
    assert!((j["thr_pps"].as_f64().unwrap() - 50.0).abs() < 5.0, "{j}");
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let mut lines = text.lines();
    assert_eq!(
        lines.next().unwrap(),
        "mi,time_s,duration_s,send_pps,thr_pps,mean_rtt_s,loss,reward,\
         sent_latency_inflation,latency_ratio,send_ratio"
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 200);
    assert!(rows.iter().all(|r| r.split(',').count() == 11));
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
    assert!((j["thr_pps"].as_f64().unwrap() - 100.0).abs() < 5.0, "{j}");
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
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("link.bandwidth_pps"), "{err}");

    let out = mocc(&[
        "simulate",
        "--scenario",
        "no/such/file.yaml",
        "--action",
        "0",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/file.yaml"));

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
