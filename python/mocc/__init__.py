"""mocc: learned congestion control at Rust speed, from Python.

The simulated networks of mocc-gym behind the APIs Python's reinforcement-learning libraries
take, and the runtime of exported policies:

- :func:`make_vec`: a ``gymnasium.vector.VectorEnv`` of one scenario file (one learned sender
  per env), stepped in Rust with the GIL released;
- :func:`make`: one ``gymnasium.Env``;
- ``gymnasium.make("mocc/Aurora-v0")``, ``"mocc/Mocc-v0"``, ``"mocc/Scenario-v0"``
  (``scenario=PATH``): the registered ids (:mod:`mocc.registration`);
- :func:`aec_env`: a PettingZoo ``AECEnv`` for scenarios with several learned senders, each
  acting at the end of its own monitor intervals;
- :class:`Policy`, :class:`Controller`, :class:`PacketController`: an export folder, run as the
  Rust runtime runs it (bit for bit).

Scenarios are the YAML files the ``mocc`` command line reads; invalid ones raise
:class:`ScenarioError` with the message the command line prints.
"""

from ._mocc import (
    OBJECTIVE_DIM,
    STEP_INFO_NAMES,
    Controller,
    PacketController,
    Policy,
    PolicyError,
    ScenarioError,
    __version__,
)
from .objectives import landmarks, random_objective
from .registration import register_envs
from .single import MoccEnv, make
from .vector import MoccVectorEnv, make_vec

register_envs()


def aec_env(*args, **kwargs):
    """A PettingZoo ``AECEnv`` of a scenario file (see :class:`mocc.multi.MoccAECEnv`).

    Imported on use, so that ``pettingzoo`` is needed only by those who use it.
    """
    from .multi import MoccAECEnv

    return MoccAECEnv(*args, **kwargs)


__all__ = [
    "OBJECTIVE_DIM",
    "STEP_INFO_NAMES",
    "Controller",
    "MoccEnv",
    "MoccVectorEnv",
    "PacketController",
    "Policy",
    "PolicyError",
    "ScenarioError",
    "__version__",
    "aec_env",
    "landmarks",
    "make",
    "make_vec",
    "random_objective",
]
