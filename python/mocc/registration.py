"""Gymnasium ids for mocc's environments, registered when ``mocc`` is imported.

- ``mocc/Aurora-v0``: Aurora's training environment (PCC-RL's ranges, Aurora's reward);
- ``mocc/Mocc-v0``: the same networks with MOCC's reward, the objective in the observation;
- ``mocc/Scenario-v0``: any scenario file, given as ``scenario=PATH``.

``gymnasium.make(id, **kwargs)`` builds a :class:`mocc.MoccEnv` and
``gymnasium.make_vec(id, num_envs, vectorization_mode="vector_entry_point", **kwargs)`` a
:class:`mocc.MoccVectorEnv` (the envs stepped together in Rust). The registered envs take
actions in [-1, 1] (``normalized_actions=True``), the space Gymnasium's checker and
Stable-Baselines3 expect; ``mocc.make`` keeps PCC-RL's raw rate change by default. The two
scenario files are copies of the repository's ``configs/aurora-env.yaml`` and
``configs/scenarios/mocc-env.yaml`` shipped inside the package.
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym

SCENARIOS = Path(__file__).resolve().parent / "scenarios"

#: The registered ids and the scenario file each runs (None: given as ``scenario=``).
IDS = {
    "mocc/Aurora-v0": SCENARIOS / "aurora.yaml",
    "mocc/Mocc-v0": SCENARIOS / "mocc.yaml",
    "mocc/Scenario-v0": None,
}


def register_envs() -> None:
    """Registers :data:`IDS` with Gymnasium (once per process)."""
    for env_id, scenario in IDS.items():
        if env_id in gym.registry:
            continue
        kwargs = {"normalized_actions": True}
        if scenario is not None:
            kwargs["scenario"] = str(scenario)
        gym.register(
            id=env_id,
            entry_point="mocc.single:MoccEnv",
            vector_entry_point="mocc.vector:MoccVectorEnv",
            kwargs=kwargs,
        )
