"""Per-task target accuracy of `source`, default MUL and MUL with another setting (one bench
grid each; one seed, 0 unless --seed says), with each MUL's final prior l1 error, and the
summary line: means and the tasks below `source` - 1 point. (The l1 and accuracies read target
labels: evaluation only.)

    python3 bench/loop_estimator_table.py BASE_GRID OTHER_GRID [LABEL] [--seed N]

BASE_GRID holds `source` and `mul` runs (a `glshift bench` folder), OTHER_GRID `mul` runs.
"""

import json
import sys


def load(folder, seed):
    records = json.load(open(f"{folder}/results.json"))
    return {(r["source"], r["target"], r["method"]): r for r in records if r["seed"] == seed}


def main(base_dir, other_dir, label="other", seed=0):
    base, other = load(base_dir, seed), load(other_dir, seed)
    print(f"seed {seed}\n")
    print(f"| task | source | MUL | MUL, {label} | MUL prior l1 | MUL, {label}, prior l1 |")
    print("|---|---|---|---|---|---|")
    rows = []
    for (s, t, m), o in sorted(other.items()):
        if m != "mul" or (s, t, "mul") not in base or (s, t, "source") not in base:
            continue
        src, mul = base[(s, t, "source")], base[(s, t, "mul")]
        rows.append(
            (
                src["target_accuracy"],
                mul["target_accuracy"],
                o["target_accuracy"],
                mul["prior_l1_error"],
                o["prior_l1_error"],
            )
        )

        def l1(r):
            return "–" if r["prior_l1_error"] is None else f"{r['prior_l1_error']:.3f}"

        print(
            f"| {s}→{t} | {100 * src['target_accuracy']:.1f} | "
            f"{100 * mul['target_accuracy']:.1f} | "
            f"{100 * o['target_accuracy']:.1f} | {l1(mul)} | {l1(o)} |"
        )
    if not rows:
        sys.exit("no task in both grids")

    def mean(i):
        return 100 * sum(r[i] for r in rows) / len(rows)

    def below(i):
        return sum(1 for r in rows if r[i] < r[0] - 0.01)

    print(
        f"\n{len(rows)} tasks: mean source {mean(0):.2f}, MUL {mean(1):.2f}, MUL {label} "
        f"{mean(2):.2f}; "
        f"below source - 1: MUL {below(1)}, MUL {label} {below(2)}"
    )
    # The second bar: mean prior l1 over the tasks where `source` is at least 75% accurate.
    kept = [r for r in rows if r[0] >= 0.75 and r[3] is not None and r[4] is not None]
    if kept:

        def l1(i):
            return sum(r[i] for r in kept) / len(kept)

        print(
            f"mean prior l1 where source >= 75% ({len(kept)} tasks): MUL {l1(3):.3f}, MUL "
            f"{label} {l1(4):.3f}"
        )


if __name__ == "__main__":
    args = sys.argv[1:]
    seed = 0
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i : i + 2]
    main(*args, seed=seed)
