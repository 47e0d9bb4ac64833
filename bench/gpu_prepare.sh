#!/usr/bin/env bash
# Prepares `.gpu/` for bench/gpu_check.sh on a CPU machine, so that the lent GPU machine's time
# goes to GPU work only: the release `glshift` and the core's unit-test binary (stripped), with
# the kernels compiled here by NVRTC 13 first (found as gpu_check.sh looks for it, else the pip
# wheel .ci/run uses), the Office-Caltech10 EfficientNet-Lite2 features, and the 12 UDA tasks'
# CPU fits (seed 0, default MUL, `--device cpu`), whose report.json and predictions.csv section
# `oc10` compares the cuda fits against instead of fitting them again there.
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
# The kernels compiled here first, with the NVRTC found as the GPU machine will look for it
# (bench/cuda_libs.sh), or the pip wheel .ci/run installs: a compile failure costs no device time.
# NVRTC itself is not carried (109 MB, over the carry limit): gpu_check.sh locates it there.
. bench/cuda_libs.sh
locate_cuda_libs
if [ -z "${GLSHIFT_NVRTC:-}" ]; then
  [ -x target/ci-nvrtc-venv/bin/pip ] || python3 -m venv target/ci-nvrtc-venv
  target/ci-nvrtc-venv/bin/pip install --quiet --disable-pip-version-check "nvidia-cuda-nvrtc==13.0.*"
  GLSHIFT_NVRTC=$(find "$PWD/target/ci-nvrtc-venv" -name libnvrtc.so.13 -print -quit)
  export GLSHIFT_NVRTC
fi
compiled=$(cd crates/glshift && GLSHIFT_REQUIRE_NVRTC=1 ../../.gpu/glshift-lib-tests device::cuda::kernels:: --nocapture 2>&1) \
  || { echo "$compiled" >&2; echo "the kernels do not compile with NVRTC: see above" >&2; exit 1; }
echo "$compiled" | grep -E "^(NVRTC|PTX ISA) |test result"
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
