#!/usr/bin/env python3
"""Tabulates the prior guard's adaptation check of every report.json under the given folders
(folders of `glshift fit` runs): the BBSE-QP vs MLLS disagreement D and the share of
tau-confident target rows on the pre-trained network (the guard's) and on the network adapted
without the correction, the verdict, and the fit's target accuracy (evaluation only, from the
report's own score). Fits whose guard trusted the estimate show "trusted". Standard library only.

    python3 bench/adaptation_check_table.py FOLDER [FOLDER ...]
"""

import glob
import json
import os
import sys


def row(folder, path):
    r = json.load(open(path))
    g = r.get("prior_guard")
    if g is None:
        return None
    task = os.path.basename(os.path.dirname(path))
    acc = r.get("target_accuracy")
    acc = f"{100 * acc:.1f}" if acc is not None else "–"
    c = r.get("adaptation_check")
    if g["trusted"]:
        cells = [f"{g['qp_mlls_l1']:.3f}", f"{g['confident_share']:.2f}", "trusted"]
    elif c is None:
        cells = [f"{g['qp_mlls_l1']:.3f}", f"{g['confident_share']:.2f}", "distrusted, no check"]
    else:

        def after(v, digits):
            return "–" if v is None else f"{v:.{digits}f}"

        cells = [
            f"{c['qp_mlls_l1_before']:.3f} → {after(c['qp_mlls_l1_after'], 3)}",
            f"{c['confident_share_before']:.2f} → {after(c['confident_share_after'], 2)}",
            "**kept**" if c["kept"] else "redone as `source`",
        ]
    return f"| {folder} | {task} | " + " | ".join(cells) + f" | {acc} |"


def main(folders):
    if not folders:
        sys.exit(__doc__)
    print("| folder | task | D = ‖QP − MLLS‖₁ | confident share | check | target accuracy |")
    print("|---|---|---|---|---|---|")
    for folder in folders:
        for path in sorted(glob.glob(os.path.join(folder, "*", "report.json"))):
            line = row(os.path.basename(os.path.normpath(folder)), path)
            if line:
                print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
