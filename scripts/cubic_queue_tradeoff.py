#!/usr/bin/env python3
"""What holding a rate beside Cubic costs among a policy's own flows, one point per policy.

    python3 scripts/cubic_queue_tradeoff.py OUT.png NAME=TARGETS.json [NAME=TARGETS.json ...]

Each TARGETS.json is the line `scripts/shared_targets.py` prints for one policy; NAME is the
variant it belongs to (one marker per variant, several seeds per variant). The x axis is the
RTT ratio the policy's own flows hold on the 800 pkt/s fairness network (median over 2, 3 and
4 flows; 1 is an empty queue, 4.1 that network's full buffer), the y axis its rate over
Cubic's on the 4 BDP buffer (log scale; the target band 0.5-2 is shaded).

Prints one CSV row per policy (name, file, rtt ratio, cubic ratio) on stdout. Needs
matplotlib (`make pytools`, then PYTHONPATH=~/.cache/mocc/pytools).
"""

import csv
import json
import statistics
import sys

NETWORK = "bw800_d0.02_q100"
DEEP_BUFFER = "128pkts"
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]


def point(path):
    """(RTT ratio of the policy's own flows, its rate over Cubic's on the deep buffer)."""
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    if not lines:
        sys.exit(f"{path}: empty (did shared_targets.py fail?)")
    d = json.loads(lines[-1])
    rtts = [v[2] for k, v in d["fairness"].items() if k.startswith(NETWORK + "/")]
    if not rtts or any(r is None for r in rtts):
        sys.exit(f"{path}: no RTT ratio for {NETWORK}")
    if DEEP_BUFFER not in d["friendliness"]:
        sys.exit(f"{path}: no friendliness result for {DEEP_BUFFER}")
    ratio = d["friendliness"][DEEP_BUFFER]
    if ratio <= 0:
        sys.exit(f"{path}: rate ratio {ratio} beside Cubic cannot be drawn on a log scale")
    return statistics.median(rtts), ratio


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip())
    out, specs = argv[0], argv[1:]
    by_variant = {}
    writer = csv.writer(sys.stdout)
    writer.writerow(["name", "file", "rtt_ratio", "cubic_ratio"])
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep:
            sys.exit(f"{spec}: expected NAME=TARGETS.json")
        x, y = point(path)
        by_variant.setdefault(name, []).append((x, y))
        writer.writerow([name, path, f"{x:.3f}", f"{y:.3f}"])
    if len(by_variant) > len(MARKERS):
        sys.exit(f"{len(by_variant)} variants: at most {len(MARKERS)} stay readable")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.axhspan(0.5, 2.0, color="tab:green", alpha=0.12, label="Cubic target (0.5-2)")
    for i, (name, points) in enumerate(by_variant.items()):
        xs, ys = zip(*points)
        ax.scatter(xs, ys, marker=MARKERS[i], s=46, label=name, alpha=0.85)
    ax.set_yscale("log")
    ax.set_xlabel("RTT ratio of its own flows, 800 pkt/s (1 = empty queue)")
    ax.set_ylabel("rate / Cubic's rate, 4 BDP buffer")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=9, frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=130)


if __name__ == "__main__":
    main(sys.argv[1:])
