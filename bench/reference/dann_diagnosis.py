"""DANN's gap to skada on A→C, A→D, A→W (issue #16, docs/baselines.md "Why DANN lagged skada's"):
one table row per `glshift bench` folder (one switch of the diagnostic build each), DANN's target
accuracy per task as mean ± population std over seeds 0–2, and the mean of the three tasks
(mean ± std over seeds of the per-seed 3-task average). Target labels are read only to score.

    python3 bench/reference/dann_diagnosis.py base bn dtorch dpaper bn-dtorch

The folders come from a build of commit 6333a90 with `bench/reference/dann_diagnosis.patch`
applied (environment switches, not in main): GLSHIFT_DIAG_BN=mixed takes BatchNorm's statistics
from the mixed source + target batch; GLSHIFT_DIAG_DINIT=torch|paper re-draws the discriminator
as torch's default Linear init or as the reference code's N(0, 0.01)/N(0, 0.3).
"""

import json
import statistics as st
import sys
from pathlib import Path

TASKS = [("amazon", "caltech"), ("amazon", "dslr"), ("amazon", "webcam")]
SEEDS = (0, 1, 2)


def accuracy(folder, src, tgt, seed):
    path = Path(folder) / "runs" / f"uda__dann__{src}__{tgt}__seed{seed}.json"
    if not path.exists():
        return None
    try:
        return 100 * json.loads(path.read_text())["target_accuracy"]
    except (ValueError, KeyError) as e:
        sys.exit(f"{path}: not a bench record ({e})")


def cell(values):
    return f"{st.mean(values):.1f} ± {st.pstdev(values):.1f}" if values else "–"


def row(folder):
    per_seed = {s: [] for s in SEEDS}
    cells = []
    for src, tgt in TASKS:
        got = {s: accuracy(folder, src, tgt, s) for s in SEEDS}
        for s, v in got.items():
            if v is not None:
                per_seed[s].append(v)
        cells.append(cell([v for v in got.values() if v is not None]))
    averages = [st.mean(v) for v in per_seed.values() if len(v) == len(TASKS)]
    cells.append(cell(averages) if len(averages) == len(SEEDS) else "–")
    return f"| {Path(folder).name} | " + " | ".join(cells) + " |"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for folder in sys.argv[1:]:
        if not Path(folder).is_dir():
            sys.exit(f"{folder}: no such bench folder")
    print("| variant | A→C | A→D | A→W | mean of the 3 tasks |")
    print("|---|---|---|---|---|")
    for folder in sys.argv[1:]:
        print(row(folder))


if __name__ == "__main__":
    main()
