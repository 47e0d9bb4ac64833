#!/usr/bin/env python3
"""Tabulates the prior guard of every report.json under the given folders (bench/guard_scan.sh
output, or any folders of fits): BBSE-QP vs MLLS l1 (D), its bootstrap p-value, half the summed
box width, the largest per-class gap against the fit's resolution (the prior floor; reports of
builds before it show "–"), the share of tau-confident target rows, and the verdict. Reads no
target label. Reports carry the disagreement (`prior_guard.disagrees`); for reports of earlier
builds, which lack it, the script applies the rule of their build."""

import glob
import json
import os
import sys

print(
    "| folder | task | D = ‖QP − MLLS‖₁ | p | box half-width | largest class gap (floor) | "
    "confident share | verdict |"
)
print("|---|---|---|---|---|---|---|---|")
for root in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(root, "*", "report.json"))):
        g = json.load(open(f)).get("prior_guard")
        if g is None:
            continue
        why = []
        has_gap = "max_class_gap" in g
        if "disagrees" in g:
            disagrees = g["disagrees"]
        else:  # reports of builds before `disagrees` was written: the rule of their build
            material = not has_gap or g["max_class_gap"] > g["resolution"]
            disagrees = (
                g["p_value"] < g["alpha"] and g["qp_mlls_l1"] > g["box_half_width"] and material
            )
        if disagrees:
            why.append("estimators disagree")
        if g["confident_share"] < g["min_confident_share"]:
            why.append("few confident rows")
        verdict = "trusted" if g["trusted"] else "**fallback** (" + ", ".join(why) + ")"
        task = os.path.basename(os.path.dirname(f))
        gap = f"{g['max_class_gap']:.3f} ({g['resolution']:.3f})" if has_gap else "–"
        print(
            f"| {os.path.basename(root.rstrip('/'))} | {task} | {g['qp_mlls_l1']:.3f} | "
            f"{g['p_value']:.3f} "
            f"| {g['box_half_width']:.3f} | {gap} | {g['confident_share']:.3f} | {verdict} |"
        )
