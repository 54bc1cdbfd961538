"""``mocc.make``: one simulated network as a ``gymnasium.Env``.

The same env as one env of :func:`mocc.make_vec` (``env_index`` picks which: env ``i`` of a
batch seeded with ``s`` is ``make(..., env_index=i)`` reset with ``seed=s``), without
auto-reset: after an episode ends, call ``reset``.
"""

from __future__ import annotations

from os import PathLike
from typing import Any, Optional, Union

import gymnasium as gym
import numpy as np

from . import _mocc
from .objectives import ObjectiveSource, ObjectiveSpec
from .vector import action_scale, action_space, observation_space


class MoccEnv(gym.Env):
    """One env of a scenario file with one learned sender (see the module docs)."""

    metadata = {"render_modes": []}

    def __init__(
        self,
        scenario: Union[str, PathLike],
        *,
        objective: ObjectiveSpec = None,
        episode_mis: Optional[int] = None,
        objective_in_obs: Optional[bool] = None,
        env_index: int = 0,
        seed: Optional[int] = None,
        normalized_actions: bool = False,
    ):
        """``seed`` seeds the first ``reset`` called without one (as ``make_vec``'s does);
        ``normalized_actions`` takes actions in [-1, 1], scaled to the rule's action bound (the
        space Gymnasium's checker and SB3 recommend; the default is PCC-RL's raw rate change)."""
        self._core = _mocc.VecEnv(
            str(scenario), 1, 0, 1, episode_mis, objective_in_obs, env_index
        )
        if self._core.slots_per_env != 1:
            raise ValueError(
                f"{scenario}: {self._core.slots_per_env} learned senders decide at different "
                "times; use mocc.aec_env for this scenario"
            )
        self.observation_space = observation_space(self._core)
        self._action_scale = action_scale(self._core, normalized_actions)
        self.action_space = action_space(self._core, normalized_actions)
        self._first_seed = seed
        self.render_mode = None
        self._objectives = ObjectiveSource(objective, 1, np.asarray(self._core.default_objective))
        self._history = self._core.history_obs_len
        # The Rust env resets itself when an episode ends; the next episode's first
        # observation waits here for `reset`.
        self._next_first_obs: Optional[np.ndarray] = None

    @property
    def core(self) -> _mocc.VecEnv:
        """The Rust env (a batch of one)."""
        return self._core

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Starts an episode: ``seed`` reseeds the env with ``(seed, env_index)``; without one
        its RNG continues. ``options={"objective": ...}`` replaces the objective spec."""
        if seed is None and self._first_seed is not None:
            seed, self._first_seed = self._first_seed, None
        else:
            self._first_seed = None
        super().reset(seed=seed)
        options = options or {}
        if "objective" in options:
            self._objectives = ObjectiveSource(
                options["objective"], 1, np.asarray(self._core.default_objective)
            )
        self._objectives.seed(seed)
        self._core.set_objectives(self._objectives.all_rows())
        if seed is None and self._next_first_obs is not None:
            obs = self._core.observations()
        else:
            obs = self._core.reset([seed])
        self._next_first_obs = None
        return obs[0], {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """One MI; returns ``(obs, reward, terminated, truncated, info)``, ``info`` the MI's
        statistics by name (``mocc.STEP_INFO_NAMES``)."""
        a = np.asarray(action, dtype=np.float32).reshape(1) * self._action_scale
        obs, rewards, terminated, truncated, stats, final_obs = self._core.step(a)
        info = dict(zip(_mocc.STEP_INFO_NAMES, stats[0].tolist()))
        ended = bool(terminated[0] or truncated[0])
        if ended:
            self._next_first_obs = obs[0]
            obs = final_obs
        return obs[0], float(rewards[0]), bool(terminated[0]), bool(truncated[0]), info

    def close(self) -> None:
        self._core = None


def make(scenario: Union[str, PathLike], **kwargs: Any) -> MoccEnv:
    """One ``gymnasium.Env`` of a scenario file; the keyword arguments (``objective``,
    ``episode_mis``, ``objective_in_obs``, ``env_index``, ``seed``, ``normalized_actions``)
    are :class:`MoccEnv`'s. ``seed`` seeds the first reset, as ``make_vec``'s does."""
    return MoccEnv(scenario, **kwargs)
