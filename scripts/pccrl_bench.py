#!/usr/bin/env python3
"""PCC-RL's own simulator, timed the way `mocc bench env` times ours.

    python3 scripts/pccrl_bench.py PCC_RL_CHECKOUT [--steps N] [--seed S] [--count-events]

Steps PCC-RL's `SimulatedNetworkEnv` (src/gym/network_sim.py, Aurora's training environment)
with the constant action 0, resetting at the end of each episode, and prints one JSON line with
env steps per second. `--count-events` also counts the event-queue pops (three per packet, as in
mocc), at the price of a Python call per event: time and count in separate runs.

PCC-RL imports OpenAI Gym only for a base class, a space and a seeding helper; a stand-in for
those is put on the path, so only numpy is needed (`make pytools` installs it under
~/.cache/mocc/pytools; pass that folder in PYTHONPATH). Run it pinned to the core the mocc
benchmark uses (`taskset -c 1`), alternated with it.
"""

import argparse
import heapq
import json
import os
import random
import shutil
import sys
import tempfile
import time

GYM_STAND_IN = {
    "gym/__init__.py": "class Env:\n    pass\nfrom . import spaces\n",
    "gym/spaces.py": (
        "class Box:\n"
        "    def __init__(self, low, high, dtype=None, shape=None):\n"
        "        self.low, self.high = low, high\n"
    ),
    "gym/utils/__init__.py": "from . import seeding\n",
    "gym/utils/seeding.py": (
        "import numpy as np\n"
        "def np_random(seed=None):\n"
        "    return np.random.RandomState(seed), seed\n"
    ),
    "gym/envs/__init__.py": "",
    "gym/envs/registration.py": "def register(**kwargs):\n    pass\n",
}


def write_gym_stand_in(folder):
    for path, text in GYM_STAND_IN.items():
        full = os.path.join(folder, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(text)


def count_pops():
    """Wraps heapq.heappop (PCC-RL's event loop) with a counter; returns the counter."""
    pops = [0]
    pop = heapq.heappop

    def counted(queue):
        pops[0] += 1
        return pop(queue)

    heapq.heappop = counted
    return pops


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", help="a PCC-RL checkout (its src/gym/network_sim.py)")
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count-events", action="store_true")
    args = parser.parse_args()
    sim_dir = os.path.join(os.path.abspath(args.checkout), "src", "gym")
    if not os.path.isfile(os.path.join(sim_dir, "network_sim.py")):
        sys.exit(f"pccrl_bench: no src/gym/network_sim.py under {args.checkout}")
    stand_in = tempfile.mkdtemp(prefix="pccrl-gym-")
    write_gym_stand_in(stand_in)
    os.chdir(stand_in)  # PCC-RL writes its episode logs (pcc_env_log_run_*.json) here
    sys.path[:0] = [stand_in, sim_dir]
    pops = count_pops() if args.count_events else None
    sys.argv = sys.argv[:1]  # PCC-RL parses the command line at import
    import numpy as np
    import network_sim

    random.seed(args.seed)
    np.random.seed(args.seed)
    devnull = open(os.devnull, "w")
    stdout, sys.stdout = sys.stdout, devnull  # PCC-RL prints each episode's reward
    env = network_sim.SimulatedNetworkEnv()
    env.reset()
    action = np.array([0.0])
    start = time.perf_counter()
    for _ in range(args.steps):
        _, _, done, _ = env.step(action)
        if done:
            env.reset()
    wall = time.perf_counter() - start
    sys.stdout = stdout
    os.chdir("/")
    shutil.rmtree(stand_in, ignore_errors=True)
    result = {"env_steps_per_sec": args.steps / wall, "env_steps": args.steps, "wall_seconds": wall}
    if pops is not None:
        result["events_per_step"] = pops[0] / args.steps
    print(json.dumps(result))


if __name__ == "__main__":
    main()
