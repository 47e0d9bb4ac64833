#!/usr/bin/env python3
"""Would a distrusted fit gain by keeping the one correction both source-only
estimators agree on? For every `glshift fit` folder whose prior guard distrusted the estimate,
the classes both the guard's BBSE-QP and MLLS estimates put under the prior floor are taken as
absent, and the fallback's predictions are restricted to the other classes (argmax of the
written probabilities over the kept classes). Prints both accuracies and, for each class taken
as absent, both estimates, the top of the guard's box and its true share. The rule reads no
label; the true shares and the accuracies are evaluation.

    python3 bench/agreed_support.py FIT_DIR [FIT_DIR ...]
"""

import csv
import json
import sys

import numpy as np


def row(d):
    r = json.load(open(f"{d}/report.json"))
    g = r.get("prior_guard")
    if not g or g["trusted"]:
        return None
    floor = g["resolution"]
    absent = [
        k
        for k, (a, b) in enumerate(zip(g["qp_prior"], g["mlls_prior"], strict=False))
        if a < floor and b < floor
    ]
    rows = list(csv.reader(open(f"{d}/predictions.csv")))
    cols = [i for i, h in enumerate(rows[0]) if h.startswith("p_")]
    p = np.array([[float(x[i]) for i in cols] for x in rows[1:]])
    y = np.load(f"{d}/labels_target.npy")
    keep = np.ones(p.shape[1])
    keep[absent] = 0.0
    why = (
        "disagreement"
        if g.get("disagrees", g["confident_share"] >= g["min_confident_share"])
        else "low confidence"
    )
    true = r.get("true_target_prior") or [float("nan")] * p.shape[1]
    classes = ", ".join(
        f"{k}: {g['qp_prior'][k]:.3f}/{g['mlls_prior'][k]:.3f}/{g['high'][k]:.3f}/{true[k]:.3f}"
        for k in absent
    )
    acc, restricted = 100 * (p.argmax(1) == y).mean(), 100 * ((p * keep).argmax(1) == y).mean()
    change = restricted - acc
    return f"| {d} | {why} | {classes or '–'} | {acc:.2f} | {restricted:.2f} | {change:+.2f} |"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(
        "| fit | distrusted by"
        " | classes both put under the floor (QP / MLLS / box top / true share)"
        " | fallback | restricted to the rest | change |"
    )
    print("|---|---|---|---|---|---|")
    for d in sys.argv[1:]:
        line = row(d.rstrip("/"))
        if line:
            print(line)


if __name__ == "__main__":
    main()
