#!/usr/bin/env bash
# Installs the Python packages the tests use (TensorBoard) into DIR, once.
#   scripts/install-pytools.sh DIR
set -euo pipefail
dir=${1:?usage: install-pytools.sh DIR}
[[ -f "$dir/.installed" ]] && exit 0
python=${PYTHON:-python3}
tmp="$dir.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
echo "install-pytools: installing tensorboard into $dir" >&2
"$python" -m pip install --quiet --target "$tmp" tensorboard==2.20.0
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
touch "$dir/.installed"
