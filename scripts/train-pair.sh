#!/usr/bin/env bash
# Trains the shipped shared-link model, checkpoints/mocc-pair, from its configs: three training
# runs and `mocc pair` (about 5 minutes on 2 cores; checkpoints/README.md). `make train` runs it.
#
#   scripts/train-pair.sh [OUT] [--set PATH=VALUE ...]
#
# OUT (default runs/mocc-pair-<unix time>, under the current folder) must not exist yet. It
# receives the runs start/ (beside Cubic), coop/ (start fine-tuned beside a learned peer) and
# comp/ (the competitive half), their exports, and pair/: the paired export, used as
# `mocc eval --policy OUT/pair ...`.
# Every --set is passed to all three trainings (e.g. --set seed=2, or a smaller budget).
# MOCC names the binary (default: target/release/mocc when built, else mocc on the PATH).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="runs/mocc-pair-$(date +%s)"
if [[ $# -gt 0 && "$1" != --* ]]; then
    out="$1"
    shift
fi
sets=()
while [[ $# -gt 0 ]]; do
    if [[ "$1" != --set || $# -lt 2 ]]; then
        echo "train-pair.sh: expected --set PATH=VALUE, got '$*'" >&2
        exit 2
    fi
    sets+=(--set "$2")
    shift 2
done
if [[ -z "${MOCC:-}" ]]; then
    MOCC=mocc
    if [[ -x "$root/target/release/mocc" ]]; then MOCC="$root/target/release/mocc"; fi
fi
if [[ -e "$out" ]]; then
    echo "train-pair.sh: $out already exists; name a new folder" >&2
    exit 2
fi
configs="$root/configs"

step() { echo "train-pair.sh: $*" >&2; }

step "1/5 beside Cubic (configs/mocc-beside-cubic.yaml) -> $out/start"
"$MOCC" train "$configs/mocc-beside-cubic.yaml" --out "$out/start" "${sets[@]}"
step "2/5 fine-tune beside a learned peer (configs/mocc-pair-cooperative.yaml) -> $out/coop"
"$MOCC" train "$configs/mocc-pair-cooperative.yaml" --init "$out/start" --out "$out/coop" \
    "${sets[@]}"
step "3/5 the competitive half: beside Cubic on clean paths -> $out/comp"
"$MOCC" train "$configs/mocc-beside-cubic.yaml" --out "$out/comp" \
    --set 'scenario.link.cross_traffic_loss={min: 0, max: 0.001}' "${sets[@]}"
step "4/5 exports"
"$MOCC" export "$out/coop" --out "$out/coop-export"
"$MOCC" export "$out/comp" --out "$out/comp-export"
step "5/5 the paired export -> $out/pair"
"$MOCC" pair "$out/coop-export" "$out/comp-export" --out "$out/pair" --probe-after-s 8

# Training is deterministic on one kind of CPU; say whether this machine rebuilt the shipped
# weights (another CPU kind trains other weights from the same seeds).
shipped="$root/checkpoints/mocc-pair"
same=yes
for weights in policy.safetensors competitive/policy.safetensors; do
    cmp -s "$out/pair/$weights" "$shipped/$weights" || same=no
done
if [[ $same == yes ]]; then
    step "done: $out/pair holds the same weights as checkpoints/mocc-pair"
else
    step "done: $out/pair (its weights differ from checkpoints/mocc-pair's:" \
        "another CPU kind, revision or --set; what to expect of it: docs/reproducibility.md)"
fi
