"""The safety bound, task by task: does the default fit (`mul`) score at least
`source` - 1.0 point? Reads the run records (runs/*.json) of one or more `glshift bench` output
folders; target labels enter only through the records' final scores.

usage: python3 bench/safety_table.py BENCH_DIR [BENCH_DIR ...] [--seeds 0] [--method mul]
"""

import argparse
import json
import pathlib
from collections import defaultdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--method", default="mul")
    ap.add_argument("--margin", type=float, default=1.0)
    args = ap.parse_args()
    seeds = {int(s) for s in args.seeds.split(",")}
    acc = defaultdict(dict)  # (setting, task) -> {(method, seed): accuracy}
    for d in args.dirs:
        for f in sorted(pathlib.Path(d, "runs").glob("*.json")):
            r = json.loads(f.read_text())
            if r["seed"] in seeds:
                task = (r["setting"], f"{r['source']}→{r['target']}")
                # A run that diverged (runs/*.failed.json) has no accuracy: it fails the bound.
                diverged = f.name.endswith(".failed.json")
                acc[task][(r["method"], r["seed"])] = (
                    None if diverged else 100.0 * r["target_accuracy"]
                )
    print(
        f"| setting | task | source | {args.method} | {args.method} − source | ≥ source − "
        f"{args.margin:g} |"
    )
    print("|---|---|---|---|---|---|")
    n_ok = n = 0
    for (setting, task), runs in sorted(acc.items()):
        src = [v for (m, _), v in runs.items() if m == "source"]
        new = [v for (m, _), v in runs.items() if m == args.method]
        if len(src) != len(seeds) or len(new) != len(seeds):
            print(f"| {setting} | {task} | incomplete | | | |")
            continue
        if None in src or None in new:
            n += 1
            print(
                f"| {setting} | {task} | {'diverged' if None in src else ''} | "
                f"{'diverged' if None in new else ''} | | **no** |"
            )
            continue
        s, m = sum(src) / len(src), sum(new) / len(new)
        ok = m >= s - args.margin
        n_ok += ok
        n += 1
        print(
            f"| {setting} | {task} | {s:.1f} | {m:.1f} | {m - s:+.1f} | "
            f"{'yes' if ok else '**no**'} |"
        )
    print(f"\n{n_ok} of {n} complete tasks meet the bound (seeds {sorted(seeds)}).")


if __name__ == "__main__":
    main()
