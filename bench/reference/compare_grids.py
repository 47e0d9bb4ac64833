"""Compares two `glshift bench` output folders run by run: each record of OLD against the record
of the same setting, method, task and seed in NEW, on `target_accuracy` and `prior_l1_error`,
bit for bit (Python floats parsed from the records' JSON). Prints a markdown table, one row per
task, with the accuracies (%) of OLD's methods in both folders and of NEW's extra methods, then
each method's mean over the tasks and the count of identical, different and missing pairs.

    python3 bench/reference/compare_grids.py OLD NEW

Reads only the records (target labels were read by `bench`, to score); trains nothing.
"""
import json
import sys
from pathlib import Path


def records(folder):
    out = {}
    for p in sorted(Path(folder, "runs").glob("*.json")):
        if p.name.endswith(".failed.json"):  # diverged: no accuracy to compare
            continue
        r = json.loads(p.read_text())
        out[(r["setting"], r["method"], r["source"], r["target"], r["seed"])] = r
    return out


def main(old_dir, new_dir):
    old, new = records(old_dir), records(new_dir)
    tasks = sorted({(k[0], k[2], k[3], k[4]) for k in new.keys() | old.keys()})
    old_methods = sorted({k[1] for k in old}, key=lambda m: (m != "source", m))
    new_only = sorted({k[1] for k in new} - set(old_methods))
    head = [f"{m} old | {m} new" for m in old_methods] + [f"{m} new" for m in new_only]
    print("| task | " + " | ".join(head) + " |")
    print("|---" * (1 + 2 * len(old_methods) + len(new_only)) + "|")
    same = diff = missing = 0
    acc = {}
    pct = lambda r: f"{100 * r['target_accuracy']:.2f}" if r else "–"
    for setting, s, t, seed in tasks:
        cells = []
        for m in old_methods:
            o, n = old.get((setting, m, s, t, seed)), new.get((setting, m, s, t, seed))
            for tag, r in (("old", o), ("new", n)):
                if r:
                    acc.setdefault(f"{m} {tag}", []).append(r["target_accuracy"])
            if o and n:
                eq = (o["target_accuracy"], o["prior_l1_error"]) == (n["target_accuracy"], n["prior_l1_error"])
                same, diff = same + eq, diff + (not eq)
                cells += [pct(o), pct(n) + ("" if eq else " (differs)")]
            else:
                missing += 1
                cells += [pct(o), pct(n)]
        for m in new_only:
            n = new.get((setting, m, s, t, seed))
            if n:
                acc.setdefault(f"{m} new", []).append(n["target_accuracy"])
            cells.append(pct(n))
        name = f"{s[0].upper()}→{t[0].upper()}" + (f" seed {seed}" if len({k[3] for k in tasks}) > 1 else "")
        print(f"| {name} | " + " | ".join(cells) + " |")
    print()
    for k, v in acc.items():
        print(f"{k}: mean over {len(v)} runs {100 * sum(v) / len(v):.2f}")
    print(f"pairs identical in target_accuracy and prior_l1_error: {same}; different: {diff}; missing: {missing}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
