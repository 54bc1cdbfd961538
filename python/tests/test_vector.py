"""mocc.make_vec: Gymnasium's vector API over the Rust VecEnv, the same numbers as Rust."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from scenarios import AURORA, MOCC, SHARED

import mocc


def random_actions(steps, n, seed=5):
    return np.random.default_rng(seed).uniform(-3, 3, size=(steps, n)).astype(np.float32)


def test_spaces_come_from_the_scenario():
    aurora = mocc.make_vec(AURORA, 3)
    assert aurora.single_observation_space.shape == (30,)  # 10 MIs x 3 features
    assert aurora.observation_space.shape == (3, 30)
    assert aurora.single_action_space.shape == (1,)
    assert aurora.core.features == ["sent latency inflation", "latency ratio", "send ratio"]
    assert aurora.metadata["autoreset_mode"] == AutoresetMode.SAME_STEP
    m = mocc.make_vec(MOCC, 2, objective=[0.6, 0.3, 0.1])
    space = m.single_observation_space
    assert space.shape == (33,) and m.core.objective_in_obs
    assert np.all(space.low[30:] == 0) and np.all(space.high[30:] == 1)
    obs, _ = m.reset(seed=0)
    assert obs.dtype == np.float32
    np.testing.assert_array_equal(obs[:, 30:], np.float32([[0.6, 0.3, 0.1]] * 2))
    assert obs in m.observation_space


def test_same_seed_same_numbers_as_the_rust_vec_env():
    """Observations and rewards through Python equal the Rust VecEnv's bit for bit, across
    auto-resets, whatever the number of threads."""
    n, steps, seed = 4, 60, 11
    actions = random_actions(steps, n)
    ref_obs, ref_rewards = mocc._mocc.reference_rollout(str(AURORA), n, seed, actions, 25)
    for threads in (1, 2):
        env = mocc.make_vec(AURORA, n, seed=seed, threads=threads, episode_mis=25)
        obs, _ = env.reset(seed=seed)
        np.testing.assert_array_equal(obs, ref_obs[0])
        ended = 0
        for t in range(steps):
            obs, rewards, terminated, truncated, infos = env.step(actions[t])
            np.testing.assert_array_equal(obs, ref_obs[t + 1])
            np.testing.assert_array_equal(rewards.astype(np.float32), ref_rewards[t])
            # Every env ends at the same step here: then the statistics are the final ones.
            stats = infos if "reward" in infos else infos["final_info"]
            np.testing.assert_array_equal(stats["reward"], rewards)
            ended += truncated.sum()
        assert ended == n * (steps // 25)


def test_matches_gymnasiums_own_sync_vector_env_of_single_envs():
    """The batch is Gymnasium's SyncVectorEnv (same-step auto-reset) of mocc.make envs."""
    n, steps, seed = 3, 45, 4
    ours = mocc.make_vec(AURORA, n, episode_mis=20)
    theirs = SyncVectorEnv(
        [lambda i=i: mocc.make(AURORA, episode_mis=20, env_index=i) for i in range(n)],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    a, _ = ours.reset(seed=seed)
    b, _ = theirs.reset(seed=[seed] * n)
    np.testing.assert_array_equal(a, b)
    actions = random_actions(steps, n, seed=2)
    for t in range(steps):
        a_obs, a_rew, a_term, a_trunc, a_info = ours.step(actions[t])
        b_obs, b_rew, b_term, b_trunc, b_info = theirs.step(actions[t][:, None])
        np.testing.assert_array_equal(a_obs, b_obs)
        np.testing.assert_array_equal(a_rew, b_rew)
        np.testing.assert_array_equal(a_term, b_term)
        np.testing.assert_array_equal(a_trunc, b_trunc)
        assert ("final_obs" in a_info) == ("final_obs" in b_info), t
        if "final_obs" in b_info:
            np.testing.assert_array_equal(a_info["_final_obs"], b_info["_final_obs"])
            for i in np.flatnonzero(b_info["_final_obs"]):
                np.testing.assert_array_equal(a_info["final_obs"][i], b_info["final_obs"][i])
            for name in mocc.STEP_INFO_NAMES:
                fa, fb = a_info["final_info"], b_info["final_info"]
                mask = fb["_" + name]
                np.testing.assert_array_equal(fa["_" + name], mask)
                np.testing.assert_array_equal(fa[name][mask], fb[name][mask])
        for name in mocc.STEP_INFO_NAMES:
            assert (name in a_info) == (name in b_info), (t, name)
            if name not in b_info:
                continue
            mask = b_info["_" + name]
            np.testing.assert_array_equal(a_info["_" + name], mask)
            np.testing.assert_array_equal(a_info[name][mask], b_info[name][mask])


def test_infos_hold_each_mis_statistics_by_name():
    env = mocc.make_vec(AURORA, 2, seed=3)
    env.reset()
    _, rewards, _, _, infos = env.step(np.zeros(2))
    assert set(mocc.STEP_INFO_NAMES) <= set(infos)
    assert np.all(infos["_utilization"])
    assert np.all(infos["capacity_pps"] >= 100) and np.all(infos["capacity_pps"] <= 500)
    assert np.all(infos["duration_s"] > 0) and np.all(infos["mean_rtt_s"] > 0)
    np.testing.assert_allclose(
        infos["utilization"], infos["throughput_pps"] / infos["capacity_pps"]
    )
    # Aurora's reward from the same MI's statistics.
    expect = 0.001 * (10 * infos["metric_thr_pps"] - 1000 * infos["mean_rtt_s"] - 2000 * infos["loss"])
    np.testing.assert_allclose(rewards, expect, rtol=1e-9, atol=1e-12)


def test_objectives_weigh_the_reward_and_are_drawn_per_episode():
    env = mocc.make_vec(MOCC, 2, objective="random", episode_mis=5)
    first, _ = env.reset(seed=1)
    again, _ = env.reset(seed=1)
    np.testing.assert_array_equal(first, again)
    w0 = first[:, 30:].copy()
    assert not np.array_equal(w0[0], w0[1])
    for _ in range(5):
        obs, _, _, truncated, infos = env.step(np.zeros(2))
    assert truncated.all()
    # The next episodes have new objectives, in their observations and in force.
    assert not np.allclose(obs[:, 30:], w0)
    np.testing.assert_allclose(env.objectives(), obs[:, 30:])
    # The MOCC reward is the objective's weighted sum of the MI's terms.
    env = mocc.make_vec(MOCC, 3, objective=[[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]])
    env.reset(seed=2)
    _, rewards, _, _, infos = env.step(np.zeros(3))
    thr = np.minimum(infos["throughput_pps"] / infos["capacity_pps"], 1)
    lat = np.minimum(infos["base_rtt_s"] / infos["mean_rtt_s"], 1)
    loss = 1 - infos["loss"]
    w = env.objectives().astype(np.float64)
    np.testing.assert_allclose(rewards, w[:, 0] * thr + w[:, 1] * lat + w[:, 2] * loss, rtol=1e-6)


def test_named_errors():
    with pytest.raises(mocc.ScenarioError, match="no-such.yaml"):
        mocc.make_vec("no-such.yaml", 2)
    with pytest.raises(ValueError, match="aec_env"):
        mocc.make_vec(SHARED, 2)
    env = mocc.make_vec(AURORA, 2)
    env.reset()
    with pytest.raises(ValueError):
        env.step(np.zeros(3))
    with pytest.raises(ValueError, match="sum to 1"):
        env.set_objectives(np.ones((2, 3)))
    with pytest.raises(ValueError, match="objective"):
        mocc.make_vec(MOCC, 2, objective="landmarks:x")


def test_misspelled_field_names_the_file_and_field(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("link:\n  bandwidth_ppps: 100\n")
    with pytest.raises(mocc.ScenarioError) as e:
        mocc.make_vec(bad, 1)
    assert "bad.yaml" in str(e.value) and "bandwidth_ppps" in str(e.value)


def test_gymnasium_vector_wrappers_work():
    env = gym.wrappers.vector.RecordEpisodeStatistics(mocc.make_vec(AURORA, 2, episode_mis=10))
    env.reset(seed=0)
    returns = []
    for _ in range(10):
        _, rewards, _, truncated, infos = env.step(np.zeros(2))
        returns.append(rewards)
    assert truncated.all() and "episode" in infos
    np.testing.assert_allclose(infos["episode"]["r"], np.sum(returns, axis=0), rtol=1e-5)
    np.testing.assert_array_equal(infos["episode"]["l"], [10, 10])


def test_landmarks_are_mocc_s_grid():
    assert mocc.landmarks(3).tolist() == [[1 / 3, 1 / 3, 1 / 3]]
    grid = mocc.landmarks(10)
    assert grid.shape == (36, 3)
    assert np.all(grid > 0) and np.allclose(grid.sum(axis=1), 1)
