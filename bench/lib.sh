# Shared by the old-vs-new timing scripts (bench/fit_speed.sh, bench/baseline_speed.sh); source it,
# do not run it. The two builds run one after the other on each row, in alternating order, so
# that both see the same machine load.

# speed_args OLD_BINARY NEW_BINARY [DATA] [OUT_DIR] [SEED]: sets old, new, data, out, seed and
# creates OUT_DIR (a fresh temporary folder when not given).
speed_args() {
    old=${1:?old glshift binary}
    new=${2:?new glshift binary}
    data=${3:-../shared/data/office_caltech10_effnetlite2}
    out=${4:-$(mktemp -d)}
    seed=${5:-0}
    mkdir -p "$out"
}

# timed_fit BINARY SOURCE TARGET DIR [FIT_ARGS...]: "wall_s cpu_s accuracy" of one
# `glshift fit` written to DIR (CPU = user + system, /usr/bin/time; log in DIR.log).
timed_fit() {
    local bin=$1 src=$2 tgt=$3 dir=$4
    shift 4
    /usr/bin/time -f "%e %U %S" -o "$dir.time" \
        "$bin" fit --data "$data" --source "$src" --target "$tgt" --seed "$seed" "$@" --out "$dir" --quiet >"$dir.log" 2>&1
    local acc
    acc=$(grep -o '"target_accuracy": [0-9.]*' "$dir/report.json" | head -1 | awk '{print $2}')
    awk -v acc="$acc" '{printf "%s %.2f %s\n", $1, $2 + $3, acc}' "$dir.time"
}

# timed_pair ROW SOURCE TARGET OLD_DIR NEW_DIR [FIT_ARGS...]: both builds' timed_fit, old first
# on even rows and new first on odd ones; sets ow oc oa (old) and nw nc na (new).
timed_pair() {
    local row=$1 src=$2 tgt=$3 odir=$4 ndir=$5
    shift 5
    if (( row % 2 == 0 )); then
        read -r ow oc oa < <(timed_fit "$old" "$src" "$tgt" "$odir" "$@")
        read -r nw nc na < <(timed_fit "$new" "$src" "$tgt" "$ndir" "$@")
    else
        read -r nw nc na < <(timed_fit "$new" "$src" "$tgt" "$ndir" "$@")
        read -r ow oc oa < <(timed_fit "$old" "$src" "$tgt" "$odir" "$@")
    fi
}

# add_times: adds the last pair's times to the totals sum_ow sum_nw sum_oc sum_nc.
sum_ow=0; sum_nw=0; sum_oc=0; sum_nc=0
add_times() {
    sum_ow=$(echo "$sum_ow + $ow" | bc -l); sum_nw=$(echo "$sum_nw + $nw" | bc -l)
    sum_oc=$(echo "$sum_oc + $oc" | bc -l); sum_nc=$(echo "$sum_nc + $nc" | bc -l)
}
