//! `mocc net run` end to end on a real namespace path (root; skipped elsewhere unless
//! MOCC_REQUIRE_NET=1, which `make test` sets as root). A run that misses a timing bound is
//! taken again (`on_a_quiet_attempt`).

mod common;
/// The namespace tests' helpers: one real-path test at a time, gating on the host, and
/// repeating a measurement the host's load spoiled.
#[path = "../net/tests/common/mod.rs"]
mod net_common;

use common::mocc;
use net_common::{ensure, on_a_quiet_attempt, serial};

use std::process::Command;

/// Runs mocc, which must succeed, and returns its last stdout line as JSON.
fn mocc_json(args: &[&str]) -> serde_json::Value {
    let out = mocc(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a JSON line")).expect("JSON")
}

/// An empty folder of this test process under the temp folder.
fn fresh_dir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mocc-net-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn a_bad_flow_is_refused_before_any_path_is_built() {
    let out = mocc(&[
        "net",
        "run",
        "--link",
        "bw_pps=450,delay_s=0.02,queue_pkts=40",
        "--flow",
        "no/such/export",
        "--out",
        "/tmp/mocc-net-cli-bad",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("not const:RATE and not an export folder"),
        "{err}"
    );
    let out = mocc(&[
        "net",
        "run",
        "--link",
        "bw_pps=450,delay_s=0.02,queue_pkts=4.5",
        "--flow",
        "const:100",
        "--out",
        "/tmp/mocc-net-cli-bad",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("queue_pkts"));
    assert!(!std::path::Path::new("/tmp/mocc-net-cli-bad").exists());
}

#[test]
fn an_export_and_a_constant_rate_share_a_real_bottleneck() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("mocc-net-cli-{}", std::process::id()));
    on_a_quiet_attempt("an export beside a constant rate", || {
        let _ = std::fs::remove_dir_all(&out_dir);
        let j = mocc_json(&[
            "net",
            "run",
            "--link",
            "bw_pps=450,delay_s=0.02,queue_pkts=40",
            "--flow",
            "checkpoints/mocc-omega36:0.6,0.3,0.1",
            "--flow",
            "const:150@1",
            "--duration",
            "5",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let flows = j["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2, "{j}");
        assert!(j["rtt_ratio"].as_f64().unwrap() >= 1.0, "{j}");
        let constant = flows[1]["thr_pps"].as_f64().unwrap();
        ensure!(
            (constant / 150.0 - 1.0).abs() < 0.1,
            "const:150 delivered {constant}"
        );
        let u = j["utilization"].as_f64().unwrap();
        ensure!(u > 0.5 && u <= 1.01, "utilization {u}");
        Ok(())
    });
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    assert!(csv.starts_with("source,flow,policy,network,w_thr,w_lat,w_loss,start_s,utilization"));
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("real,")).count(),
        2,
        "{csv}"
    );
    assert!(std::fs::read(out_dir.join("timeseries.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
    let mis = std::fs::read_to_string(out_dir.join("mis-0.csv")).unwrap();
    assert!(mis.lines().count() > 20, "{mis}");
    // An evaluation is never written over the real run's measurement.
    let eval = mocc(&[
        "eval",
        "--policy",
        "const:50",
        "--suite",
        "configs/eval/classic-checks.yaml",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&eval.stderr);
    assert_eq!(eval.status.code(), Some(1), "{err}");
    assert!(err.contains("holds the outputs of `mocc net run`"), "{err}");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("results.csv")).unwrap(),
        csv,
        "the real run's results were replaced"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let names = String::from_utf8_lossy(&left.stdout);
    assert!(!names.contains("mocc-"), "namespaces left behind: {names}");
}

#[test]
fn kernel_cubic_and_bbr_flows_run_beside_each_other() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("mocc-net-cli-tcp-{}", std::process::id()));
    on_a_quiet_attempt("kernel Cubic beside BBR", || {
        let j = mocc_json(&[
            "net",
            "run",
            "--link",
            "bw_pps=500,delay_s=0.02,queue_pkts=50",
            "--flow",
            "cubic",
            "--flow",
            "bbr@1",
            "--duration",
            "4",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let u = j["utilization"].as_f64().unwrap();
        ensure!(
            u > 0.8 && u <= 1.01,
            "two bulk TCP flows fill the link: {j}"
        );
        for f in j["flows"].as_array().unwrap() {
            ensure!(f["thr_pps"].as_f64().unwrap() > 10.0, "{f}");
        }
        Ok(())
    });
    let bad = mocc(&[
        "net",
        "run",
        "--link",
        "bw_pps=500,delay_s=0.02,queue_pkts=50",
        "--flow",
        "cubic:0.4,0.3,0.3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("takes no objective"));
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// The shipped paired export drives a real flow beside kernel Cubic (the transport's
/// `Controller` switches its networks; docs/real-network.md has the 30 s runs).
#[test]
fn a_paired_export_runs_beside_kernel_cubic() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("mocc-net-cli-pair-{}", std::process::id()));
    on_a_quiet_attempt("a paired export beside kernel Cubic", || {
        let j = mocc_json(&[
            "net",
            "run",
            "--link",
            "bw_pps=500,delay_s=0.02,queue_pkts=20",
            "--flow",
            "checkpoints/mocc-pair:0.34,0.33,0.33",
            "--flow",
            "cubic",
            "--duration",
            "6",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let flows = j["flows"].as_array().unwrap();
        assert_eq!(flows.len(), 2, "{j}");
        for f in flows {
            ensure!(f["thr_pps"].as_f64().unwrap() > 10.0, "{f}");
        }
        let u = j["utilization"].as_f64().unwrap();
        ensure!(u > 0.8 && u <= 1.01, "utilization {u}");
        Ok(())
    });
    std::fs::remove_dir_all(&out_dir).unwrap();
}

#[test]
fn compare_runs_a_suite_on_both_sides() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let dir = fresh_dir("compare");
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        "networks:\n  - {bw_pps: 250, delay_s: 0.02, queue_pkts: 20, loss: 0.01}\n\
         seeds: [0]\nsteps: 100\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    on_a_quiet_attempt("mocc net compare", || {
        let j = mocc_json(&[
            "net",
            "compare",
            "--policy",
            "const:200",
            "--policy",
            "cubic",
            "--suite",
            suite.to_str().unwrap(),
            "--duration",
            "3",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        let alone = &j["alone"];
        assert_eq!(alone[0]["cases"], 1, "{j}");
        assert_eq!(alone[1]["policy"], "cubic", "{j}");
        assert_eq!(alone[1]["cases"], 1, "{j}");
        assert_eq!(
            j["sharing"],
            serde_json::json!([]),
            "no sharing sections: {j}"
        );
        // A constant rate under the bottleneck: both sides deliver it, at the propagation RTT.
        ensure!(
            alone[0]["max_abs_utilization_diff"].as_f64().unwrap() < 0.03,
            "{j}"
        );
        ensure!(
            alone[0]["max_rel_rtt_ratio_diff"].as_f64().unwrap() < 0.03,
            "{j}"
        );
        Ok(())
    });
    // Kernel Cubic against the simulator's Cubic: one row (one objective), data delivered.
    let csv = std::fs::read_to_string(out_dir.join("compare.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "{csv}");
    let cubic = csv
        .lines()
        .find(|l| l.starts_with("cubic,"))
        .expect("a cubic row");
    let real_utilization: f64 = cubic.split(',').nth(6).unwrap().parse().unwrap();
    assert!(real_utilization > 0.3, "{cubic}");
    assert!(std::fs::read(out_dir.join("compare.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_scenario_schedule_changes_the_real_path_during_the_run() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let dir = fresh_dir("step");
    let scenario = dir.join("step.yaml");
    std::fs::write(
        &scenario,
        "link:\n  bandwidth_pps: 400\n  delay_s: 0.02\n  queue_pkts: 20\n  loss: 0\n  \
         schedule:\n    - {time_s: 2, bandwidth_pps: 200}\n  \
         outages:\n    - {start_s: 4, duration_s: 1}\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    on_a_quiet_attempt("a scheduled real path", || {
        let j = mocc_json(&[
            "net",
            "run",
            "--scenario",
            scenario.to_str().unwrap(),
            "--flow",
            "const:300",
            "--duration",
            "6",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        // The step to 200 pkt/s at 2 s, the outage at 4 s and its end at 5 s, each applied
        // within 50 ms of its time.
        let changes = j["path_changes"].as_array().unwrap();
        let due: Vec<f64> = changes
            .iter()
            .map(|c| c["at_s"].as_f64().unwrap())
            .collect();
        assert_eq!(due, vec![2.0, 4.0, 5.0], "{j}");
        for c in changes {
            let late = c["applied_s"].as_f64().unwrap() - c["at_s"].as_f64().unwrap();
            ensure!((0.0..0.05).contains(&late), "{j}");
        }
        // 300 pkt/s for 2 s, then 200 for 2 s, the 20 queued packets during the outage, 200
        // for the last second: ~1,220 packets, ~203 pkt/s (an unchanged path would deliver 300).
        let thr = j["thr_pps"].as_f64().unwrap();
        ensure!((thr - 203.0).abs() < 12.0, "{j}");
        Ok(())
    });
    let results = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    // Quoted only where a name needs it (RFC 4180).
    assert!(results.contains(",step,"), "{results}");
    // What a real path cannot follow is refused by field before any path is built.
    std::fs::write(
        &scenario,
        "link: {bandwidth_pps: {min: 100, max: 200}, delay_s: 0.02, queue_pkts: 20, loss: 0}\n",
    )
    .unwrap();
    let bad = mocc(&[
        "net",
        "run",
        "--scenario",
        scenario.to_str().unwrap(),
        "--flow",
        "const:100",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("link.bandwidth_pps"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A suite's fairness and friendliness sections on both sides: two constant 100 pkt/s flows
/// on a 300 pkt/s link share it evenly at 2/3 utilization in the simulator (two runs, the
/// second with a jittered start) and on the real path alike; beside kernel Cubic a constant
/// flow keeps its rate; each simulated and real run is a row.
#[test]
fn compare_runs_a_suites_sharing_sections_on_both_sides() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let dir = fresh_dir("compare-sharing");
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        "fairness:\n  network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 30}\n  flows: [2]\n\
         \x20 stagger_s: 1\n  duration_s: 5\n  runs: 2\n  start_jitter_s: 0.1\n  record_mis: true\n\
         friendliness:\n  network: {bw_pps: 300, delay_s: 0.02, queue_pkts: 12}\n\
         \x20 buffers_bdp: [4]\n  duration_s: 8\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    on_a_quiet_attempt("mocc net compare (sharing)", || {
        let j = mocc_json(&[
            "net",
            "compare",
            "--policy",
            "const:100",
            "--suite",
            suite.to_str().unwrap(),
            "--repeats",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(j["alone"], serde_json::json!([]), "{j}");
        let s = &j["sharing"][0];
        assert_eq!(s["fairness_cases"], 1, "{j}");
        assert_eq!(s["fairness_cases_all_real_runs_at_least_0_9"], 1, "{j}");
        assert_eq!(s["fairness_cases_all_sim_runs_at_least_0_9"], 1, "{j}");
        ensure!(s["max_abs_jain_diff"].as_f64().unwrap() < 0.01, "{j}");
        // 100 pkt/s beside Cubic on a 4-BDP buffer: Cubic takes the other ~200.
        let real = s["friendliness"][0][2].as_array().unwrap();
        assert_eq!(real.len(), 2, "{j}");
        for r in real {
            let r = r.as_f64().unwrap();
            ensure!((0.35..0.7).contains(&r), "{j}");
        }
        Ok(())
    });
    // Two simulator rows and two real rows per case, each at two thirds of the link.
    let csv = std::fs::read_to_string(out_dir.join("fairness-compare.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{csv}");
    let sides = [("sim", "0"), ("sim", "1"), ("real", "1"), ("real", "2")];
    for (row, (side, run)) in rows.iter().zip(sides) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!((cells[3], cells[4]), (side, run), "{csv}");
        let utilization: f64 = cells[6].parse().unwrap();
        assert!((utilization - 2.0 / 3.0).abs() < 0.02, "{csv}");
    }
    // record_mis: every real run's MIs per flow, at the constant rate; the simulator's
    // constant-rate flows have no MI clock, so it records none.
    let case = |run: u32| {
        out_dir.join(format!(
            "fairness-mis-real/const_100/bw300_d0.02_q30/2-flows-run-{run}"
        ))
    };
    for run in [1, 2] {
        for flow in [1, 2] {
            let path = case(run).join(format!("flow-{flow}.csv"));
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines = text.lines();
            assert!(
                lines.next().unwrap().starts_with("rate_pps,bytes_sent,"),
                "{text}"
            );
            let rates: Vec<f64> = lines
                .map(|l| l.split(',').next().unwrap().parse().unwrap())
                .collect();
            assert!(rates.len() >= 5, "{}: {text}", path.display());
            assert!(rates.iter().all(|&r| r == 100.0), "{text}");
        }
    }
    assert!(!case(3).exists() && !out_dir.join("fairness-mis").exists());
    let friendly = std::fs::read_to_string(out_dir.join("friendliness-compare.csv")).unwrap();
    assert_eq!(friendly.lines().count(), 4, "{friendly}");
    assert!(std::fs::read(out_dir.join("sharing-compare.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ctrl_c_removes_the_namespaces_of_a_run() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("mocc-net-cli-int-{}", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args([
            "net",
            "run",
            "--link",
            "bw_pps=300,delay_s=0.02,queue_pkts=30",
            "--flow",
            "const:200",
            "--duration",
            "60",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let prefix = format!("mocc-{}-", child.id());
    let listed = || {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).contains(&prefix)
    };
    let start = std::time::Instant::now();
    while !listed() && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(listed(), "the run built no namespaces");
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    assert!(!listed(), "namespaces left after Ctrl-C");
    // The stopped run wrote no half of its outputs where a complete run's would be.
    assert!(
        !out_dir.exists(),
        "a stopped run left {}",
        out_dir.display()
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn a_run_that_ends_inside_an_outage_still_ends() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let dir = fresh_dir("outage-end");
    let scenario = dir.join("outage.yaml");
    std::fs::write(
        &scenario,
        "link:\n  bandwidth_pps: 400\n  delay_s: 0.025\n  queue_pkts: 20\n  loss: 0\n  \
         outages:\n    - {start_s: 2.85, duration_s: 0.15, period_s: 3}\n",
    )
    .unwrap();
    for flow in ["cubic", "const:300"] {
        let out_dir = dir.join(flow.replace(':', "-"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
            .args(["net", "run", "--scenario", scenario.to_str().unwrap()])
            .args(["--flow", flow, "--duration", "2.9"])
            .args(["--out", out_dir.to_str().unwrap()])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The run's 2.9 s, the drain grace (10 s) and the path's setup and teardown.
        let limit = std::time::Duration::from_secs(40);
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > limit {
                let _ = child.kill();
                panic!("{flow}: a run ending inside an outage did not end in {limit:?}");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{flow}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out_dir.join("results.csv").is_file());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `mocc net app`: a 1 MB download completes over kernel TCP (Cubic) and over QUIC under the
/// shipped export, with a row per run, a summary and the JSON line; the namespaces go.
#[test]
fn bulk_downloads_complete_over_tcp_and_under_the_learned_quic_controller() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let link = "bw_pps=500,delay_s=0.02,queue_pkts=60";
    // 1 MB over 6 Mbit/s takes at least 1.33 s; the handshake and the start add a little.
    let floor_s = 1e6 * 8.0 / (500.0 * 1500.0 * 8.0);
    for (transport, cc) in [
        ("tcp", "cubic"),
        ("quic", "checkpoints/mocc-pair:0.8,0.1,0.1"),
    ] {
        let out_dir = fresh_dir(&format!("app-{transport}"));
        let j = mocc_json(&[
            "net",
            "app",
            "--app",
            "bulk:1MB",
            "--transport",
            transport,
            "--cc",
            cc,
            "--link",
            link,
            "--repeats",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(j["runs"], 2, "{j}");
        assert_eq!(j["bytes"], 1_000_000, "{j}");
        let median = j["median_s"].as_f64().unwrap();
        assert!(median > floor_s && median < 20.0, "{transport} {cc}: {j}");
        let rows = std::fs::read_to_string(out_dir.join("runs.csv")).unwrap();
        assert_eq!(rows.lines().count(), 3, "{rows}");
        let summary = std::fs::read_to_string(out_dir.join("summary.json")).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&summary).unwrap(),
            j
        );
        std::fs::remove_dir_all(&out_dir).unwrap();
    }
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains("mocc"),
        "namespaces left behind"
    );
    // Refused before any path is built.
    for (app, transport, cc, says) in [
        (
            "bulk:1MB",
            "tcp",
            "checkpoints/mocc-pair",
            "exports run over quic",
        ),
        ("bulk:1MB", "quic", "reno", "no Reno"),
        ("bulk:1MB", "udp", "cubic", "expected quic or tcp"),
        ("ftp:1MB", "tcp", "cubic", "bulk:SIZE"),
        ("rtc:2.5", "tcp", "cubic", "kbit or mbit"),
        ("video:x", "tcp", "cubic", "mpc, bba or a chunk count"),
    ] {
        let out = mocc(&[
            "net",
            "app",
            "--app",
            app,
            "--transport",
            transport,
            "--cc",
            cc,
            "--link",
            link,
            "--out",
            "/tmp/mocc-net-cli-app-bad",
        ]);
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{app} {transport} {cc}"
        );
    }
}

/// `mocc net app`: a real-time stream and a video session complete over kernel Cubic and
/// under the learned controller, each run measured (every frame, every chunk), with the
/// figure; the namespaces go.
#[test]
fn streams_and_video_sessions_complete_over_kernel_cubic_and_the_learned_controller() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    // 12 Mbit/s: room for a 1 Mbit/s stream and the ladder's top chunks.
    let link = "bw_pps=1000,delay_s=0.02,queue_pkts=100";
    for (transport, cc) in [("tcp", "cubic"), ("quic", "checkpoints/mocc-pair")] {
        let out_dir = fresh_dir(&format!("rtc-{transport}"));
        let j = mocc_json(&[
            "net",
            "app",
            "--app",
            "rtc:1mbit:3s",
            "--transport",
            transport,
            "--cc",
            cc,
            "--link",
            link,
            "--repeats",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(
            (j["app"].as_str(), j["frames"].as_u64()),
            (Some("rtc"), Some(90)),
            "{j}"
        );
        // Every frame arrives (a reliable stream) at about the frame rate, and a 1 Mbit/s
        // stream alone on an idle 12 Mbit/s link is on time.
        let fps = j["delivered_fps"].as_f64().unwrap();
        assert!((25.0..=31.0).contains(&fps), "{transport} {cc}: {j}");
        let p95 = j["delay_p95_ms"].as_f64().unwrap();
        assert!(p95 > 0.0 && p95 < 200.0, "{transport} {cc}: {j}");
        assert!(
            j["late_share"].as_f64().unwrap() < 0.05,
            "{transport} {cc}: {j}"
        );
        let rows = std::fs::read_to_string(out_dir.join("runs.csv")).unwrap();
        assert!(rows.lines().nth(1).unwrap().contains(",90,90,"), "{rows}");
        assert!(out_dir.join("app.png").is_file());
        std::fs::remove_dir_all(&out_dir).unwrap();

        let out_dir = fresh_dir(&format!("video-{transport}"));
        let j = mocc_json(&[
            "net",
            "app",
            "--app",
            "video:bba:3",
            "--transport",
            transport,
            "--cc",
            cc,
            "--link",
            link,
            "--repeats",
            "1",
            "--out",
            out_dir.to_str().unwrap(),
        ]);
        assert_eq!(
            (j["app"].as_str(), j["chunks"].as_u64()),
            (Some("video"), Some(3)),
            "{j}"
        );
        let levels: u64 = j["chunks_per_level"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(levels, 3, "{j}");
        // The first chunk is at 750 kbit/s; BBA stays at the lowest level below a 5 s buffer.
        assert!(j["qoe_lin"].as_f64().unwrap().is_finite(), "{j}");
        assert!(out_dir.join("app.png").is_file());
        std::fs::remove_dir_all(&out_dir).unwrap();
    }
    let namespaces = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&namespaces.stdout).contains("mocc"),
        "namespaces left behind"
    );
}

/// A `mocc net app` stopped mid-run (SIGTERM) removes its namespaces, exits with the signal's
/// status, and leaves no process behind.
#[test]
fn a_killed_app_run_leaves_no_namespaces() {
    let _serial = serial();
    if !net_common::network_ready(&[]) {
        return;
    }
    let out_dir = fresh_dir("app-killed");
    // An earlier run's complete results, which the killed run must leave as they are.
    let earlier = "run,transport,cc\n1,quic,earlier\n";
    std::fs::write(out_dir.join("runs.csv"), earlier).unwrap();
    std::fs::write(
        out_dir.join("mocc-output.json"),
        "{\"command\": \"mocc net app\", \"arguments\": null}\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_mocc"))
        .args([
            "net",
            "app",
            "--app",
            "rtc:1mbit:60s",
            "--transport",
            "quic",
        ])
        .args(["--cc", "checkpoints/mocc-pair", "--repeats", "1"])
        .args(["--link", "bw_pps=300,delay_s=0.02,queue_pkts=30"])
        .args(["--out", out_dir.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let prefix = format!("mocc-{pid}-");
    let listed = || {
        let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).contains(&prefix)
    };
    let start = std::time::Instant::now();
    while !listed() && start.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(listed(), "the run built no namespaces");
    // Into the stream.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let kill = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(kill.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    assert!(!listed(), "namespaces left after SIGTERM");
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the run's process is still there"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join("runs.csv")).unwrap(),
        earlier,
        "the killed run emptied the earlier results"
    );
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// `mocc experiment fig10` refuses an application of the wrong kind, or a bad one, before it
/// builds any path (no root needed).
#[test]
fn fig10_refuses_a_wrong_application_before_any_path() {
    for (flag, value, says) in [
        (
            "--bulk",
            "rtc:1mbit",
            "--bulk rtc:1mbit: expected a bulk application",
        ),
        ("--video", "video:x", "--video: --app video:x"),
        (
            "--export",
            "/nonexistent-export",
            "--export /nonexistent-export",
        ),
    ] {
        let out = mocc(&[
            "experiment",
            "fig10",
            flag,
            value,
            "--out",
            "/tmp/mocc-net-cli-fig10-bad",
        ]);
        assert!(!out.status.success(), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(says), "{flag} {value}: {stderr}");
    }
    assert!(!std::path::Path::new("/tmp/mocc-net-cli-fig10-bad").exists());
}
