"""mocc.aec_env: several learned senders as PettingZoo agents, each acting at its MIs' ends."""

import numpy as np
from pettingzoo.test import api_test, seed_test
from scenarios import LATECOMER, SHARED

import mocc


def test_pettingzoo_api_test_passes():
    api_test(mocc.aec_env(SHARED, seed=1, episode_mis=60), num_cycles=2000)


def test_pettingzoo_seed_test_passes():
    seed_test(lambda: mocc.aec_env(SHARED, episode_mis=40), num_cycles=300)


def run_episode(env, seed, policy=lambda obs: 0.0):
    """Plays one episode; returns who took turns, in order, each sender's return and the
    number of agents after every turn."""
    env.reset(seed=seed)
    turns, returns, sizes = [], {}, []
    for agent in env.agent_iter():
        obs, reward, terminated, truncated, info = env.last()
        returns[agent] = returns.get(agent, 0.0) + reward
        turns.append(agent)
        env.step(None if terminated or truncated else np.float32([policy(obs)]))
        sizes.append(len(env.agents))
    return turns, returns, sizes


def test_senders_join_as_their_flows_start_and_leave_at_their_limit():
    # Four senders starting at 0, 5, 10 and 15 s, 800 MIs each (20-40 ms each): all four
    # share the link for a while, and each leaves at its own limit.
    env = mocc.aec_env(LATECOMER, seed=2, episode_mis=800)
    env.reset(seed=2)
    assert env.agents == ["sender_1"]  # the one that starts at 0 s
    turns, returns, sizes = run_episode(env, 2)
    assert set(returns) == set(env.possible_agents)
    assert max(sizes) == 4 and sizes[-1] == 0
    # Each sender decides once per MI: 800 decisions and one last turn to leave.
    for agent in env.possible_agents:
        assert turns.count(agent) == 801, agent
    # The first turns are the first sender's alone, until the others start.
    assert set(turns[:20]) == {"sender_1"}
    assert all(r > 0 for r in returns.values())


def test_same_seed_same_episode():
    a = run_episode(mocc.aec_env(SHARED, episode_mis=50), 7, policy=lambda o: float(o[-1] - 1))
    b = run_episode(mocc.aec_env(SHARED, episode_mis=50), 7, policy=lambda o: float(o[-1] - 1))
    assert a == b
