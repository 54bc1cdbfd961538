"""mocc.make: one gymnasium.Env, checked by Gymnasium's own env checker."""

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scenarios import AURORA, BESIDE_CUBIC, MOCC

import mocc


@pytest.mark.parametrize("scenario", [AURORA, MOCC, BESIDE_CUBIC])
def test_gymnasium_env_checker_passes(scenario):
    env = mocc.make(scenario, episode_mis=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # The checker's one advice: actions are Aurora's rate changes, not normalized to
        # [-1, 1] (the policy's Gaussian acts on this scale, as in PCC-RL).
        warnings.filterwarnings("ignore", message=".*symmetric and normalized space.*")
        check_env(env, skip_render_check=True)


def test_episodes_end_at_the_mi_limit_and_reset_continues():
    env = mocc.make(AURORA, episode_mis=8)
    obs, _ = env.reset(seed=3)
    fresh = obs.copy()
    for k in range(8):
        obs, reward, terminated, truncated, info = env.step(np.array([0.5]))
        assert not terminated
        assert truncated == (k == 7)
        assert info["reward"] == reward
    last = obs
    # The ended episode's last observation is not a fresh one; the next episode starts fresh.
    assert not np.array_equal(last, fresh)
    nxt, _ = env.reset()
    np.testing.assert_array_equal(nxt, fresh)  # empty MIs look the same in every episode
    # Another network was drawn.
    _, _, _, _, info_a = env.step(np.array([0.0]))
    env.reset(seed=3)
    _, _, _, _, info_b = env.step(np.array([0.0]))
    assert info_a["capacity_pps"] != info_b["capacity_pps"]


def test_single_env_i_is_env_i_of_a_batch():
    batch = mocc.make_vec(AURORA, 3)
    b_obs, _ = batch.reset(seed=8)
    one = mocc.make(AURORA, env_index=2)
    o, _ = one.reset(seed=8)
    np.testing.assert_array_equal(o, b_obs[2])
    for k in range(20):
        a = np.float32([0.3 * k % 2 - 0.5] * 3)
        b_obs, b_rew, *_ = batch.step(a)
        o, r, *_ = one.step(a[2:])
        np.testing.assert_array_equal(o, b_obs[2])
        assert r == b_rew[2]
