#!/usr/bin/env python3
"""Median normalized `mocc` reward of `mocc eval` results.csv files, one per training seed.

    python3 scripts/reward_medians.py runs/mocc36-lat-eval/results.csv runs/mocc36-s2-lat-eval/results.csv

Prints each file's median and mean, then, over all files, the median of the pooled runs, the
mean of the per-file medians and the pooled mean. Standard library only.
"""
import csv
import statistics
import sys

COLUMN = "mocc_reward"


def rewards(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no runs")
    if COLUMN not in rows[0]:
        sys.exit(f"{path}: no column `{COLUMN}`")
    return [float(row[COLUMN]) for row in rows]


def main(paths):
    if not paths:
        sys.exit(__doc__.strip())
    per_file = [rewards(p) for p in paths]
    for path, values in zip(paths, per_file):
        print(f"{path}: median {statistics.median(values):.4f} mean {statistics.mean(values):.4f} runs {len(values)}")
    pooled = [v for values in per_file for v in values]
    medians = [statistics.median(values) for values in per_file]
    print(
        f"all {len(paths)}: pooled median {statistics.median(pooled):.4f} "
        f"mean of medians {statistics.mean(medians):.4f} pooled mean {statistics.mean(pooled):.4f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
