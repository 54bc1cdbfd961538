#!/usr/bin/env bash
# Builds the Python package (an abi3 wheel, python/) with maturin and installs it into the
# virtual environment ENV (scripts/install-python-env.sh makes it).
#   scripts/build-python.sh ENV [PROFILE]
# PROFILE is a cargo profile (default release; `make test` builds with ci, whose artifacts
# it shares). The wheel is left in target/wheels/.
set -euo pipefail
env=${1:?usage: build-python.sh ENV [PROFILE]}
profile=${2:-release}
cd "$(dirname "$0")/.."
out=target/wheels
rm -f "$out"/mocc-*.whl
"$env/bin/maturin" build --quiet --profile "$profile" -m python/Cargo.toml -o "$out" \
    --interpreter "$env/bin/python"
wheels=("$out"/mocc-*.whl)
if [[ ${#wheels[@]} -ne 1 || ! -f "${wheels[0]}" ]]; then
    echo "build-python: expected one wheel in $out, found: ${wheels[*]}" >&2
    exit 1
fi
PIP_DISABLE_PIP_VERSION_CHECK=1 "$env/bin/python" -m pip install --quiet --no-deps \
    --force-reinstall "${wheels[0]}"
echo "build-python: installed ${wheels[0]} into $env" >&2
