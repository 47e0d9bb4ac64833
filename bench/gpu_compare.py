"""Compares `glshift fit` runs on the CPU and on CUDA (bench/gpu_check.sh).

usage: gpu_compare.py OC10_RUNS_DIR   (holding <task>-cpu/ and <task>-cuda/ run folders)

Per task: the share of target rows whose predicted class is the same, both accuracies, the
l1 distance between the two estimated target priors, and how far apart the first pre-training
iteration (cross-entropy, hold-out NLL) and the first adaptation iteration (J_TU, J_DU) are.
"""

import csv
import json
import os
import statistics
import sys


def load(run):
    with open(os.path.join(run, "report.json")) as f:
        rep = json.load(f)
    with open(os.path.join(run, "predictions.csv")) as f:
        pred = [int(r["predicted"]) for r in csv.DictReader(f)]
    return rep, pred


def first(rep, stage):
    return next((h for h in rep["history"] if h["stage"] == stage), None)


def main(root):
    tasks = sorted({d.rsplit("-", 1)[0] for d in os.listdir(root) if d.endswith(("-cpu", "-cuda"))})
    acc_cpu, acc_gpu, worst_agree, worst_l1 = [], [], 1.0, 0.0
    print(
        "task | agree | acc cpu | acc cuda | prior l1 | iter-1 CE rel diff | iter-1 hold-out "
        "NLL rel diff | adapt-1 J_TU rel diff | device"
    )
    for t in tasks:
        try:
            (rc, pc), (rg, pg) = (
                load(os.path.join(root, t + "-cpu")),
                load(os.path.join(root, t + "-cuda")),
            )
        except OSError as e:
            print(f"{t} | missing run: {e}")
            continue
        agree = sum(a == b for a, b in zip(pc, pg, strict=False)) / len(pc)
        l1 = sum(
            abs(a - b)
            for a, b in zip(
                rc["estimated_target_prior"] or [], rg["estimated_target_prior"] or [], strict=False
            )
        )

        def rel(a, b):
            return abs(a - b) / max(abs(a), 1e-30)

        p0c, p0g = first(rc, "pretrain"), first(rg, "pretrain")
        a0c, a0g = first(rc, "adapt"), first(rg, "adapt")
        ce = rel(p0c["ce"], p0g["ce"])
        nll = (
            rel(p0c["holdout"]["nll"], p0g["holdout"]["nll"])
            if p0c.get("holdout") and p0g.get("holdout")
            else float("nan")
        )
        jtu = rel(a0c["j_tu"], a0g["j_tu"]) if a0c and a0g and a0c["j_tu"] else float("nan")
        acc_cpu.append(rc["target_accuracy"])
        acc_gpu.append(rg["target_accuracy"])
        worst_agree, worst_l1 = min(worst_agree, agree), max(worst_l1, l1)
        dev = rg["device"].get("name", rg["device"]["kind"])
        print(
            f"{t} | {100 * agree:.2f}% | {100 * rc['target_accuracy']:.2f} | "
            f"{100 * rg['target_accuracy']:.2f} | {l1:.4f} | {ce:.1e} | {nll:.1e} | "
            f"{jtu:.1e} | {dev}"
        )
    if acc_cpu:
        mc, mg = 100 * statistics.mean(acc_cpu), 100 * statistics.mean(acc_gpu)
        print(
            f"mean accuracy: cpu {mc:.2f}, cuda {mg:.2f} (difference {mg - mc:+.2f} points) "
            f"over {len(acc_cpu)} tasks"
        )
        print(
            f"lowest agreement {100 * worst_agree:.2f}% (goal >= 98%); largest prior l1 "
            f"{worst_l1:.4f} (goal <= 0.02)"
        )


if __name__ == "__main__":
    main(sys.argv[1])
