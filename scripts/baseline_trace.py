#!/usr/bin/env python3
"""The latency baseline a learned flow reads, from `mocc simulate --out` rows.

    python3 scripts/baseline_trace.py ROWS.csv [T1 T2 ...]

For each time T (seconds; default 20 30 45 60 90 120) prints the row closest to it: its mean
RTT and the baseline the policy divided it by (mean RTT over the `latency ratio` feature), in
milliseconds. The rows need the `latency ratio` feature (the path observation has it).
Standard library only.
"""

import csv
import sys


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    path = argv[1]
    try:
        times = [float(t) for t in argv[2:]] or [20, 30, 45, 60, 90, 120]
    except ValueError as e:
        sys.exit(f"times: {e}")
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"{path}: {e}")
    if not rows or "latency_ratio" not in rows[0]:
        sys.exit(f"{path}: no rows with a latency_ratio column")
    print("time_s,row_time_s,mean_rtt_ms,baseline_ms")
    for t in times:
        row = min(rows, key=lambda r: abs(float(r["time_s"]) - t))
        rtt = float(row["mean_rtt_s"])
        ratio = float(row["latency_ratio"])
        baseline = rtt / ratio if ratio > 0 else float("nan")
        print(f"{t:g},{float(row['time_s']):.2f},{rtt * 1e3:.1f},{baseline * 1e3:.1f}")


if __name__ == "__main__":
    main(sys.argv)
