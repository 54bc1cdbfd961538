#!/usr/bin/env python3
"""The trade-off between sharing a link and running alone, one point per trained policy.

    python3 scripts/shared_pareto.py OUT.png NAME=TARGETS.json [NAME=TARGETS.json ...]

Each TARGETS.json is the line `scripts/shared_targets.py` prints for one policy; NAME is the
variant it belongs to (one marker per variant, several seeds per variant). The x axis is the
mocc-grid median (alone on a fixed link; target >= 0.978), the y axis how many of the issue's
seven sharing targets the policy meets:

- fairness on each of the three fairness networks (median Jain's index >= 0.95 for 2, 3 and
  4 flows, every case at utilization >= 0.9): three targets (`fair-800`, `fair-2500` and
  `fair-300` for configs/eval/shared.yaml's networks, `fair-<network label>` for other
  suites');
- throughput-heavy against latency-heavy flows: rate ratio within 0.5-2;
- 20 ms against 80 ms base RTT: rate ratio >= 0.5;
- against one Cubic flow: rate ratio within 0.5-2 on both the 1 and the 4 BDP buffer (both
  must be in the JSON);
- the LEO path: utilization >= 0.8 at RTT ratio <= 1.5.

Points at the same count are spread a little vertically (by variant, then by seed) so they
stay apart.
Prints one CSV row per policy (name, file, grid median, targets met, which) on stdout. Needs
matplotlib (`make pytools`, then PYTHONPATH=~/.cache/mocc/pytools).
"""

import csv
import json
import sys

NETWORKS = {"fair-800": "bw800_d0.02_q100", "fair-2500": "bw2500_d0.03_q150",
            "fair-300": "bw300_d0.05_q120"}
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def fairness_networks(d):
    """The fairness networks of a result, in order of appearance, as (target name, network)."""
    short = {network: name for name, network in NETWORKS.items()}
    networks = dict.fromkeys(key.rsplit("/", 1)[0] for key in d["fairness"])
    return [(short.get(n, f"fair-{n}"), n) for n in networks]


def targets_met(d):
    """The sharing targets one shared_targets.py result meets, by name."""
    met = []
    for name, network in fairness_networks(d):
        cases = [d["fairness"].get(f"{network}/{n}") for n in (2, 3, 4)]
        if all(c is not None and c[0] >= 0.95 and c[1] >= 0.9 for c in cases):
            met.append(name)
    if 0.5 <= d["objectives_min_max_ratio"] <= 2.0:
        met.append("objectives")
    if d["rtt_min_max_ratio"] >= 0.5:
        met.append("rtts")
    friendliness = d["friendliness"]
    if len(friendliness) == 2 and all(0.5 <= r <= 2.0 for r in friendliness.values()):
        met.append("cubic")
    leo = d.get("leo_utilization_rtt_ratio")
    if leo is not None and leo[0] >= 0.8 and leo[1] <= 1.5:
        met.append("leo")
    return met


def load(args):
    """[(variant, file, grid median, met)] in argument order."""
    points = []
    for arg in args:
        if "=" not in arg:
            raise SystemExit(f"{arg}: expected NAME=TARGETS.json")
        name, path = arg.split("=", 1)
        try:
            with open(path) as f:
                d = json.load(f)
            points.append((name, path, d["grid_median"], targets_met(d)))
        except (OSError, ValueError) as e:
            raise SystemExit(f"{path}: {e}")
        except (KeyError, TypeError, IndexError) as e:
            raise SystemExit(f"{path}: not a shared_targets.py result ({e!r})")
    return points


def draw(points, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(dict.fromkeys(p[0] for p in points))
    if len(variants) > len(MARKERS):
        raise SystemExit(f"{len(variants)} variants: at most {len(MARKERS)} stay readable")
    # Left: every policy; right: the ones near the alone target, spread out.
    fig, (wide, near) = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True,
                                     gridspec_kw={"width_ratios": [3, 2]})
    near_lo = 0.975
    for ax in (wide, near):
        ax.axvspan(0.978, 1.0, color="0.9", zorder=0, label="alone target (>= 0.978)")
        ax.grid(alpha=0.3)
    seen = {}
    for i, v in enumerate(variants):
        xs, ys = [], []
        for name, _, grid, met in points:
            if name != v:
                continue
            k = seen.get((v, len(met)), 0)
            seen[(v, len(met))] = k + 1
            xs.append(grid)
            ys.append(len(met) + (i - (len(variants) - 1) / 2) * 0.05 + k * 0.06)
        for ax in (wide, near):
            ax.scatter(xs, ys, marker=MARKERS[i], s=46, label=v, alpha=0.85, zorder=3)
    wide.set_xlabel("mocc-grid median reward, alone on a fixed link")
    near.set_xlabel(f"the same, from {near_lo}")
    wide.set_ylabel("sharing targets met (of 7)")
    wide.set_ylim(-0.5, 7.6)
    wide.set_yticks(range(8))
    lo = min(p[2] for p in points)
    wide.set_xlim(lo - 0.01, 1.0)
    hi = max(p[2] for p in points)
    near.set_xlim(near_lo, max(0.986, hi + 0.001))
    handles, labels = near.get_legend_handles_labels()  # the span, then one per variant
    fig.legend(handles, labels, loc="upper center", ncol=4, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    fig.savefig(out, dpi=130)


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    points = load(argv[2:])
    w = csv.writer(sys.stdout)
    w.writerow(["variant", "file", "grid_median", "sharing_met", "which"])
    for name, path, grid, met in points:
        w.writerow([name, path, grid, len(met), " ".join(met)])
    draw(points, argv[1])


if __name__ == "__main__":
    main(sys.argv)
