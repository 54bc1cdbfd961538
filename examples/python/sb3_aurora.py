"""Stable-Baselines3 PPO on Aurora's scenario, the simulator stepping in Rust.

    python examples/python/sb3_aurora.py --timesteps 200000 --seeds 0 1 2 --out runs/sb3-aurora

Trains one PPO agent per seed on configs/aurora-env.yaml (Aurora's network ranges and reward)
through `mocc.sb3.Sb3VecEnv` (the whole batch steps in Rust) and SB3's `VecNormalize`
(observations and rewards), then evaluates each deterministic policy and a random one (actions
drawn from N(0, 1), what the untrained Gaussian policy does) on the same held-out networks.
Writes, per seed, the learning curve (`curve-SEED.csv`: env steps, mean reward per MI of the
episodes that ended), the model (`model-SEED.zip`) and its normalization
(`vecnormalize-SEED.pkl`), and `summary.json`; with `--min-gain G` it exits non-zero unless
every seed's mean reward per MI beats the random policy's by at least G.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecNormalize

import mocc
from mocc.sb3 import Sb3VecEnv

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "configs" / "aurora-env.yaml"
EVAL_SEED = 10_000


class Curve(BaseCallback):
    """Mean reward per MI of the episodes that ended, after every rollout."""

    def __init__(self):
        super().__init__()
        self.rows, self.sums, self.steps, self.ended = [], None, None, []

    def _on_step(self) -> bool:
        # The env's own rewards, not VecNormalize's scaled ones.
        rewards = self.training_env.get_original_reward()
        dones = self.locals["dones"]
        if self.sums is None:
            self.sums, self.steps = np.zeros_like(rewards, dtype=np.float64), np.zeros(len(rewards))
        self.sums += rewards
        self.steps += 1
        for i in np.flatnonzero(dones):
            self.ended.append(self.sums[i] / self.steps[i])
            self.sums[i], self.steps[i] = 0.0, 0
        return True

    def _on_rollout_end(self) -> None:
        if self.ended:
            self.rows.append((self.num_timesteps, float(np.mean(self.ended))))
            self.ended = []


def evaluate(act, episodes: int, episode_mis: int) -> float:
    """Mean reward per MI over `episodes` held-out networks (one batch, one episode each)."""
    env = mocc.make_vec(SCENARIO, episodes, seed=EVAL_SEED, episode_mis=episode_mis)
    obs, _ = env.reset(seed=EVAL_SEED)
    total = np.zeros(episodes)
    for _ in range(episode_mis):
        obs, rewards, _, _, _ = env.step(act(obs))
        total += rewards
    return float(np.mean(total / episode_mis))


def train(seed: int, args, random: float) -> dict:
    torch.manual_seed(seed)
    batch = mocc.make_vec(SCENARIO, args.envs, seed=seed, episode_mis=args.episode_mis)
    env = VecNormalize(Sb3VecEnv(batch), norm_obs=True, norm_reward=True, gamma=0.99)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        learning_rate=3e-4,
        gamma=0.99,
        policy_kwargs={"net_arch": [32, 16]},  # Aurora's actor and critic
        seed=seed,
        device="cpu",
        verbose=0,
    )
    curve = Curve()
    model.learn(args.timesteps, callback=curve)
    env.training = False
    act = lambda o: model.predict(env.normalize_obs(o), deterministic=True)[0]
    trained = evaluate(act, args.eval_episodes, args.episode_mis)
    if args.out:
        with open(args.out / f"curve-{seed}.csv", "w") as f:
            f.write("env_steps,reward_per_mi\n")
            f.writelines(f"{s},{r}\n" for s, r in curve.rows)
        model.save(args.out / f"model-{seed}.zip")
        env.save(args.out / f"vecnormalize-{seed}.pkl")
    return {"seed": seed, "trained": trained, "random": random, "gain": trained - random}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--timesteps", type=int, default=200_000)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--envs", type=int, default=8)
    p.add_argument("--episode-mis", type=int, default=400)
    p.add_argument("--n-steps", type=int, default=128, help="rollout length per env")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--eval-episodes", type=int, default=32)
    p.add_argument("--out", type=Path)
    p.add_argument("--min-gain", type=float, help="fail unless every seed beats random by this")
    args = p.parse_args()
    torch.set_num_threads(1)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    random = evaluate(lambda o: rng.standard_normal((len(o), 1)).astype(np.float32),
                      args.eval_episodes, args.episode_mis)
    results = [train(s, args, random) for s in args.seeds]
    summary = {"scenario": str(SCENARIO), "timesteps": args.timesteps, "seeds": results}
    if args.out:
        (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))
    if args.min_gain is not None:
        short = [r for r in results if r["gain"] < args.min_gain]
        if short:
            print(f"sb3_aurora: {len(short)} seed(s) gained less than {args.min_gain}: {short}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
