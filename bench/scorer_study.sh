#!/usr/bin/env bash
# The scorer study (item 4): `glshift select` over bench/scorer_study_candidates.toml
# on every benchmark the project holds, one seed; then bench/scorer_study.py prints the table.
# Resumable: a task whose selection.json exists is skipped. At most JOBS (default 2) selections
# run at a time, each with RAYON_NUM_THREADS=1 under `nice -n 5`.
#
# usage: bench/scorer_study.sh BINARY OUT_DIR [SEED] [DATA_ROOT]
# BENCHES="oc-uda oc-pda oc-gls surf mnist-usps synthetic" picks the benchmarks (default: all).
# `synthetic` needs OUT_DIR/synthetic-data (written by
# `cargo run -p glshift-experiments --example write_synthetic -- OUT_DIR/synthetic-data`).
set -euo pipefail
bin=${1:?glshift binary}
out=${2:?output folder}
seed=${3:-0}
root=${4:-../shared/data}
here=$(cd "$(dirname "$0")" && pwd)
cands="$here/scorer_study_candidates.toml"
BENCHES=${BENCHES:-"oc-uda oc-pda oc-gls surf mnist-usps synthetic"}
JOBS=${JOBS:-2}
mkdir -p "$out"

oc_pairs() {
    for s in amazon caltech dslr webcam; do
        for t in amazon caltech dslr webcam; do
            if [[ $s != "$t" ]]; then echo "$s $t"; fi
        done
    done
}

# One line per task: BENCH DATA SOURCE TARGET SETTING.
tasks() {
    for b in $BENCHES; do
        case $b in
            oc-uda|oc-pda|oc-gls) oc_pairs | while read -r s t; do echo "$b $root/office_caltech10_effnetlite2 $s $t ${b#oc-}"; done ;;
            surf) oc_pairs | while read -r s t; do echo "$b $root/office_caltech10_surf $s $t uda"; done ;;
            mnist-usps) echo "$b $root/mnist_usps mnist usps uda"; echo "$b $root/mnist_usps usps mnist uda" ;;
            synthetic) for k in 0 1 2; do echo "$b $out/synthetic-data source$k target$k uda"; done ;;
            *) echo "unknown benchmark $b" >&2; exit 2 ;;
        esac
    done
}

one() {
    local b=$1 data=$2 s=$3 t=$4 setting=$5
    local dir="$out/$b/$s-$t"
    [[ -f $dir/selection.json ]] && return 0
    mkdir -p "$out/$b"
    local start=$SECONDS
    if RAYON_NUM_THREADS=1 nice -n 5 "$bin" select --data "$data" --source "$s" --target "$t" --setting "$setting" \
        --seed "$seed" --candidates "$cands" --out "$dir" --quiet >"$dir.log" 2>&1; then
        echo "$b $s→$t done in $((SECONDS - start)) s"
        rm -f "$dir"/*.npy "$dir/model.glshift"   # keep the run folders small: the study reads selection.json
    else
        echo "$b $s→$t FAILED (see $dir.log)"
    fi
}
export -f one
export bin out seed cands

tasks | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
python3 "$here/scorer_study.py" "$out"
