//! Export folders: round trip, a reference forward pass, every refusal, and the controller's
//! episode sequence.

use mocc_policy::{
    Activation, BinomialIncrease, Controller, LayerSpec, MonitorInterval, Policy, PolicyError,
    PolicySpec, RttSummary, BYTES_PER_PACKET,
};
use std::path::{Path, PathBuf};

mod common;
use common::{random_policy, Gen, Tensors};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mocc-policy-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn write(name: &str, preference: bool) -> (PathBuf, Tensors) {
    let (spec, tensors) = random_policy(preference, 7);
    let dir = temp_dir(name);
    mocc_outputs::write_export(&dir, spec, &tensors).expect("writes");
    (dir, tensors)
}

/// The network evaluated the obvious way in f64 with libm's tanh.
fn reference_action(spec: &PolicySpec, t: &Tensors, raw: &[f32], w: [f64; 3]) -> f64 {
    let n = &spec.observation.normalization;
    let dense = |l: &LayerSpec, x: &[f64]| -> Vec<f64> {
        let wt = &t[&format!("{}.weight", l.name)].1;
        let b = &t[&format!("{}.bias", l.name)].1;
        (0..l.outputs)
            .map(|o| {
                let s = f64::from(b[o])
                    + (0..l.inputs)
                        .map(|i| f64::from(wt[o * l.inputs + i]) * x[i])
                        .sum::<f64>();
                match l.activation {
                    Activation::Tanh => s.tanh(),
                    Activation::Relu => s.max(0.0),
                    Activation::Identity => s,
                }
            })
            .collect()
    };
    let mut x: Vec<f64> = raw
        .iter()
        .enumerate()
        .map(|(j, &v)| {
            ((f64::from(v) - n.mean[j]) / (n.var[j] + n.epsilon).sqrt())
                .clamp(-f64::from(n.clip), f64::from(n.clip))
        })
        .collect();
    let a = &spec.architecture;
    if !a.preference.is_empty() {
        let mut p = w.to_vec();
        for l in &a.preference {
            p = dense(l, &p);
        }
        x.extend(p);
    }
    for l in &a.body {
        x = dense(l, &x);
    }
    dense(&a.head, &x)[0]
}

#[test]
fn mean_action_matches_a_reference_forward_pass() {
    for preference in [false, true] {
        let (dir, tensors) = write(&format!("ref-{preference}"), preference);
        let policy = Policy::load(&dir).expect("loads");
        let mut ws = policy.workspace();
        let mut g = Gen(11);
        for _ in 0..500 {
            let raw: Vec<f32> = (0..policy.obs_len()).map(|_| g.symmetric(3.0)).collect();
            let a = g.uniform() + 0.01;
            let b = (1.0 - a) * g.uniform().max(0.01);
            let w = [a / 1.02, b / 1.02, (1.0 - a - b + 0.02) / 1.02];
            let wf = w.map(|v| v as f32);
            let got = f64::from(policy.mean_action(&raw, &wf, &mut ws));
            let want = reference_action(policy.spec(), &tensors, &raw, wf.map(f64::from));
            assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn objective_changes_the_action_only_with_a_preference_network() {
    for preference in [false, true] {
        let (dir, _) = write(&format!("pref-{preference}"), preference);
        let policy = Policy::load(&dir).unwrap();
        let mut ws = policy.workspace();
        let raw = vec![0.5f32; policy.obs_len()];
        let a = policy.mean_action(&raw, &[0.8, 0.1, 0.1], &mut ws);
        let b = policy.mean_action(&raw, &[0.1, 0.8, 0.1], &mut ws);
        assert_eq!(a != b, preference, "{a} {b}");
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn load_err(dir: &Path) -> String {
    match Policy::load(dir) {
        Ok(_) => panic!("{} loaded", dir.display()),
        Err(e) => e.to_string(),
    }
}

fn edit_json(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join("policy.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut v);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn tampered_weights_fail_the_checksum() {
    let (dir, _) = write("tamper", true);
    let path = dir.join("policy.safetensors");
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let err = load_err(&dir);
    assert!(
        err.contains("SHA-256") && err.contains("policy.safetensors"),
        "{err}"
    );
    assert!(matches!(
        Policy::load(&dir),
        Err(PolicyError::Checksum { .. })
    ));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn wrong_shapes_are_refused_with_the_tensor_name() {
    // The architecture says 8 hidden units but the weights have 7.
    let (spec, mut tensors) = random_policy(true, 3);
    tensors.insert("pi.l1.weight".into(), (vec![6, 7], vec![0.0; 42]));
    let dir = temp_dir("shape");
    let err = mocc_outputs::write_export(&dir, spec, &tensors)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"pi.l1.weight\"") && err.contains("[6, 8]"),
        "{err}"
    );

    // The architecture's widths do not chain.
    let (dir, _) = write("chain", true);
    edit_json(&dir, |v| v["architecture"]["body"][1]["inputs"] = 9.into());
    let err = load_err(&dir);
    assert!(err.contains("architecture.body[1].inputs"), "{err}");
    let _ = std::fs::remove_dir_all(dir);

    // A tensor is missing.
    let (spec, mut tensors) = random_policy(false, 3);
    tensors.remove("pi.mean.bias");
    let dir = temp_dir("missing-tensor");
    let err = mocc_outputs::write_export(&dir, spec, &tensors)
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"pi.mean.bias\" is missing"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn unknown_feature_names_are_refused() {
    let (dir, _) = write("feature", false);
    edit_json(&dir, |v| {
        v["observation"]["features"][1] = "latency ratiox".into()
    });
    let err = load_err(&dir);
    assert!(
        err.contains("observation.features[1]") && err.contains("\"latency ratiox\""),
        "{err}"
    );
    assert!(err.contains("send ratio"), "lists the known names: {err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn missing_files_and_other_versions_are_refused() {
    let (dir, _) = write("missing", false);
    std::fs::remove_file(dir.join("policy.safetensors")).unwrap();
    let err = load_err(&dir);
    assert!(err.contains("policy.safetensors"), "{err}");
    assert!(matches!(Policy::load(&dir), Err(PolicyError::Io(_))));
    let _ = std::fs::remove_dir_all(&dir);

    let err = load_err(&temp_dir("nowhere"));
    assert!(err.contains("policy.json"), "{err}");

    let (dir, _) = write("version", false);
    edit_json(&dir, |v| v["format_version"] = 2.into());
    let err = load_err(&dir);
    assert!(err.contains("format_version 2 is not supported"), "{err}");
    edit_json(&dir, |v| {
        v["format_version"] = 1.into();
        v["observation"]["history_len"] = 5.into();
    });
    let err = load_err(&dir);
    assert!(err.contains("architecture.obs_dim"), "{err}");
    edit_json(&dir, |v| {
        v["observation"]["history_len"] = 4.into();
        v["surprise"] = true.into();
    });
    let err = load_err(&dir);
    assert!(err.contains("surprise"), "{err}");
    edit_json(&dir, |v| {
        v.as_object_mut().unwrap().remove("surprise");
        v["weights"]["file"] = "../elsewhere.safetensors".into();
    });
    let err = load_err(&dir);
    assert!(err.contains("weights.file"), "{err}");
    std::fs::write(dir.join("policy.json"), "{ not json").unwrap();
    let err = load_err(&dir);
    assert!(err.contains("policy.json"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

fn mi(k: usize, rtt: f64) -> MonitorInterval {
    let t = k as f64 * 0.05;
    MonitorInterval {
        bytes_sent: 10.0 * BYTES_PER_PACKET,
        bytes_acked: 9.0 * BYTES_PER_PACKET,
        bytes_lost: BYTES_PER_PACKET,
        send_start_s: t,
        send_end_s: t + 0.05,
        recv_start_s: t + rtt,
        recv_end_s: t + 0.05 + rtt,
        rtt: RttSummary::from_samples(&[rtt, rtt * 1.1, rtt * 1.2]),
        ack_span: None,
        train_pps: None,
    }
}

#[test]
fn controller_follows_the_gym_episode_sequence() {
    let (dir, _) = write("controller", true);
    let policy = std::sync::Arc::new(Policy::load(&dir).unwrap());
    let rule = policy.action_rule();
    let w = [0.6, 0.3, 0.1];
    let mut c = Controller::new(policy.clone(), w).unwrap();
    assert_eq!(c.reset(200.0), 200.0, "warm-up MIs run at the start rate");
    assert_eq!(c.next_mi_duration_s(), None);
    // First warm-up MI: no decision.
    assert_eq!(c.on_monitor_interval(&mi(0, 0.04)), 200.0);
    assert_eq!(c.last_action(), None);
    // Last warm-up MI: first decision, on the empty history.
    let mut builder = policy.observation_builder();
    let mut ws = policy.workspace();
    let wf = w.map(|v| v as f32);
    let a0 = policy.mean_action(builder.observation(), &wf, &mut ws);
    let r1 = c.on_monitor_interval(&mi(1, 0.04));
    assert_eq!(r1, rule.apply(200.0, f64::from(a0)));
    assert_eq!(
        c.observation(),
        builder.observation(),
        "warm-up MIs are not recorded"
    );
    // Then every MI is recorded and followed by one decision.
    let mut rate = r1;
    for k in 2..30 {
        let m = mi(k, 0.04 + 0.001 * k as f64);
        builder.record(&m);
        let a = policy.mean_action(builder.observation(), &wf, &mut ws);
        rate = rule.apply(rate, f64::from(a));
        assert_eq!(c.on_monitor_interval(&m), rate);
        assert_eq!(c.last_action(), Some(a));
        let expect = 0.5 * m.avg_latency_s();
        assert_eq!(c.next_mi_duration_s(), Some(expect));
    }
    assert!((rule.min_rate_pps..=rule.max_rate_pps).contains(&rate));
    // set_objective validates and switches the input.
    assert!(c.set_objective([0.5, 0.5, 0.5]).is_err());
    assert!(c.set_objective([0.0, 0.5, 0.5]).is_err());
    c.set_objective([0.1, 0.1, 0.8]).unwrap();
    assert_eq!(c.objective(), [0.1, 0.1, 0.8]);
    assert!(Controller::new(policy.clone(), [1.0, 0.0, 0.0]).is_err());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn without_warmup_the_first_decision_comes_at_reset() {
    let (mut spec, tensors) = random_policy(false, 5);
    spec.monitor_interval.warmup_mis = 0;
    let dir = temp_dir("no-warmup");
    mocc_outputs::write_export(&dir, spec, &tensors).unwrap();
    let policy = Policy::load(&dir).unwrap();
    let builder = policy.observation_builder();
    let mut ws = policy.workspace();
    let a0 = policy.mean_action(builder.observation(), &[1.0 / 3.0; 3], &mut ws);
    let rule = policy.action_rule();
    let mut c = Controller::new(policy, [1.0 / 3.0; 3]).unwrap();
    assert_eq!(c.reset(300.0), rule.apply(300.0, f64::from(a0)));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn binomial_increase_round_trips_and_drives_the_controller() {
    let (mut spec, mut tensors) = random_policy(false, 5);
    // A head that always answers +3 (zero weights, bias 3): the first step is an increase.
    for (name, value) in [("pi.mean.weight", 0.0), ("pi.mean.bias", 3.0)] {
        let (_, data) = tensors.get_mut(name).expect(name);
        data.iter_mut().for_each(|x| *x = value);
    }
    spec.monitor_interval.warmup_mis = 0;
    spec.action.max_rate_pps = 5000.0;
    spec.action.binomial_increase = Some(BinomialIncrease {
        k: 0.5,
        reference_pps: 300.0,
        multiplicative_above_pps: None,
    });
    let dir = temp_dir("binomial");
    mocc_outputs::write_export(&dir, spec.clone(), &tensors).unwrap();
    let policy = Policy::load(&dir).unwrap();
    let rule = policy.action_rule();
    assert_eq!(rule, spec.action);
    let builder = policy.observation_builder();
    let mut ws = policy.workspace();
    let a0 = f64::from(policy.mean_action(builder.observation(), &[1.0 / 3.0; 3], &mut ws));
    assert_eq!(a0, 3.0);
    let mut c = Controller::new(policy, [1.0 / 3.0; 3]).unwrap();
    // From 1200 pkt/s an increase is half Aurora's (sqrt(300 / 1200)): 1200 * (1 + 0.5 * 0.075).
    assert!((c.reset(1200.0) - 1245.0).abs() < 1e-9);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn mi_packet_floor_round_trips_and_sizes_the_controllers_mis() {
    // Without the floor, policy.json carries no `min_packets` (older policies load unchanged).
    let (dir, tensors) = write("mi-floor-off", true);
    let json = std::fs::read_to_string(dir.join("policy.json")).unwrap();
    assert!(!json.contains("min_packets"), "{json}");
    assert_eq!(
        Policy::load(&dir)
            .unwrap()
            .spec()
            .monitor_interval
            .sizing
            .min_packets,
        0.0
    );
    let _ = std::fs::remove_dir_all(&dir);

    let (mut spec, _) = random_policy(true, 7);
    spec.monitor_interval.sizing.min_packets = 10.0;
    let dir = temp_dir("mi-floor-on");
    mocc_outputs::write_export(&dir, spec, &tensors).expect("writes");
    let policy = std::sync::Arc::new(Policy::load(&dir).unwrap());
    assert_eq!(policy.spec().monitor_interval.sizing.min_packets, 10.0);
    let mut c = Controller::new(policy.clone(), [0.6, 0.3, 0.1]).unwrap();
    c.reset(200.0);
    let mut floored = 0;
    for k in 0..30 {
        let m = mi(k, 0.04);
        let rate = c.on_monitor_interval(&m);
        let Some(next) = c.next_mi_duration_s() else {
            assert!(k < 2, "warm-up MIs record no RTT, later ones do (MI {k})");
            continue;
        };
        // 0.5 x the mean RTT (0.022 s) against 10 packets at `rate` (0.25 s at 40 pkt/s).
        let by_rtt = 0.5 * m.avg_latency_s();
        assert_eq!(next, by_rtt.max(10.0 / rate), "MI {k} at {rate} pkt/s");
        floored += usize::from(next > by_rtt);
    }
    assert!(
        floored > 0,
        "the floor never bound; the test checks nothing"
    );

    edit_json(&dir, |v| {
        v["monitor_interval"]["min_packets"] = (-1.0).into()
    });
    let err = load_err(&dir);
    assert!(err.contains("monitor_interval.min_packets"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The observation and MI sections embed the scenario's types: still strict about unknown and
/// missing fields, and they name them.
#[test]
fn embedded_sections_refuse_unknown_and_missing_fields() {
    let (dir, _) = write("sections", true);
    for (section, key) in [
        ("observation", "history_length"),
        ("monitor_interval", "rtt_factr"),
    ] {
        edit_json(&dir, |v| v[section][key] = 1.into());
        let err = load_err(&dir);
        assert!(err.contains(key), "{section}.{key}: {err}");
        edit_json(&dir, |v| {
            v[section].as_object_mut().unwrap().remove(key);
        });
        assert!(Policy::load(&dir).is_ok(), "restored");
    }
    for (section, key) in [
        ("observation", "features"),
        ("observation", "metrics"),
        ("observation", "normalization"),
        ("monitor_interval", "rtt_factor"),
        ("monitor_interval", "warmup_mis"),
    ] {
        let spec: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("policy.json")).unwrap())
                .unwrap();
        edit_json(&dir, |v| {
            v[section].as_object_mut().unwrap().remove(key);
        });
        let err = load_err(&dir);
        assert!(
            err.contains(&format!("missing field `{key}`")),
            "{section}.{key}: {err}"
        );
        std::fs::write(dir.join("policy.json"), spec.to_string()).unwrap();
    }
    edit_json(&dir, |v| {
        v["monitor_interval"]["rtt_factor"] = (-1.0).into()
    });
    let err = load_err(&dir);
    assert!(
        err.contains("monitor_interval.rtt_factor: must be > 0"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_controller_started_on_a_path_sizes_its_first_mis_from_the_delay_estimate() {
    let (dir, _) = write("start-on-path", true);
    let policy = std::sync::Arc::new(Policy::load(&dir).unwrap());
    let sizing = policy.spec().monitor_interval.sizing;
    let mut c = Controller::new(policy, [0.6, 0.3, 0.1]).unwrap();
    assert_eq!(c.start(200.0, 0.025), 200.0);
    let expected = sizing.duration_s(sizing.initial_delay_factor * 0.025, 200.0);
    assert!((c.mi_duration_s() - expected).abs() < 1e-12);
    assert!(c.mi_duration_s() > 0.0);
    // An MI with RTT samples hands the sizing to the RTT rule.
    let mut k = 0;
    while c.next_mi_duration_s().is_none() {
        c.on_monitor_interval(&mi(k, 0.08));
        k += 1;
    }
    assert_eq!(Some(c.mi_duration_s()), c.next_mi_duration_s());
    // `reset` is a start without a delay estimate.
    c.reset(200.0);
    assert_eq!(c.mi_duration_s(), sizing.duration_s(0.0, 200.0));
    let _ = std::fs::remove_dir_all(dir);
}
