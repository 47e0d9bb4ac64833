#!/usr/bin/env bash
# Default `glshift fit` time, old build vs new build, on the Office-Caltech10 EfficientNet-Lite2
# UDA tasks. The two builds run alternately on each task (old first on
# even tasks, new first on odd ones), so that both see the same machine load; compare ratios,
# not seconds. Each fit's wall-clock seconds and CPU seconds (user + system, /usr/bin/time) are
# printed; on a shared machine the CPU seconds are the steadier measure of the work done.
#
# usage: bench/fit_speed.sh OLD_BINARY NEW_BINARY [DATA] [OUT_DIR] [SEED]
# TASKS="dslr:webcam amazon:caltech" limits or reorders the tasks (default: all 12).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
speed_args "$@"
domains=(amazon caltech dslr webcam)
if [ -z "${TASKS:-}" ]; then
    TASKS=""
    for s in "${domains[@]}"; do for t in "${domains[@]}"; do [ "$s" != "$t" ] && TASKS="$TASKS $s:$t"; done; done
fi

printf "%-16s %8s %8s %7s %8s %8s %7s %8s %8s\n" task old_wall new_wall ratio old_cpu new_cpu ratio old_acc new_acc
i=0
worst_w=0; worst_c=0
for pair in $TASKS; do
    s=${pair%%:*}; t=${pair##*:}
    task="${s:0:1}2${t:0:1}"
    timed_pair "$i" "$s" "$t" "$out/old-$task" "$out/new-$task"
    rw=$(echo "$nw / $ow" | bc -l); rc=$(echo "$nc / $oc" | bc -l)
    printf "%-16s %8.1f %8.1f %7.3f %8.1f %8.1f %7.3f %8.4f %8.4f\n" "$s→$t" "$ow" "$nw" "$rw" "$oc" "$nc" "$rc" "$oa" "$na"
    add_times
    worst_w=$(echo "if ($rw > $worst_w) $rw else $worst_w" | bc -l)
    worst_c=$(echo "if ($rc > $worst_c) $rc else $worst_c" | bc -l)
    i=$((i + 1))
done
printf "total: wall old %.1f s new %.1f s (ratio %.3f, worst task %.3f); CPU old %.1f s new %.1f s (ratio %.3f, worst task %.3f)\n" \
    "$sum_ow" "$sum_nw" "$(echo "$sum_nw / $sum_ow" | bc -l)" "$worst_w" \
    "$sum_oc" "$sum_nc" "$(echo "$sum_nc / $sum_oc" | bc -l)" "$worst_c"
