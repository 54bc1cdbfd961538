#!/usr/bin/env python3
"""mocc's envs stepped from Python, timed the way `mocc bench env` times the Rust batch.

    python scripts/bench_python.py [--scenario FILE] [--envs N] [--steps N] [--api vector|single]

`--api vector` steps `mocc.make_vec(FILE, N)` with the constant action 0 (auto-reset inside);
`--api single` steps one `mocc.make(FILE)` env, resetting it when an episode ends, as a
Gymnasium user's loop does. Prints one JSON line with env steps per second. Needs the
installed `mocc` package; `make bench-python` runs it beside `mocc bench env`.
"""

import argparse
import json
import time

import numpy as np

import mocc


def vector(scenario: str, envs: int, steps: int) -> float:
    env = mocc.make_vec(scenario, envs, seed=0)
    env.reset(seed=0)
    actions = np.zeros(envs, dtype=np.float32)
    rounds = max(1, steps // envs)
    start = time.perf_counter()
    for _ in range(rounds):
        env.step(actions)
    return rounds * envs / (time.perf_counter() - start)


def single(scenario: str, steps: int) -> float:
    env = mocc.make(scenario)
    env.reset(seed=0)
    action = np.zeros(1, dtype=np.float32)
    start = time.perf_counter()
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            env.reset()
    return steps / (time.perf_counter() - start)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="configs/aurora-env.yaml")
    p.add_argument("--envs", type=int, default=50)
    p.add_argument("--steps", type=int, default=200_000)
    p.add_argument("--api", choices=["vector", "single"], default="vector")
    args = p.parse_args()
    if args.api == "vector":
        rate = vector(args.scenario, args.envs, args.steps)
    else:
        rate = single(args.scenario, args.steps)
    print(json.dumps({"api": args.api, "envs": args.envs if args.api == "vector" else 1,
                      "env_steps_per_sec": rate, "env_steps": args.steps}))


if __name__ == "__main__":
    main()
