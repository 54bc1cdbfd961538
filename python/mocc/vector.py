"""``mocc.make_vec``: a Gymnasium vector environment over the Rust ``VecEnv``.

One learned sender per env. A step gives every env its action (the rate change of the next
monitor interval, Aurora's rule: ``rate *= 1 + delta_scale * a`` for ``a >= 0``, ``/= 1 -
delta_scale * a`` otherwise) and runs each until its sender decides again; the step runs in
Rust with the GIL released, on ``threads`` threads.

Auto-reset is Gymnasium's same-step mode (``metadata["autoreset_mode"] ==
AutoresetMode.SAME_STEP``): where an episode ended, the step returns the next episode's first
observation, and ``infos["final_obs"]`` / ``infos["final_info"]`` hold the ended episode's last
observation and statistics (masks ``infos["_final_obs"]``, ``infos["_final_info"]``).
"""

from __future__ import annotations

from os import PathLike
from typing import Any, Optional, Union

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from . import _mocc
from .objectives import ObjectiveSource, ObjectiveSpec

Seeds = Union[None, int, list]


#: The bound of the history's features, which have no natural range (finite, as Gymnasium's
#: and PettingZoo's checkers ask).
FEATURE_BOUND = float(np.finfo(np.float32).max)


def observation_space(core: _mocc.VecEnv) -> gym.spaces.Box:
    """One lane's observation: the history (features without a natural range, oldest MI
    first), then the objective's 3 weights in [0, 1] where the scenario takes one."""
    history = core.history_obs_len
    low = np.full(core.obs_len, -FEATURE_BOUND, dtype=np.float32)
    high = np.full(core.obs_len, FEATURE_BOUND, dtype=np.float32)
    low[history:] = 0.0
    high[history:] = 1.0
    return gym.spaces.Box(low, high, dtype=np.float32)


def action_space(core: _mocc.VecEnv, normalized: bool = False) -> gym.spaces.Box:
    """One lane's action: the rate change of the next MI. Any real number is valid; the bound
    is the largest one that still changes anything (``core.action_bound``: from the rule's
    minimum rate to its maximum in one MI). ``normalized``: [-1, 1], scaled by
    :func:`action_scale`."""
    if normalized:
        return gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
    bound = np.float32(core.action_bound)
    return gym.spaces.Box(-bound, bound, shape=(1,), dtype=np.float32)


def action_scale(core: _mocc.VecEnv, normalized: bool) -> np.float32:
    """What an action is multiplied by before the env applies it (the bound when normalized)."""
    return np.float32(core.action_bound) if normalized else np.float32(1.0)


def info_dict(stats: np.ndarray, mask: np.ndarray) -> dict[str, Any]:
    """Per-MI statistics ``[n, k]`` as Gymnasium's dict of arrays: one column view per name
    of ``STEP_INFO_NAMES``, each with its mask ``_name`` (one read-only array shared by all)."""
    mask = np.array(mask, dtype=np.bool_)
    mask.flags.writeable = False
    out: dict[str, Any] = {}
    for k, name in enumerate(_mocc.STEP_INFO_NAMES):
        out[name] = stats[:, k]
        out["_" + name] = mask
    return out


def seeds_per_env(seed: Seeds, n: int) -> list:
    """Gymnasium's ``reset(seed=...)`` as one seed (or ``None``) per env: an int seeds env ``i``
    with ``(seed, i)`` (its own stream, as the Rust ``VecEnv`` does)."""
    if seed is None or isinstance(seed, (int, np.integer)):
        return [None if seed is None else int(seed)] * n
    seeds = list(seed)
    if len(seeds) != n:
        raise ValueError(f"seed: expected {n} seeds (one per env), got {len(seeds)}")
    return [None if s is None else int(s) for s in seeds]


class MoccVectorEnv(gym.vector.VectorEnv):
    """``num_envs`` simulated networks of one scenario file (see the module docs)."""

    metadata = {"autoreset_mode": AutoresetMode.SAME_STEP, "render_modes": []}

    def __init__(
        self,
        scenario: Union[str, PathLike],
        num_envs: int,
        *,
        seed: Optional[int] = None,
        objective: ObjectiveSpec = None,
        threads: int = 1,
        episode_mis: Optional[int] = None,
        objective_in_obs: Optional[bool] = None,
        first_env: int = 0,
        normalized_actions: bool = False,
    ):
        self._core = _mocc.VecEnv(
            str(scenario),
            num_envs,
            0 if seed is None else seed,
            threads,
            episode_mis,
            objective_in_obs,
            first_env,
        )
        if self._core.slots_per_env != 1:
            raise ValueError(
                f"{scenario}: {self._core.slots_per_env} learned senders per env decide at "
                "different times; use mocc.aec_env for this scenario"
            )
        self.num_envs = num_envs
        self.single_observation_space = observation_space(self._core)
        # Actions in [-1, 1] scaled to the rule's bound, or PCC-RL's raw rate change.
        self._action_scale = action_scale(self._core, normalized_actions)
        self.single_action_space = action_space(self._core, normalized_actions)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.render_mode = None
        self._objectives = ObjectiveSource(objective, num_envs, np.asarray(self._core.default_objective))
        self._objectives.seed(seed)
        self._history = self._core.history_obs_len
        self._seed_on_first_reset = seed

    @property
    def core(self) -> _mocc.VecEnv:
        """The Rust batch (its scenario's facts: ``features``, ``history_len``, ``reward``...)."""
        return self._core

    def reset(
        self, *, seed: Seeds = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Resets every env. ``seed``: an int (env ``i`` gets ``(seed, i)``), one per env, or
        ``None`` (each env's RNG continues; the first reset uses the constructor's seed).
        ``options={"objective": ...}`` replaces the objective spec (see ``mocc.objectives``)."""
        super().reset(seed=seed if isinstance(seed, (int, np.integer)) else None)
        if seed is None and self._seed_on_first_reset is not None:
            seed = self._seed_on_first_reset
        self._seed_on_first_reset = None
        options = options or {}
        if "objective" in options:
            self._objectives = ObjectiveSource(
                options["objective"], self.num_envs, np.asarray(self._core.default_objective)
            )
        if isinstance(seed, (int, np.integer)):
            self._objectives.seed(int(seed))
        self._core.set_objectives(self._objectives.all_rows())
        obs = self._core.reset(seeds_per_env(seed, self.num_envs))
        return obs, {}

    def step(
        self, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One MI per env; returns ``(obs, rewards, terminations, truncations, infos)``."""
        actions = np.ascontiguousarray(actions, dtype=np.float32).reshape(self.num_envs)
        if self._action_scale != 1.0:
            actions = actions * self._action_scale
        obs, rewards, terminated, truncated, stats, final_obs = self._core.step(actions)
        ended = terminated | truncated
        if final_obs is None:
            return obs, rewards, terminated, truncated, info_dict(stats, np.ones(self.num_envs))
        # As Gymnasium's own vector envs: the statistics of the envs that did not end (a
        # new episode's reset gives none), and of the ended ones under final_info.
        infos = info_dict(stats, ~ended) if not ended.all() else {}
        finals = np.full(self.num_envs, None, dtype=object)
        for i in np.flatnonzero(ended):
            finals[i] = final_obs[i]
        infos["final_obs"] = finals
        infos["_final_obs"] = ended
        infos["final_info"] = info_dict(stats, ended)
        infos["_final_info"] = ended
        if self._objectives.sampler is not None:
            self._new_objectives(np.flatnonzero(ended), obs)
        return obs, rewards, terminated, truncated, infos

    def _new_objectives(self, envs: np.ndarray, obs: np.ndarray) -> None:
        """Draws the next episodes' objectives of `envs` and writes them into their rows."""
        rows = self._core.objectives()
        rows[envs] = self._objectives.draw(len(envs))
        self._core.set_objectives(rows)
        if self._core.objective_in_obs:
            obs[envs, self._history :] = rows[envs].astype(np.float32)

    def set_objectives(self, objectives: np.ndarray) -> None:
        """Sets every env's objective now (``[num_envs, 3]``): it weighs the rewards of the
        MIs from the next step on, and appears in observations from the next step on."""
        self._core.set_objectives(np.asarray(objectives, dtype=np.float64))

    def objectives(self) -> np.ndarray:
        """Every env's objective, ``[num_envs, 3]``."""
        return self._core.objectives()

    def close_extras(self, **kwargs: Any) -> None:
        self._core = None


def make_vec(scenario: Union[str, PathLike], num_envs: int, **kwargs: Any) -> MoccVectorEnv:
    """A ``gymnasium.vector.VectorEnv`` of ``num_envs`` envs of a scenario file; the keyword
    arguments are :class:`MoccVectorEnv`'s.

    ``seed`` seeds env ``i`` with ``(seed, i)`` at the first reset; ``objective`` is a spec of
    ``mocc.objectives`` (MOCC scenarios: it weighs the reward and ends each observation);
    ``threads`` steps the envs in parallel (results do not depend on it); ``episode_mis``
    overrides the scenario's episode length; ``objective_in_obs`` forces the objective into
    observations on or off (default: on for ``reward: mocc``); ``normalized_actions`` takes
    actions in [-1, 1], scaled to the rule's action bound."""
    return MoccVectorEnv(scenario, num_envs, **kwargs)
