#!/usr/bin/env python3
"""How much of the batch re-weighting's result is the estimate, and how much the posteriors?
For every batch of a `bench/batch_eval.py` folder, the calibrated outputs q are recovered from
the written (re-weighted) probabilities by dividing back the applied ratio π̂_b/π₀, then
re-weighted with the batch's *true* proportions (from its labels: an oracle, evaluation only).
Prints, per condition, the accuracy of q's argmax (plain), of the applied re-weighting (the
estimate) and of the oracle's, all from the same recovered outputs; then two label-free
variants of the re-weighting: only when the move test rejects "no move" (p < 0.05, the move
alarm), and with the estimate shrunk towards π₀ by a positive-part James–Stein factor
1 − v/‖π̂_b − π₀‖² (v: the summed per-class variances read from the 90% interval as
((high − low) / 3.29)²).

    python3 bench/batch_oracle.py OUT [--conds alpha=0.3,alpha=1,alpha=10,own] [--by-task COND]

With --by-task, then per task of condition COND: the rows the applied re-weighting gained, net,
over its batches (adapted minus plain, from the reports), and how many batches gained and lost.
"""

import argparse
import csv
import glob
import json

import numpy as np


def batch_accuracies(d):
    r = json.load(open(f"{d}/pred/report.json"))
    y = np.load(f"{d}/y.npy")
    rows = list(csv.reader(open(f"{d}/pred/predictions.csv")))
    cols = [i for i, h in enumerate(rows[0]) if h.startswith("p_")]
    p = np.array([[float(row[i]) for i in cols] for row in rows[1:]])
    est, ref = np.array(r["batch_prior"]), np.array(r["reference_prior"])

    def ratio(prior):
        return np.where(ref > 0, prior / np.where(ref > 0, ref, 1.0), 0.0)

    q = p
    if r["reweighted"]:
        w = ratio(est)
        q = p / np.where(w > 0, w, 1e-300)
        q /= q.sum(1, keepdims=True)
    truth = np.bincount(y, minlength=len(ref)) / len(y)

    def acc(prior):
        return float(((q * ratio(prior)).argmax(1) == y).mean())

    plain = float((q.argmax(1) == y).mean())
    estimate = acc(est) if r["reweighted"] else plain
    moved = estimate if r["batch_prior_move_p_value"] < 0.05 else plain
    low, high = np.array(r["batch_prior_ci_low"]), np.array(r["batch_prior_ci_high"])
    v, m2 = (((high - low) / 3.29) ** 2).sum(), ((est - ref) ** 2).sum()
    shrunk = ref + (max(0.0, 1 - v / m2) if m2 > 0 else 0.0) * (est - ref)
    return plain, estimate, acc(truth), moved, acc(shrunk) if r["reweighted"] else plain


def main():
    a = argparse.ArgumentParser()
    a.add_argument("out")
    a.add_argument("--conds", default="alpha=0.3,alpha=1,alpha=10,own")
    a.add_argument("--by-task", default="")
    args = a.parse_args()
    print(
        "| batches | n | plain | re-weighted, estimate | re-weighted, true proportions | "
        "only when moved | estimate shrunk (James–Stein) |"
    )
    print("|---|---|---|---|---|---|---|")
    for cond in args.conds.split(","):
        accs = np.array(
            [
                batch_accuracies(f.rsplit("/pred/", 1)[0])
                for f in sorted(glob.glob(f"{args.out}/*/{cond}/b*/pred/report.json"))
            ]
        )
        m = 100 * accs.mean(0)
        print(f"| {cond} | {len(accs)} | " + " | ".join(f"{v:.2f}" for v in m) + " |")
    if args.by_task:
        by_task(args.out, args.by_task)


def by_task(out, cond):
    print(f"\n| task ({cond}) | net rows gained | batches gained / lost |\n|---|---|---|")
    for task in sorted(
        {f.split("/")[-5] for f in glob.glob(f"{out}/*/{cond}/b*/pred/report.json")}
    ):
        reps = [
            json.load(open(f))
            for f in sorted(glob.glob(f"{out}/{task}/{cond}/b*/pred/report.json"))
        ]
        rows = [round((r["accuracy"] - r["unadapted_accuracy"]) * r["n_rows"]) for r in reps]
        print(
            f"| {task} | {sum(rows):+d} | {sum(d > 0 for d in rows)} / {sum(d < 0 for d in rows)} |"
        )


if __name__ == "__main__":
    main()
