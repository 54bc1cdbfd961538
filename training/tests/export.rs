//! Agreement between the libtorch model and the libtorch-free runtime, and between a deployed
//! controller and the gym.

use mocc_agents::{ActorCritic, Architecture, RunningMeanStd};
use mocc_eval::actor::export_scenario;
use mocc_gym::{Action, Env, Scenario, ScenarioConfig, StartRate};
use mocc_policy::{Controller, MonitorInterval, Policy, Provenance};
use mocc_training::export::{actor_tensors, policy_spec, write_torchscript};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tch::{nn, Device, Kind, Tensor};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mocc-export-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A model with every parameter redrawn (so the head is not near zero, as at init) and
/// random normalization statistics, exported to `dir`.
fn random_export(
    arch: Architecture,
    scenario: &ScenarioConfig,
    seed: i64,
    dir: &std::path::Path,
) -> (nn::VarStore, ActorCritic, RunningMeanStd, Policy) {
    let mut vs = nn::VarStore::new(Device::Cpu);
    let model = mocc_agents::with_seed(seed, || {
        let model = ActorCritic::new(&vs.root(), arch.clone());
        tch::no_grad(|| {
            // In name order: `variables()` is a HashMap, whose order changes between processes.
            let vars: std::collections::BTreeMap<String, Tensor> =
                vs.variables().into_iter().collect();
            for (_, mut v) in vars {
                let fresh = Tensor::randn_like(&v) * 0.4;
                v.copy_(&fresh);
            }
        });
        model
    });
    vs.freeze();
    let mut rng = ChaCha8Rng::seed_from_u64(seed as u64);
    let mut obs_norm = RunningMeanStd::new(arch.obs_dim);
    for j in 0..arch.obs_dim {
        obs_norm.mean[j] = rng.random_range(-0.5..0.5);
        obs_norm.var[j] = rng.random_range(0.05..2.0);
    }
    let log_std = model.log_std().double_value(&[0]);
    let spec = policy_spec(&arch, log_std, &obs_norm, scenario, Provenance::default());
    let tensors = actor_tensors(&arch, &vs.variables()).expect("actor tensors");
    mocc_outputs::write_export(dir, spec, &tensors).expect("export");
    let policy = Policy::load(dir).expect("loads");
    (vs, model, obs_norm, policy)
}

#[test]
fn runtime_mean_action_equals_the_tch_model_for_both_presets() {
    let scenario = ScenarioConfig::default();
    let obs_dim = scenario.observation.history_len * scenario.observation.features.len();
    for (name, arch) in [
        ("aurora", Architecture::aurora(obs_dim)),
        ("mocc", Architecture::mocc(obs_dim)),
    ] {
        let dir = temp_dir(name);
        let (_vs, model, obs_norm, policy) = random_export(arch, &scenario, 17, &dir);
        let n = 256;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let raw: Vec<f32> = (0..n * obs_dim)
            .map(|_| rng.random_range(-3.0f32..3.0))
            .collect();
        let mut ws_flat = Vec::with_capacity(n * 3);
        for _ in 0..n {
            let a: f32 = rng.random_range(0.05..0.9);
            let b: f32 = rng.random_range(0.05..(1.0 - a).max(0.06));
            let c = (1.0 - a - b).max(0.01);
            let s = a + b + c;
            ws_flat.extend([a / s, b / s, c / s]);
        }
        let mut normalized = vec![0.0f32; raw.len()];
        obs_norm.normalize(&raw, &mut normalized);
        let want = model.infer(&normalized, &ws_flat, Device::Cpu).mean;
        let mut ws = policy.workspace();
        let mut worst = 0.0f32;
        let mut spread = (f32::MAX, f32::MIN);
        for k in 0..n {
            let w = [ws_flat[3 * k], ws_flat[3 * k + 1], ws_flat[3 * k + 2]];
            let got = policy.mean_action(&raw[k * obs_dim..(k + 1) * obs_dim], &w, &mut ws);
            worst = worst.max((got - want[k]).abs());
            spread = (spread.0.min(got), spread.1.max(got));
        }
        assert!(worst <= 1e-5, "{name}: worst |runtime - tch| = {worst}");
        assert!(
            spread.1 - spread.0 > 0.1,
            "{name}: the inputs exercise the network"
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn exported_normalization_is_bit_identical_to_the_trainers() {
    // clip((x - mean) / sqrt(var + eps), 10), in both.
    let scenario = ScenarioConfig::default();
    let dim = scenario.observation.history_len * scenario.observation.features.len();
    let dir = temp_dir("norm");
    let (_vs, _model, obs_norm, policy) =
        random_export(Architecture::aurora(dim), &scenario, 3, &dir);
    let raw: Vec<f32> = (0..dim).map(|j| j as f32 * 0.37 - 4.0).collect();
    let mut a = vec![0.0f32; dim];
    obs_norm.normalize(&raw, &mut a);
    let mut b = vec![0.0f32; dim];
    policy
        .spec()
        .observation
        .normalization
        .normalizer()
        .apply(&raw, &mut b);
    assert_eq!(a, b, "bit-identical normalization");
    assert!(
        a.iter().any(|&v| v == 10.0 || v == -10.0),
        "clipping exercised: {a:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn torchscript_module_agrees_with_the_runtime() {
    let scenario = ScenarioConfig::default();
    let dim = scenario.observation.history_len * scenario.observation.features.len();
    let dir = temp_dir("torchscript");
    let (_vs, model, obs_norm, policy) = random_export(Architecture::mocc(dim), &scenario, 8, &dir);
    let path = dir.join("policy.pt");
    write_torchscript(&model, &obs_norm, &path).expect("traces");
    let module = tch::CModule::load(&path).expect("TorchScript loads");
    let n = 16usize;
    let raw: Vec<f32> = (0..n * dim)
        .map(|i| ((i * 37 % 101) as f32 / 25.0) - 2.0)
        .collect();
    let w: Vec<f32> = (0..n)
        .flat_map(|k| {
            let a = 0.1 + 0.05 * k as f32;
            [a, (1.0 - a) / 2.0, (1.0 - a) / 2.0]
        })
        .collect();
    let obs_t = Tensor::from_slice(&raw).view([n as i64, dim as i64]);
    let w_t = Tensor::from_slice(&w).view([n as i64, 3]);
    let out = tch::no_grad(|| module.forward_ts(&[obs_t, w_t])).expect("runs");
    assert_eq!(out.size(), vec![n as i64, 1]);
    let out = out.to_kind(Kind::Float).view([-1]);
    let mut ws = policy.workspace();
    for k in 0..n {
        let got = policy.mean_action(
            &raw[k * dim..(k + 1) * dim],
            &[w[3 * k], w[3 * k + 1], w[3 * k + 2]],
            &mut ws,
        );
        let want = out.double_value(&[k as i64]) as f32;
        assert!(
            (got - want).abs() <= 1e-5,
            "row {k}: runtime {got} vs TorchScript {want}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// The gym, driven by the runtime's policy, and a controller fed the gym's MI statistics pick
/// the same rates, bit for bit, including an objective switch mid-episode.
#[test]
fn controller_reproduces_the_gym_rate_trajectory() {
    // (warm-up MIs, MI packet floor): the floor binds below 12 / 0.04 s = 300 pkt/s here.
    for (warmup, min_packets) in [(0u32, 0.0), (1, 0.0), (2, 0.0), (2, 12.0)] {
        for preset in ["aurora", "mocc"] {
            let mut trained = ScenarioConfig {
                warmup_mis: warmup,
                ..ScenarioConfig::default()
            };
            trained.monitor_interval.min_packets = min_packets;
            trained.observation.history_len = 6;
            let obs_dim = 6 * trained.observation.features.len();
            let arch = match preset {
                "aurora" => Architecture::aurora(obs_dim),
                _ => Architecture::mocc(obs_dim),
            };
            let dir = temp_dir(&format!("traj-{preset}-{warmup}-{min_packets}"));
            let (_vs, _model, _norm, policy) = random_export(arch, &trained, 29, &dir);
            assert_eq!(
                policy.spec().monitor_interval.sizing.min_packets,
                min_packets
            );
            let policy = Arc::new(policy);

            let mut cfg = export_scenario(&policy);
            let fixed = ScenarioConfig::fixed_link(300.0, 0.04, 20.0, 0.01);
            cfg.link = fixed.link;
            cfg.senders = fixed.senders;
            cfg.senders[0].start_rate = StartRate::Pps(mocc_gym::Range::Fixed(150.0));
            cfg.episode_mis = 10_000;
            let mut env = Env::new(Arc::new(Scenario::new(cfg, None).unwrap()), 4, 0);

            let mut w = [0.6, 0.3, 0.1];
            let mut controller = Controller::new(policy.clone(), w).unwrap();
            let mut rate = controller.reset(150.0);
            if warmup >= 1 {
                for _ in 1..warmup {
                    let held = controller.on_monitor_interval(&MonitorInterval::default());
                    assert_eq!(held, 150.0, "earlier warm-up MIs keep the start rate");
                }
                rate = controller.on_monitor_interval(env.last_mi(0));
            }
            let mut gym_ws = policy.workspace();
            let mut distinct = std::collections::BTreeSet::new();
            let mut predicted_mi_s: Option<f64> = None;
            let mut mi_start_s = env.network().now_s();
            let mut prev_rate = rate;
            for step in 0..300 {
                let wf = w.map(|v| v as f32);
                let a = policy.mean_action(env.observation(), &wf, &mut gym_ws);
                let info = env.step(Action::Delta(f64::from(a))).info;
                assert_eq!(
                    info.rate_pps, rate,
                    "{preset}, warmup {warmup}: step {step}: gym rate {} vs controller {rate}",
                    info.rate_pps
                );
                // The MI ran from the previous step's end to this one's: the gym closes it at
                // the first event at or after the length the controller asks for, and a send
                // comes at least every packet interval (at this rate or, pacing out the gap
                // already scheduled, the one before).
                let mi_s = info.time_s - std::mem::replace(&mut mi_start_s, info.time_s);
                if let Some(d) = predicted_mi_s {
                    let gap = 1.0 / info.rate_pps.min(prev_rate);
                    assert!(
                        mi_s >= d - 1e-9 && mi_s <= d + gap + 1e-9,
                        "{preset}, floor {min_packets}: step {step}: gym MI {mi_s} s vs controller {d} s"
                    );
                }
                prev_rate = info.rate_pps;
                distinct.insert(rate.to_bits());
                if step == 149 {
                    // The application switches objectives; the next decision uses it.
                    w = [0.1, 0.8, 0.1];
                    controller.set_objective(w).unwrap();
                }
                rate = controller.on_monitor_interval(env.last_mi(0));
                predicted_mi_s = controller.next_mi_duration_s();
            }
            assert!(
                distinct.len() > 20,
                "{preset}: the rate moves ({} values)",
                distinct.len()
            );
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

#[test]
fn every_learned_sender_on_a_shared_link_runs_the_controllers_clock() {
    let mut trained = ScenarioConfig::default();
    trained.monitor_interval.min_packets = 10.0;
    let link = ScenarioConfig::fixed_link(600.0, 0.03, 40.0, 0.0).link;
    let parity = shared_link_parity(trained, link, "shared-link-clocks", None);
    assert_eq!(parity.probe_mis, 0, "no probes without probe_rtt");
}

/// With base-RTT probes: the senders' probe MIs (paced at a quarter of the agent's rate, with
/// no decision) come at the same MIs and rates as their controllers', and the observations
/// after them match.
#[test]
fn learned_senders_on_a_shared_link_probe_the_base_rtt_as_their_controllers() {
    let mut trained = ScenarioConfig::default();
    trained.monitor_interval.min_packets = 10.0;
    trained.action.probe_rtt = Some(mocc_policy::ProbeRtt {
        mis: 3,
        ..mocc_policy::ProbeRtt::every(0.5)
    });
    let link = ScenarioConfig::fixed_link(600.0, 0.03, 40.0, 0.0).link;
    let parity = shared_link_parity(trained, link, "shared-link-probes", None);
    assert!(parity.probe_mis > 20, "{} probe MIs", parity.probe_mis);
}

/// A paired export on the same link: every sender's mode switches at the same MIs in the gym
/// as in its Controller, and each decision is the network of that mode's.
#[test]
fn learned_senders_switch_modes_as_their_controllers() {
    let mut trained = ScenarioConfig::default();
    trained.monitor_interval.min_packets = 10.0;
    trained.action.probe_rtt = Some(mocc_policy::ProbeRtt {
        mis: 3,
        quiet_latency_ratio: Some(1.1),
        ..mocc_policy::ProbeRtt::every(0.5)
    });
    let link = ScenarioConfig::fixed_link(600.0, 0.03, 40.0, 0.0).link;
    let switch = mocc_policy::ModeSwitch {
        probe_after_s: Some(1.0),
        ..mocc_policy::ModeSwitch::default()
    };
    let parity = shared_link_parity(trained, link, "shared-link-modes", Some(switch));
    // Both networks decide, many times each (432 and 38 decisions when written).
    let [cooperative, competitive] = parity.modes;
    assert!(
        cooperative > 100 && competitive > 10,
        "decisions per mode: {:?}",
        parity.modes
    );
}

/// As above with the observation and rate rule of configs/scenarios/mocc-paths.yaml (every
/// packet counted, the drain-aware baseline, the peak delivery ratio, binomial increases) on a
/// link whose base RTT steps up and down, so that baselines restart and deliveries peak while
/// the senders share it.
#[test]
fn every_learned_sender_runs_the_controllers_clock_with_the_path_observation() {
    let text = std::fs::read_to_string(repo().join("configs/scenarios/mocc-paths.yaml"))
        .expect("configs/scenarios/mocc-paths.yaml");
    let trained = Scenario::from_yaml_str(&text, Path::new("mocc-paths.yaml"))
        .unwrap()
        .config()
        .clone();
    assert_eq!(trained.metrics, mocc_gym::MetricsVersion::Delivered);
    assert!(trained.action.binomial_increase.is_some());
    let stepping = Scenario::from_yaml_str(
        "link:\n  bandwidth_pps: 600\n  delay_s: 0.015\n  queue_pkts: 40\n  schedule:\n    - {time_s: 3, bandwidth_pps: 400, delay_s: 0.04}\n    - {time_s: 6, bandwidth_pps: 700, delay_s: 0.01}\n  schedule_period_s: 9\n",
        Path::new("stepping.yaml"),
    )
    .unwrap();
    let decided_at =
        shared_link_parity(trained, stepping.config().link.clone(), "path-clocks", None).decided_at;
    // Every segment of the path (before, between and after the steps) had its decisions checked.
    for (from, to) in [(0.0, 3.0), (3.0, 6.0), (6.0, 9.0)] {
        let n = decided_at
            .iter()
            .filter(|t| (from..to).contains(*t))
            .count();
        assert!(n > 10, "{n} decisions checked in {from}-{to} s");
    }
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What [`shared_link_parity`] checked.
struct Parity {
    /// Simulated times of the checked decisions.
    decided_at: Vec<f64>,
    /// Base-RTT probe MIs the senders paced.
    probe_mis: usize,
    /// Decisions taken in the cooperative and the competitive mode.
    modes: [usize; 2],
}

/// Three learned senders (two staggered) and a Cubic flow share `link`. Each decides at the end
/// of its own MIs; a deployed Controller per sender, fed every MI that sender closes, must see
/// the same observation, choose the same rate and pace every MI (probe MIs too) at the rate
/// the sender paces it. With `switch`, the export is a pair (a second random network decides
/// in the competitive mode) and every decision's mode must match the Controller's.
fn shared_link_parity(
    mut trained: ScenarioConfig,
    link: mocc_gym::config::LinkConfig,
    tag: &str,
    switch: Option<mocc_policy::ModeSwitch>,
) -> Parity {
    trained.observation.history_len = 5;
    let obs_dim = 5 * trained.observation.features.len();
    let dir = temp_dir(tag);
    let (_vs, _model, _norm, policy) =
        random_export(Architecture::mocc(obs_dim), &trained, 31, &dir);
    let policy = match switch {
        Some(switch) => {
            let (.., competitive) =
                random_export(Architecture::mocc(obs_dim), &trained, 32, &dir.join("b"));
            mocc_outputs::write_pair(
                &dir.join("pair"),
                &policy,
                &competitive,
                switch,
                "mocc pair",
            )
            .unwrap()
        }
        None => policy,
    };
    let policy = Arc::new(policy);
    let mut cfg = export_scenario(&policy);
    cfg.link = link;
    let learned = |start: f64| mocc_gym::SenderConfig {
        start_rate: StartRate::Pps(mocc_gym::Range::Fixed(150.0)),
        start_time_s: mocc_gym::Range::Fixed(start),
        ..mocc_gym::SenderConfig::default()
    };
    cfg.senders = vec![
        learned(0.0),
        mocc_gym::SenderConfig {
            controller: mocc_gym::ControllerConfig::Cubic,
            ..learned(0.1)
        },
        learned(0.3),
        learned(0.8),
    ];
    cfg.episode_mis = 10_000;
    let mut env = Env::new(Arc::new(Scenario::new(cfg, None).unwrap()), 2, 0);
    assert_eq!(env.slot_count(), 3);
    let objectives = [[0.6, 0.3, 0.1], [0.1, 0.8, 0.1], [0.34, 0.33, 0.33]];
    let mut controllers: Vec<Option<Controller>> = vec![None, None, None];
    // End of the last MI each controller was fed.
    let mut fed_until = [f64::NEG_INFINITY; 3];
    let mut probe_mis = 0;
    let mut ws = policy.workspace();
    let mut decisions = [0usize; 3];
    let mut modes = [0usize; 2];
    // The warm-up MIs each sender closed before its first decision.
    let mut warm_up: [Vec<MonitorInterval>; 3] = Default::default();
    // Values of the newest MI's last feature (send ratio, or the peak delivery ratio).
    let mut last_feature = std::collections::BTreeSet::new();
    let mut decided_at = Vec::new();
    for _ in 0..600 {
        let mut actions = [Action::Delta(0.0); 3];
        for k in 0..3 {
            if env.slot_phase(k) != mocc_gym::SlotPhase::Ready {
                continue;
            }
            let sender = env.slot_sender(k);
            let c = controllers[k].get_or_insert_with(|| {
                // First decision: the Controller runs the same warm-up, on the same MIs where
                // they could be seen (the first sender's ran inside Env::new, and only its
                // last is left: its first stands in as an MI without RTT samples).
                let mut c = Controller::new(policy.clone(), objectives[k]).unwrap();
                c.reset(150.0);
                if warm_up[k].is_empty() {
                    warm_up[k] = vec![MonitorInterval::default(), *env.last_mi(sender)];
                    fed_until[k] = env.last_mi(sender).send_end_s;
                }
                assert_eq!(warm_up[k].len(), 2, "slot {k}: two warm-up MIs");
                for mi in &warm_up[k] {
                    c.on_monitor_interval(mi);
                }
                c
            });
            assert_eq!(fed_until[k], env.last_mi(sender).send_end_s, "slot {k}");
            assert_eq!(env.slot_observation(k), c.observation(), "slot {k}");
            decided_at.push(env.network().now_s());
            if let Some(newest) = c.observation().last() {
                last_feature.insert(newest.to_bits());
            }
            let w = objectives[k].map(|v| v as f32);
            let mode = env.slot_mode(k);
            assert_eq!(mode, c.mode(), "slot {k}");
            modes[usize::from(mode == mocc_policy::Mode::Competitive)] += 1;
            let a = policy.mean_action_in(mode, env.slot_observation(k), &w, &mut ws);
            actions[k] = Action::Delta(f64::from(a));
            decisions[k] += 1;
        }
        env.step_slots(&actions);
        for (k, controller) in controllers.iter_mut().enumerate() {
            let Some(c) = controller.as_mut() else {
                assert!(
                    env.slot_completion(k).is_none(),
                    "slot {k} completed unseen"
                );
                let mi = env.last_mi(env.slot_sender(k));
                let started = matches!(
                    env.slot_phase(k),
                    mocc_gym::SlotPhase::Running | mocc_gym::SlotPhase::Ready
                );
                if started && mi.send_end_s > 0.0 && mi.send_end_s > fed_until[k] {
                    warm_up[k].push(*mi);
                    fed_until[k] = mi.send_end_s;
                }
                continue;
            };
            let sender = env.slot_sender(k);
            let mi = env.last_mi(sender);
            if mi.send_end_s <= fed_until[k] {
                assert!(
                    env.slot_completion(k).is_none(),
                    "slot {k}: a completion, no MI"
                );
                continue;
            }
            if let Some(step) = env.slot_completion(k) {
                assert_eq!(step.info.rate_pps, c.rate_pps(), "slot {k}");
            }
            fed_until[k] = mi.send_end_s;
            c.on_monitor_interval(mi);
            if env.slot_phase(k) == mocc_gym::SlotPhase::Running {
                // A probe MI started at once: the sender paces it as the controller would.
                assert!(c.probing(), "slot {k} runs an MI its controller does not");
                assert_eq!(
                    env.network().senders()[sender].rate_pps(),
                    c.rate_pps(),
                    "slot {k}: probe rate"
                );
                probe_mis += 1;
            } else {
                assert!(
                    !c.probing(),
                    "slot {k}: its controller probes, the gym does not"
                );
            }
        }
    }
    assert!(
        decisions.iter().all(|&d| d > 100),
        "every sender decides: {decisions:?}"
    );
    assert!(
        last_feature.len() > 5,
        "{tag}: the last feature moves ({} values)",
        last_feature.len()
    );
    for s in env.network().senders() {
        let t = s.totals();
        assert_eq!(t.sent, t.acked + t.lost + s.in_flight() as u64);
    }
    let _ = std::fs::remove_dir_all(dir);
    Parity {
        decided_at,
        probe_mis,
        modes,
    }
}
