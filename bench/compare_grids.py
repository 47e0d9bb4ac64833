#!/usr/bin/env python3
"""Two `glshift bench` folders of the same grid (two builds, or a setting on and off), run by
run: every (method, task, seed) whose target accuracy differs, with both accuracies and prior l1
errors, then each method's per-seed averages and their mean ± std in both (seed_average.py's
numbers). Reads runs/*.json; target labels enter only through the records' final scores
(evaluation).

usage: python3 bench/compare_grids.py BEFORE_DIR AFTER_DIR
"""
import sys

from seed_average import run_records, seed_means, seed_summary


def runs(folder):
    """{(method, source, target, seed): (accuracy %, prior l1 or None)} of the finished runs."""
    return {(r["method"], r["source"], r["target"], r["seed"]): (100 * r["target_accuracy"], r.get("prior_l1_error"))
            for r, finished in run_records(folder) if finished}


def l1(v):
    return "–" if v is None else f"{v:.3f}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = sys.argv[1], sys.argv[2]
    a, b = runs(before), runs(after)
    common = sorted(set(a) & set(b))
    changed = [k for k in common if a[k][0] != b[k][0]]
    print(f"{len(changed)} of {len(common)} runs in both folders changed accuracy ({len(set(a) ^ set(b))} in one folder only)")
    for k in changed:
        m, s, t, seed = k
        print(f"  {m} {s}→{t} seed {seed}: {a[k][0]:.2f} → {b[k][0]:.2f} (prior l1 {l1(a[k][1])} → {l1(b[k][1])})")
    for m in sorted({k[0] for k in common}):
        for label, folder in (("before", before), ("after", after)):
            means = seed_means(folder, m)
            per_seed, summary = means[0], seed_summary(folder, m, means)
            mean = "no average (diverged runs or uneven seeds)" if summary is None else f"{summary[0]:.3f}" + (f" ± {summary[1]:.3f}" if summary[1] is not None else "")
            seeds = " / ".join(f"{v:.2f}" for v in per_seed.values())
            print(f"{m} {label}: {mean} (per seed {seeds})")


if __name__ == "__main__":
    main()
