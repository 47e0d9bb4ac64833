#!/usr/bin/env python3
"""Summarise scripts/cross_domain_prior.sh OUT: per ordered pair and overall, mean ± std (over
draws) of the prior's l1 error and the share of classes whose 90% interval covers the truth,
for `fit` (estimated_target_prior + _ci_low/_ci_high) and each estimator of `shift estimate
--data`. Truth = simulation.json's true_prior (scoring only). Usage: cross_domain_prior.py OUT"""

import json
import os
import statistics
import sys

out = sys.argv[1]
rows = {}  # (pair) -> estimator -> list of (l1, coverage)


def add(pair, name, prior, lo, hi, truth):
    l1 = sum(abs(p - t) for p, t in zip(prior, truth, strict=False))
    cov = None
    if lo is not None and hi is not None:
        cov = sum(
            1
            for low, high, t in zip(lo, hi, truth, strict=False)
            if low - 1e-12 <= t <= high + 1e-12
        ) / len(truth)
    rows.setdefault(pair, {}).setdefault(name, []).append((l1, cov))


for d in sorted(os.listdir(out)):
    p = os.path.join(out, d)
    sim = os.path.join(p, "sim", "simulation.json")
    if not os.path.isfile(sim):
        continue
    truth = json.load(open(sim))["target"]["true_prior"]
    a, b, _ = d.rsplit("-", 2)
    pair = f"{a}→{b}"
    fr = os.path.join(p, "fit", "report.json")
    if os.path.isfile(fr):
        r = json.load(open(fr))
        if r.get("estimated_target_prior"):
            add(
                pair,
                "fit",
                r["estimated_target_prior"],
                r.get("estimated_target_prior_ci_low"),
                r.get("estimated_target_prior_ci_high"),
                truth,
            )
    er = os.path.join(p, "estimate.json")
    if os.path.isfile(er):
        r = json.load(open(er))
        for k, v in (r.get("estimators") or {}).items():
            if isinstance(v, dict) and "prior" in v:
                add(
                    pair,
                    "estimate:" + k,
                    v["prior"],
                    v.get("prior_ci_low"),
                    v.get("prior_ci_high"),
                    truth,
                )


def ms(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "–"
    return (
        f"{statistics.mean(xs):.3f} ± {statistics.stdev(xs):.3f}" if len(xs) > 1 else f"{xs[0]:.3f}"
    )


names = sorted({n for v in rows.values() for n in v}, key=lambda n: (n != "fit", n))
print("| pair | draws | " + " | ".join(f"{n} ℓ1 | {n} cover" for n in names) + " |")
print("|---|---|" + "---|---|" * len(names))
for pair in sorted(rows):
    v = rows[pair]
    cells = []
    for n in names:
        xs = v.get(n, [])
        cells += [ms([x[0] for x in xs]), ms([x[1] for x in xs])]
    print(f"| {pair} | {max(len(x) for x in v.values())} | " + " | ".join(cells) + " |")
cells = []
for n in names:
    xs = [x for v in rows.values() for x in v.get(n, [])]
    cells += [ms([x[0] for x in xs]), ms([x[1] for x in xs])]
print(
    f"| **all** | {sum(len(v.get('fit', [])) for v in rows.values())} fits | "
    + " | ".join(cells)
    + " |"
)
