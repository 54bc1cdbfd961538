#!/usr/bin/env bash
# Installs the Python packages the tests use (TensorBoard, and Jupyter + pandas + matplotlib
# for the notebooks) into DIR, once per package list.
#   scripts/install-pytools.sh DIR
set -euo pipefail
dir=${1:?usage: install-pytools.sh DIR}
packages=(tensorboard==2.20.0 pandas==3.1.1 matplotlib==3.11.2 nbconvert==7.17.2 nbclient==0.11.0 ipykernel==7.4.0)
wanted="${packages[*]}"
[[ -f "$dir/.installed" && "$(cat "$dir/.installed")" == "$wanted" ]] && exit 0
python=${PYTHON:-python3}
tmp="$dir.tmp.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
echo "install-pytools: installing ${wanted} into $dir" >&2
"$python" -m pip install --quiet --target "$tmp" "${packages[@]}"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
printf '%s' "$wanted" > "$dir/.installed"
