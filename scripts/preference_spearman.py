#!/usr/bin/env python3
"""Spearman rank correlation of w_thr with utilization and RTT ratio in a `mocc eval` results.csv.

    python3 scripts/preference_spearman.py runs/mocc-pref/results.csv

Averages each metric over the rows sharing a w_thr value (networks x seeds), then ranks.
Standard library only.
"""
import csv
import sys
from collections import defaultdict


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2.0  # average rank for ties
        i = j + 1
    return out


def spearman(a, b):
    ra, rb = ranks(a), ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va and vb else float("nan")


def main(path):
    groups = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            groups[float(row["w_thr"])].append(row)
    ws = sorted(groups)
    mean = lambda w, col: sum(float(r[col]) for r in groups[w]) / len(groups[w])
    util = [mean(w, "utilization") for w in ws]
    rtt = [mean(w, "rtt_ratio") for w in ws]
    for w, u, r in zip(ws, util, rtt):
        print(f"w_thr {w:.2f}: utilization {u:.3f}, RTT ratio {r:.3f}")
    print(f"spearman(w_thr, utilization) = {spearman(ws, util):.3f}")
    print(f"spearman(w_thr, rtt_ratio) = {spearman(ws, rtt):.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/mocc-pref/results.csv")
