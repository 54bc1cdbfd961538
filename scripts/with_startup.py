#!/usr/bin/env python3
"""Copy an export folder with `action.startup` (and optionally other rate limits) set.

    python3 scripts/with_startup.py SRC DST [--max-rate-pps N] [--multiplicative-above-pps N]
                                            [--startup JSON]

SRC is an export (a single policy or a pair; a pair's competitive half in SRC/competitive gets
the same rule, as a pair's halves must act alike). DST must not exist. --startup takes the
startup's fields as JSON (default `{}`: every default, docs/fast-links.md); --max-rate-pps
raises or lowers the rule's maximum; --multiplicative-above-pps bounds a binomial increase
(the rule must have one). The weights are copied unchanged: the policy then runs under a rule
it was not trained with, which is what docs/fast-links.md measures. checkpoints/mocc-pair's
rule is `--max-rate-pps 100000 --multiplicative-above-pps 5000` with the default startup
(scripts/train-pair.sh applies it to a retrained pair).
"""

import json
import os
import shutil
import sys

from shared_targets import option


def set_rule(spec_path, startup, max_rate_pps, multiplicative_above_pps):
    with open(spec_path) as f:
        spec = json.load(f)
    spec["action"]["startup"] = startup
    if max_rate_pps is not None:
        spec["action"]["max_rate_pps"] = max_rate_pps
    if multiplicative_above_pps is not None:
        spec["action"]["binomial_increase"]["multiplicative_above_pps"] = multiplicative_above_pps
    with open(spec_path, "w") as f:
        json.dump(spec, f, indent=2)
        f.write("\n")


def number_option(argv, name):
    """The number after `name` in argv (None when absent); exits naming a bad value."""
    value = option(argv, name, None)
    try:
        return None if value is None else float(value)
    except ValueError:
        sys.exit(f"{name}: not a number ({value})")


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
    max_rate_pps = number_option(argv, "--max-rate-pps")
    above_pps = number_option(argv, "--multiplicative-above-pps")
    halves = ["policy.json", os.path.join("competitive", "policy.json")]
    halves = [h for h in halves if os.path.isfile(os.path.join(src, h))]
    if above_pps is not None:
        for h in halves:
            with open(os.path.join(src, h)) as f:
                if "binomial_increase" not in json.load(f)["action"]:
                    sys.exit(f"{os.path.join(src, h)}: --multiplicative-above-pps needs a "
                             "binomial_increase rule")
    shutil.copytree(src, dst)
    for h in halves:
        set_rule(os.path.join(dst, h), startup, max_rate_pps, above_pps)
    print(dst)


if __name__ == "__main__":
    main(sys.argv)
