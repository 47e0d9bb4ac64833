#!/usr/bin/env bash
# `glshift fit` time of the mini-batch baselines, old build vs new build, side by side in one run
# ("make the paper-style baseline training fast"). For each task and method the two
# builds run one after the other (old first on even rows, new first on odd ones) so that both see
# the same machine load; compare the ratios, not the seconds. Prints each fit's wall-clock and CPU
# seconds (user + system, /usr/bin/time), the target accuracy, and whether the two builds wrote
# byte-identical predictions.csv (every predicted probability, to the printed digits) and the same
# adaptation history in report.json.
#
# usage: bench/baseline_speed.sh OLD_BINARY NEW_BINARY [DATA] [OUT_DIR] [SEED]
# TASKS="amazon:webcam dslr:caltech" and METHODS="cdan-e dann" (defaults) choose the rows;
# SETTING=uda|pda|gls (default uda); CONFIG=FILE.toml is passed to both as --config (default: none,
# the defaults). The environment passes through: with RAYON_NUM_THREADS=1 and
# MATMUL_NUM_THREADS unset (the grids' setting) the old build's GEMMs still use 2 threads and the
# new one's 1; set MATMUL_NUM_THREADS=1 to compare single-threaded work only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
speed_args "$@"
TASKS=${TASKS:-"amazon:webcam dslr:caltech"}
METHODS=${METHODS:-"cdan-e dann"}
SETTING=${SETTING:-uda}
config_args=()
[ -n "${CONFIG:-}" ] && config_args=(--config "$CONFIG")

# "yes" when the two fits' predictions.csv are byte-identical and their histories equal.
same_result() {
    local a=$1 b=$2
    if cmp -s "$a/predictions.csv" "$b/predictions.csv" && python3 - "$a/report.json" "$b/report.json" <<'PY'
import json, sys
h = [json.load(open(p))["history"] for p in sys.argv[1:]]
sys.exit(0 if h[0] == h[1] else 1)
PY
    then echo yes; else echo NO; fi
}

printf "%-14s %-8s %8s %8s %7s %8s %8s %7s %8s %8s %s\n" task method old_wall new_wall ratio old_cpu new_cpu ratio old_acc new_acc identical
i=0
for pair in $TASKS; do
    s=${pair%%:*}; t=${pair##*:}
    for m in $METHODS; do
        tag="${s:0:1}2${t:0:1}-$m"
        timed_pair "$i" "$s" "$t" "$out/old-$tag" "$out/new-$tag" --setting "$SETTING" --method "$m" "${config_args[@]}"
        same=$(same_result "$out/old-$tag" "$out/new-$tag")
        printf "%-14s %-8s %8.1f %8.1f %7.3f %8.1f %8.1f %7.3f %8.4f %8.4f %s\n" "$s→$t" "$m" "$ow" "$nw" \
            "$(echo "$nw / $ow" | bc -l)" "$oc" "$nc" "$(echo "$nc / $oc" | bc -l)" "$oa" "$na" "$same"
        add_times
        i=$((i + 1))
    done
done
printf "total: wall old %.1f s new %.1f s (ratio %.3f); CPU old %.1f s new %.1f s (ratio %.3f)\n" \
    "$sum_ow" "$sum_nw" "$(echo "$sum_nw / $sum_ow" | bc -l)" "$sum_oc" "$sum_nc" "$(echo "$sum_nc / $sum_oc" | bc -l)"
