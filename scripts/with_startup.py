#!/usr/bin/env python3
"""Copy an export folder with `action.startup` (and optionally another rate limit) set.

    python3 scripts/with_startup.py SRC DST [--max-rate-pps N] [--startup JSON]

SRC is an export (a single policy or a pair; a pair's competitive half in SRC/competitive gets
the same rule, as a pair's halves must act alike). DST must not exist. --startup takes the
startup's fields as JSON (default `{}`: every default, docs/fast-links.md); --max-rate-pps
raises or lowers the rule's maximum. The weights are copied unchanged: the policy then runs
under a rule it was not trained with, which is what docs/fast-links.md measures.
"""

import json
import os
import shutil
import sys

from shared_targets import option


def set_rule(spec_path, startup, max_rate_pps):
    with open(spec_path) as f:
        spec = json.load(f)
    spec["action"]["startup"] = startup
    if max_rate_pps is not None:
        spec["action"]["max_rate_pps"] = max_rate_pps
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")


def main(argv):
    if len(argv) < 3 or argv[1].startswith("-") or argv[2].startswith("-"):
        sys.exit(__doc__)
    src, dst = argv[1], argv[2]
    if not os.path.isfile(os.path.join(src, "policy.json")):
        sys.exit(f"{src}: no policy.json (not an export folder)")
    if os.path.exists(dst):
        sys.exit(f"{dst}: already exists")
    try:
        startup = json.loads(option(argv, "--startup", "{}"))
    except json.JSONDecodeError as e:
        sys.exit(f"--startup: not JSON ({e})")
    if not isinstance(startup, dict):
        sys.exit("--startup: must be a JSON object, e.g. '{\"growth_per_mi\": 2}'")
    rate = option(argv, "--max-rate-pps", None)
    try:
        max_rate_pps = None if rate is None else float(rate)
    except ValueError:
        sys.exit(f"--max-rate-pps: not a number ({rate})")
    shutil.copytree(src, dst)
    for spec in [os.path.join(dst, "policy.json"), os.path.join(dst, "competitive", "policy.json")]:
        if os.path.isfile(spec):
            set_rule(spec, startup, max_rate_pps)
    print(dst)


if __name__ == "__main__":
    main(sys.argv)
