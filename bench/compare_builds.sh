#!/usr/bin/env bash
# Are two glshift builds' results the same, bit for bit? For every ordered pair of domains in
# DATA (the 12 Office-Caltech10 UDA tasks by default), seed 0, each build runs `fit`, `predict`
# (its own model on the target domain) and, with SELECT=1, `select`, and with BENCH=1 a
# `bench` grid (source, mul); the script then compares what they wrote:
#   - byte for byte: predictions.csv, z_source.npy, z_target.npy, model.glshift;
#   - report.json / selection.json / results.json as JSON with the fields that measure time
#     (elapsed_seconds, seconds, …) or only exist in the newer build removed (reported).
# Resumable: a run whose output exists is not repeated. Prints one line per compared file and
# a verdict; exits 1 on any difference.
#
#   bash bench/compare_builds.sh OLD_BINARY NEW_BINARY OUT [DATA]
set -euo pipefail
old=$1 new=$2 out=$3
data=${4:-../shared/data/office_caltech10_effnetlite2}
[ -x "$old" ] && [ -x "$new" ] || { echo "usage: $0 OLD_BINARY NEW_BINARY OUT [DATA]" >&2; exit 2; }
[ -d "$data" ] || { echo "skipped: $data is absent" >&2; exit 0; }
mkdir -p "$out"
domains=$(ls "$data" | sed -n 's/_features\.npy$//p')
tasks=()
for s in $domains; do for t in $domains; do [ "$s" != "$t" ] && tasks+=("$s:$t"); done; done

run_build() { # NAME BINARY
    local name=$1 bin=$2 s t dir
    for task in "${tasks[@]}"; do
        s=${task%%:*} t=${task##*:} dir=$out/$name/$s-$t
        [ -f "$dir/fit/report.json" ] || "$bin" fit --data "$data" --source "$s" --target "$t" --seed 0 --quiet --out "$dir/fit" >/dev/null
        [ -f "$dir/predict/report.json" ] || "$bin" predict --model "$dir/fit/model.glshift" --data "$data" --domain "$t" --quiet --out "$dir/predict" >/dev/null
        if [ "${SELECT:-0}" = 1 ] && [ ! -f "$dir/select/selection.json" ]; then
            "$bin" select --data "$data" --source "$s" --target "$t" --seed 0 --quiet --out "$dir/select" >/dev/null 2>&1
        fi
    done
    if [ "${BENCH:-0}" = 1 ]; then
        "$bin" bench --data "$data" --seeds 0 --methods source,mul --quiet --out "$out/$name/bench" >/dev/null 2>&1
    fi
}
run_build old "$old"
run_build new "$new"
python3 "$(dirname "$0")/compare_builds.py" "$out/old" "$out/new"
