#!/usr/bin/env python3
"""How far the RLLS regulariser is from letting RLLS correct anything, per study domain.

Reads the RLLS warnings that `glshift shift study` stores in study.json ("RLLS regulariser
Δ_C = D (from N hold-out rows) ≥ ‖Cᵀb‖/‖b‖ = R"). RLLS returns w = 1 exactly when R ≤ Δ_C.
Prints, per domain: the rows that estimate C, the regulariser used (3·Δ_C, the reference
code's), the bare matrix-Bernstein bound Δ_C (= used / 3), the largest R over the draws and
how many draws would have had R > Δ_C (a correction) with the bare bound. Reads no target label.

    python bench/reference/rlls_margin.py study/study.json
"""

import json
import re
import sys

PAT = re.compile(r"Δ_C = ([0-9.e+-]+) \(from (\d+) hold-out rows\) ≥ ‖Cᵀb‖/‖b‖ = ([0-9.e+-]+)")


def main(path):
    study = json.load(open(path))
    print(
        "| domain | rows estimating C | regulariser used (3·Δ_C) | Δ_C alone | max ‖Cᵀb‖/‖b‖ "
        "| draws with w = 1 | draws that Δ_C alone would correct |"
    )
    print("|---|---|---|---|---|---|---|")
    for d in study["domains"]:
        used, n, ratios, free = None, None, [], 0
        for r in d["draws"]:
            e = r["estimates"].get("rlls")
            hit = [PAT.search(w) for w in (e or {}).get("warnings", [])]
            hit = [h for h in hit if h]
            if not hit:
                free += 1
                continue
            used, n = float(hit[0].group(1)), int(hit[0].group(2))
            ratios.append(float(hit[0].group(3)))
        if used is None:
            print(f"| {d['domain']} | – | – | – | – | 0 of {len(d['draws'])} | – |")
            continue
        bare = used / 3.0
        would = sum(x > bare for x in ratios)
        print(
            f"| {d['domain']} | {n} | {used:.3f} | {bare:.3f} | {max(ratios):.3f} | "
            f"{len(ratios)} of {len(d['draws'])} | {would} |"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "study/study.json")
