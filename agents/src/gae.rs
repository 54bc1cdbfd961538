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
    let lanes: Vec<u32> = (0..rewards.len()).map(|i| (i % n_envs) as u32).collect();
    compute_gae_lanes(rewards, values, ended, &lanes, next_values, gamma, lambda)
}

/// Generalized advantage estimation over rows of interleaved trajectories: row `i` belongs to
/// lane `lanes[i]`, and each lane's rows are in time order (lanes may have different numbers of
/// rows, as learned senders that decide at their own times do). `next_values[lane]` is the
/// value of the observation after the lane's last row. Episode ends work as in
/// [`compute_gae`]. Returns (advantages, returns).
pub fn compute_gae_lanes(
    rewards: &[f32],
    values: &[f32],
    ended: &[f32],
    lanes: &[u32],
    next_values: &[f32],
    gamma: f64,
    lambda: f64,
) -> (Vec<f32>, Vec<f32>) {
    let mut adv = vec![0.0f32; rewards.len()];
    let mut last = vec![0.0f64; next_values.len()];
    let mut next_v = next_values.to_vec();
    for i in (0..rewards.len()).rev() {
        let e = lanes[i] as usize;
        let live = 1.0 - f64::from(ended[i]);
        let delta =
            f64::from(rewards[i]) + gamma * f64::from(next_v[e]) * live - f64::from(values[i]);
        last[e] = delta + gamma * lambda * live * last[e];
        adv[i] = last[e] as f32;
        next_v[e] = values[i];
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

    #[test]
    fn lanes_of_different_lengths_are_separate_trajectories() {
        // Lane 0 has rows 0, 2, 3; lane 1 only row 1. gamma 0.5, lambda 1, values 0.
        // Lane 0: A3 = 1 + 0.5*4 = 3, A2 = 1 + 0.5*3 = 2.5, A0 = 1 + 0.5*2.5 = 2.25.
        // Lane 1: A1 = 2 + 0.5*8 = 6.
        let (adv, ret) = compute_gae_lanes(
            &[1.0, 2.0, 1.0, 1.0],
            &[0.0; 4],
            &[0.0; 4],
            &[0, 1, 0, 0],
            &[4.0, 8.0],
            0.5,
            1.0,
        );
        assert_eq!(adv, vec![2.25, 6.0, 2.5, 3.0]);
        assert_eq!(ret, adv);
    }

    #[test]
    fn lockstep_lanes_match_the_step_major_form() {
        let r = [0.3, -1.0, 2.0, 0.5, 0.25, 1.5];
        let v = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6];
        let ended = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        let a = compute_gae(&r, &v, &ended, &[0.7, -0.2], 2, 0.9, 0.95);
        let b = compute_gae_lanes(&r, &v, &ended, &[0, 1, 0, 1, 0, 1], &[0.7, -0.2], 0.9, 0.95);
        assert_eq!(a, b);
    }
}
