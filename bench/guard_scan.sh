#!/bin/bash
# The prior guard's verdict per task without a full fit (docs/safety.md "The prior guard"):
# default MUL with adapt_iters = 1, so only pre-training and the guard's test at the first
# adaptation iteration run (pre-training does not depend on adapt_iters). Reads no target label
# for the verdict; report.json scores the 1-iteration fit, which nothing here uses.
# usage: bench/guard_scan.sh GLSHIFT DATA SETTING OUT "src:tgt src:tgt ..." [SEED]
set -euo pipefail
BIN=$1; DATA=$2; SETTING=$3; OUT=$4; TASKS=$5; SEED=${6:-0}
mkdir -p "$OUT"
CFG="$OUT/scan.toml"; printf 'adapt_iters = 1\n' > "$CFG"
for t in $TASKS; do
  s=${t%:*}; g=${t#*:}; o="$OUT/$s-$g-seed$SEED"
  [ -f "$o/report.json" ] && continue
  RAYON_NUM_THREADS=1 nice -n 5 "$BIN" fit --data "$DATA" --source "$s" --target "$g" --setting "$SETTING" \
    --seed "$SEED" --config "$CFG" --out "$o" --quiet > "$o.log" 2>&1 || echo "failed: $o (see $o.log)"
done
