#!/usr/bin/env bash
# Creates the virtual environment the Python package is built and tested in (maturin, NumPy,
# Gymnasium, PettingZoo, pytest, and for the examples Stable-Baselines3 with PyPI's torch
# 2.13.0, the release whose libtorch the Rust trainer links), once per package list.
#   scripts/install-python-env.sh DIR
# The Python package itself is installed into it by `make python`.
set -euo pipefail
dir=${1:?usage: install-python-env.sh DIR}
packages=(maturin==1.16.0 numpy==2.4.6 gymnasium==1.4.0 pettingzoo==1.27.0 pytest==9.2.0
          stable-baselines3==2.9.2 torch==2.13.0 pandas==3.1.1 matplotlib==3.11.2
          nbconvert==7.17.2 nbclient==0.11.0 ipykernel==7.4.0)
wanted="${packages[*]}"
[[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$wanted" ]] && exit 0
python=${PYTHON:-python3}
if ! "$python" -m venv --help >/dev/null 2>&1; then
    echo "install-python-env: '$python -m venv' is not available (Debian: apt-get install python3-venv)" >&2
    exit 1
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
echo "install-python-env: creating $dir with ${wanted}" >&2
# Created where it will live: a virtual environment's scripts name their own path.
rm -rf "$dir"
"$python" -m venv "$dir"
trap 'rm -rf "$dir"' EXIT
"$dir/bin/python" -m pip install --quiet "${packages[@]}"
trap - EXIT
printf '%s' "$wanted" > "$dir/.installed"
