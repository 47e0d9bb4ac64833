#!/usr/bin/env python3
"""Which classes a first-iteration support rule would keep (issues "Partial DA on weaker
features" and "Large data"): for each fit folder under ROOT (`glshift fit` outputs of MUL with
the prior guard on), the pre-trained network's two estimates the guard records
(`report.json → prior_guard.qp_prior`, `.mlls_prior`) against the floor 0.25/c, and three rules
for the support fixed at the first iteration: BBSE-QP's (the default), MLLS's, and either's
(a class stays if one of the two puts it at the floor or above). Counted against the true target
prior (`true_target_prior`: the evaluation reads target labels, so it chooses nothing by
itself): absent classes kept, present classes dropped.

    python3 bench/support_rules.py ROOT
"""

import glob
import json
import os
import sys


def main(root):
    rules = ("qp", "mlls", "either")
    total = {r: [0, 0] for r in rules}
    print(
        "| fit | accuracy | guard | "
        + " | ".join(f"{r}: absent kept / present dropped" for r in rules)
        + " | classes that differ (k: true, qp, mlls) |"
    )
    print("|---|---|---|" + "---|" * (len(rules) + 1))
    for f in sorted(glob.glob(os.path.join(root, "*", "report.json"))):
        r = json.load(open(f))
        g, t = r["prior_guard"], r["true_target_prior"]
        qp, ml = g["qp_prior"], g["mlls_prior"]
        floor = 0.25 / len(t)
        keep = {"qp": [p >= floor for p in qp], "mlls": [p >= floor for p in ml]}
        keep["either"] = [a or b for a, b in zip(keep["qp"], keep["mlls"], strict=False)]
        cells = []
        for rule in rules:
            kept = sum(1 for k, x in enumerate(keep[rule]) if x and t[k] == 0)
            dropped = sum(1 for k, x in enumerate(keep[rule]) if not x and t[k] > 0)
            total[rule][0] += kept
            total[rule][1] += dropped
            cells.append(f"{kept} / {dropped}")
        odd = [
            f"{k}: {t[k]:.3f}, {qp[k]:.3f}, {ml[k]:.3f}"
            for k in range(len(t))
            if keep["qp"][k] != (t[k] > 0) or keep["mlls"][k] != (t[k] > 0)
        ]
        name = os.path.basename(os.path.dirname(f))
        verdict = "trusted" if g["trusted"] else "distrusted"
        print(
            f"| {name} | {100 * r['target_accuracy']:.1f} | {verdict} | "
            + " | ".join(cells)
            + f" | {'; '.join(odd)} |"
        )
    print(
        "\ntotal: "
        + ", ".join(f"{r} {total[r][0]} absent kept / {total[r][1]} present dropped" for r in rules)
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else sys.exit(__doc__))
