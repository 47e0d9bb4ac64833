#!/usr/bin/env bash
# Source-only evidence for pre-training's stopping rule (docs/methods.md "Stopping rules"):
# runs `source` pre-training for all 500 iterations (the rule off: a window as long as the run)
# on each domain as source and each seed, then replays the rule on the hold-out NLL and its
# standard error recorded in report.json's history (bench/pretrain_stop.py). The target domain
# is only a placeholder: pre-training reads no target row, and no target label is read.
#
# usage: bench/pretrain_stop.sh GLSHIFT [DATA] [OUT_DIR] [SEEDS]
# Resumable: a run whose report.json exists is kept.
set -euo pipefail
bin=${1:?glshift binary}
data=${2:-../shared/data/office_caltech10_effnetlite2}
out=${3:-pretrain-stop}
seeds=${4:-0 1 2}
mkdir -p "$out"
printf 'method = "source"\npretrain_iters = 500\npretrain_patience = 500\nadapt_iters = 0\n' >"$out/full.toml"
domains=$(ls "$data" | sed -n 's/_features\.npy$//p')
for seed in $seeds; do
    for s in $domains; do
        t=$(echo "$domains" | grep -vx "$s" | head -1)
        dir="$out/$s-$seed"
        [ -f "$dir/report.json" ] && continue
        rm -rf "$dir"
        "$bin" fit --data "$data" --source "$s" --target "$t" --seed "$seed" --config "$out/full.toml" --out "$dir" --quiet
    done
done
python3 "$(dirname "$0")/pretrain_stop.py" "$out"
