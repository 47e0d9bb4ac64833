#!/usr/bin/env python3
"""The three-seed average of a `glshift bench` folder, unrounded: for each seed the mean target
accuracy over its tasks, then the mean ± standard deviation (n − 1) of those per-seed means
(what the `bench` table's Avg column shows rounded). Reads runs/*.json; target labels enter
only through the records' final scores.

usage: python3 bench/seed_average.py BENCH_DIR [--method mul]
"""

import argparse
import glob
import json
import os
import statistics


def run_records(folder):
    """Every run record of a bench folder (runs/*.json) with whether it finished: a
    `.failed.json` run diverged and has no accuracy."""
    for f in glob.glob(os.path.join(folder, "runs", "*.json")):
        yield json.load(open(f)), not f.endswith(".failed.json")


def seed_means(folder, method):
    """Per-seed task averages {seed: mean %}, tasks per seed {seed: n}, and the diverged runs."""
    acc, failed = {}, []
    for r, finished in run_records(folder):
        if r["method"] != method:
            continue
        if not finished:
            failed.append(f"{r['source']}→{r['target']} seed {r['seed']}")
            continue
        acc.setdefault(r["seed"], {})[(r["source"], r["target"])] = 100 * r["target_accuracy"]
    per_seed = {s: sum(v.values()) / len(v) for s, v in sorted(acc.items())}
    tasks = {s: len(v) for s, v in sorted(acc.items())}
    return per_seed, tasks, failed


def seed_summary(folder, method, means=None):
    """(mean, std or None for one seed) of the per-seed task averages, or None when runs diverged
    or the seeds cover different numbers of tasks (their averages are not comparable). `means`:
    seed_means' result for the same folder and method, when the caller has it already."""
    per_seed, tasks, failed = means if means is not None else seed_means(folder, method)
    vals = list(per_seed.values())
    if failed or not vals or len(set(tasks.values())) != 1:
        return None
    return statistics.mean(vals), (statistics.stdev(vals) if len(vals) > 1 else None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--method", default="mul")
    a = ap.parse_args()
    per_seed, tasks, failed = seed_means(a.dir, a.method)
    print(
        f"{a.method}: tasks per seed {tasks}; per-seed averages "
        + ", ".join(f"{s}: {m:.3f}" for s, m in per_seed.items())
    )
    if failed:
        print(
            f"{len(failed)} run(s) diverged and are left out of the averages: "
            f"{', '.join(sorted(failed))}"
        )
    if len(set(tasks.values())) > 1:
        print("the seeds cover different numbers of tasks: their averages are not comparable")
    elif len(per_seed) > 1:
        vals = list(per_seed.values())
        print(
            f"mean over seeds of the task average: {statistics.mean(vals):.3f} ± "
            f"{statistics.stdev(vals):.3f}"
        )


if __name__ == "__main__":
    main()
