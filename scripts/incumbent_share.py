#!/usr/bin/env python3
"""Who keeps the link among staggered flows of one policy: reads the fairness.csv files that
`mocc eval` writes for a fairness suite and prints, per file, in how many seconds the first
flow (the incumbent) had the highest rate, and the incumbent's mean rate over the mean rate of
the later flows. Only seconds from 10 s after the last flow started count, once the flows have
had time to meet.

    python3 scripts/incumbent_share.py [--stagger S] runs/a/shared/fairness.csv [...]

S is the suite's `stagger_s` (default 5, as in configs/eval/shared.yaml).
"""
import csv
import sys

SETTLE_S = 10


def flow_rates(row, flows):
    """The row's per-flow rates (packets/s) for `flows` flows; None where a cell is empty."""
    rates = []
    for k in range(1, flows + 1):
        cell = row.get(f"rate_{k}_pps", "")
        if cell == "":
            return None
        rates.append(float(cell))
    return rates


def settled(row, flows, stagger_s):
    """Whether the row's second lies SETTLE_S after the last flow's start."""
    return int(row["second"]) >= (flows - 1) * stagger_s + SETTLE_S


def summarize(path, stagger_s):
    """(seconds counted, seconds the incumbent led, incumbent mean / later flows' mean)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows or "rate_1_pps" not in rows[0]:
        raise SystemExit(f"{path}: not a fairness.csv with per-flow rates (rate_1_pps)")
    counted, led, first, later = 0, 0, 0.0, 0.0
    for row in rows:
        flows = int(row["flows"])
        rates = flow_rates(row, flows)
        if flows < 2 or rates is None or not settled(row, flows, stagger_s):
            continue
        counted += 1
        led += rates[0] == max(rates)
        first += rates[0]
        later += sum(rates[1:]) / (flows - 1)
    ratio = first / later if later > 0 else float("inf")
    return counted, led, ratio


def main(argv):
    stagger_s = 5.0
    if argv[:1] == ["--stagger"]:
        if len(argv) < 2:
            raise SystemExit("--stagger: give the suite's stagger_s in seconds")
        try:
            stagger_s = float(argv[1])
        except ValueError:
            raise SystemExit(f"--stagger: not a number: {argv[1]!r}")
        argv = argv[2:]
    if not argv:
        raise SystemExit(__doc__)
    print("file,seconds,incumbent_led,incumbent_over_later")
    for path in argv:
        counted, led, ratio = summarize(path, stagger_s)
        print(f"{path},{counted},{led},{ratio:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
