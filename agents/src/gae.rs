//! Generalized advantage estimation (Schulman et al. 2016) over a flat `[steps, envs]` rollout,
//! with episode ends that stop the recursion.

/// Generalized advantage estimation over a `[steps, envs]` rollout.
///
/// `ended[t*n + e]` is 1 when env `e`'s episode ended at step `t` (terminated or truncated; on
/// truncation the caller has already added `gamma * V(final observation)` to the reward, so the
/// time limit is bootstrapped while a termination is not). `next_values` are the values of the
/// observations after the last step. Returns (advantages, returns).
pub fn compute_gae(
    rewards: &[f32],
    values: &[f32],
    ended: &[f32],
    next_values: &[f32],
    n_envs: usize,
    gamma: f64,
    lambda: f64,
) -> (Vec<f32>, Vec<f32>) {
    let steps = rewards.len() / n_envs;
    let mut adv = vec![0.0f32; rewards.len()];
    let mut last = vec![0.0f64; n_envs];
    for t in (0..steps).rev() {
        for e in 0..n_envs {
            let i = t * n_envs + e;
            let next_v = if t + 1 == steps {
                next_values[e]
            } else {
                values[i + n_envs]
            };
            let live = 1.0 - f64::from(ended[i]);
            let delta =
                f64::from(rewards[i]) + gamma * f64::from(next_v) * live - f64::from(values[i]);
            last[e] = delta + gamma * lambda * live * last[e];
            adv[i] = last[e] as f32;
        }
    }
    let returns = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    (adv, returns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gae_hand_computed_with_termination_and_truncation() {
        // One env, 3 steps, gamma 0.5, lambda 0.5, values 1 everywhere, rewards 1.
        // Episode ends (terminated) at t=1; next value after the rollout 2.
        let r = [1.0, 1.0, 1.0];
        let v = [1.0, 1.0, 1.0];
        let ended = [0.0, 1.0, 0.0];
        let (adv, ret) = compute_gae(&r, &v, &ended, &[2.0], 1, 0.5, 0.5);
        // t=2: delta = 1 + 0.5*2 - 1 = 1; A2 = 1.
        // t=1: ended: delta = 1 - 1 = 0; A1 = 0.
        // t=0: delta = 1 + 0.5*1 - 1 = 0.5; A0 = 0.5 + 0.25*0 = 0.5.
        assert_eq!(adv, vec![0.5, 0.0, 1.0]);
        assert_eq!(ret, vec![1.5, 1.0, 2.0]);
        // Truncation at t=1 with V(final obs) = 4: the caller adds gamma*4 = 2 to r1.
        // t=1: delta = 3 - 1 = 2 = A1; t=0: A0 = 0.5 + 0.25*2 = 1.
        let r_trunc = [1.0, 1.0 + 0.5 * 4.0, 1.0];
        let (adv, _) = compute_gae(&r_trunc, &v, &ended, &[2.0], 1, 0.5, 0.5);
        assert_eq!(adv, vec![1.0, 2.0, 1.0]);
        // No end: A1 = delta1 + 0.25*A2 = (1 + 0.5 - 1) + 0.25 = 0.75; A0 = 0.5 + 0.25*0.75.
        let (adv, _) = compute_gae(&r, &v, &[0.0, 0.0, 0.0], &[2.0], 1, 0.5, 0.5);
        assert_eq!(adv, vec![0.6875, 0.75, 1.0]);
    }

    #[test]
    fn gae_keeps_envs_apart() {
        // Two envs interleaved [t0e0, t0e1, t1e0, t1e1]; env 1 terminates at t0.
        let (adv, _) = compute_gae(
            &[1.0, 1.0, 0.0, 0.0],
            &[0.0, 0.0, 0.0, 0.0],
            &[0.0, 1.0, 0.0, 0.0],
            &[0.0, 0.0],
            2,
            1.0,
            1.0,
        );
        assert_eq!(adv, vec![1.0, 1.0, 0.0, 0.0]);
    }
}
