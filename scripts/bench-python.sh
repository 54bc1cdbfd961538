#!/usr/bin/env bash
# The Python package's speed beside the Rust batch's and PCC-RL's, alternated on one pinned
# core, ROUNDS rounds; prints each run's JSON line (docs/python.md has the table).
#   scripts/bench-python.sh ENV MOCC_BIN [SCENARIO] [PCC_RL_CHECKOUT]
# ROUNDS (default 3) and CORE (default 1) come from the environment.
set -euo pipefail
env=${1:?usage: bench-python.sh ENV MOCC_BIN [SCENARIO] [PCC_RL_CHECKOUT]}
bin=${2:?usage: bench-python.sh ENV MOCC_BIN [SCENARIO] [PCC_RL_CHECKOUT]}
scenario=${3:-configs/aurora-env.yaml}
pccrl=${4:-}
cd "$(dirname "$0")/.."
pin=(taskset -c "${CORE:-1}")
command -v taskset >/dev/null || pin=()
export PYTHONDONTWRITEBYTECODE=1
for round in $(seq "${ROUNDS:-3}"); do
    echo "# round $round" >&2
    "${pin[@]}" "$bin" bench env --scenario "$scenario" --envs 50 --threads 1 --steps 400000
    "${pin[@]}" "$env/bin/python" scripts/bench_python.py --scenario "$scenario" --envs 50 --steps 400000
    "${pin[@]}" "$bin" bench env --scenario "$scenario" --envs 1 --threads 1 --steps 200000
    "${pin[@]}" "$env/bin/python" scripts/bench_python.py --scenario "$scenario" --api single --steps 200000
    if [[ -n "$pccrl" ]]; then
        "${pin[@]}" "$env/bin/python" scripts/pccrl_bench.py "$pccrl" --steps 50000 --seed "$round"
    fi
done
