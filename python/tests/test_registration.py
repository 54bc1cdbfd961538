"""The Gymnasium ids mocc registers, checked by Gymnasium's own env checker."""

import warnings

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from scenarios import AURORA, MOCC

import mocc
from mocc.registration import IDS


@pytest.mark.parametrize("env_id", ["mocc/Aurora-v0", "mocc/Mocc-v0"])
def test_registered_envs_pass_the_checker_without_warnings(env_id):
    env = gymnasium.make(env_id, episode_mis=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space == gymnasium.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)


def test_packaged_scenarios_are_the_repositorys():
    assert IDS["mocc/Aurora-v0"].read_text() == AURORA.read_text()
    assert IDS["mocc/Mocc-v0"].read_text() == MOCC.read_text()


def test_a_normalized_action_is_the_raw_action_times_the_bound():
    raw = mocc.make(AURORA, episode_mis=20)
    scaled = gymnasium.make("mocc/Scenario-v0", scenario=str(AURORA), episode_mis=20)
    bound = float(raw.action_space.high[0])
    a, _ = raw.reset(seed=5)
    b, _ = scaled.reset(seed=5)
    np.testing.assert_array_equal(a, b)
    for x in [0.5, -0.25, 1.0]:
        a, ra, *_ = raw.step(np.float32([x * bound]))
        b, rb, *_ = scaled.step(np.float32([x]))
        np.testing.assert_array_equal(a, b)
        assert ra == rb


def test_make_vec_builds_the_rust_batch():
    envs = gymnasium.make_vec(
        "mocc/Aurora-v0", 3, vectorization_mode="vector_entry_point", seed=4, episode_mis=10
    )
    assert isinstance(envs, mocc.MoccVectorEnv)
    obs, _ = envs.reset()
    same = mocc.make_vec(AURORA, 3, seed=4, episode_mis=10, normalized_actions=True)
    np.testing.assert_array_equal(obs, same.reset()[0])
    out = envs.step(np.zeros((3, 1), dtype=np.float32))
    np.testing.assert_array_equal(out[0], same.step(np.zeros((3, 1), dtype=np.float32))[0])


def test_make_takes_a_seed_as_make_vec_does():
    seeded = mocc.make(AURORA, seed=11)
    first, _ = seeded.reset()
    again, _ = mocc.make(AURORA).reset(seed=11)
    np.testing.assert_array_equal(first, again)
    # The seed is for the first reset only; an env's vector twin agrees.
    vec, _ = mocc.make_vec(AURORA, 1, seed=11).reset()
    np.testing.assert_array_equal(first, vec[0])
