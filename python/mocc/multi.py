"""``mocc.aec_env``: several learned senders on one simulated network, PettingZoo's AEC API.

Why AEC and not the parallel API: each sender decides at the end of its own monitor interval,
and MIs last half the sender's own RTT, so senders rarely decide at the same instant. The
parallel API asks every live agent for an action at every step; here most of them have no
new observation at most steps, and an action they were made to give would be thrown away (or
would change a rate in the middle of an MI, which training never does). In the AEC API the
env says whose turn it is: ``agent_selection`` is always a sender whose MI just ended, in the
order of the simulator's clock; senders whose MIs ended at the same instant take their turns
one after another before the network runs on.

Agents are ``sender_K`` for the scenario's learned senders (``K`` counts them from 0). A
sender joins ``agents`` when its flow starts and leaves after its episode ends (its MI limit,
or its flow's stop time): it is truncated, takes its last turn with ``action=None`` and is
removed. Rewards arrive when an MI closes, which may be during another sender's turn;
``last()`` returns what a sender earned since its previous turn.
"""

from __future__ import annotations

import functools
from os import PathLike
from typing import Any, Optional, Union

import numpy as np
from pettingzoo import AECEnv

from . import _mocc
from .objectives import ObjectiveSource, ObjectiveSpec
from .vector import action_space, observation_space

#: Phases in which a sender's flow has started and its episode is not over.
LIVE = ("running", "ready")


class MoccAECEnv(AECEnv):
    """The learned senders of one scenario file as PettingZoo agents (see the module docs)."""

    metadata = {"name": "mocc_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(
        self,
        scenario: Union[str, PathLike],
        *,
        seed: Optional[int] = None,
        objective: ObjectiveSpec = None,
        episode_mis: Optional[int] = None,
        objective_in_obs: Optional[bool] = None,
    ):
        super().__init__()
        self._core = _mocc.VecEnv(
            str(scenario), 1, 0 if seed is None else seed, 1, episode_mis, objective_in_obs, 0
        )
        lanes = self._core.lanes
        self.possible_agents = [f"sender_{k}" for k in range(lanes)]
        self._lane = {a: k for k, a in enumerate(self.possible_agents)}
        self._obs_space = observation_space(self._core)
        self._act_space = action_space(self._core)
        self.render_mode = None
        self._objectives = ObjectiveSource(objective, lanes, np.asarray(self._core.default_objective))
        self._first_seed = seed
        self._obs = np.zeros((lanes, self._core.obs_len), dtype=np.float32)
        # Set when the Rust env began the next episode after the last one ended (it resets
        # itself); the next `reset` without a seed starts that episode.
        self._next_episode_ready = False
        self.agents = []

    @functools.lru_cache(maxsize=None)
    def observation_space(self, agent: str):
        return self._obs_space

    @functools.lru_cache(maxsize=None)
    def action_space(self, agent: str):
        return self._act_space

    @property
    def core(self) -> _mocc.VecEnv:
        """The Rust env (a batch of one env with one lane per learned sender)."""
        return self._core

    def observe(self, agent: str) -> np.ndarray:
        """The sender's latest observation (its last one, once its episode ended)."""
        return self._obs[self._lane[agent]].copy()

    def reset(self, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None) -> None:
        """Starts an episode; ``seed`` reseeds the network's RNG (default: the constructor's at
        the first reset, else it continues). ``options={"objective": ...}`` replaces the
        objective spec."""
        if seed is None:
            seed, self._first_seed = self._first_seed, None
        options = options or {}
        if "objective" in options:
            self._objectives = ObjectiveSource(
                options["objective"], self._core.lanes, np.asarray(self._core.default_objective)
            )
        self._objectives.seed(seed)
        self._core.set_objectives(self._objectives.all_rows())
        if seed is None and self._next_episode_ready:
            obs = self._core.observations()
        else:
            obs = self._core.reset([seed])
        self._next_episode_ready = False
        self._obs[:] = 0.0
        self.agents = []
        self.rewards, self._cumulative_rewards = {}, {}
        self.terminations, self.truncations, self.infos = {}, {}, {}
        self._pending: dict[int, float] = {}
        self._turns: list[int] = []
        self._join(obs)
        self._turns = [int(k) for k in self._core.ready_lanes()]
        self.agent_selection = self._next_agent()

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            if self.agents:
                self.agent_selection = self._next_agent()
            return
        self._cumulative_rewards[agent] = 0.0
        for a in self.agents:
            self.rewards[a] = 0.0
        lane = self._lane[agent]
        self._pending[lane] = float(np.asarray(action, dtype=np.float32).reshape(()))
        self._turns.remove(lane)
        if not self._turns:
            self._run_network()
        self.agent_selection = self._next_agent()
        self._accumulate_rewards()

    def _run_network(self) -> None:
        """Steps the network with the actions of every sender whose turn it was, until some
        sender decides (or every sender is done, and the episode is over); adds the senders whose flows started, and
        records rewards, statistics and ends of the MIs that closed on the way."""
        ready = [int(k) for k in self._core.ready_lanes()]
        actions = np.asarray([self._pending.pop(k) for k in ready], dtype=np.float32)
        while True:
            out = self._core.step_lanes(actions)
            obs, rewards, terminated, truncated, stats, final_obs, completed, now_ready, restarted = out
            self._record(rewards, terminated, truncated, stats, final_obs, completed)
            if restarted[0]:
                # Every sender is done; the Rust env began the next episode, which starts at
                # the next `reset`.
                self._next_episode_ready = True
                self._turns = []
                return
            self._join(obs, now_ready)
            self._turns = [int(k) for k in np.flatnonzero(now_ready)]
            if self._turns:
                return
            # MIs closed (a probe's, or the last of a sender that left) but nobody decides
            # yet: the network runs on, and senders that start meanwhile join.
            actions = np.zeros(0, dtype=np.float32)

    def _record(self, rewards, terminated, truncated, stats, final_obs, completed) -> None:
        """The rewards, statistics and ends of the MIs that closed in a network step."""
        for k in np.flatnonzero(completed):
            agent = self.possible_agents[k]
            if agent not in self.terminations:
                continue
            self.rewards[agent] += float(rewards[k])
            self.infos[agent] = dict(zip(_mocc.STEP_INFO_NAMES, stats[k].tolist()))
            if terminated[k] or truncated[k]:
                self._obs[k] = final_obs[k]
                self.terminations[agent] = bool(terminated[k])
                self.truncations[agent] = bool(truncated[k])

    def _join(self, obs: np.ndarray, ready: Optional[np.ndarray] = None) -> None:
        """Adds the senders whose flows have started, and copies the observations of the
        lanes that act next."""
        phases = self._core.phases()
        for k, agent in enumerate(self.possible_agents):
            if agent not in self.terminations and phases[k] in LIVE:
                self.agents.append(agent)
                self.rewards[agent] = 0.0
                self._cumulative_rewards[agent] = 0.0
                self.terminations[agent] = False
                self.truncations[agent] = False
                self.infos[agent] = {}
        lanes = range(len(phases)) if ready is None else np.flatnonzero(ready)
        for k in lanes:
            if phases[k] == "ready" and not self._done(self.possible_agents[k]):
                self._obs[k] = obs[k]

    def render(self) -> None:
        """Nothing to draw (no render modes); mocc's figures come from `mocc eval`."""
        return None

    def _done(self, agent: str) -> bool:
        return self.terminations.get(agent, False) or self.truncations.get(agent, False)

    def _next_agent(self) -> Optional[str]:
        """Senders to be removed first (their last turn), then whose MI ended, in lane order."""
        for agent in self.agents:
            if self._done(agent):
                return agent
        if self._turns:
            return self.possible_agents[self._turns[0]]
        return self.agents[0] if self.agents else None

    def close(self) -> None:
        self._core = None
