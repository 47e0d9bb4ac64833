#!/usr/bin/env python3
"""How much of the batch re-weighting's result is the estimate, and how much the posteriors?
For every batch of a `bench/batch_eval.py` folder, the calibrated outputs q are recovered from
the written (re-weighted) probabilities by dividing back the applied ratio π̂_b/π₀, then
re-weighted with the batch's *true* proportions (from its labels: an oracle, evaluation only).
Prints, per condition, the accuracy of q's argmax (plain), of the applied re-weighting (the
estimate) and of the oracle's, all from the same recovered outputs.

    python3 bench/batch_oracle.py OUT [--conds alpha=0.3,alpha=1,alpha=10,own]
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
    ratio = lambda prior: np.where(ref > 0, prior / np.where(ref > 0, ref, 1.0), 0.0)
    q = p
    if r["reweighted"]:
        w = ratio(est)
        q = p / np.where(w > 0, w, 1e-300)
        q /= q.sum(1, keepdims=True)
    truth = np.bincount(y, minlength=len(ref)) / len(y)
    acc = lambda prior: float(((q * ratio(prior)).argmax(1) == y).mean())
    estimate = acc(est) if r["reweighted"] else float((q.argmax(1) == y).mean())
    return float((q.argmax(1) == y).mean()), estimate, acc(truth)


def main():
    a = argparse.ArgumentParser()
    a.add_argument("out")
    a.add_argument("--conds", default="alpha=0.3,alpha=1,alpha=10,own")
    args = a.parse_args()
    print("| batches | n | plain | re-weighted, estimate | re-weighted, true proportions |")
    print("|---|---|---|---|---|")
    for cond in args.conds.split(","):
        accs = np.array([batch_accuracies(f.rsplit("/pred/", 1)[0]) for f in sorted(glob.glob(f"{args.out}/*/{cond}/b*/pred/report.json"))])
        m = 100 * accs.mean(0)
        print(f"| {cond} | {len(accs)} | {m[0]:.2f} | {m[1]:.2f} | {m[2]:.2f} |")


if __name__ == "__main__":
    main()
