#!/usr/bin/env python3
"""Regenerates the tables of docs/strong-shift.md from `glshift bench` grids.

For each NAME=GRID[,GRID...] argument, the run records GRID/runs/*.json are read (nothing is
trained; a run in a later grid replaces the same method, task and seed of an earlier one)
and three tables replace the part of DOC between `<!-- BEGIN strong:NAME -->` and
`<!-- END strong:NAME -->`:

1. target accuracy (%) per task and method, mean ± std over seeds, with the task average
   (mean ± std over seeds of the per-seed average over tasks);
2. safety: per method, the (task, seed) runs at least `source` − 1 point, and the worst;
3. the reported target prior of each method that reports one: mean ℓ1 error, the source
   proportions' ℓ1 (no estimate at all), their ratio, the share of (task, class) pairs its 90%
   interval covers, and how many fits reported their prior as not trusted.

Target labels enter only as the records' scores. Standard library only.

    python3 bench/strong_shift_page.py DOC NAME=GRID[,GRID...] [NAME=GRID ...] [--check]

--check exits 1 when the page would change (CI-style), without writing.
"""

import glob
import json
import os
import statistics
import sys


def load(grids):
    """The run records of the comma-separated `grids`; a run (method, setting, task, seed)
    found in a later grid replaces the earlier one (a method rerun by a newer build)."""
    runs = {}
    for grid in grids.split(","):
        paths = sorted(glob.glob(os.path.join(grid, "runs", "*.json")))
        paths = [p for p in paths if not p.endswith(".failed.json")]
        if not paths:
            sys.exit(f"{grid}: no run records under runs/")
        for path in paths:
            r = json.load(open(path))
            runs[(r["method"], r["setting"], r["source"], r["target"], r["seed"])] = r
    return list(runs.values())


def short(name):
    return "".join(part[0].upper() for part in name.split("-"))


def mean_std(values):
    if len(values) == 1:
        return values[0], 0.0
    return statistics.mean(values), statistics.stdev(values)


def fmt(values, scale=100.0, digits=1):
    m, s = mean_std([scale * v for v in values])
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def ordered(runs, key):
    seen = []
    for r in runs:
        if r[key] not in seen:
            seen.append(r[key])
    return seen


def accuracy_table(runs, methods, tasks, seeds):
    by = {(r["method"], r["source"], r["target"], r["seed"]): r for r in runs}
    head = "| method | " + " | ".join(f"{short(s)}→{short(t)}" for s, t in tasks) + " | Avg |"
    lines = [head, "|---" * (len(tasks) + 2) + "|"]
    for m in methods:
        cells, per_seed = [], []
        for s, t in tasks:
            accs = [by[(m, s, t, k)]["target_accuracy"] for k in seeds if (m, s, t, k) in by]
            cells.append(fmt(accs) if accs else "–")
        for k in seeds:
            accs = [by[(m, s, t, k)]["target_accuracy"] for s, t in tasks if (m, s, t, k) in by]
            if len(accs) == len(tasks):
                per_seed.append(statistics.mean(accs))
        avg = fmt(per_seed, digits=2) if per_seed else "incomplete"
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {avg} |")
    return lines


def safety_table(runs, methods):
    source = {
        (r["source"], r["target"], r["seed"]): r["target_accuracy"]
        for r in runs
        if r["method"] == "source"
    }
    lines = ["| method | runs ≥ `source` − 1 | worst run against `source` |", "|---|---|---|"]
    for m in methods:
        if m == "source":
            continue
        diffs = [
            (100 * (r["target_accuracy"] - source[key]), key)
            for r in runs
            if r["method"] == m
            for key in [(r["source"], r["target"], r["seed"])]
            if key in source
        ]
        if not diffs:
            continue
        ok = sum(d >= -1.0 for d, _ in diffs)
        worst, (s, t, k) = min(diffs)
        lines.append(
            f"| {m} | {ok} of {len(diffs)} | {worst:+.1f} ({short(s)}→{short(t)}, seed {k}) |"
        )
    return lines


def prior_table(runs, methods):
    lines = [
        "| method | prior ℓ1 | source proportions' ℓ1 | ratio | 90% interval covers"
        " | fits reporting the prior as not trusted |",
        "|---|---|---|---|---|---|",
    ]
    for m in methods:
        rs = [r for r in runs if r["method"] == m and r.get("prior_l1_error") is not None]
        if not rs:
            continue
        err = statistics.mean(r["prior_l1_error"] for r in rs)
        base = statistics.mean(r["source_target_prior_l1"] for r in rs)
        cov = [
            r["prior_interval_coverage"] for r in rs if r.get("prior_interval_coverage") is not None
        ]
        covered = f"{100 * statistics.mean(cov):.0f}%" if cov else "–"
        untrusted = sum(bool(r.get("prior_untrusted")) for r in rs)
        lines.append(
            f"| {m} | {err:.3f} | {base:.3f} | {err / base:.2f} | {covered}"
            f" | {untrusted} of {len(rs)} |"
        )
    return lines


def section(grid):
    runs = load(grid)
    methods = ordered(runs, "method")
    if "source" in methods:
        methods = ["source"] + [m for m in methods if m != "source"]
    tasks = sorted({(r["source"], r["target"]) for r in runs})
    seeds = sorted({r["seed"] for r in runs})
    out = [
        f"{len(runs)} runs, seeds {', '.join(map(str, seeds))};"
        " accuracy in %, mean ± std over seeds.",
        "",
    ]
    out += accuracy_table(runs, methods, tasks, seeds) + [""]
    out += safety_table(runs, methods) + [""]
    out += prior_table(runs, methods)
    return "\n".join(out)


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    if len(args) < 2:
        sys.exit(__doc__)
    doc = args[0]
    text = open(doc).read()
    new = text
    for spec in args[1:]:
        name, _, grid = spec.partition("=")
        begin, end = f"<!-- BEGIN strong:{name} -->", f"<!-- END strong:{name} -->"
        if begin not in new or end not in new:
            sys.exit(f"{doc}: no {begin} … {end} markers")
        head, rest = new.split(begin, 1)
        _, tail = rest.split(end, 1)
        new = f"{head}{begin}\n{section(grid)}\n{end}{tail}"
    if check:
        if new != text:
            sys.exit(f"{doc}: tables differ from the grids")
        return
    with open(doc + ".tmp", "w") as f:
        f.write(new)
    os.replace(doc + ".tmp", doc)


if __name__ == "__main__":
    main(sys.argv[1:])
