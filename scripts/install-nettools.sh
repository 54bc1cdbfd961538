#!/usr/bin/env bash
# Installs the Debian packages the real-network tests need (iproute2, nftables, ethtool,
# iputils-ping) when a tool is missing. Needs root, as the tests themselves do; without root it
# only says what is missing (the tests then skip, or fail under MOCC_REQUIRE_NET=1).
#   scripts/install-nettools.sh
set -euo pipefail
declare -A package_of=([ip]=iproute2 [tc]=iproute2 [nft]=nftables [ethtool]=ethtool [ping]=iputils-ping)
missing=()
for tool in "${!package_of[@]}"; do
    command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 \
        || missing+=("${package_of[$tool]}")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
mapfile -t packages < <(printf '%s\n' "${missing[@]}" | sort -u)
if [[ $(id -u) -ne 0 ]]; then
    echo "install-nettools: not root; missing packages: ${packages[*]}" >&2
    exit 0
fi
echo "install-nettools: installing ${packages[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null \
    || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends "${packages[@]}" >/dev/null; }
