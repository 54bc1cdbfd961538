use super::*;

const ENVS: usize = 3;

fn learner(seed: u64) -> PpoLearner {
    let cfg = PpoConfig {
        num_steps: 2,
        num_minibatches: 2,
        update_epochs: 1,
        ..PpoConfig::default()
    };
    PpoLearner::new(Architecture::aurora(6), cfg, ENVS, seed, Device::Cpu)
}

fn obs(t: usize) -> Vec<f32> {
    (0..ENVS * 6)
        .map(|i| ((i + 7 * t) % 5) as f32 * 0.3)
        .collect()
}

/// Two rollout steps and an update; returns the actions taken.
fn train_once(l: &mut PpoLearner) -> Vec<f32> {
    let w = [1.0f32 / 3.0; 3 * ENVS];
    let mut taken = Vec::new();
    l.start_rollout(&[]);
    for t in 0..2 {
        let mut actions = [0.0f32; ENVS];
        l.act(&[0, 1, 2], &obs(t), &w, &mut actions);
        taken.extend_from_slice(&actions);
        l.record(&StepOutcome {
            completed: &[true; ENVS],
            rewards: &[1.0, 0.5, 0.0],
            terminated: &[false; ENVS],
            truncated: &[false, t == 1, false],
            final_observations: &obs(9),
            objectives: &w,
        });
    }
    l.update(&obs(2), &w, 0.0).expect("finite update");
    taken
}

#[test]
fn a_restored_learner_continues_bit_for_bit() {
    let mut a = learner(3);
    train_once(&mut a);
    let tensors: HashMap<String, Tensor> = a.tensors().into_iter().collect();
    let mut b = learner(99);
    b.restore(&tensors, a.state()).expect("same shapes");
    assert_eq!(train_once(&mut a), train_once(&mut b));
    let wa: Vec<(String, Tensor)> = a.tensors();
    let wb: Vec<(String, Tensor)> = b.tensors();
    for ((na, ta), (nb, tb)) in wa.iter().zip(&wb) {
        assert_eq!(na, nb);
        assert!(ta.equal(tb), "{na} differs after the same update");
    }
}

/// A run with a centralized critic fine-tunes a policy trained with a local one: the actor
/// acts as saved, the critic values every row as the saved critic valued its observation
/// whatever the global state, and the observation's statistics carry over.
#[test]
fn a_central_critic_starts_from_a_local_one_as_it_was() {
    let cfg = PpoConfig {
        num_steps: 2,
        num_minibatches: 1,
        update_epochs: 1,
        ..PpoConfig::default()
    };
    let mut local = PpoLearner::new(Architecture::mocc(6), cfg, ENVS, 3, Device::Cpu);
    train_once(&mut local);
    let tensors: HashMap<String, Tensor> = local.tensors().into_iter().collect();
    let central_arch = Architecture {
        global_dim: 4,
        ..Architecture::mocc(6)
    };
    let mut central = PpoLearner::new(central_arch, cfg, ENVS, 5, Device::Cpu);
    central
        .load_pretrained(&tensors, &local.obs_norm, None)
        .expect("a local critic widens");
    let obs = obs(1);
    let rows: Vec<f32> = obs
        .chunks(6)
        .enumerate()
        .flat_map(|(i, o)| {
            let global = [0.9, -0.4, 0.2 * i as f32, 1.0];
            o.iter().copied().chain(global)
        })
        .collect();
    let w = [0.6f32, 0.3, 0.1].repeat(ENVS);
    let saved = local.model.infer(&obs, &w, Device::Cpu);
    let widened = central.model.infer(&rows, &w, Device::Cpu);
    for (a, b) in saved.mean.iter().zip(&widened.mean) {
        assert!((a - b).abs() < 1e-6, "actor: {a} against {b}");
    }
    for (a, b) in saved.value.iter().zip(&widened.value) {
        assert!((a - b).abs() < 1e-5, "critic: {a} against {b}");
    }
    assert_eq!(central.obs_norm.dim(), 10);
    assert_eq!(central.obs_norm.prefix(6), local.obs_norm);
    assert_eq!(&central.obs_norm.var[6..], &[1.0; 4]);
    // A network of another observation size is still refused.
    let other = Architecture {
        global_dim: 4,
        ..Architecture::mocc(7)
    };
    let mut wrong = PpoLearner::new(other, PpoConfig::default(), ENVS, 5, Device::Cpu);
    assert!(wrong
        .load_pretrained(&tensors, &local.obs_norm, None)
        .is_err());
}

#[test]
fn a_two_worker_update_is_deterministic_and_close_to_one_worker() {
    let with_workers = |n: usize| {
        let cfg = PpoConfig {
            num_steps: 2,
            num_minibatches: 1,
            update_epochs: 2,
            update_workers: n,
            ..PpoConfig::default()
        };
        let mut l = PpoLearner::new(Architecture::mocc(6), cfg, ENVS, 8, Device::Cpu);
        train_once(&mut l);
        l.tensors()
    };
    let (one, two, again) = (with_workers(1), with_workers(2), with_workers(2));
    for (((name, a), (_, b)), (_, c)) in one.iter().zip(&two).zip(&again) {
        assert!(b.equal(c), "{name}: two workers differ between runs");
        let diff = (a - b).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "{name}: {diff} from the one-thread update");
    }
    // The split changed something (it is not silently the one-thread path).
    assert!(one.iter().zip(&two).any(|((_, a), (_, b))| !a.equal(b)));
}

/// Three rollout steps over `lanes` lanes, the first `first` of `total`, with a reward
/// scale and two loss groups (so both shared paths run), then an update; returns the
/// actions taken.
fn train_lanes(l: &mut PpoLearner, first: usize, lanes: usize, total: usize) -> Vec<f32> {
    let obs_of = |t: usize| -> Vec<f32> {
        let all: Vec<f32> = (0..total * 6)
            .map(|i| ((i * 13 + 7 * t) % 17) as f32 * 0.2 - 1.0)
            .collect();
        all[first * 6..(first + lanes) * 6].to_vec()
    };
    let w: Vec<f32> = (first..first + lanes)
        .flat_map(|e| [0.2 + 0.1 * e as f32, 0.5, 0.3 - 0.1 * e as f32 / 2.0])
        .collect();
    let groups: Vec<u8> = (first..first + lanes).map(|e| (e % 2) as u8).collect();
    let mut taken = Vec::new();
    l.start_rollout(&groups);
    for t in 0..3 {
        let mut actions = vec![0.0f32; lanes];
        let ready: Vec<usize> = (0..lanes).collect();
        l.act(&ready, &obs_of(t), &w, &mut actions);
        taken.extend_from_slice(&actions);
        let rewards: Vec<f32> = (first..first + lanes)
            .map(|e| (e as f32 * 0.7 + t as f32).sin())
            .collect();
        l.record(&StepOutcome {
            completed: &vec![true; lanes],
            rewards: &rewards,
            terminated: &vec![false; lanes],
            truncated: &(first..first + lanes)
                .map(|e| t == 1 && e % 3 == 0)
                .collect::<Vec<_>>(),
            final_observations: &obs_of(9),
            objectives: &w,
        });
    }
    l.update(&obs_of(3), &w, 0.0).expect("finite update");
    taken
}

#[test]
fn two_ranks_train_as_one_process_holding_every_lane() {
    use crate::collective::tests::ThreadRanks;
    let cfg = PpoConfig {
        num_steps: 3,
        num_minibatches: 1,
        update_epochs: 2,
        normalize_reward: true,
        ..PpoConfig::default()
    };
    let arch = Architecture::mocc(6);
    let mut one = PpoLearner::new(arch.clone(), cfg, 6, 21, Device::Cpu);
    let expect_actions = train_lanes(&mut one, 0, 6, 6);
    let ranks = ThreadRanks::group(2);
    type RankResult = (Vec<f32>, Vec<(String, Tensor)>, LearnerState);
    let results: Vec<RankResult> = std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|r| {
                let arch = arch.clone();
                s.spawn(move || {
                    let first = 3 * r.rank();
                    let mut l =
                        PpoLearner::new(arch, cfg, 3, 21, Device::Cpu).with_world(Arc::new(r));
                    let actions = train_lanes(&mut l, first, 3, 6);
                    (actions, l.tensors(), l.state())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    // Every rank holds the same weights, statistics and RNG, bit for bit.
    let (_, w0, s0) = &results[0];
    let (_, w1, s1) = &results[1];
    for ((name, a), (_, b)) in w0.iter().zip(w1) {
        assert!(a.equal(b), "{name} differs between the ranks");
    }
    assert_eq!(s0.obs_norm, s1.obs_norm);
    assert_eq!(s0.rng, s1.rng);
    // The actions, in rank order per step, are the one process's (up to float rounding).
    for t in 0..3 {
        for r in 0..2 {
            for j in 0..3 {
                let got = results[r].0[t * 3 + j];
                let want = expect_actions[t * 6 + r * 3 + j];
                assert!((got - want).abs() < 1e-5, "step {t} rank {r} lane {j}");
            }
        }
    }
    // And the weights after the update are the one process's, within float tolerance.
    for ((name, a), (_, b)) in one.tensors().iter().zip(w0) {
        let diff = (a - b).abs().max().double_value(&[]);
        assert!(diff < 1e-5, "{name}: {diff} from the one-process update");
    }
    assert!((s0.obs_norm.count - one.state().obs_norm.count).abs() < 1e-9);
    // The RNG moved as the one process's did (the next rollout draws the same noise).
    assert_eq!(s0.rng, one.state().rng);
}

#[test]
fn stored_log_probs_are_the_models_own() {
    let mut l = learner(5);
    let w = [1.0f32 / 3.0; 3 * ENVS];
    let mut actions = [0.0f32; ENVS];
    l.start_rollout(&[]);
    l.act(&[0, 1, 2], &obs(0), &w, &mut actions);
    let out = l.model.infer(l.rollout.obs_of(0..ENVS), &w, Device::Cpu);
    let t = |v: &[f32]| Tensor::from_slice(v).view([-1, 1]);
    let lp = gaussian::log_prob(
        crate::Numerics::Native,
        &t(&actions),
        &t(&out.mean),
        &Tensor::from_slice(&[out.log_std; ENVS]).view([-1, 1]),
    );
    for e in 0..ENVS {
        let expect = lp.double_value(&[e as i64]);
        assert!((expect - f64::from(l.rollout.logprobs[e])).abs() < 1e-4);
    }
}

#[test]
fn a_checkpoint_of_another_shape_is_refused_with_the_reason() {
    let a = learner(1);
    let mut state = a.state();
    state.obs_norm = RunningMeanStd::new(4);
    let tensors: HashMap<String, Tensor> = a.tensors().into_iter().collect();
    let mut b = learner(1);
    let err = b.restore(&tensors, state).unwrap_err();
    assert!(err.contains("observation size 4"), "{err}");
}
