#!/usr/bin/env bash
# Cross-domain known-truth prior estimation: for every ordered pair of domains, DRAWS
# targets drawn from the target domain at a Dirichlet(ALPHA) prior (N rows, `shift simulate
# --target-domain`), then the default `fit` and `shift estimate --data` on each. Resumable: a
# step whose output exists is skipped. Summarise with scripts/cross_domain_prior.py OUT.
# Usage: scripts/cross_domain_prior.sh GLSHIFT DATA OUT [DRAWS] [SEED0] [ALPHA] [N]
set -euo pipefail
bin=$1; data=$2; out=$3; draws=${4:-3}; seed0=${5:-0}; alpha=${6:-1}; n=${7:-600}
domains=$(ls "$data" | sed -n 's/_features\.npy$//p')
mkdir -p "$out"
for s in $(seq "$seed0" $((seed0 + draws - 1))); do
  for a in $domains; do
    for b in $domains; do
      [ "$a" = "$b" ] && continue
      d="$out/$a-$b-$s"
      [ -f "$d/sim/simulation.json" ] || "$bin" shift simulate --data "$data" --domain "$a" --target-domain "$b" \
        --prior "dirichlet:$alpha" --seed "$s" --n "$n" --out "$d/sim" > /dev/null
      [ -f "$d/fit/report.json" ] || "$bin" fit --data "$d/sim" --source source --target target --seed "$s" --out "$d/fit" > /dev/null
      [ -f "$d/estimate.json" ] || "$bin" shift estimate --data "$d/sim" --source source --target target --seed "$s" \
        --bootstrap 200 --out "$d/estimate.json" > /dev/null
      echo "$(date +%T) done $a -> $b seed $s"
    done
  done
done
