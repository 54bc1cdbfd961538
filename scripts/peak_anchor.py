#!/usr/bin/env python3
"""Whether a learned policy's flows share in proportion to their peak delivery rates: reads the
MI records of a fairness suite with `record_mis: true`, the simulator's as `mocc eval` writes
them (OUT/fairness-mis/<policy>/<network>/<n>-flows-run-<r>/flow-<k>.csv) and, after
`mocc net compare`, the real path's (OUT/fairness-mis-real/...), and prints, per side, policy,
network and flow count, over its runs: the median and lowest Jain's index of the flows' rates,
and the median and lowest of their rates over their peak delivery rates.

    python3 scripts/peak_anchor.py OUT [--last S]

A flow's rate is the mean pacing rate of its MIs (the simulator's `next_rate_pps`, the real
path's `rate_pps`) over its last S seconds (default 15; every flow runs to the end); its peak
is the highest delivery rate of one of its MIs with at least two RTT samples (acknowledged
packets over the MI's length), the `peak delivery ratio` feature's reference under a
connection-long window. Rates over peaks at an index near 1 with rates well below it: each
flow settled at the same fraction of its own peak, and the peaks set the split
(docs/research/peak-anchor.md).
"""
import csv
import glob
import os
import statistics
import sys

PACKET_BYTES = 1500.0


def jain(xs):
    """Jain's index of non-negative values (1 for none or all zero)."""
    total, squares = sum(xs), sum(x * x for x in xs)
    return 1.0 if squares == 0 else total * total / (len(xs) * squares)


def read_flow(path):
    """(end_s, rate_pps, delivery_pps or None) per record of one flow's file, either side's."""
    out = []
    with open(path) as f:
        for row in csv.DictReader(f):
            span = float(row["recv_end_s"]) - float(row["recv_start_s"])
            sampled = int(row["rtt_count"]) >= 2 and span > 0
            delivery = float(row["bytes_acked"]) / PACKET_BYTES / span if sampled else None
            rate = row["next_rate_pps"] if "next_rate_pps" in row else row["rate_pps"]
            out.append((float(row["send_end_s"]), float(rate), delivery))
    return out


def run_indices(folder, last_s):
    """(Jain of rates, of rates over peaks, of peaks) of one run folder; None if empty."""
    flows = [read_flow(p) for p in sorted(glob.glob(os.path.join(folder, "flow-*.csv")))]
    flows = [f for f in flows if f]
    if not flows:
        return None
    rates, peaks = [], []
    for records in flows:
        end = records[-1][0]
        tail = [rate for t, rate, _ in records if end - last_s < t <= end]
        deliveries = [d for _, _, d in records if d is not None]
        if not tail or not deliveries:
            return None
        rates.append(statistics.mean(tail))
        peaks.append(max(deliveries))
    ratios = [r / p for r, p in zip(rates, peaks)]
    return jain(rates), jain(ratios), jain(peaks)


def main(argv):
    if not argv or argv[0].startswith("-"):
        raise SystemExit(__doc__)
    out, last_s = argv[0], 15.0
    if len(argv) == 3 and argv[1] == "--last":
        last_s = float(argv[2])
    elif len(argv) != 1:
        raise SystemExit(__doc__)
    sides = [("sim", "fairness-mis"), ("real", "fairness-mis-real")]
    if not any(os.path.isdir(os.path.join(out, d)) for _, d in sides):
        raise SystemExit(f"{out}: no MI records (a fairness suite with record_mis: true)")
    cases = {}
    for side, records_dir in sides:
        pattern = os.path.join(out, records_dir, "*", "*", "*-flows-run-*")
        for folder in sorted(glob.glob(pattern)):
            network_dir, run = os.path.split(folder)
            policy_dir, network = os.path.split(network_dir)
            flows = int(run.split("-flows-run-")[0])
            indices = run_indices(folder, last_s)
            if indices is not None:
                key = (side, os.path.basename(policy_dir), network, flows)
                cases.setdefault(key, []).append(indices)
    print("side,policy,network,flows,runs,jain_rates,lowest,jain_rate_over_peak,lowest,jain_peaks")
    for (side, policy, network, flows), runs in sorted(cases.items()):
        cells = []
        for i in range(3):
            values = [r[i] for r in runs]
            cells.append(f"{statistics.median(values):.3f}")
            if i < 2:
                cells.append(f"{min(values):.3f}")
        print(f"{side},{policy},{network},{flows},{len(runs)}," + ",".join(cells))


if __name__ == "__main__":
    main(sys.argv[1:])
