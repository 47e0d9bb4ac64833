#!/usr/bin/env python3
"""Multi-source fits against single-source ones, target by target (docs/multi-source.md).

MS is a `glshift bench --setting msda` grid (its `mul` and `source` records), or a folder of
`glshift fit` runs named METHOD-TARGET-sSEED (METHOD `mul` or `source`, each on every other
domain pooled); GRID is a `glshift bench` grid of `mul` on every ordered pair of the same folder
and seeds. For each target: the pooled `mul` and `source` fits, each
single-source `mul` fit, and whether the pooled `mul` is at least the better single-source
one and the pooled `source` (means ± std over seeds; accuracy in %); then the same three means
over the targets (the better single source chosen per target with its target labels: an oracle
no user has). With `--doc DOC NAME` the
table replaces the part of DOC between `<!-- BEGIN multi-source:NAME -->` and
`<!-- END multi-source:NAME -->`. Target labels enter only as the runs' scores.

With `--variant LABEL=DIR` (repeatable; DIR an msda grid of `mul` on transformed features,
bench/per_domain_features.py) the table instead sets each variant's `mul` beside the pooled
`mul` and the better single source, target by target, with the means over the targets.

    python3 bench/multi_source_table.py MS GRID [--variant LABEL=DIR ...] [--doc DOC NAME]
"""

import glob
import json
import os
import statistics
import sys


def mean_std(values):
    if len(values) < 2:
        return values[0], 0.0
    return statistics.mean(values), statistics.stdev(values)


def fmt(values):
    m, s = mean_std([100 * v for v in values])
    return f"{m:.1f} ± {s:.1f}"


def pooled_runs(ms_dir):
    runs = {}
    for path in glob.glob(os.path.join(ms_dir, "runs", "*.json")):
        r = json.load(open(path))
        if r.get("setting") == "msda" and "error" not in r:
            runs.setdefault((r["method"], r["target"]), {})[r["seed"]] = r["target_accuracy"]
    for path in glob.glob(os.path.join(ms_dir, "*", "report.json")):
        method, rest = os.path.basename(os.path.dirname(path)).split("-", 1)
        target, seed = rest.rsplit("-s", 1)
        runs.setdefault((method, target), {})[int(seed)] = json.load(open(path))["target_accuracy"]
    return runs


def single_runs(grid):
    runs = {}
    for path in glob.glob(os.path.join(grid, "runs", "*.json")):
        r = json.load(open(path))
        if r["method"] == "mul" and "error" not in r:
            runs.setdefault((r["source"], r["target"]), {})[r["seed"]] = r["target_accuracy"]
    return runs


def table(ms_dir, grid):
    pooled, single = pooled_runs(ms_dir), single_runs(grid)
    targets = sorted({t for (_, t) in pooled})
    lines = [
        "| target | pooled `mul` | pooled `source` | single-source `mul` (each source)"
        " | ≥ better single | ≥ pooled `source` |",
        "|---|---|---|---|---|---|",
    ]
    means = []
    for t in targets:
        ms = pooled.get(("mul", t), {})
        src = pooled.get(("source", t), {})
        seeds = sorted(ms)
        singles = {s: v for (s, tt), v in single.items() if tt == t}
        each = ", ".join(
            f"{s}: {fmt([v[k] for k in seeds if k in v])}" for s, v in sorted(singles.items())
        )
        best = better_single(single, t, seeds)
        m = statistics.mean(ms[k] for k in seeds)
        s_mean = statistics.mean(src[k] for k in seeds if k in src) if src else float("nan")
        means.append((m, best, s_mean))
        lines.append(
            f"| {t} | {fmt([ms[k] for k in seeds])} | "
            f"{fmt([src[k] for k in seeds if k in src]) if src else '–'} | {each} | "
            f"{'yes' if m >= best else 'no'} | {'yes' if m >= s_mean else 'no'} |"
        )
    m, best, s_mean = (100 * statistics.mean(x[i] for x in means) for i in range(3))
    lines.append(
        f"\nMean over the {len(means)} targets: pooled `mul` {m:.2f}, better single-source `mul`"
        f" {best:.2f}, pooled `source` {s_mean:.2f}."
    )
    return "\n".join(lines)


def better_single(singles, t, seeds):
    """The better single-source `mul` mean of target `t` over `seeds` (an oracle choice)."""
    means = (
        statistics.mean(v[k] for k in seeds if k in v)
        for (_, target), v in singles.items()
        if target == t
    )
    return max(means, default=float("nan"))


def variants_table(ms_dir, grid, variants):
    pooled, single = pooled_runs(ms_dir), single_runs(grid)
    runs = [(label, pooled_runs(d)) for label, d in variants]
    targets = sorted({t for (m, t) in pooled if m == "mul"})
    head = " | ".join(f"{label} `mul`" for label, _ in runs)
    lines = [
        f"| target | pooled `mul` | {head} | better single-source `mul` |",
        "|---|---|" + "---|" * len(runs) + "---|",
    ]
    columns = [[] for _ in range(len(runs) + 2)]
    for t in targets:
        ms = pooled[("mul", t)]
        seeds = sorted(ms)
        cells, values = [fmt([ms[k] for k in seeds])], [statistics.mean(ms.values())]
        for _, r in runs:
            v = r.get(("mul", t), {})
            cells.append(fmt(list(v.values())) if v else "–")
            values.append(statistics.mean(v.values()) if v else float("nan"))
        best = better_single(single, t, seeds)
        cells.append(f"{100 * best:.1f}")
        values.append(best)
        for column, v in zip(columns, values, strict=True):
            column.append(v)
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    names = ["pooled"] + [label for label, _ in runs] + ["better single source"]
    means = ", ".join(
        f"{n} {100 * statistics.mean(c):.2f}" if all(x == x for x in c) else f"{n} –"
        for n, c in zip(names, columns, strict=True)
    )
    lines.append(f"\nMean over the {len(targets)} targets: {means}.")
    return "\n".join(lines)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    variants = [tuple(argv[i + 1].split("=", 1)) for i, a in enumerate(argv) if a == "--variant"]
    if variants:
        text = variants_table(argv[0], argv[1], variants)
    else:
        text = table(argv[0], argv[1])
    if "--doc" not in argv:
        print(text)
        return
    doc, name = argv[argv.index("--doc") + 1], argv[argv.index("--doc") + 2]
    page = open(doc).read()
    begin, end = f"<!-- BEGIN multi-source:{name} -->", f"<!-- END multi-source:{name} -->"
    head, rest = page.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc + ".tmp", "w") as f:
        f.write(f"{head}{begin}\n{text}\n{end}{tail}")
    os.replace(doc + ".tmp", doc)


if __name__ == "__main__":
    main(sys.argv[1:])
