#!/usr/bin/env bash
# Prepares `.gpu/` for bench/gpu_check.sh on a CPU machine, so that the lent GPU machine's time
# goes to GPU work only: the release `glshift` and the core's unit-test binary (stripped), the
# Office-Caltech10 EfficientNet-Lite2 features, and the 12 UDA tasks' CPU fits (seed 0, default
# MUL, `--device cpu`), whose report.json and predictions.csv section `oc10` compares the cuda
# fits against instead of fitting them again there.
#   bash bench/gpu_prepare.sh [DATA_DIR]     (default ../shared/data/office_caltech10_effnetlite2)
# Then, with the device tool: `bash bench/gpu_check.sh .gpu [sections]`, carry [".gpu"].
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/office_caltech10_effnetlite2}
[ -f "$DATA/amazon_features.npy" ] || { echo "no Office-Caltech10 features in $DATA" >&2; exit 1; }
cargo build --release -p glshift-cli
cargo test -p glshift --lib --no-run
rm -rf .gpu && mkdir -p .gpu/oc10 .gpu/oc10-cpu
cp target/release/glshift .gpu/ && strip .gpu/glshift
tests=$(ls -t target/debug/deps/glshift-* | grep -v '\.d$' | head -1)
cp "$tests" .gpu/glshift-lib-tests && strip .gpu/glshift-lib-tests
cp "$DATA"/*.npy "$DATA/classes.txt" .gpu/oc10/
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
domains="amazon caltech dslr webcam"
for s in $domains; do for t in $domains; do [ "$s" = "$t" ] && continue
  .gpu/glshift fit --data .gpu/oc10 --source $s --target $t --seed 0 --device cpu --quiet --out "$work/$s-$t-cpu" \
    >"$work/$s-$t.log" 2>&1 || { echo "CPU fit $s -> $t failed:" >&2; tail -5 "$work/$s-$t.log" >&2; exit 1; }
  mkdir -p ".gpu/oc10-cpu/$s-$t-cpu"
  cp "$work/$s-$t-cpu"/{report.json,predictions.csv} ".gpu/oc10-cpu/$s-$t-cpu/"
done; done
echo "CPU fits of $(ls .gpu/oc10-cpu | wc -l) tasks on $(nproc) cores of $(uname -m); .gpu holds $(du -sh .gpu | cut -f1) (carry limit 64 MiB)"
