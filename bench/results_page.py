#!/usr/bin/env python3
"""Regenerates the tables of a results page from the grids themselves.

For each SETTING=GRID argument, `glshift bench` is called on GRID with the methods, seeds and
setting its results.json holds: every run is read back from GRID/runs/ (nothing is trained
when the grid is complete) and bench writes GRID/table.md, its own rendering of the records.
That table, under the command that printed it, replaces the part of DOC between

    <!-- BEGIN grid:SETTING -->  and  <!-- END grid:SETTING -->

so the page's numbers are the grid's, never typed by hand. Under the table it writes each
method's average to two decimals (`bench/seed_average.py`: mean ± std over seeds of the
per-seed task average, or the one seed's average), best first, and its difference from
`source`. A grid with missing runs would be resumed (trained): pass --check to refuse that
instead.

    python3 bench/results_page.py BINARY DATA DOC uda=GRID_UDA pda=GRID_PDA [--check]

A NAME=GRID whose NAME is SETTING-SUFFIX (e.g. `uda-kmm`) fills the markers of that NAME with a
grid of SETTING: a second table of the same setting.
"""

import json
import os
import subprocess
import sys

from seed_average import seed_summary


def grid_args(grid):
    records = json.load(open(os.path.join(grid, "results.json")))
    methods, seeds, settings = [], [], set()
    for r in records:
        if r["method"] not in methods:
            methods.append(r["method"])
        if r["seed"] not in seeds:
            seeds.append(r["seed"])
        settings.add(r["setting"])
    return methods, sorted(seeds), settings, len(records)


def table(binary, data, name, grid, check):
    setting = name.split("-", 1)[0]
    methods, seeds, settings, n = grid_args(grid)
    if settings != {setting}:
        sys.exit(f"{grid}: its records are of settings {sorted(settings)}, not {setting}")
    doms = sorted(
        f[: -len("_features.npy")] for f in os.listdir(data) if f.endswith("_features.npy")
    )
    expected = len(methods) * len(seeds) * len(doms) * (len(doms) - 1)
    if check and n < expected:
        sys.exit(f"{grid}: {n} of {expected} runs; finish the grid first")
    cmd = [
        binary,
        "bench",
        "--data",
        data,
        "--setting",
        setting,
        "--seeds",
        ",".join(map(str, seeds)),
        "--methods",
        ",".join(methods),
        "--out",
        grid,
        "--quiet",
    ]
    subprocess.run(cmd, check=True, capture_output=True)
    shown = (
        f"glshift bench --data {data} --setting {setting} --seeds {','.join(map(str, seeds))} "
        f"--methods {','.join(methods)} --out {name}"
    )
    body = open(os.path.join(grid, "table.md")).read().strip()
    return f"```sh\n{shown}\n```\n\n{body}\n\n{averages(grid, methods)}\n"


def averages(grid, methods):
    """One line: each method's seed-averaged 12-task accuracy, best first, and its lead over
    `source` (the table's Avg column unrounded to two decimals)."""
    # None: diverged runs or uneven seeds; the table says so, no average here.
    stats = {m: seed_summary(grid, m) for m in methods}
    base = stats.get("source")
    parts = []
    for m, st in sorted(stats.items(), key=lambda kv: -(kv[1][0] if kv[1] else -1.0)):
        if st is None:
            parts.append(f"{m}: no average (diverged runs or uneven seeds)")
            continue
        spread = f" ± {st[1]:.2f}" if st[1] is not None else ""
        lead = f" ({st[0] - base[0]:+.2f})" if base and m != "source" else ""
        parts.append(f"{m} {st[0]:.2f}{spread}{lead}")
    return (
        "Averages (`bench/seed_average.py`; in brackets: against `source`): "
        + "; ".join(parts)
        + "."
    )


def main():
    args = [a for a in sys.argv[1:] if a != "--check"]
    check = "--check" in sys.argv
    if len(args) < 4:
        sys.exit(__doc__)
    binary, data, doc, grids = args[0], args[1], args[2], args[3:]
    text = open(doc).read()
    for spec in grids:
        name, grid = spec.split("=", 1)
        begin, end = f"<!-- BEGIN grid:{name} -->", f"<!-- END grid:{name} -->"
        if begin not in text or end not in text:
            sys.exit(f"{doc}: no markers {begin} ... {end}")
        a, b = text.index(begin) + len(begin), text.index(end)
        text = text[:a] + "\n" + table(binary, data, name, grid, check) + text[b:]
    open(doc, "w").write(text)


if __name__ == "__main__":
    main()
