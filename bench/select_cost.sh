#!/usr/bin/env bash
# Cost of `glshift select` over its default candidates against one default `glshift fit`
# (select at most 3x one default fit). On each task the two run back to back, in
# alternating order (fit first on even tasks, select first on odd ones), so both see the same
# machine load; compare the ratios, not the seconds. Wall seconds and CPU seconds
# (user + system, /usr/bin/time) of each, and what select chose.
#
# usage: bench/select_cost.sh BINARY [DATA] [OUT_DIR] [SEED]
# TASKS="amazon:webcam caltech:dslr" picks the tasks (this is the default).
set -euo pipefail
bin=${1:?glshift binary}
data=${2:-../shared/data/office_caltech10_effnetlite2}
out=${3:-$(mktemp -d)}
seed=${4:-0}
TASKS=${TASKS:-"amazon:webcam caltech:dslr"}
mkdir -p "$out"

# "wall_s cpu_s" of one command writing into $dir.
timed() {
    local dir=$1; shift
    /usr/bin/time -f "%e %U %S" -o "$dir.time" "$bin" "$@" --out "$dir" --quiet >"$dir.log" 2>&1
    awk '{printf "%s %.2f\n", $1, $2 + $3}' "$dir.time"
}

printf "%-16s %8s %8s %7s %8s %8s %7s  %s\n" task fit_wall sel_wall ratio fit_cpu sel_cpu ratio chosen
i=0
for pair in $TASKS; do
    s=${pair%%:*}; t=${pair##*:}
    task="${s:0:1}2${t:0:1}"
    args=(--data "$data" --source "$s" --target "$t" --seed "$seed")
    if (( i % 2 == 0 )); then
        read -r fw fc < <(timed "$out/fit-$task" fit "${args[@]}")
        read -r sw sc < <(timed "$out/select-$task" select "${args[@]}")
    else
        read -r sw sc < <(timed "$out/select-$task" select "${args[@]}")
        read -r fw fc < <(timed "$out/fit-$task" fit "${args[@]}")
    fi
    chosen=$(grep -o '"chosen_name": "[^"]*"' "$out/select-$task/selection.json" | head -1 | cut -d'"' -f4)
    printf "%-16s %8.1f %8.1f %7.3f %8.1f %8.1f %7.3f  %s\n" "$s→$t" "$fw" "$sw" "$(echo "$sw / $fw" | bc -l)" \
        "$fc" "$sc" "$(echo "$sc / $fc" | bc -l)" "$chosen"
    i=$((i + 1))
done
