#!/usr/bin/env python3
"""Replays MUL's label-free adaptation stop on the iteration histories of fits run WITHOUT the
stop (`[adapt_stop] enabled = false`): for each J_TU tolerance rho, the iteration where the rule
would have stopped, and how much of the 300-iteration fall of J_TU it leaves.

Reads only `report.json -> history` (ce, j_tu, target_prior, du_pooled, n_confident per
iteration): no target label. The pseudo-label condition cannot be replayed from the history (it
keeps counts, not rows); n_confident standing still stands in for it, so the stop iterations
are approximate and the real fits (report.json) have the exact ones.

usage: bench/adapt_stop_replay.py RUN_DIR... [--rho 0.02,0.05,0.1] [--window 10]
"""

import argparse
import json
import os


def stop_iter(h, window, tol_prior, min_iters, rho):
    pooled_at = None
    for t, r in enumerate(h):
        if r["du_pooled"] and pooled_at is None:
            pooled_at = t
        if t + 1 < min_iters or t < window:
            continue
        if pooled_at is None or t < pooled_at + window:
            continue
        old, new = h[t - window], r
        move = sum(
            abs(a - b) for a, b in zip(old["target_prior"], new["target_prior"], strict=False)
        )
        if move > tol_prior or old["n_confident"] != new["n_confident"]:
            continue
        if rho is not None and abs(old["j_tu"] - new["j_tu"]) > rho * abs(old["j_tu"]):
            continue
        return t
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--rho", default="0.02,0.05,0.1,0.2")
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--tol-prior", type=float, default=0.005)
    ap.add_argument("--min-iters", type=int, default=20)
    a = ap.parse_args()
    rhos = [None] + [float(x) for x in a.rho.split(",")]
    head = ["run", "pre-training"] + [
        ("state only" if r is None else f"ρ = {r}") + " (J_TU/J_end)" for r in rhos
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    sums = [[] for _ in rhos]
    for d in a.runs:
        path = os.path.join(d, "report.json")
        if not os.path.exists(path):
            continue  # a fit still running (or failed): no history yet
        rep = json.load(open(path))
        hist = rep["history"]
        pre = sum(1 for r in hist if r["stage"] == "pretrain")
        h = [r for r in hist if r["stage"] == "adapt"]
        j_end = h[-1]["j_tu"]
        cells = []
        for k, rho in enumerate(rhos):
            t = stop_iter(h, a.window, a.tol_prior, a.min_iters, rho)
            n = len(h) if t is None else t + 1
            sums[k].append(n)
            cells.append(f"{n} ({h[n - 1]['j_tu'] / j_end:.1f}×)")
        print("| " + " | ".join([os.path.basename(d.rstrip("/")), str(pre)] + cells) + " |")
    print(
        "| "
        + " | ".join(["mean adaptation iterations", ""] + [f"{sum(s) / len(s):.1f}" for s in sums])
        + " |"
    )


if __name__ == "__main__":
    main()
