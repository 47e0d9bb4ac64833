#!/usr/bin/env python3
"""Two `glshift bench` folders of the same grid (two builds, or a setting on and off), run by
run: every (method, task, seed) whose target accuracy differs, with both accuracies and prior l1
errors, then each method's per-seed averages and their mean ± std in both (seed_average.py's
numbers), and how many runs of both folders are identical bit for bit in `target_accuracy` and
`prior_l1_error` (Python floats parsed from the records' JSON).

With --table, first a markdown table, one row per task, with the accuracies (%) of BEFORE's
methods in both folders and of AFTER's extra methods, and each column's mean over the tasks.

Reads runs/*.json only (diverged `.failed.json` runs are left out); target labels enter only
through the records' final scores (evaluation). Trains nothing.

usage: python3 bench/compare_grids.py BEFORE_DIR AFTER_DIR [--table]
"""

import argparse

from seed_average import run_records, seed_means, seed_summary


def records(folder):
    """{(setting, method, source, target, seed): record} of the finished runs."""
    return {
        (r["setting"], r["method"], r["source"], r["target"], r["seed"]): r
        for r, finished in run_records(folder)
        if finished
    }


def l1(v):
    return "–" if v is None else f"{v:.3f}"


def pct(r):
    return f"{100 * r['target_accuracy']:.2f}" if r else "–"


def same(a, b):
    return (a["target_accuracy"], a.get("prior_l1_error")) == (
        b["target_accuracy"],
        b.get("prior_l1_error"),
    )


def table(old, new):
    """The per-task markdown table of both folders' accuracies, then each column's mean."""
    tasks = sorted({(k[0], k[2], k[3], k[4]) for k in new.keys() | old.keys()})
    old_methods = sorted({k[1] for k in old}, key=lambda m: (m != "source", m))
    new_only = sorted({k[1] for k in new} - set(old_methods))
    head = [f"{m} old | {m} new" for m in old_methods] + [f"{m} new" for m in new_only]
    print("| task | " + " | ".join(head) + " |")
    print("|---" * (1 + 2 * len(old_methods) + len(new_only)) + "|")
    acc = {}
    several_seeds = len({k[3] for k in tasks}) > 1
    for setting, s, t, seed in tasks:
        cells = []
        for m in old_methods:
            o, n = old.get((setting, m, s, t, seed)), new.get((setting, m, s, t, seed))
            for tag, r in (("old", o), ("new", n)):
                if r:
                    acc.setdefault(f"{m} {tag}", []).append(r["target_accuracy"])
            differs = o and n and not same(o, n)
            cells += [pct(o), pct(n) + (" (differs)" if differs else "")]
        for m in new_only:
            n = new.get((setting, m, s, t, seed))
            if n:
                acc.setdefault(f"{m} new", []).append(n["target_accuracy"])
            cells.append(pct(n))
        name = f"{s[0].upper()}→{t[0].upper()}" + (f" seed {seed}" if several_seeds else "")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for k, v in acc.items():
        print(f"{k}: mean over {len(v)} runs {100 * sum(v) / len(v):.2f}")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--table", action="store_true", help="print the per-task markdown table first")
    args = ap.parse_args()
    a, b = records(args.before), records(args.after)
    if args.table:
        table(a, b)
    common = sorted(set(a) & set(b))
    several_settings = len({k[0] for k in common}) > 1
    changed = [k for k in common if a[k]["target_accuracy"] != b[k]["target_accuracy"]]
    print(
        f"{len(changed)} of {len(common)} runs in both folders changed accuracy "
        f"({len(set(a) ^ set(b))} in one folder only)"
    )
    for k in changed:
        setting, m, s, t, seed = k
        where = f"{setting} " if several_settings else ""
        acc_a, acc_b = 100 * a[k]["target_accuracy"], 100 * b[k]["target_accuracy"]
        l1_a, l1_b = l1(a[k].get("prior_l1_error")), l1(b[k].get("prior_l1_error"))
        print(
            f"  {where}{m} {s}→{t} seed {seed}: {acc_a:.2f} → {acc_b:.2f} (prior l1 {l1_a} → "
            f"{l1_b})"
        )
    for m in sorted({k[1] for k in common}):
        for label, folder in (("before", args.before), ("after", args.after)):
            means = seed_means(folder, m)
            per_seed, summary = means[0], seed_summary(folder, m, means)
            if summary is None:
                mean = "no average (diverged runs or uneven seeds)"
            else:
                mean = f"{summary[0]:.3f}" + (
                    f" ± {summary[1]:.3f}" if summary[1] is not None else ""
                )
            seeds = " / ".join(f"{v:.2f}" for v in per_seed.values())
            print(f"{m} {label}: {mean} (per seed {seeds})")
    n_same = sum(same(a[k], b[k]) for k in common)
    print(
        f"runs identical in target_accuracy and prior_l1_error: {n_same} of {len(common)}; "
        f"different: {len(common) - n_same}"
    )


if __name__ == "__main__":
    main()
