#!/usr/bin/env bash
# Installs what the `mpi` feature builds and runs with, when missing: Debian's OpenMPI 4.1
# (libopenmpi-dev, openmpi-bin), libclang-dev (rsmpi's bindgen) and pkgconf (it finds OpenMPI).
# Needs root; without root it names the missing packages and fails.
#   scripts/install-mpi.sh
set -euo pipefail
missing=()
command -v mpirun >/dev/null 2>&1 || missing+=(openmpi-bin)
pkg-config --exists ompi 2>/dev/null || missing+=(libopenmpi-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkgconf)
# libclang itself (libclang.so, libclang-14.so.1, ...), not libclang-cpp, which bindgen cannot use.
has_libclang() {
    local dir
    for dir in /usr/lib/llvm-*/lib /usr/lib/x86_64-linux-gnu; do
        compgen -G "$dir/libclang.so*" >/dev/null && return 0
        compgen -G "$dir/libclang-[0-9]*.so*" >/dev/null && return 0
    done
    return 1
}
has_libclang || missing+=(libclang-dev)
[[ ${#missing[@]} -eq 0 ]] && exit 0
mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)
if [[ $(id -u) -ne 0 ]]; then
    echo "install-mpi: not root; install these Debian packages first: ${packages[*]}" >&2
    exit 1
fi
echo "install-mpi: installing ${packages[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; }
