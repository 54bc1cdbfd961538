#!/usr/bin/env bash
# The Python package's tests (`make test` runs this after building it into ENV): the pytest
# suite, the two training examples on tiny budgets with their learning checks, and the
# notebook on the SB3 example's outputs.
#   scripts/test-python.sh ENV MOCC_BIN
# Nothing is written into the tree (no bytecode, no pytest cache; outputs in a temp folder).
set -euo pipefail
env=${1:?usage: test-python.sh ENV MOCC_BIN}
bin=${2:?usage: test-python.sh ENV MOCC_BIN}
cd "$(dirname "$0")/.."
root=$PWD
py="$env/bin/python"
export PYTHONDONTWRITEBYTECODE=1 MOCC_BIN="$root/$bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$py" -m pytest -q -p no:cacheprovider --import-mode=importlib -W error python/tests

# Learning happened: every seed's deterministic policy beats a random one (N(0, 1) actions)
# on held-out networks by a margin well below what the seeds reach (docs/python.md).
(cd "$tmp" && "$py" "$root/examples/python/sb3_aurora.py" --timesteps 60000 --seeds 0 1 \
    --episode-mis 100 --out "$tmp/sb3" --min-gain 0.2)
(cd "$tmp" && "$py" "$root/examples/python/ppo_mocc.py" --total-timesteps 200000 --seeds 0 1 \
    --episode-mis 100 --out "$tmp/ppo" --min-gain 0.04)

mkdir -p "$tmp/figures"
(cd notebooks && MOCC_ROOT="$root" MOCC_SB3_OUT="$tmp/sb3" MOCC_FIGURES="$tmp/figures" \
    "$py" -m nbconvert --to notebook --execute --log-level=WARN --output-dir "$tmp/executed" \
    python.ipynb)
for f in python-curves.png python-episode.png; do
    if [[ "$(head -c 4 "$tmp/figures/$f" 2>/dev/null | od -An -c | tr -d ' ')" != "211PNG" ]]; then
        echo "test-python: notebooks/python.ipynb did not draw $f" >&2
        exit 1
    fi
done
echo "test-python: passed" >&2
