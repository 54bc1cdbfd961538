//! Seeded runs are reproducible bit for bit, independent of the thread count; auto-reset
//! follows Gymnasium's same-step convention.

use mocc_gym::{Action, Env, Scenario, ScenarioConfig, StepInfo, VecEnv};
use mocc_policy::MetricsVersion;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

fn aurora() -> Arc<Scenario> {
    Arc::new(Scenario::new(ScenarioConfig::default(), None).unwrap())
}

fn short_episodes(episode_mis: u32) -> Arc<Scenario> {
    let cfg = ScenarioConfig {
        episode_mis,
        ..ScenarioConfig::default()
    };
    Arc::new(Scenario::new(cfg, None).unwrap())
}

fn bits(xs: &[f32]) -> Vec<u32> {
    xs.iter().map(|x| x.to_bits()).collect()
}

fn info_bits(i: &StepInfo) -> Vec<u64> {
    i.fields().iter().map(|x| x.to_bits()).collect()
}

/// A record of an env's trajectory under actions drawn from `action_seed`, with manual resets
/// at truncation.
fn trajectory(env: &mut Env, action_seed: u64, steps: usize) -> Vec<(Vec<u32>, u64, Vec<u64>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(action_seed);
    let mut out = vec![(bits(env.observation()), 0, vec![])];
    for _ in 0..steps {
        let a: f64 = rng.random_range(-5.0..5.0);
        let s = env.step(Action::Delta(a));
        out.push((
            bits(env.observation()),
            s.reward.to_bits(),
            info_bits(&s.info),
        ));
        if s.truncated {
            env.reset(None);
            out.push((bits(env.observation()), 0, vec![]));
        }
    }
    out
}

#[test]
fn same_seed_same_trajectory() {
    let s = aurora();
    let mut a = Env::new(s.clone(), 42, 3);
    let mut b = Env::new(s, 42, 3);
    assert_eq!(a.episode_params(), b.episode_params());
    let ta = trajectory(&mut a, 7, 1000);
    let tb = trajectory(&mut b, 7, 1000);
    // 1000 steps with 400-MI episodes: two truncations and resets.
    assert_eq!(ta.len(), 1001 + 2);
    for (k, (x, y)) in ta.iter().zip(&tb).enumerate() {
        assert_eq!(x, y, "trajectories diverge at record {k}");
    }
    assert_eq!(a.counters(), b.counters());
}

#[test]
fn different_seeds_or_indices_differ() {
    let s = aurora();
    let base = trajectory(&mut Env::new(s.clone(), 1, 0), 7, 50);
    let other_seed = trajectory(&mut Env::new(s.clone(), 2, 0), 7, 50);
    let other_index = trajectory(&mut Env::new(s.clone(), 1, 1), 7, 50);
    assert_ne!(base, other_seed);
    assert_ne!(base, other_index);
    assert_ne!(
        Env::new(s.clone(), 1, 0).episode_params(),
        Env::new(s, 2, 0).episode_params()
    );
}

#[test]
fn reset_with_seed_replays_and_reset_without_seed_continues() {
    let s = aurora();
    let mut env = Env::new(s.clone(), 5, 2);
    let first = trajectory(&mut env, 9, 100);
    env.reset(Some(5));
    let again = trajectory(&mut env, 9, 100);
    assert_eq!(first, again);
    // Without a seed the RNG continues: the next episode is a different network.
    let p = env.episode_params();
    env.reset(None);
    assert_ne!(p, env.episode_params());
}

struct Run {
    obs: Vec<Vec<u32>>,
    rewards: Vec<Vec<u32>>,
    truncated: Vec<Vec<bool>>,
    terminated: Vec<Vec<bool>>,
    final_obs: Vec<Vec<u32>>,
    infos: Vec<Vec<Vec<u64>>>,
}

fn vec_run(scenario: &Arc<Scenario>, n: usize, threads: usize, steps: usize) -> Run {
    let mut v = VecEnv::new(scenario.clone(), n, 2024, threads).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(77);
    let mut r = Run {
        obs: vec![bits(v.observations())],
        rewards: vec![],
        truncated: vec![],
        terminated: vec![],
        final_obs: vec![],
        infos: vec![],
    };
    for _ in 0..steps {
        let actions: Vec<f32> = (0..n).map(|_| rng.random_range(-3.0f32..3.0)).collect();
        let s = v.step(&actions).unwrap();
        r.obs.push(bits(s.observations));
        r.rewards.push(bits(s.rewards));
        r.truncated.push(s.truncated.to_vec());
        r.terminated.push(s.terminated.to_vec());
        r.final_obs.push(bits(s.final_observations));
        r.infos.push(s.infos.iter().map(info_bits).collect());
    }
    r
}

#[test]
fn vec_env_is_independent_of_thread_count() {
    let s = short_episodes(50);
    let one = vec_run(&s, 5, 1, 120);
    for threads in [2, 3] {
        let many = vec_run(&s, 5, threads, 120);
        assert_eq!(one.obs, many.obs, "{threads} threads: observations");
        assert_eq!(one.rewards, many.rewards, "{threads} threads: rewards");
        assert_eq!(
            one.truncated, many.truncated,
            "{threads} threads: truncated"
        );
        assert_eq!(one.terminated, many.terminated);
        assert_eq!(
            one.final_obs, many.final_obs,
            "{threads} threads: final obs"
        );
        assert_eq!(one.infos, many.infos, "{threads} threads: infos");
    }
    // Two truncations per env in 120 steps of 50-MI episodes, at steps 50 and 100.
    for (k, t) in one.truncated.iter().enumerate() {
        let expected = (k + 1) % 50 == 0;
        assert!(t.iter().all(|&x| x == expected), "step {k}: {t:?}");
    }
    assert!(one.terminated.iter().flatten().all(|&x| !x));
}

#[test]
fn vec_env_rows_do_not_depend_on_batch_size() {
    let s = short_episodes(50);
    let small = vec_run(&s, 2, 1, 60);
    let big = vec_run(&s, 5, 2, 60);
    let d = s.obs_len();
    // Env i of any batch is Env::new(scenario, seed, i), but the actions differ per batch size
    // (drawn in sequence), so compare only the initial observations and episode parameters.
    assert_eq!(small.obs[0][..2 * d], big.obs[0][..2 * d]);
    let a = VecEnv::new(s.clone(), 2, 2024, 1).unwrap();
    let b = VecEnv::new(s, 5, 2024, 2).unwrap();
    for i in 0..2 {
        assert_eq!(a.envs()[i].episode_params(), b.envs()[i].episode_params());
    }
}

/// The observation of a fresh episode: every row is the features of an empty MI (all counts and
/// durations 0) under the empty baseline, for Aurora's features `sent latency inflation,
/// latency ratio, send ratio`:
/// - sent latency inflation: no RTT samples -> latency increase 0, over a 0 s send dur -> 0;
/// - latency ratio: `aurora` metrics have baseline 0 before any sample -> ratio 1 (PCC-RL's
///   published guard); `delivered` metrics have baseline 1e4 s -> 0 / 1e4 = 0;
/// - send ratio: the recv rate of a 0 s MI is 0 (not positive) -> 1, in both versions.
fn fresh_observation(version: MetricsVersion, history_len: usize) -> Vec<f32> {
    let latency_ratio = match version {
        MetricsVersion::Aurora => 1.0f32,
        MetricsVersion::Delivered => 0.0,
    };
    [0.0f32, latency_ratio, 1.0].repeat(history_len)
}

#[test]
fn fresh_observation_follows_the_metrics_version() {
    assert_eq!(ScenarioConfig::default().metrics, MetricsVersion::Aurora);
    for version in [MetricsVersion::Aurora, MetricsVersion::Delivered] {
        let cfg = ScenarioConfig {
            metrics: version,
            ..ScenarioConfig::default()
        };
        let s = Arc::new(Scenario::new(cfg, None).unwrap());
        let mut env = Env::new(s.clone(), 4, 1);
        let fresh = fresh_observation(version, 10);
        assert_eq!(env.observation(), &fresh[..], "{version:?}");
        env.step(Action::Delta(0.0));
        env.reset(None);
        assert_eq!(env.observation(), &fresh[..], "{version:?} after reset");
        let v = VecEnv::new(s, 2, 4, 1).unwrap();
        assert_eq!(v.observations(), &fresh.repeat(2)[..], "{version:?} VecEnv");
    }
}

#[test]
fn auto_reset_matches_single_envs() {
    let episode = 50;
    let s = short_episodes(episode);
    let n = 3;
    let seed = 31;
    let mut v = VecEnv::new(s.clone(), n, seed, 2).unwrap();
    let mut singles: Vec<Env> = (0..n)
        .map(|i| Env::new(s.clone(), seed, i as u64))
        .collect();
    let fresh = fresh_observation(MetricsVersion::Aurora, 10);
    assert_eq!(v.obs_len(), 30);
    for (i, e) in singles.iter().enumerate() {
        assert_eq!(e.observation(), &fresh[..]);
        assert_eq!(&v.observations()[i * 30..(i + 1) * 30], &fresh[..]);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut truncations = 0;
    for k in 0..(2 * episode as usize + 10) {
        let actions: Vec<f32> = (0..n).map(|_| rng.random_range(-4.0f32..4.0)).collect();
        v.step(&actions).unwrap();
        let step = v.view();
        let d = 30;
        for (i, env) in singles.iter_mut().enumerate() {
            let s1 = env.step(Action::Delta(f64::from(actions[i])));
            assert_eq!(step.rewards[i], s1.reward as f32, "step {k} env {i}");
            assert_eq!(step.infos[i], s1.info);
            assert_eq!(step.truncated[i], s1.truncated);
            assert_eq!(s1.truncated, (k + 1) % episode as usize == 0);
            let row = &step.observations[i * d..(i + 1) * d];
            if s1.truncated {
                truncations += 1;
                // The final observation is the ended episode's last one.
                assert_eq!(
                    &step.final_observations[i * d..(i + 1) * d],
                    env.observation()
                );
                assert_ne!(env.observation(), &fresh[..]);
                // The returned observation is the next episode's first: empty MIs.
                assert_eq!(row, &fresh[..], "step {k} env {i}");
                env.reset(None);
                assert_eq!(v.envs()[i].steps(), 0);
                assert_eq!(v.envs()[i].episode_params(), env.episode_params());
            }
            assert_eq!(row, env.observation(), "step {k} env {i}");
        }
    }
    assert_eq!(truncations, 2 * n);
}

#[test]
fn vec_env_reset_reproduces_the_first_trajectory() {
    let s = short_episodes(40);
    let n = 4;
    let steps = 90;
    let mut v = VecEnv::new(s, n, 8, 2).unwrap();
    let record = |v: &mut VecEnv| {
        let mut rng = ChaCha8Rng::seed_from_u64(12);
        let mut out = vec![bits(v.observations())];
        for _ in 0..steps {
            let actions: Vec<f32> = (0..n).map(|_| rng.random_range(-2.0f32..2.0)).collect();
            let st = v.step(&actions).unwrap();
            out.push(bits(st.observations));
            out.push(bits(st.rewards));
            // Final observations are meaningful only where an episode ended.
            let d = st.observations.len() / n;
            for i in 0..n {
                if st.truncated[i] || st.terminated[i] {
                    out.push(bits(&st.final_observations[i * d..(i + 1) * d]));
                }
            }
        }
        out
    };
    let first = record(&mut v);
    let obs0 = v.reset(8).to_vec();
    assert_eq!(bits(&obs0), first[0]);
    let second = record(&mut v);
    assert_eq!(first, second);
    // Another seed, then back: still the same.
    v.reset(9);
    let other = record(&mut v);
    assert_ne!(first, other);
    v.reset(8);
    assert_eq!(first, record(&mut v));
}

#[test]
fn vec_env_rejects_bad_shapes() {
    let s = short_episodes(10);
    assert!(VecEnv::new(s.clone(), 0, 1, 1).is_err());
    let mut v = VecEnv::new(s, 2, 1, 1).unwrap();
    let e = v.step(&[0.0]).unwrap_err();
    assert!(e.to_string().contains("actions"), "{e}");
}

#[test]
fn snapshot_restore_continues_bit_identically() {
    use mocc_gym::{Scenario, ScenarioConfig, VecEnv};
    let yaml = "link: {schedule: [{time_s: 3, bandwidth_pps: 150}], schedule_period_s: 6, \
                outages: [{start_s: 2, duration_s: 0.2, period_s: 5}]}\nepisode_mis: 60\n";
    let s = std::sync::Arc::new(
        Scenario::from_yaml_str(yaml, std::path::Path::new("snap.yaml")).unwrap(),
    );
    let _ = ScenarioConfig::default();
    let mut a = VecEnv::new(s.clone(), 3, 5, 1).unwrap();
    let actions =
        |k: usize| -> Vec<f32> { (0..3).map(|i| ((k * 7 + i) % 5) as f32 - 2.0).collect() };
    for k in 0..50 {
        a.step(&actions(k)).unwrap();
    }
    let json = serde_json::to_string(&a.snapshot()).unwrap();
    let mut b = VecEnv::new(s.clone(), 3, 999, 2).unwrap();
    b.restore(serde_json::from_str(&json).unwrap()).unwrap();
    assert_eq!(a.observations(), b.observations());
    for k in 50..200 {
        let ra: Vec<f32> = a.step(&actions(k)).unwrap().rewards.to_vec();
        let rb: Vec<f32> = b.step(&actions(k)).unwrap().rewards.to_vec();
        assert_eq!(ra, rb, "step {k}");
        assert_eq!(a.observations(), b.observations(), "step {k}");
    }
}

/// Base-RTT probes hold a lane back for their MIs: lanes are not ready in every step, a
/// snapshot taken with probes under way restores them (timers and MIs left), and the batch
/// goes on bit for bit, for one learned sender per env and for two on a shared link.
#[test]
fn snapshot_restore_continues_bit_identically_through_probes() {
    use mocc_gym::{Scenario, VecEnv};
    let probe = "action: {probe_rtt: {interval_s: 0.5, mis: 3}}\nepisode_mis: 400\n";
    let shared = "senders:\n  - {controller: agent}\n  - {controller: agent, start_time_s: 0.3}\n";
    for (yaml, slots) in [(probe.to_string(), 1), (format!("{probe}{shared}"), 2)] {
        let s = std::sync::Arc::new(
            Scenario::from_yaml_str(&yaml, std::path::Path::new("probe.yaml")).unwrap(),
        );
        let mut a = VecEnv::new(s.clone(), 3, 5, 1).unwrap();
        let action = |k: usize, lane: usize| ((k * 7 + lane) % 5) as f32 - 2.0;
        let mut held_back = 0;
        let step = |v: &mut VecEnv, k: usize| -> (Vec<f32>, Vec<bool>) {
            let acts: Vec<f32> = v.ready_lanes().iter().map(|&l| action(k, l)).collect();
            let st = v.step(&acts).unwrap();
            (st.rewards.to_vec(), st.ready.to_vec())
        };
        let mut snapshot_mid_probe = None;
        for k in 0..300 {
            let (_, ready) = step(&mut a, k);
            held_back += ready.iter().filter(|r| !**r).count();
            if snapshot_mid_probe.is_none() && k > 100 && ready.iter().any(|r| !*r) {
                snapshot_mid_probe = Some((k, serde_json::to_string(&a.snapshot()).unwrap()));
                break;
            }
        }
        let (k0, json) = snapshot_mid_probe.expect("a lane held back by a probe");
        assert!(held_back > 0, "{slots} slots: no probe held a lane back");
        // Observations are meaningful for ready lanes only.
        let ready_obs = |v: &VecEnv| -> Vec<f32> {
            let d = v.obs_len();
            let o = v.observations();
            v.ready_lanes()
                .iter()
                .flat_map(|&l| o[l * d..(l + 1) * d].iter().copied())
                .collect()
        };
        let mut b = VecEnv::new(s.clone(), 3, 999, 2).unwrap();
        b.restore(serde_json::from_str(&json).unwrap()).unwrap();
        assert_eq!(a.ready_lanes(), b.ready_lanes());
        assert_eq!(ready_obs(&a), ready_obs(&b));
        for k in k0 + 1..k0 + 400 {
            assert_eq!(step(&mut a, k), step(&mut b, k), "{slots} slots, step {k}");
            assert_eq!(ready_obs(&a), ready_obs(&b), "{slots} slots, step {k}");
        }
    }
}

/// A learned sender beside Cubic turns competitive at a probe that keeps Cubic's queue; a
/// snapshot taken then restores every slot's mode switch, and both envs go on with the same
/// snapshots step by step, back to cooperative once Cubic leaves and the agents back off, for
/// one learned sender (the single-sender snapshot) and for two.
#[test]
fn snapshot_restore_keeps_the_mode_switch() {
    use mocc_gym::{Action, Env, Mode, Scenario, SlotPhase};
    let base = "link: {bandwidth_pps: 400, delay_s: 0.02, queue_pkts: 60, loss: 0}\n\
                action: {probe_rtt: {interval_s: 1, quiet_latency_ratio: 1.1}, \
                mode_switch: {probe_after_s: 2}}\nepisode_mis: 3000\n";
    let cubic = "  - {controller: cubic, start_time_s: 0.5, stop_time_s: 40}\n";
    let agent = "  - {controller: agent, start_rate: {pps: 200}}\n";
    for agents in [1, 2] {
        let yaml = format!("{base}senders:\n{}{cubic}", agent.repeat(agents));
        let s = std::sync::Arc::new(
            Scenario::from_yaml_str(&yaml, std::path::Path::new("modes.yaml")).unwrap(),
        );
        let mut a = Env::new(s.clone(), 3, 0);
        // Agents that never slow down while Cubic is there: its queue stands. Then they back
        // off, and the queue drains.
        let step = |env: &mut Env| -> Vec<Mode> {
            let push = if env.network().now_s() < 40.0 {
                0.5
            } else {
                -0.5
            };
            let actions: Vec<Action> = (0..env.slot_count()).map(|_| Action::Delta(push)).collect();
            env.step_slots(&actions);
            (0..env.slot_count()).map(|k| env.slot_mode(k)).collect()
        };
        let mut steps = 0;
        while !step(&mut a).contains(&Mode::Competitive) {
            steps += 1;
            assert!(steps < 20_000, "{agents} agents: never competitive");
        }
        let json = serde_json::to_string(&a.snapshot()).unwrap();
        let mut b = Env::restore(s.clone(), serde_json::from_str(&json).unwrap()).unwrap();
        let modes =
            |env: &Env| -> Vec<Mode> { (0..env.slot_count()).map(|k| env.slot_mode(k)).collect() };
        assert_eq!(modes(&a), modes(&b), "{agents} agents");
        let snap = |env: &Env| serde_json::to_string(&env.snapshot()).unwrap();
        let mut back_to_cooperative = false;
        for k in 0..20_000 {
            if (0..a.slot_count()).all(|s| a.slot_phase(s) == SlotPhase::Done) {
                break;
            }
            let now = step(&mut a);
            assert_eq!(now, step(&mut b), "{agents} agents, step {k}");
            assert_eq!(snap(&a), snap(&b), "{agents} agents, step {k}");
            let late = a.network().now_s() > 40.0;
            back_to_cooperative |= late && !now.contains(&Mode::Competitive);
        }
        assert!(
            back_to_cooperative,
            "{agents} agents: competitive to the end"
        );
    }
}
