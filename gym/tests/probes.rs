//! Base-RTT probes in the env: probe MIs are paced at the probe's rate, also when a probe
//! starts at the MI limit of an episode stepped past it; a sender that leaves mid-probe is
//! retired without another decision; observed senders that set their own rate never probe.

use mocc_gym::{Action, Env, Scenario, SlotPhase};
use std::path::Path;
use std::sync::Arc;

fn env(yaml: &str, seed: u64) -> Env {
    let s = Scenario::from_yaml_str(yaml, Path::new("probes.yaml")).expect("scenario");
    Env::new(Arc::new(s), seed, 0)
}

const PROBES: &str = "link: {bandwidth_pps: 500, delay_s: 0.02, queue_pkts: 50, loss: 0}\n\
                      action: {probe_rtt: {interval_s: 0.3, mis: 3, rate_fraction: 0.25}}\n";

/// Every probe MI is sent at about the probe's rate (a quarter of the agent's), never at the
/// agent's: stepping past a 5-MI episode limit retires and revives the sender at every step,
/// and a probe that the limit's MI started must run before the next agent MI.
#[test]
fn probe_mis_are_paced_at_the_probe_rate_past_the_mi_limit() {
    let mut e = env(&format!("{PROBES}episode_mis: 5\n"), 3);
    let mut probe_mis = 0;
    for k in 0..400 {
        let action = if k % 3 == 0 { 1.0 } else { -0.5 };
        let step = e.step(Action::Delta(action));
        // Ready for the next action, or retired at the limit (and revived by the next step).
        let phase = e.slot_phase(0);
        assert!(
            phase == SlotPhase::Ready || (phase == SlotPhase::Done && step.truncated),
            "step {k}: {phase:?}"
        );
        assert!(step.info.send_pps > 0.0, "step {k}: {:?}", step.info);
        let mis = e.slot_probe_mis(0);
        assert!(
            mis.is_empty() || mis.len() == 3,
            "step {k}: {} probe MIs",
            mis.len()
        );
        for m in mis.iter().map(|p| &p.info) {
            // Sent over the MI at the probe's rate (packet granularity aside), where the agent's
            // rate is four times that.
            assert!(
                m.send_pps < 1.6 * m.rate_pps && m.rate_pps < step.info.rate_pps,
                "step {k}: probe MI {m:?} after the agent's {:?}",
                step.info
            );
            probe_mis += 1;
        }
        if k >= 5 {
            assert!(step.truncated, "past the limit every step is truncated");
        }
    }
    assert!(probe_mis > 30, "{probe_mis} probe MIs");
}

/// A learned sender whose stop time falls in a probe leaves at its next MI end: no decision,
/// no completion for an MI begun after it stopped.
#[test]
fn a_sender_that_leaves_mid_probe_is_retired_without_another_decision() {
    let yaml = format!(
        "{PROBES}episode_mis: 100000\nsenders:\n  - {{controller: agent}}\n  \
         - {{controller: agent, stop_time_s: 2.0}}\n"
    );
    for seed in 0..8 {
        let mut e = env(&yaml, seed);
        let mut left_in_probe = false;
        while e.network().now_s() < 4.0 {
            let probing_before = !e.slot_probe_mis(1).is_empty();
            let actions = [Action::Delta(0.3), Action::Delta(0.3)];
            e.step_slots(&actions);
            if let Some(step) = e.slot_completion(1) {
                let start = step.info.time_s - step.info.duration_s;
                assert!(
                    start < 2.0,
                    "seed {seed}: an MI from {start} s after the stop"
                );
            }
            if e.slot_phase(1) == SlotPhase::Done
                && (probing_before || !e.slot_probe_mis(1).is_empty())
            {
                left_in_probe = true;
            }
        }
        assert_eq!(e.slot_phase(1), SlotPhase::Done, "seed {seed}");
        if left_in_probe {
            return;
        }
    }
    panic!("no seed stopped its sender during a probe");
}

/// An observed Cubic sender keeps its own rate: no probe MIs, whatever the rate rule says.
#[test]
fn observed_senders_that_set_their_own_rate_never_probe() {
    let yaml = format!(
        "{PROBES}episode_mis: 100000\nsenders:\n  - {{controller: agent}}\n  \
         - {{controller: cubic, observe: true}}\n"
    );
    let mut e = env(&yaml, 1);
    let (mut agent, mut cubic) = (0, 0);
    while e.network().now_s() < 6.0 {
        e.step_slots(&[Action::Delta(0.2), Action::Delta(0.0)]);
        agent += e.slot_probe_mis(0).len();
        cubic += e.slot_probe_mis(1).len();
    }
    assert!(agent > 0, "the agent probes");
    assert_eq!(cubic, 0, "the observed Cubic sender never probes");
}

/// The synchronous batch step (Gymnasium's vector API) is `Env::step` on every env: with
/// probes every lane is still ready and has completed an MI after every step, rewards,
/// statistics and observations are those of single envs stepped alone, and auto-reset gives
/// the ended episode's last observation as the final one.
#[test]
fn synchronous_batch_steps_are_single_env_steps_with_probes() {
    use mocc_gym::VecEnv;
    let yaml = format!("{PROBES}episode_mis: 30\n");
    let s = Arc::new(Scenario::from_yaml_str(&yaml, Path::new("probes.yaml")).expect("scenario"));
    let n = 3;
    let seed = 9;
    let mut v = VecEnv::new(s.clone(), n, seed, 2).expect("batch");
    let mut singles: Vec<Env> = (0..n)
        .map(|i| Env::new(s.clone(), seed, i as u64))
        .collect();
    let d = v.obs_len();
    let mut probes = 0;
    for k in 0..100 {
        let actions: Vec<f32> = (0..n).map(|i| ((k * 7 + i * 3) % 5) as f32 - 2.0).collect();
        let step = v.step_every_env(&actions).expect("step");
        assert!(step.ready.iter().all(|&r| r), "step {k}: every lane ready");
        assert!(
            step.completed.iter().all(|&c| c),
            "step {k}: every lane completed"
        );
        let (rewards, infos) = (step.rewards.to_vec(), step.infos.to_vec());
        let (obs, finals, truncated) = (
            step.observations.to_vec(),
            step.final_observations.to_vec(),
            step.truncated.to_vec(),
        );
        // One learned sender: its episode ends (and the env restarts) exactly when it does.
        assert_eq!(step.restarted, &truncated[..], "step {k}");
        for (i, env) in singles.iter_mut().enumerate() {
            let one = env.step(Action::Delta(f64::from(actions[i])));
            probes += env.slot_probe_mis(0).len();
            assert_eq!(rewards[i], one.reward as f32, "step {k} env {i}");
            assert_eq!(infos[i], one.info, "step {k} env {i}");
            assert_eq!(truncated[i], one.truncated, "step {k} env {i}");
            if one.truncated {
                assert_eq!(&finals[i * d..(i + 1) * d], env.observation());
                env.reset(None);
            }
            assert_eq!(
                &obs[i * d..(i + 1) * d],
                env.observation(),
                "step {k} env {i}"
            );
        }
    }
    assert!(probes > 0, "the scenario probed");
    // Resets: a seed replays the batch's first observations, none continues each env's RNG.
    let first = VecEnv::new(s.clone(), n, seed, 1).expect("batch");
    assert_eq!(v.reset_each(|_| Some(seed)), first.observations());
    v.reset_each(|_| None);
    for env in &mut singles {
        env.reset(Some(seed));
        env.reset(None);
    }
    for (i, env) in singles.iter().enumerate() {
        assert_eq!(&v.observations()[i * d..(i + 1) * d], env.observation());
        assert_eq!(v.envs()[i].episode_params(), env.episode_params());
    }
}

/// A scenario with several learned senders cannot be stepped synchronously: its senders
/// decide at different times.
#[test]
fn synchronous_batch_steps_refuse_several_learned_senders() {
    use mocc_gym::VecEnv;
    let s = Scenario::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../configs/scenarios/shared-link.yaml"
    )))
    .expect("scenario");
    let mut v = VecEnv::new(Arc::new(s), 2, 1, 1).expect("batch");
    assert!(v.slots_per_env() > 1);
    let e = v.step_every_env(&[0.0, 0.0]).unwrap_err();
    assert!(e.to_string().contains("one learned sender per env"), "{e}");
}
