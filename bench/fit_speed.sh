#!/usr/bin/env bash
# Default `glshift fit` time, old build vs new build, on the 12 Office-Caltech10
# EfficientNet-Lite2 UDA tasks (issue 14, "fast enough"). The two builds run alternately on each
# task (old first on even tasks, new first on odd ones), so that both see the same machine load;
# compare the ratio, not the seconds.
#
# usage: bench/fit_speed.sh OLD_BINARY NEW_BINARY [DATA] [OUT_DIR] [SEED]
set -euo pipefail
old=${1:?old glshift binary}
new=${2:?new glshift binary}
data=${3:-../shared/data/office_caltech10_effnetlite2}
out=${4:-$(mktemp -d)}
seed=${5:-0}
domains=(amazon caltech dslr webcam)
mkdir -p "$out"

# Seconds of one default fit (wall clock), its accuracy from report.json.
timed_fit() {
    local bin=$1 src=$2 tgt=$3 dir=$4
    local t0 t1
    t0=$(date +%s.%N)
    "$bin" fit --data "$data" --source "$src" --target "$tgt" --seed "$seed" --out "$dir" --quiet >"$dir.log" 2>&1
    t1=$(date +%s.%N)
    local acc
    acc=$(grep -o '"target_accuracy": [0-9.]*' "$dir/report.json" | head -1 | awk '{print $2}')
    echo "$(echo "$t1 - $t0" | bc -l) $acc"
}

printf "%-18s %9s %9s %7s %8s %8s\n" task old_s new_s ratio old_acc new_acc
i=0
sum_old=0; sum_new=0; worst=0
for s in "${domains[@]}"; do
    for t in "${domains[@]}"; do
        [ "$s" = "$t" ] && continue
        task="${s:0:1}2${t:0:1}"
        if (( i % 2 == 0 )); then
            read -r so ao < <(timed_fit "$old" "$s" "$t" "$out/old-$task")
            read -r sn an < <(timed_fit "$new" "$s" "$t" "$out/new-$task")
        else
            read -r sn an < <(timed_fit "$new" "$s" "$t" "$out/new-$task")
            read -r so ao < <(timed_fit "$old" "$s" "$t" "$out/old-$task")
        fi
        ratio=$(echo "$sn / $so" | bc -l)
        printf "%-18s %9.1f %9.1f %7.3f %8.4f %8.4f\n" "$s→$t" "$so" "$sn" "$ratio" "$ao" "$an"
        sum_old=$(echo "$sum_old + $so" | bc -l); sum_new=$(echo "$sum_new + $sn" | bc -l)
        worst=$(echo "if ($ratio > $worst) $ratio else $worst" | bc -l)
        i=$((i + 1))
    done
done
printf "total: old %.1f s, new %.1f s, ratio of totals %.3f, worst task ratio %.3f\n" \
    "$sum_old" "$sum_new" "$(echo "$sum_new / $sum_old" | bc -l)" "$worst"
