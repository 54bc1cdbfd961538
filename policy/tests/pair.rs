//! Paired exports: the round trip, which network decides in each mode, the controller's switch
//! at a probe that keeps a queue, and every refusal.

use mocc_policy::{
    Controller, Mode, ModeSwitch, MonitorInterval, Policy, ProbeRtt, RttSummary, BYTES_PER_PACKET,
};
use std::path::{Path, PathBuf};

mod common;
use common::random_policy;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mocc-pair-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A random MOCC-shaped export of `seed` that probes after 0.5 s of a standing baseline.
fn probing(dir: &Path, seed: u64) -> Policy {
    let (mut spec, tensors) = random_policy(true, seed);
    spec.action.probe_rtt = Some(ProbeRtt {
        mis: 2,
        ..ProbeRtt::every(0.5)
    });
    mocc_outputs::write_export(dir, spec, &tensors).expect("writes");
    Policy::load(dir).expect("loads")
}

/// Two probing exports under `root` (seeds 3 and 11).
fn halves(root: &Path) -> (Policy, Policy) {
    (probing(&root.join("a"), 3), probing(&root.join("b"), 11))
}

fn err_text<T>(r: Result<T, mocc_policy::PolicyError>) -> String {
    match r {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_pair_round_trips_and_each_mode_runs_its_own_network() {
    let root = temp_dir("round-trip");
    let (coop, comp) = halves(&root);
    let out = root.join("pair");
    let pair = mocc_outputs::write_pair(&out, &coop, &comp, ModeSwitch::default(), "mocc pair")
        .expect("pairs");
    assert_eq!(pair.action_rule().mode_switch, Some(ModeSwitch::default()));
    assert!(out.join("competitive/policy.json").is_file());
    let loaded = Policy::load(&out).expect("loads back");
    assert!(loaded.competitive().is_some());
    let obs: Vec<f32> = (0..coop.obs_len()).map(|i| 0.1 * i as f32).collect();
    let w = [0.5f32, 0.3, 0.2];
    let (mut ws, mut wc, mut wp) = (coop.workspace(), comp.workspace(), loaded.workspace());
    let a = coop.mean_action(&obs, &w, &mut ws);
    let b = comp.mean_action(&obs, &w, &mut wc);
    assert_ne!(a, b, "two seeds, two networks");
    assert_eq!(
        loaded.mean_action_in(Mode::Cooperative, &obs, &w, &mut wp),
        a
    );
    assert_eq!(
        loaded.mean_action_in(Mode::Competitive, &obs, &w, &mut wp),
        b
    );
    assert_eq!(loaded.mean_action(&obs, &w, &mut wp), a);
    // A single policy answers with its one network in either mode.
    assert_eq!(coop.mean_action_in(Mode::Competitive, &obs, &w, &mut ws), a);
    let _ = std::fs::remove_dir_all(root);
}

/// MI `k` (of 50 ms) sent at `rate_pps` at a flat `rtt`.
fn mi(k: usize, rtt: f64, rate_pps: f64) -> MonitorInterval {
    let t = k as f64 * 0.05;
    let bytes = 0.05 * rate_pps * BYTES_PER_PACKET;
    MonitorInterval {
        bytes_sent: bytes,
        bytes_acked: bytes,
        send_start_s: t,
        send_end_s: t + 0.05,
        recv_start_s: t + rtt,
        recv_end_s: t + 0.05 + rtt,
        rtt: RttSummary::from_samples(&[rtt]),
        ..MonitorInterval::default()
    }
}

#[test]
fn the_controller_turns_competitive_after_a_probe_that_keeps_the_queue() {
    let root = temp_dir("controller");
    let (coop, comp) = halves(&root);
    let pair = mocc_outputs::write_pair(
        &root.join("pair"),
        &coop,
        &comp,
        ModeSwitch::default(),
        "mocc pair",
    )
    .expect("pairs");
    let w = [0.4, 0.4, 0.2];
    let wf = w.map(|v| v as f32);
    let mut c = Controller::new(pair, w).expect("valid objective");
    c.reset(100.0);
    // Two warm-up MIs, one at 40 ms, then a 60 ms queue that stands: the connection-min
    // baseline stays 40 ms, so the timer fires 0.5 s after the first recorded MI (ends 0.15 s).
    let mut k = 0;
    // Each MI is sent at the rate the controller paces it at (a probe's share in probes).
    let feed = |c: &mut Controller, k: &mut usize, rtt: f64| {
        c.on_monitor_interval(&mi(*k, rtt, c.rate_pps()));
        *k += 1;
    };
    for rtt in [0.04, 0.04, 0.04] {
        feed(&mut c, &mut k, rtt);
    }
    let mut probed = false;
    while c.mode() == Mode::Cooperative {
        probed |= c.probing();
        feed(&mut c, &mut k, 0.06);
        assert!(k < 40, "no switch after {k} MIs");
    }
    assert!(probed, "the switch waits for a probe's end");
    assert!(!c.probing());
    // The decision at the probe's end is the competitive network's.
    let mut ws = comp.workspace();
    let expected = comp.mean_action(c.observation(), &wf, &mut ws);
    assert_eq!(c.last_action(), Some(expected));
    // One MI at the path's latency, and the cooperative network decides again.
    feed(&mut c, &mut k, 0.041);
    assert_eq!(c.mode(), Mode::Cooperative);
    let mut ws = coop.workspace();
    assert_eq!(
        c.last_action(),
        Some(coop.mean_action(c.observation(), &wf, &mut ws))
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn pairs_that_do_not_share_a_clock_rule_or_folder_are_refused() {
    let root = temp_dir("refusals");
    let (coop, comp) = halves(&root);
    let switch = ModeSwitch::default();
    // A rate rule that differs (a faster probe).
    let (mut spec, tensors) = random_policy(true, 11);
    spec.action.probe_rtt = Some(ProbeRtt::every(0.7));
    let other_dir = root.join("other");
    mocc_outputs::write_export(&other_dir, spec, &tensors).expect("writes");
    let other = Policy::load(&other_dir).expect("loads");
    let e = err_text(mocc_outputs::write_pair(
        &root.join("p1"),
        &coop,
        &other,
        switch,
        "mocc pair",
    ));
    assert!(
        e.contains("policy.json: action: differs from the competitive"),
        "{e}"
    );
    assert!(!root.join("p1").exists(), "nothing written");
    // A switch without probes in the rule.
    let (spec, tensors) = random_policy(true, 4);
    let plain_dir = root.join("plain");
    mocc_outputs::write_export(&plain_dir, spec, &tensors).expect("writes");
    let plain = Policy::load(&plain_dir).expect("loads");
    let e = err_text(mocc_outputs::write_pair(
        &root.join("p2"),
        &plain,
        &plain,
        switch,
        "mocc pair",
    ));
    assert!(e.contains("mode_switch: needs probe_rtt"), "{e}");
    // A pair as either half of another.
    let pair_dir = root.join("p3");
    let pair =
        mocc_outputs::write_pair(&pair_dir, &coop, &comp, switch, "mocc pair").expect("pairs");
    let e = err_text(mocc_outputs::write_pair(
        &root.join("p4"),
        &pair,
        &comp,
        switch,
        "mocc pair",
    ));
    assert!(
        e.contains("the cooperative policy of a pair must be a single"),
        "{e}"
    );
    let e = err_text(mocc_outputs::write_pair(
        &root.join("p4"),
        &coop,
        &pair,
        switch,
        "mocc pair",
    ));
    assert!(
        e.contains("the competitive policy of a pair must be a single"),
        "{e}"
    );
    // Into a folder that holds anything, such as one of its halves: refused, nothing changed.
    let before = std::fs::read(root.join("a/policy.safetensors")).expect("reads");
    let e = err_text(mocc_outputs::write_pair(
        &root.join("a"),
        &coop,
        &comp,
        switch,
        "mocc pair",
    ));
    assert!(e.contains("must be new or empty"), "{e}");
    assert_eq!(
        std::fs::read(root.join("a/policy.safetensors")).expect("reads"),
        before
    );
    assert!(!root.join("a/competitive").exists());
    // A pair whose competitive folder holds a pair.
    let nested = root.join("p5");
    mocc_outputs::write_pair(&nested, &coop, &comp, switch, "mocc pair").expect("pairs");
    let inner = nested.join("competitive");
    std::fs::remove_dir_all(&inner).expect("removes");
    std::fs::rename(&pair_dir, &inner).expect("moves");
    let e = err_text(Policy::load(&nested));
    assert!(e.contains("cannot be half of another pair"), "{e}");
    // A paired description cannot be built without its folder.
    let (mut spec, tensors) = random_policy(true, 3);
    spec.action = pair.action_rule();
    let e = err_text(Policy::from_parts(
        spec,
        &tensors,
        Path::new("x/policy.json"),
        Path::new("x/policy.safetensors"),
    ));
    assert!(e.contains("action.mode_switch"), "{e}");
    // A paired folder whose competitive policy is gone.
    std::fs::remove_dir_all(inner.join("competitive")).expect("removes");
    let e = err_text(Policy::load(&inner));
    assert!(
        e.contains("action.mode_switch: needs a single export in competitive/"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(root);
}
