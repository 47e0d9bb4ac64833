"""Replays pre-training's stopping rule on full-length runs (bench/pretrain_stop.sh).

For each run (report.json of a 500-iteration `source` pre-training) and each window W, the rule
"stop after iteration t once L[t-W] - L[t] < k * SE[t]" (L the source hold-out NLL, SE its
standard error, both from the history) gives a stop and a kept network (lowest L so far). The
table shows how far the kept network's hold-out NLL is from the last iteration's, in units of
that NLL's standard error, and the two hold-out accuracies. Source labels only.

usage: python3 bench/pretrain_stop.py OUT_DIR [--windows 20,50,100,150] [--k 1.0]
"""

import argparse
import json
import pathlib


def replay(nll, se, window, k):
    """(stop iteration, kept iteration): the rule of methods/train/converge.rs."""
    best = 0
    for t in range(len(nll)):
        if nll[t] < nll[best]:
            best = t
        if t >= window and nll[t - window] - nll[t] < k * se[t]:
            return t, best
    return len(nll), best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--windows", default="20,50,100,150")
    ap.add_argument("--k", type=float, default=1.0)
    args = ap.parse_args()
    windows = [int(w) for w in args.windows.split(",")]
    runs = []
    for rep in sorted(pathlib.Path(args.out).glob("*/report.json")):
        hist = [r for r in json.loads(rep.read_text())["history"] if r["stage"] == "pretrain"]
        h = [r["holdout"] for r in hist]
        runs.append(
            (
                rep.parent.name,
                [x["nll"] for x in h],
                [x["nll_se"] for x in h],
                [x["accuracy"] for x in h],
            )
        )
    print(
        f"k = {args.k}; gap = (NLL kept - NLL last) / SE last; "
        "acc kept / acc last (source hold-out)"
    )
    header = f"{'run':12s} {'n_iter':>6s} {'NLL last':>9s} {'SE last':>8s}"
    for w in windows:
        header += f" | W={w:<3d} stop keep   gap  acc kept/last"
    print(header)
    summary = {w: [] for w in windows}
    for name, nll, se, acc in runs:
        line = f"{name:12s} {len(nll):6d} {nll[-1]:9.4f} {se[-1]:8.4f}"
        for w in windows:
            stop, keep = replay(nll, se, w, args.k)
            gap = (nll[keep] - nll[-1]) / se[-1] if se[-1] > 0 else float("nan")
            summary[w].append((stop, gap, acc[keep] - acc[-1]))
            line += f" |       {stop:4d} {keep:4d} {gap:+5.2f}  {acc[keep]:.3f}/{acc[-1]:.3f}"
        print(line)
    for w in windows:
        s = summary[w]
        print(
            f"W={w}: stop mean {sum(x[0] for x in s) / len(s):.1f}, max {max(x[0] for x in s)}; "
            f"gap mean {sum(x[1] for x in s) / len(s):+.2f} SE, "
            f"max {max(x[1] for x in s):+.2f} SE, "
            f"runs over 1 SE: {sum(x[1] > 1 for x in s)} of {len(s)}; "
            f"hold-out accuracy kept - last: min {min(x[2] for x in s):+.3f}"
        )


if __name__ == "__main__":
    main()
