"""Stable-Baselines3's ``VecEnv`` over a :class:`mocc.MoccVectorEnv`: the whole batch steps in
Rust, where SB3's own ``DummyVecEnv`` would loop over single envs in Python.

    from stable_baselines3 import PPO
    from mocc.sb3 import Sb3VecEnv
    env = Sb3VecEnv(mocc.make_vec("configs/aurora-env.yaml", 16, seed=0))
    PPO("MlpPolicy", env).learn(100_000)

Episodes end by truncation at the scenario's MI limit; SB3 reads that from
``info["TimeLimit.truncated"]`` and bootstraps from ``info["terminal_observation"]``.
Requires ``stable-baselines3`` (``pip install "mocc[examples]"``).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from . import _mocc
from .vector import MoccVectorEnv


class Sb3VecEnv(VecEnv):
    """A ``MoccVectorEnv`` as an SB3 ``VecEnv`` (see the module docs)."""

    def __init__(self, env: MoccVectorEnv):
        self.env = env
        self.render_mode = None
        super().__init__(env.num_envs, env.single_observation_space, env.single_action_space)
        self._actions: Optional[np.ndarray] = None

    def reset(self) -> np.ndarray:
        seeds = self._seeds if any(s is not None for s in self._seeds) else None
        options = self._options[0] if self._options and self._options[0] else None
        obs, _ = self.env.reset(seed=seeds, options=options)
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions, dtype=np.float32).reshape(self.num_envs)

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.env.step(self._actions)
        dones = terminated | truncated
        per_env = self._infos(infos, terminated, truncated)
        return obs, rewards.astype(np.float32), dones, per_env

    def _infos(self, infos: dict, terminated: np.ndarray, truncated: np.ndarray) -> list:
        """Gymnasium's dict of arrays as SB3's list of dicts, with SB3's end-of-episode keys."""
        ended = terminated | truncated
        stats = [infos, infos.get("final_info", {})]
        out = []
        for i in range(self.num_envs):
            source = stats[1] if ended[i] else stats[0]
            info = {name: float(source[name][i]) for name in _mocc.STEP_INFO_NAMES if name in source}
            if ended[i]:
                info["terminal_observation"] = infos["final_obs"][i]
                info["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
            out.append(info)
        return out

    def close(self) -> None:
        self.env.close()

    def get_attr(self, attr_name: str, indices=None) -> list:
        return [getattr(self, attr_name, None) for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"Sb3VecEnv: the envs of a batch have no attribute {attr_name!r} to set")

    def env_method(self, method_name: str, *args, indices=None, **kwargs) -> list:
        raise AttributeError(f"Sb3VecEnv: the envs of a batch have no method {method_name!r}")

    def env_is_wrapped(self, wrapper_class, indices=None) -> list:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[Optional[np.ndarray]]:
        return [None for _ in range(self.num_envs)]
