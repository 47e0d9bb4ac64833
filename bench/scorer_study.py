#!/usr/bin/env python3
"""Table of the scorer study from the selection.json files of
bench/scorer_study.sh: OUT/<bench>/<source>-<target>/selection.json.

Per task: each scorer's Spearman and Kendall (tau-b) correlation with the candidates' true target
accuracy, and the target accuracy of each rule's choice against the oracle (best candidate), the
default fit (candidate `mul`) and `source` (candidate `source`, the pre-trained network). Rules are
replayed here from the label-free scores stored in `selection` (the target accuracies come only
from `target_evaluation`). Aggregates: mean ± std over the tasks of each benchmark, and overall.

usage: python3 bench/scorer_study.py OUT [--per-task] [--candidates NAME,NAME,...]
--candidates replays everything on a subset of the study's candidates (it must hold `source` and
`mul`), e.g. select's default set; the subset is exact, since every score is a candidate's own.
Standard library only.
"""

import json
import math
import re
import statistics
import sys
from pathlib import Path

SCORERS = ["iwcv", "dev", "dev_normalised", "snd", "neg_entropy", "circular"]
MEAN_RANK = ["iwcv", "dev_normalised", "snd", "neg_entropy", "circular"]
BENCH_ORDER = ["oc-uda", "oc-pda", "oc-gls", "surf", "mnist-usps", "synthetic"]
# Margins (in each guard scorer's own units) of the constrained rules "lowest entropy among
# the candidates whose guard score is at least source's minus m".
CONSTRAINTS = {"iwcv": [0.0, 0.01, 0.02, 0.05], "circular": [0.0], "dev_normalised": [0.0]}


def ranks(v):
    """Ranks 1..n from the smallest, ties sharing the mean of their ranks."""
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def pearson(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    sa = math.sqrt(sum((x - ma) ** 2 for x in a))
    sb = math.sqrt(sum((y - mb) ** 2 for y in b))
    if sa == 0 or sb == 0:
        return None  # a constant side: no correlation defined
    return sum((x - ma) * (y - mb) for x, y in zip(a, b, strict=False)) / (sa * sb)


def spearman(a, b):
    return pearson(ranks(a), ranks(b))


def kendall_b(a, b):
    conc = disc = ta = tb = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ta += 1
            elif db == 0:
                tb += 1
            elif (da > 0) == (db > 0):
                conc += 1
            else:
                disc += 1
    den = math.sqrt((conc + disc + ta) * (conc + disc + tb))
    return None if den == 0 else (conc - disc) / den


def argbest(values):
    """First index of the largest value; None values lose."""
    best = None
    for i, v in enumerate(values):
        if v is not None and (best is None or v > values[best]):
            best = i
    return best


def mean_rank_values(cands):
    """Minus the mean rank over MEAN_RANK (descending ranks; a missing score ranks last)."""
    n = len(cands)
    total = [0.0] * n
    for s in MEAN_RANK:
        v = [c["scores"][s] if c["scores"][s] is not None else -math.inf for c in cands]
        r = ranks([-x for x in v])
        total = [t + x for t, x in zip(total, r, strict=False)]
    return [-t / len(MEAN_RANK) for t in total]


def rules(cands, names):
    """Every rule's chosen index, replayed from the label-free scores."""
    src = names.index("source")
    out = {}
    for s in SCORERS:
        out[s] = argbest([c["scores"][s] for c in cands])
    mr = mean_rank_values(cands)
    out["mean-rank"] = argbest(mr)
    # Safety-first: the best IWCV only when it beats `source`'s IWCV, else source.
    v = [c["scores"]["iwcv"] for c in cands]
    b = argbest(v)
    out["iwcv-if-beats-source"] = (
        b if b is not None and v[src] is not None and v[b] > v[src] else src
    )
    # Consensus: the mean-rank winner only when a majority of the aggregated scorers rank it
    # above `source`, else source.
    b = out["mean-rank"]
    above = sum(
        1
        for s in MEAN_RANK
        if cands[b]["scores"][s] is not None
        and cands[src]["scores"][s] is not None
        and cands[b]["scores"][s] > cands[src]["scores"][s]
    )
    out["consensus-mean-rank"] = b if above * 2 > len(MEAN_RANK) else src
    # Constrained: the lowest entropy among the candidates that a risk-estimating scorer does
    # not find worse than `source` by more than m (`source` always admissible).
    # safe-entropy(iwcv,0.02) is select's default rule, `safe-entropy`.
    ent = [c["scores"]["neg_entropy"] for c in cands]
    for guard, margins in CONSTRAINTS.items():
        g = [c["scores"][guard] for c in cands]
        for m in margins:
            ok = [
                i == src or (g[i] is not None and g[src] is not None and g[i] >= g[src] - m)
                for i in range(len(cands))
            ]
            out[f"safe-entropy({guard},{m:g})"] = argbest(
                [x if k else None for x, k in zip(ent, ok, strict=False)]
            )
    out["always-mul"] = names.index("mul")
    out["always-source"] = src
    return out


def candidate_names():
    """The candidates of bench/scorer_study_candidates.toml, in order (tasks that ran more are
    read on these only: every score is a candidate's own, so the subset is exact)."""
    f = Path(__file__).with_name("scorer_study_candidates.toml")
    return re.findall(r'^name = "([^"]+)"', f.read_text(), re.M)


def load(root, keep_names):
    tasks = []
    for f in sorted(Path(root).glob("*/*/selection.json")):
        d = json.loads(f.read_text())
        ev = d.get("target_evaluation")
        if ev is None:
            continue
        keep = [i for i, c in enumerate(d["selection"]["candidates"]) if c["name"] in keep_names]
        cands = [d["selection"]["candidates"][i] for i in keep]
        names = [c["name"] for c in cands]
        acc = [100.0 * ev["target_accuracy"][i] for i in keep]
        task = {
            "bench": f.parent.parent.name,
            "task": f.parent.name.replace("-", "→", 1),
            "acc": acc,
            "names": names,
            "oracle": max(acc),
            "mul": acc[names.index("mul")],
            "source": acc[names.index("source")],
            "corr": {},
            "choice": {},
        }
        for s in SCORERS:
            v = [c["scores"][s] for c in cands]
            keep = [i for i, x in enumerate(v) if x is not None]
            a, b = [v[i] for i in keep], [acc[i] for i in keep]
            task["corr"][s] = (spearman(a, b), kendall_b(a, b)) if len(keep) >= 3 else (None, None)
        for r, i in rules(cands, names).items():
            task["choice"][r] = (names[i], acc[i]) if i is not None else (None, None)
        tasks.append(task)
    return tasks


def ms(xs, fmt="{:.2f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "n/a"
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return (fmt + " ± " + fmt).format(statistics.fmean(xs), sd)


def table(groups, per_task):
    print(
        "## Rank correlation with target accuracy across candidates (Spearman ρ / Kendall "
        "τ_b), mean ± std over tasks"
    )
    print(
        "(tasks where every candidate has the same accuracy, or a scorer is constant, have "
        "no correlation and are left out)\n"
    )
    print("| benchmark | tasks | " + " | ".join(SCORERS) + " |")
    print("|---|---|" + "---|" * len(SCORERS))
    for g, ts in groups:
        cells = []
        for s in SCORERS:
            rho = [t["corr"][s][0] for t in ts]
            tau = [t["corr"][s][1] for t in ts]
            cells.append(f"{ms(rho)} / {ms(tau)}")
        print(f"| {g} | {len(ts)} | " + " | ".join(cells) + " |")
    rule_names = list(groups[0][1][0]["choice"].keys())
    print(
        "\n## Target accuracy (%) of each rule's choice, mean over tasks; regret = oracle − "
        "choice; "
        "Δsrc = choice − `source` (mean, and worst task); Δmul = choice − `mul` (the default fit)\n"
    )
    for g, ts in groups:
        orc = statistics.fmean(t["oracle"] for t in ts)
        print(
            f"### {g} ({len(ts)} tasks): oracle {orc:.2f}, mul "
            f"{statistics.fmean(t['mul'] for t in ts):.2f}, "
            f"source {statistics.fmean(t['source'] for t in ts):.2f}\n"
        )
        print("| rule | accuracy | regret | Δsrc mean | Δsrc worst | Δmul mean | Δmul worst |")
        print("|---|---|---|---|---|---|---|")
        for r in rule_names:
            a = [t["choice"][r][1] for t in ts]
            reg = [t["oracle"] - x for t, x in zip(ts, a, strict=False)]
            ds = [x - t["source"] for t, x in zip(ts, a, strict=False)]
            dm = [x - t["mul"] for t, x in zip(ts, a, strict=False)]
            print(
                f"| {r} | {ms(a)} | {statistics.fmean(reg):.2f} | "
                f"{statistics.fmean(ds):+.2f} | {min(ds):+.2f} | "
                f"{statistics.fmean(dm):+.2f} | {min(dm):+.2f} |"
            )
        print()
    default = "safe-entropy(iwcv,0.02)"
    print(
        f"## How often the default rule ({default}) chose each candidate (label-free: the "
        "choice reads no label)\n"
    )
    print("| benchmark | " + " | ".join(groups[0][1][0]["names"]) + " |")
    print("|---|" + "---|" * len(groups[0][1][0]["names"]))
    for g, ts in groups:
        counts = [sum(1 for t in ts if t["choice"][default][0] == n) for n in ts[0]["names"]]
        print(f"| {g} | " + " | ".join(str(c) for c in counts) + " |")
    print()
    if per_task:
        print("## Per task: target accuracy of every candidate, and each rule's choice\n")
        for g, ts in groups:
            for t in ts:
                accs = ", ".join(f"{n} {a:.2f}" for n, a in zip(t["names"], t["acc"], strict=False))
                print(f"- {g} {t['task']}: {accs}")
                print(
                    "  choices: "
                    + ", ".join(
                        f"{r}={c[0]}" for r, c in t["choice"].items() if not r.startswith("always")
                    )
                )


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    keep_names = candidate_names()
    if "--candidates" in sys.argv:
        asked = sys.argv[sys.argv.index("--candidates") + 1].split(",")
        unknown = [n for n in asked if n not in keep_names]
        if unknown or "source" not in asked or "mul" not in asked:
            sys.exit(
                f"--candidates: {','.join(asked)}: each must be one of "
                f"{','.join(keep_names)}, source and mul included"
            )
        keep_names = [n for n in keep_names if n in asked]
    tasks = load(sys.argv[1], keep_names)
    if not tasks:
        sys.exit(f"no selection.json with target_evaluation under {sys.argv[1]}")
    benches = sorted(
        {t["bench"] for t in tasks},
        key=lambda b: (BENCH_ORDER.index(b) if b in BENCH_ORDER else 99, b),
    )
    groups = [(b, [t for t in tasks if t["bench"] == b]) for b in benches]
    if len(groups) > 1:
        groups.append(("all", tasks))
    table(groups, "--per-task" in sys.argv)


if __name__ == "__main__":
    main()
