#!/usr/bin/env python3
"""Who keeps the link among staggered flows of one policy: reads the fairness.csv files that
`mocc eval` writes for a fairness suite and prints, per file and policy, in how many seconds
the first flow (the incumbent) had the highest rate, and the incumbent's mean rate over the
mean rate of the later flows. Only seconds from 10 s after the last flow started count, once
the flows have had time to meet; every network and flow count of the file is pooled.

    python3 scripts/incumbent_share.py [--stagger S] runs/a/shared/fairness.csv [...]

S is the suite's `stagger_s` (default 5, as in configs/eval/shared.yaml; 7 for
configs/eval/validation/shared.yaml).
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


def read_rows(path):
    """The rows of a fairness.csv with per-flow rates; exits naming the file otherwise."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        raise SystemExit(f"{path}: {e.strerror}")
    if not rows or "rate_1_pps" not in rows[0]:
        raise SystemExit(f"{path}: not a fairness.csv with per-flow rates (rate_1_pps)")
    return rows


def summarize(rows, stagger_s):
    """(seconds counted, seconds the incumbent led, incumbent mean / later flows' mean or None)."""
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
    return counted, led, (first / later if later > 0 else None)


def parse_args(argv):
    """(stagger in seconds, fairness.csv paths); --stagger may come anywhere."""
    stagger_s, paths = 5.0, []
    args = iter(argv)
    for arg in args:
        if arg != "--stagger":
            paths.append(arg)
            continue
        value = next(args, None)
        try:
            stagger_s = float(value)
        except (TypeError, ValueError):
            raise SystemExit(f"--stagger: give the suite's stagger_s in seconds (got {value!r})")
    if not paths:
        raise SystemExit(__doc__)
    return stagger_s, paths


def main(argv):
    stagger_s, paths = parse_args(argv)
    out = ["file,policy,seconds,incumbent_led,incumbent_over_later"]
    for path in paths:
        by_policy = {}
        for row in read_rows(path):
            by_policy.setdefault(row["policy"], []).append(row)
        for policy, rows in by_policy.items():
            counted, led, ratio = summarize(rows, stagger_s)
            shown = "no settled seconds" if ratio is None else f"{ratio:.2f}"
            out.append(f"{path},{policy},{counted},{led},{shown}")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
