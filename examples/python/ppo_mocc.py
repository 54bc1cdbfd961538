"""PPO for MOCC in one file, CleanRL-style: one policy for every objective.

    python examples/python/ppo_mocc.py --total-timesteps 500000 --seeds 0 1 2 --out runs/ppo-mocc

The env is `mocc.make_vec` on configs/scenarios/mocc-env.yaml (Aurora's network ranges, the MOCC
reward `w_thr * thr/capacity + w_lat * base_rtt/rtt + w_loss * (1 - loss)`), each episode with
an objective drawn from MOCC's landmark grid; the objective is the last 3 values of every
observation. The actor and the critic are MOCC's: the history through a body, the objective
through its own preference layer, concatenated. After training, each seed's deterministic
policy and a random one (actions drawn from N(0, 1)) are evaluated on held-out networks under
three objectives (throughput-, latency- and loss-heavy). Writes `curve-SEED.csv` (env steps,
mean reward per MI of the episodes that ended), `policy-SEED.pt` and `summary.json`; with
`--min-gain G` it exits non-zero unless, for every seed, the mean over the three objectives
beats the random policy's by at least G.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn
from torch.distributions.normal import Normal

import mocc

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "configs" / "scenarios" / "mocc-env.yaml"
EVAL_SEED = 10_000
EVAL_OBJECTIVES = {
    "throughput": [0.8, 0.1, 0.1],
    "latency": [0.1, 0.8, 0.1],
    "loss": [0.1, 0.1, 0.8],
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--total-timesteps", type=int, default=500_000)
    p.add_argument("--num-envs", type=int, default=16)
    p.add_argument("--num-steps", type=int, default=128, help="rollout length per env")
    p.add_argument("--episode-mis", type=int, default=400)
    p.add_argument("--landmarks", type=int, default=6, help="objectives from the grid of step 1/N")
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--gamma", type=float, default=0.99)
    p.add_argument("--gae-lambda", type=float, default=0.95)
    p.add_argument("--num-minibatches", type=int, default=8)
    p.add_argument("--update-epochs", type=int, default=10)
    p.add_argument("--clip-coef", type=float, default=0.2)
    p.add_argument("--ent-coef", type=float, default=0.0)
    p.add_argument("--vf-coef", type=float, default=0.5)
    p.add_argument("--max-grad-norm", type=float, default=0.5)
    p.add_argument("--eval-episodes", type=int, default=16)
    p.add_argument("--out", type=Path)
    p.add_argument("--min-gain", type=float, help="fail unless every seed beats random by this")
    return p.parse_args()


def layer(inputs: int, outputs: int, std: float = np.sqrt(2)) -> nn.Linear:
    linear = nn.Linear(inputs, outputs)
    nn.init.orthogonal_(linear.weight, std)
    nn.init.constant_(linear.bias, 0.0)
    return linear


class Preferenced(nn.Module):
    """MOCC's network: history -> body, objective -> preference layer, concatenated -> head."""

    def __init__(self, history: int, out_std: float):
        super().__init__()
        self.history = history
        self.preference = nn.Sequential(layer(3, 16), nn.Tanh())
        self.body = nn.Sequential(layer(history + 16, 64), nn.Tanh(), layer(64, 32), nn.Tanh())
        self.head = layer(32, 1, out_std)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        h, w = obs[:, : self.history], obs[:, self.history :]
        return self.head(self.body(torch.cat([h, self.preference(w)], dim=1)))


class Agent(nn.Module):
    def __init__(self, history: int):
        super().__init__()
        self.critic = Preferenced(history, 1.0)
        self.actor_mean = Preferenced(history, 0.01)
        self.actor_logstd = nn.Parameter(torch.zeros(1, 1))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        mean = self.actor_mean(x)
        std = self.actor_logstd.expand_as(mean).exp()
        dist = Normal(mean, std)
        if action is None:
            action = dist.sample()
        return action, dist.log_prob(action).sum(1), dist.entropy().sum(1), self.critic(x)


class HistoryNormalizer:
    """Running mean and variance of the history part of observations (the objective passes
    as it is): CleanRL's NormalizeObservation, frozen for evaluation."""

    def __init__(self, history: int):
        self.history, self.count = history, 1e-4
        self.mean, self.var = np.zeros(history), np.ones(history)

    def __call__(self, obs: np.ndarray, update: bool = True) -> np.ndarray:
        h = obs[:, : self.history].astype(np.float64)
        if update:
            n, m, v = len(h), h.mean(0), h.var(0)
            delta, total = m - self.mean, self.count + len(h)
            self.mean = self.mean + delta * n / total
            self.var = (self.var * self.count + v * n + delta**2 * self.count * n / total) / total
            self.count = total
        out = obs.astype(np.float32).copy()
        out[:, : self.history] = np.clip((h - self.mean) / np.sqrt(self.var + 1e-8), -10, 10)
        return out


def train(seed: int, args) -> tuple[Agent, HistoryNormalizer, list]:
    torch.manual_seed(seed)
    np.random.seed(seed)
    envs = mocc.make_vec(
        SCENARIO, args.num_envs, seed=seed, objective=f"landmarks:{args.landmarks}",
        episode_mis=args.episode_mis,
    )
    history = envs.core.history_obs_len
    agent = Agent(history)
    optimizer = torch.optim.Adam(agent.parameters(), lr=args.learning_rate, eps=1e-5)
    norm = HistoryNormalizer(history)
    n, steps = args.num_envs, args.num_steps
    batch = n * steps
    minibatch = batch // args.num_minibatches
    iterations = args.total_timesteps // batch
    obs_buf = torch.zeros((steps, n, envs.single_observation_space.shape[0]))
    act_buf = torch.zeros((steps, n, 1))
    logp_buf, rew_buf, done_buf, val_buf = (torch.zeros((steps, n)) for _ in range(4))
    raw, _ = envs.reset(seed=seed)
    next_obs = torch.tensor(norm(raw))
    next_done = torch.zeros(n)
    returns, lengths, ended, curve = np.zeros(n), np.zeros(n), [], []
    for it in range(1, iterations + 1):
        frac = 1.0 - (it - 1.0) / iterations
        optimizer.param_groups[0]["lr"] = frac * args.learning_rate
        for t in range(steps):
            obs_buf[t], done_buf[t] = next_obs, next_done
            with torch.no_grad():
                action, logp, _, value = agent.get_action_and_value(next_obs)
            val_buf[t], act_buf[t], logp_buf[t] = value.flatten(), action, logp
            raw, reward, terminated, truncated, infos = envs.step(action.numpy())
            rew_buf[t] = torch.tensor(reward, dtype=torch.float32)
            # Truncation is not termination: bootstrap from the final observation's value.
            for i in np.flatnonzero(truncated & ~terminated):
                final = torch.tensor(norm(infos["final_obs"][i][None], update=False))
                with torch.no_grad():
                    rew_buf[t, i] += args.gamma * agent.get_value(final).item()
            returns += reward
            lengths += 1
            for i in np.flatnonzero(terminated | truncated):
                ended.append(returns[i] / lengths[i])
                returns[i], lengths[i] = 0.0, 0
            next_obs = torch.tensor(norm(raw))
            next_done = torch.tensor((terminated | truncated).astype(np.float32))
        with torch.no_grad():
            next_value = agent.get_value(next_obs).flatten()
            adv = torch.zeros_like(rew_buf)
            last = 0.0
            for t in reversed(range(steps)):
                not_done = 1.0 - (next_done if t == steps - 1 else done_buf[t + 1])
                nxt = next_value if t == steps - 1 else val_buf[t + 1]
                delta = rew_buf[t] + args.gamma * nxt * not_done - val_buf[t]
                last = delta + args.gamma * args.gae_lambda * not_done * last
                adv[t] = last
            ret = adv + val_buf
        b_obs, b_act = obs_buf.reshape(batch, -1), act_buf.reshape(batch, 1)
        b_logp, b_adv, b_ret = logp_buf.reshape(-1), adv.reshape(-1), ret.reshape(-1)
        for _ in range(args.update_epochs):
            for idx in torch.randperm(batch).split(minibatch):
                _, logp, entropy, value = agent.get_action_and_value(b_obs[idx], b_act[idx])
                ratio = (logp - b_logp[idx]).exp()
                a = b_adv[idx]
                a = (a - a.mean()) / (a.std() + 1e-8)
                pg = torch.max(-a * ratio, -a * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
                v_loss = 0.5 * ((value.flatten() - b_ret[idx]) ** 2).mean()
                loss = pg - args.ent_coef * entropy.mean() + args.vf_coef * v_loss
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
                optimizer.step()
        if ended:
            curve.append((it * batch, float(np.mean(ended))))
            ended = []
    return agent, norm, curve


def evaluate(act, objective, episodes: int, episode_mis: int) -> float:
    """Mean reward per MI on `episodes` held-out networks under one objective."""
    env = mocc.make_vec(SCENARIO, episodes, seed=EVAL_SEED, objective=objective, episode_mis=episode_mis)
    obs, _ = env.reset(seed=EVAL_SEED)
    total = np.zeros(episodes)
    for _ in range(episode_mis):
        obs, reward, _, _, _ = env.step(act(obs))
        total += reward
    return float(np.mean(total / episode_mis))


def main() -> int:
    args = parse_args()
    torch.set_num_threads(1)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    random = {
        name: evaluate(lambda o: rng.standard_normal((len(o), 1)).astype(np.float32), w,
                       args.eval_episodes, args.episode_mis)
        for name, w in EVAL_OBJECTIVES.items()
    }
    results = []
    for seed in args.seeds:
        start = time.perf_counter()
        agent, norm, curve = train(seed, args)

        def act(o):
            with torch.no_grad():
                return agent.actor_mean(torch.tensor(norm(o, update=False))).numpy()

        trained = {name: evaluate(act, w, args.eval_episodes, args.episode_mis) for name, w in EVAL_OBJECTIVES.items()}
        gain = float(np.mean([trained[k] - random[k] for k in EVAL_OBJECTIVES]))
        results.append({"seed": seed, "trained": trained, "gain": gain,
                        "seconds": time.perf_counter() - start})
        if args.out:
            with open(args.out / f"curve-{seed}.csv", "w") as f:
                f.write("env_steps,reward_per_mi\n")
                f.writelines(f"{s},{r}\n" for s, r in curve)
            torch.save({"agent": agent.state_dict(), "obs_mean": norm.mean, "obs_var": norm.var},
                       args.out / f"policy-{seed}.pt")
    summary = {"scenario": str(SCENARIO), "total_timesteps": args.total_timesteps,
               "objectives": EVAL_OBJECTIVES, "random": random, "seeds": results}
    if args.out:
        (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))
    if args.min_gain is not None:
        short = [r for r in results if r["gain"] < args.min_gain]
        if short:
            print(f"ppo_mocc: {len(short)} seed(s) gained less than {args.min_gain}: {short}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
