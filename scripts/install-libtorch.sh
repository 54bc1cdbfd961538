#!/usr/bin/env bash
# Installs libtorch 2.13.0 (what tch 0.26 needs) from PyPI's torch wheel into a per-user cache.
#
#   scripts/install-libtorch.sh DIR [cuda]
#
# CPU (default): the torch wheel plus the two CUDA runtime libraries libtorch_cpu links against
# (libcudart, libcupti), without the other ~2.3 GB of CUDA libraries. cuda: the full wheel with
# all its NVIDIA dependencies, for GPU machines. Does nothing when DIR is already complete.
set -euo pipefail

dir=${1:?usage: install-libtorch.sh DIR [cuda]}
mode=${2:-cpu}
version=2.13.0

if [[ -f "$dir/.installed" ]]; then
    exit 0
fi
python=${PYTHON:-python3}
if ! "$python" -m pip --version >/dev/null 2>&1; then
    echo "install-libtorch: '$python -m pip' is not available; install pip first" \
         "(Debian: apt-get install python3-pip)" >&2
    exit 1
fi

tmp="$dir.tmp.$$"
rm -rf "$tmp"
mkdir -p "$(dirname "$dir")"
trap 'rm -rf "$tmp"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
echo "install-libtorch: installing torch==$version ($mode) into $dir" >&2
if [[ "$mode" == "cuda" ]]; then
    "$python" -m pip install --quiet --target "$tmp" "torch==$version"
else
    "$python" -m pip install --quiet --no-deps --target "$tmp" "torch==$version" \
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-cupti==13.0.85
fi
if [[ ! -f "$tmp/torch/lib/libtorch_cpu.so" ]]; then
    echo "install-libtorch: $tmp/torch/lib/libtorch_cpu.so missing after install" >&2
    exit 1
fi
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
touch "$dir/.installed"
echo "install-libtorch: LIBTORCH=$dir/torch" >&2
