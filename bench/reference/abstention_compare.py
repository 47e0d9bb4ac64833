#!/usr/bin/env python3
"""Compare glshift's BBSE (hard, soft) and MLLS+BCTS with the `abstention` package
(Alexandari, Kundaje, Shrikumar 2020; `pip install abstention`) on identical inputs.

Inputs: the probabilities that `glshift shift estimate --data ... --save-probs DIR` wrote
(DIR/holdout_probs.npy, DIR/holdout_labels.npy, DIR/target_probs.npy) and the report that
`glshift shift estimate --source-probs DIR/holdout_probs.npy --source-labels
DIR/holdout_labels.npy --target-probs DIR/target_probs.npy --estimator bbse,bbse-soft,mlls
--out REPORT` wrote on them. Prints the largest absolute difference of the estimated target
prior per estimator; exits 1 if one exceeds --tol (default 1e-3).

Matching choices (both sides then compute the same quantity):
- probabilities are read as float32 and passed to abstention as float64 (exact values);
- BBSE: no calibration on either side; abstention's weights are clipped at 0 but not
  renormalised, so its prior is w * p_hold renormalised, as glshift reports it;
- EM: abstention's BCTS (TempScaling with a bias on every class) fitted on the hold-out
  calibrates both hold-out and target probabilities, then abstention's EMImbalanceAdapter runs
  on them (calibrator_factory=None). Its EM divides by the mean calibrated hold-out posterior,
  which equals the hold-out label frequencies that glshift uses at the BCTS optimum (bias
  gradient = 0). Its default stop (tolerance 1e-6, at most 100 iterations) is tightened to
  1e-10 / 100000 iterations so that both sides report the converged fixed point (glshift: 1e-8
  on the l1 change, 2000 iterations).
- Also printed, not compared: EMImbalanceAdapter(calibrator_factory=TempScaling(...)) called
  as released (abstention 0.1.3.1). That call fits BCTS but runs EM on the *uncalibrated*
  target probabilities (it calibrates `tofit_initial_posterior_probs` into a variable the EM
  loop does not read) while dividing by the *calibrated* hold-out frequencies, so it is not
  MLLS+BCTS; running our EM on uncalibrated target probabilities reproduces its numbers.
- Also printed, not compared: abstention's BCTS hold-out NLL against the minimum (BFGS to a
  gradient of 1e-12), and MLLS on the minimum's calibration against glshift's, which says
  whether an MLLS difference comes from BCTS or from EM.
"""

import argparse
import json
import sys

import numpy as np
from abstention.calibration import TempScaling
from abstention.label_shift import BBSEImbalanceAdapter, EMImbalanceAdapter


def one_hot(y, c):
    out = np.zeros((len(y), c))
    out[np.arange(len(y)), y] = 1.0
    return out


def refined_bcts_check(sp, sl, tp, bcts, ours_mlls):
    """Printed, not compared: how far abstention's BCTS is from the hold-out NLL's minimum
    (BFGS to a gradient norm of 1e-12 from T = 1, b = 0), and the MLLS prior on that calibration
    (plain EM to an l1 step of 1e-13), against glshift's."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    ls, lt, rows = np.log(sp), np.log(tp), np.arange(len(sl))

    def nll(theta):
        z = theta[0] * ls + theta[1:]
        return -(z[rows, sl] - logsumexp(z, axis=1)).mean()

    def calibrate(theta, logp):
        z = theta[0] * logp + theta[1:]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    c = sp.shape[1]
    best = minimize(
        nll, np.r_[1.0, np.zeros(c)], method="BFGS", options={"gtol": 1e-12, "maxiter": 10000}
    )
    theirs = -np.log(bcts(sp)[rows, sl]).mean()
    pi = np.bincount(sl, minlength=c) / len(sl)
    post, p = calibrate(best.x, lt), pi.copy()
    for _ in range(200000):
        a = post * (p / pi)
        q = (a / a.sum(axis=1, keepdims=True)).mean(axis=0)
        done = np.abs(q - p).sum() < 1e-13
        p = q
        if done:
            break
    print(
        f"not compared: BCTS hold-out NLL abstention {theirs:.6f}, minimum (BFGS) {best.fun:.6f}; "
        "MLLS on the minimum's calibration differs from glshift's by "
        f"{np.abs(p - ours_mlls).max():.2e}"
    )


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--probs", required=True, help="folder written by --save-probs")
    ap.add_argument("--report", required=True, help="report.json of the probabilities form")
    ap.add_argument("--tol", type=float, default=1e-3)
    a = ap.parse_args()

    sp = np.load(f"{a.probs}/holdout_probs.npy").astype(np.float64)
    sl = np.load(f"{a.probs}/holdout_labels.npy").astype(int)
    tp = np.load(f"{a.probs}/target_probs.npy").astype(np.float64)
    if (sp <= 0).any() or (tp <= 0).any():
        # glshift floors probabilities at 1e-30 before its logarithm; do the same here.
        sp, tp = np.maximum(sp, 1e-30), np.maximum(tp, 1e-30)
    c = sp.shape[1]
    yl = one_hot(sl, c)
    p_hold = yl.mean(axis=0)
    ours = json.load(open(a.report))["estimators"]

    theirs = {}
    for key, soft in [("bbse", False), ("bbse-soft", True)]:
        w = BBSEImbalanceAdapter(soft=soft)(
            valid_labels=yl, tofit_initial_posterior_probs=tp, valid_posterior_probs=sp
        ).multipliers
        p = w * p_hold
        theirs[key] = p / p.sum()
    bcts = TempScaling(bias_positions="all")(
        valid_preacts=sp, valid_labels=yl, posterior_supplied=True
    )
    sp_cal, tp_cal = bcts(sp), bcts(tp)
    em = EMImbalanceAdapter(tolerance=1e-10, max_iterations=100000)
    f = em(tofit_initial_posterior_probs=tp_cal, valid_posterior_probs=sp_cal, valid_labels=yl)
    # multipliers = final frequencies / mean calibrated hold-out posterior
    theirs["mlls"] = f.multipliers * sp_cal.mean(axis=0)
    released = EMImbalanceAdapter(
        calibrator_factory=TempScaling(bias_positions="all"), tolerance=1e-10, max_iterations=100000
    )
    g = released(tofit_initial_posterior_probs=tp, valid_posterior_probs=sp, valid_labels=yl)
    as_released = g.multipliers * g.calibrator_func(sp).mean(axis=0)

    worst = 0.0
    for key, p in theirs.items():
        if key not in ours or "prior" not in ours[key]:
            print(
                f"{key}: missing from {a.report} (run glshift with --estimator bbse,bbse-soft,mlls)"
            )
            return 2
        q = np.array(ours[key]["prior"])
        d = float(np.abs(p - q).max())
        worst = max(worst, d)
        print(f"{key:10s} ({ours[key]['variant']}): max |glshift - abstention| = {d:.2e}")
        print(f"{'':10s} glshift    {np.round(q, 4).tolist()}")
        print(f"{'':10s} abstention {np.round(p, 4).tolist()}")
    d = float(np.abs(as_released - np.array(ours["mlls"]["prior"])).max())
    print(
        f"not compared: EMImbalanceAdapter(calibrator_factory=BCTS) as released differs by {d:.2e}"
    )
    print(
        f"{'':10s} abstention {np.round(as_released, 4).tolist()}  (EM on uncalibrated "
        "target probabilities)"
    )
    refined_bcts_check(sp, sl, tp, bcts, np.array(ours["mlls"]["prior"]))
    verdict = "agree" if worst <= a.tol else "DIFFER"
    print(f"{verdict} within {a.tol:g} (largest difference {worst:.2e})")
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
