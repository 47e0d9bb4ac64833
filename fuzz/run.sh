#!/bin/sh
# Runs one fuzz target the way the README describes (one process, lowest CPU priority).
# Usage: fuzz/run.sh <target> [seconds]   (from the repository root or from fuzz/)
set -eu
cd "$(dirname "$0")"
target=$1
secs=${2:-600}
mkdir -p "corpus/$target"
# Hand-made seeds: the data readers' under crates/glshift, the extraction's under glshift-extract.
seeds="../crates/glshift/tests/fuzz_seeds/$target"
[ -d "$seeds" ] || seeds="../crates/glshift-extract/tests/fuzz_seeds/$target"
extra=""
[ -d "corpus_real/$target" ] && extra="corpus_real/$target"
exec nice -n 19 cargo +nightly fuzz run "$target" "corpus/$target" \
    "$seeds" $extra -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -max_len=262144 -timeout=10 -print_final_stats=1
