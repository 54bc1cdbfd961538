//! Stepping an env allocates nothing, auto-resets of Aurora episodes included.

#[path = "../../policy/tests/support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations_during;
use mocc_gym::{Action, Env, Scenario, ScenarioConfig};
use std::sync::Arc;

#[test]
fn steps_and_resets_do_not_allocate_once_warm() {
    let config = ScenarioConfig {
        episode_mis: 50,
        ..ScenarioConfig::default()
    };
    let scenario = Arc::new(Scenario::new(config, None).expect("valid"));
    let mut env = Env::new(scenario, 11, 0);
    // Warm-up: buffers grow to their working size over a few episodes of every kind of network.
    let drive = |env: &mut Env, steps: usize| {
        for i in 0..steps {
            let a = if i % 7 < 3 { 2.0 } else { -1.5 };
            if env.step(Action::Delta(a)).truncated {
                env.reset(None);
            }
        }
    };
    drive(&mut env, 20_000);
    let n = allocations_during(|| drive(&mut env, 2_000));
    // A rare new high-water mark of in-flight packets may still grow a buffer; a per-step
    // allocation would show up as thousands.
    assert!(n <= 5, "{n} allocations in 2000 steps");
}
