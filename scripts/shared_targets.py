#!/usr/bin/env python3
"""Every target of the competing-flows issue for one policy, as one JSON line.

    python3 scripts/shared_targets.py POLICY OUT_DIR [--mocc BIN] [--sharing-suites DIR]

POLICY is anything `mocc eval --policy` takes (a run folder, checkpoint, export or baseline).
Runs `mocc eval` on configs/eval/shared.yaml, shared-objectives.yaml, shared-rtt.yaml,
mocc-grid.yaml and mocc-preference.yaml into OUT_DIR/<suite>, then reports what follows.
`--sharing-suites DIR` reads the three sharing suites from DIR instead (the same file names;
configs/eval/validation holds twins on other networks and seeds, for choosing among trained
seeds without looking at the target suites); the alone suites stay configs/eval's.

- fairness: median Jain's index per second, utilization and RTT ratio for 2, 3 and 4
  staggered flows on each shared.yaml network (targets: >= 0.95 and >= 0.9; the RTT ratio has
  none, it shows whether the flows share by holding the buffer full; null from outputs
  written before fairness-summary.csv had the column);
- objectives: rate ratio of a throughput-heavy and a latency-heavy flow (target 0.5-2);
- rtt: rate ratio of the 20 ms flow over the 80 ms flow (30 ms over 90 ms in the validation
  twin), as min/max (target >= 0.5);
- friendliness: policy / Cubic rate ratio on 1 and 4 BDP buffers (target 0.5-2);
- leo: utilization and RTT ratio over 120 s, mean of 3 seeds (targets >= 0.8, <= 1.5);
- floor: utilization and RTT ratio over 20 s starting from the 40 pkt/s rate floor on
  800 pkt/s, mean of 3 seeds (no target; how fast a flow that fell to the floor climbs back);
- grid: median `mocc_reward` on mocc-grid (target >= 0.978);
- preference: Spearman rank correlation of w_thr with utilization (target >= 0.8).

Standard library only; run from the repository root.
"""
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from preference_spearman import spearman  # noqa: E402

SHARING_SUITES = ["shared", "shared-objectives", "shared-rtt"]
ALONE_SUITES = ["mocc-grid", "mocc-preference"]


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def suite_files(sharing_dir):
    """(name, suite file) of every suite to run; exits naming a missing file."""
    suites = [(s, os.path.join(sharing_dir, f"{s}.yaml")) for s in SHARING_SUITES]
    suites += [(s, os.path.join("configs/eval", f"{s}.yaml")) for s in ALONE_SUITES]
    for _, path in suites:
        if not os.path.isfile(path):
            sys.exit(f"{path}: no such suite (run from the repository root)")
    return suites


def evaluate(mocc, policy, out, sharing_dir):
    for name, path in suite_files(sharing_dir):
        done = subprocess.run(
            [mocc, "eval", "--policy", policy, "--suite", path, "--out", os.path.join(out, name)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        if done.returncode != 0:
            sys.exit(f"mocc eval on {path} failed:\n{done.stderr.strip()}")


def option(argv, name, default):
    """The value after `name` in argv, or `default` when the flag is absent."""
    if name not in argv:
        return default
    i = argv.index(name)
    if i + 1 >= len(argv):
        sys.exit(f"{name}: expected a value")
    return argv[i + 1]


def fairness(out):
    result = {}
    for r in rows(os.path.join(out, "shared", "fairness-summary.csv")):
        key = f"{r['network']}/{r['flows']}"
        rtt = r.get("rtt_ratio") or None
        result[key] = [round(float(r["median_jain_index"]), 3), round(float(r["utilization"]), 3),
                       None if rtt is None else round(float(rtt), 3)]
    return result


def pair_ratio(out, suite):
    r = rows(os.path.join(out, suite, "fairness-summary.csv"))[0]
    ratio = float(r["max_min_rate_ratio"])
    return round(1.0 / ratio, 3) if ratio > 0 else 0.0


def friendliness(out):
    return {f"{float(r['queue_pkts']):g}pkts": round(float(r["ratio"]), 3)
            for r in rows(os.path.join(out, "shared", "friendliness.csv"))}


def scenario(out, name):
    """Mean utilization and RTT ratio of a shared.yaml scenario's runs (None without runs)."""
    runs = [r for r in rows(os.path.join(out, "shared", "results.csv")) if r["network"] == name]
    if not runs:
        return None
    return [round(statistics.mean(float(r[c]) for r in runs), 3)
            for c in ("utilization", "rtt_ratio")]


def grid(out):
    return round(statistics.median(float(r["mocc_reward"])
                                   for r in rows(os.path.join(out, "mocc-grid", "results.csv"))), 4)


def preference(out):
    by_w = {}
    for r in rows(os.path.join(out, "mocc-preference", "results.csv")):
        by_w.setdefault(float(r["w_thr"]), []).append(float(r["utilization"]))
    ws = sorted(by_w)
    rho = spearman(ws, [statistics.mean(by_w[w]) for w in ws])
    # A policy that ignores the objective gives no ranking at all (null, not NaN).
    return None if rho != rho else round(rho, 3)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip())
    policy, out = argv[0], argv[1]
    mocc = option(argv, "--mocc", "target/release/mocc")
    sharing_dir = option(argv, "--sharing-suites", "configs/eval")
    evaluate(mocc, policy, out, sharing_dir)
    print(json.dumps({
        "policy": policy,
        "fairness": fairness(out),
        "objectives_min_max_ratio": pair_ratio(out, "shared-objectives"),
        "rtt_min_max_ratio": pair_ratio(out, "shared-rtt"),
        "friendliness": friendliness(out),
        "leo_utilization_rtt_ratio": scenario(out, "leo"),
        "floor_utilization_rtt_ratio": scenario(out, "floor-recovery"),
        "grid_median": grid(out),
        "preference_spearman": preference(out),
    }))


if __name__ == "__main__":
    main(sys.argv[1:])
