#!/usr/bin/env python3
"""A kept model on new batches: for every ordered pair of domains in DATA,
fit the default model on source -> target, draw batches of the target with Dirichlet(alpha)
class proportions (and at the target's own proportions, and from a third domain: a shift
beyond label shift), run `glshift predict --adapt-prior` on each with its labels (evaluation
only), and print per condition: the batch prior's mean l1 error (adapted, and the model's
stored target prior), its 90% intervals' coverage of the true proportions, accuracy adapted
and not, and how often the residual test's alarm (p < 0.05) fires, and the target test's
(p < 0.05; models of format version 3). With --quapy, QuaPy's EMQ (BCTS-calibrated MLLS) on a
source-only logistic regression runs on the same batches.

    python3 bench/batch_eval.py BINARY DATA OUT [--tasks a:b,...] [--batches 20] [--size 200]
        [--alphas 0.3,1,10] [--quapy] [--draw-seed 0] [--split-target]

With --split-target each fit sees a seeded half of its target's rows and the target's batches come
from the other half, so that no batch row is one the model keeps (the target test's nominal rate is
measured there). Resumable: fits, batches and predictions already written are reused. Needs numpy
(and quapy with scikit-learn for --quapy). Batches: class counts ~ Multinomial(size, p), p ~
Dirichlet(alpha) (or the domain's own proportions), rows of a class drawn without replacement when
it has enough, else with; seeded by (task, condition, batch).
"""

import argparse
import json
import os
import subprocess
import sys
import zlib

import numpy as np


def load(data, dom):
    x = np.load(os.path.join(data, f"{dom}_features.npy")).astype(np.float32)
    y = np.load(os.path.join(data, f"{dom}_labels.npy")).astype(np.int64)
    return x, y


def draw(y, c, size, alpha, rng):
    """Row indices of one batch and its true proportions (of the drawn labels)."""
    own = np.bincount(y, minlength=c) / len(y)
    p = own if alpha == "own" else rng.dirichlet(np.full(c, float(alpha)))
    p = np.where(own > 0, p, 0.0)
    counts = rng.multinomial(size, p / p.sum())
    rows = []
    for k in range(c):
        pool = np.flatnonzero(y == k)
        if counts[k] == 0:
            continue
        rows.append(rng.choice(pool, counts[k], replace=counts[k] > len(pool)))
    rows = np.concatenate(rows)
    rng.shuffle(rows)
    return rows


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")


def conditions(alphas, doms, s, t):
    others = [d for d in doms if d not in (s, t)]
    out = [(f"alpha={a}", t, a) for a in alphas] + [("own", t, "own")]
    if others:
        out.append((f"other:{others[0]}", others[0], "own"))
    return out


def emq_for(data, s):
    from quapy.method.aggregative import EMQ
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    xs, ys = load(data, s)
    q = EMQ(
        make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)),
        calib="bcts",
        val_split=5,
    )
    q.fit(xs, ys)
    return q


def split_target(a, s, t):
    """--split-target: a data folder whose target holds a seeded half of t's rows (the fit's),
    and the other half, the rows the target's batches are drawn from (never seen by the fit)."""
    d = os.path.join(a.out, f"{s}-{t}", "data")
    if not os.path.exists(os.path.join(d, "held_labels.npy")):
        os.makedirs(d, exist_ok=True)
        for part in ("features", "labels"):
            dst = os.path.join(d, f"{s}_{part}.npy")
            if not os.path.exists(dst):
                os.symlink(os.path.abspath(os.path.join(a.data, f"{s}_{part}.npy")), dst)
        x, y = load(a.data, t)
        perm = np.random.default_rng(zlib.crc32(f"split-{s}-{t}".encode())).permutation(len(y))
        fit_rows, held = np.sort(perm[: len(y) // 2]), np.sort(perm[len(y) // 2 :])
        np.save(os.path.join(d, f"{t}_features.npy"), x[fit_rows])
        np.save(os.path.join(d, f"{t}_labels.npy"), y[fit_rows])
        np.save(os.path.join(d, "held_features.npy"), x[held])
        np.save(os.path.join(d, "held_labels.npy"), y[held])
    return d


def task_rows(a, s, t):
    c = None
    fit = os.path.join(a.out, f"{s}-{t}", "fit")
    fit_data = split_target(a, s, t) if a.split_target else a.data
    if not os.path.exists(os.path.join(fit, "model.glshift")):
        run(
            [
                a.binary,
                "fit",
                "--data",
                fit_data,
                "--source",
                s,
                "--target",
                t,
                "--seed",
                "0",
                "--quiet",
                "--out",
                fit,
            ]
        )
    emq = emq_for(a.data, s) if a.quapy else None
    rows = []
    for name, dom, alpha in conditions(a.alphas, a.domains, s, t):
        x, y = load(fit_data, "held") if a.split_target and dom == t else load(a.data, dom)
        c = int(max(y.max(), load(a.data, s)[1].max()) + 1)
        for b in range(a.batches):
            d = os.path.join(a.out, f"{s}-{t}", name.replace(":", "-"), f"b{b:02d}")
            rep = os.path.join(d, "pred", "report.json")
            if not os.path.exists(rep):
                os.makedirs(d, exist_ok=True)
                rng = np.random.default_rng(
                    zlib.crc32(f"{s}-{t}-{name}-{b}".encode()) + a.draw_seed
                )
                idx = draw(y, c, a.size, alpha, rng)
                np.save(os.path.join(d, "x.npy"), x[idx])
                np.save(os.path.join(d, "y.npy"), y[idx])
                run(
                    [
                        a.binary,
                        "predict",
                        "--model",
                        os.path.join(fit, "model.glshift"),
                        "--features",
                        os.path.join(d, "x.npy"),
                        "--labels",
                        os.path.join(d, "y.npy"),
                        "--adapt-prior",
                        "--seed",
                        str(b),
                        "--quiet",
                        "--out",
                        os.path.join(d, "pred"),
                    ]
                )
            r = json.load(open(rep))
            truth = np.bincount(np.load(os.path.join(d, "y.npy")), minlength=c) / a.size
            row = {
                "task": f"{s}->{t}",
                "cond": name,
                "l1": r["batch_prior_l1_error"],
                "l1_model": float(np.abs(np.array(r["model_target_prior"]) - truth).sum()),
                "covered": float(
                    np.mean(
                        (np.array(r["batch_prior_ci_low"]) - 1e-12 <= truth)
                        & (truth <= np.array(r["batch_prior_ci_high"]) + 1e-12)
                    )
                ),
                "acc": r["accuracy"],
                "acc_plain": r["unadapted_accuracy"],
                "alarm": r["label_shift_p_value"] < 0.05,
                "moved": r["batch_prior_move_p_value"] < 0.05,
                "target_alarm": r["target_shift"]["p_value"] < 0.05
                if "target_shift" in r
                else None,
            }
            if emq is not None:
                row["l1_emq"] = float(
                    np.abs(np.asarray(emq.predict(np.load(os.path.join(d, "x.npy")))) - truth).sum()
                )
            rows.append(row)
    return rows


def summarise(rows, quapy):
    conds = []
    for r in rows:
        if r["cond"].split(":")[0] not in conds:
            conds.append(r["cond"].split(":")[0])
    head = (
        "| batches | n | prior l1, adapted | prior l1, model's stored | "
        + ("prior l1, QuaPy EMQ | " if quapy else "")
        + "90% interval coverage | accuracy adapted | accuracy not adapted | residual alarm | "
        "move alarm | target alarm (of tested) |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for c in conds:
        rs = [r for r in rows if r["cond"].split(":")[0] == c]

        def m(k, rs=rs):
            return np.mean([r[k] for r in rs])

        cells = [c, str(len(rs)), f"{m('l1'):.3f}", f"{m('l1_model'):.3f}"]
        if quapy:
            emq = np.array([r["l1_emq"] for r in rs])
            bad = int(np.isnan(emq).sum())
            cells.append(
                f"{np.nanmean(emq):.3f}" + (f" ({bad} NaN left out)" if bad else "")
                if bad < len(rs)
                else "NaN"
            )
        cells += [
            f"{100 * m('covered'):.1f}%",
            f"{100 * m('acc'):.2f}",
            f"{100 * m('acc_plain'):.2f}",
            f"{100 * m('alarm'):.0f}%",
            f"{100 * m('moved'):.0f}%",
        ]
        ta = [r["target_alarm"] for r in rs if r.get("target_alarm") is not None]
        cells.append(f"{100 * np.mean(ta):.0f}% of {len(ta)}" if ta else "–")
        print("| " + " | ".join(cells) + " |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("binary")
    p.add_argument("data")
    p.add_argument("out")
    p.add_argument("--tasks", default="")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--size", type=int, default=200)
    p.add_argument("--alphas", default="0.3,1,10")
    p.add_argument("--quapy", action="store_true")
    p.add_argument(
        "--split-target",
        action="store_true",
        help="fit on half of the target's rows and draw its batches from the other half",
    )
    p.add_argument(
        "--draw-seed",
        type=int,
        default=0,
        help="added to every batch's seed (0: the draws of docs/model.md)",
    )
    a = p.parse_args()
    a.alphas = a.alphas.split(",")
    a.domains = sorted(
        f[: -len("_features.npy")] for f in os.listdir(a.data) if f.endswith("_features.npy")
    )
    tasks = (
        [tuple(t.split(":")) for t in a.tasks.split(",")]
        if a.tasks
        else [(s, t) for s in a.domains for t in a.domains if s != t]
    )
    rows = []
    for s, t in tasks:
        rows += task_rows(a, s, t)
        print(f"done {s}->{t}", file=sys.stderr, flush=True)
    json.dump(rows, open(os.path.join(a.out, "rows.json"), "w"), indent=1)
    summarise(rows, a.quapy)


if __name__ == "__main__":
    main()
