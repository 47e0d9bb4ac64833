//! Bias-corrected temperature scaling (BCTS; Alexandari, Kundaje, Shrikumar, ICML 2020):
//! calibrated posteriors `softmax(a·ℓ + b)` with `ℓ = ln p` the log of the given probabilities,
//! one inverse temperature `a = 1/T` and one bias `b_k` per class, fitted on the labelled
//! source hold-out by minimising the mean negative log-likelihood.
//!
//! The NLL is convex in `(a, b)` (a multinomial logistic regression whose features are `ℓ`
//! and the class indicators), so damped Newton with a backtracking (Armijo) line search finds
//! the global minimum; every accepted step lowers the objective, so the result is never worse
//! than the starting point `a = 1, b = 0` (the uncalibrated probabilities). `b` is defined up
//! to a constant; a ridge of 1e-8·‖b‖²/2 makes the minimiser unique and keeps `b_k` finite for
//! a class without hold-out rows.

use faer::prelude::Solve;
use faer::Mat;
use ndarray::{Array2, ArrayView2};

use super::prior::{check_labels, check_len, check_probs, RowCounts};
use crate::{Error, Result};

/// Probabilities are floored at this value before the logarithm.
pub const LOG_FLOOR: f64 = 1e-30;
const RIDGE: f64 = 1e-8;
const MAX_NEWTON: usize = 100;
/// Newton decrement `λ²/2` below which the fit stops.
const NEWTON_TOL: f64 = 1e-12;

/// Fitted BCTS parameters.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Bcts {
    /// Inverse temperature `a = 1/T`.
    pub inv_temperature: f64,
    /// Per-class bias `b` (length c).
    pub bias: Vec<f64>,
    /// Newton iterations taken.
    pub iterations: usize,
    /// Mean hold-out NLL at the fit.
    pub nll: f64,
    /// Mean hold-out NLL of the uncalibrated probabilities (`a = 1, b = 0`).
    pub nll_uncalibrated: f64,
}

/// `ln max(p, LOG_FLOOR)` element-wise, in f64.
pub fn log_probs(probs: ArrayView2<f32>) -> Array2<f64> {
    probs.mapv(|p| (p as f64).max(LOG_FLOOR).ln())
}

/// Mean NLL of `labels` under `softmax(a·logp + b)`.
pub fn bcts_nll(logp: ArrayView2<f64>, labels: &[usize], a: f64, b: &[f64]) -> f64 {
    nll_of(logp, labels, RowCounts::ONCE, a, b)
}

/// [`bcts_nll`] with each row counted as `counts` says, divided by the rows' total count.
fn nll_of(logp: ArrayView2<f64>, labels: &[usize], counts: RowCounts, a: f64, b: &[f64]) -> f64 {
    let mut total = 0.0;
    for (i, (row, &y)) in logp.rows().into_iter().zip(labels).enumerate() {
        let z: Vec<f64> = row.iter().zip(b).map(|(l, bk)| a * l + bk).collect();
        let max = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = z.iter().map(|v| (v - max).exp()).sum::<f64>().ln() + max;
        total += counts.at(i) * (lse - z[y]);
    }
    total / counts.total(labels.len()).max(1.0)
}

impl Bcts {
    /// Calibrated posteriors `softmax(a·ln p + b)` (n × c, f64, rows sum to 1).
    pub fn apply(&self, probs: ArrayView2<f32>) -> Array2<f64> {
        let mut z = log_probs(probs);
        for mut row in z.rows_mut() {
            row.iter_mut().zip(&self.bias).for_each(|(v, b)| *v = self.inv_temperature * *v + b);
            let max = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            row.mapv_inplace(|v| (v - max).exp());
            let s = row.sum();
            row.mapv_inplace(|v| v / s);
        }
        z
    }
}

/// Objective (NLL + ridge), gradient and Hessian at `θ = (a, b)`.
fn derivatives(
    logp: ArrayView2<f64>,
    labels: &[usize],
    counts: RowCounts,
    th: &[f64],
) -> (f64, Vec<f64>, Array2<f64>) {
    let c = th.len() - 1;
    let n = counts.total(labels.len());
    let (a, b) = (th[0], &th[1..]);
    let mut g = vec![0.0; c + 1];
    let mut h = Array2::<f64>::zeros((c + 1, c + 1));
    let mut f = 0.0;
    let mut s = vec![0.0; c];
    for (i, (row, &y)) in logp.rows().into_iter().zip(labels).enumerate() {
        let w = counts.at(i);
        let mut max = f64::NEG_INFINITY;
        for k in 0..c {
            s[k] = a * row[k] + b[k];
            max = max.max(s[k]);
        }
        let zy = s[y];
        let mut sum = 0.0;
        for v in s.iter_mut() {
            *v = (*v - max).exp();
            sum += *v;
        }
        f += w * (sum.ln() + max - zy);
        s.iter_mut().for_each(|v| *v /= sum);
        let m: f64 = (0..c).map(|k| s[k] * row[k]).sum();
        g[0] += w * (m - row[y]);
        h[[0, 0]] += w * ((0..c).map(|k| s[k] * row[k] * row[k]).sum::<f64>() - m * m);
        for k in 0..c {
            g[1 + k] += w * (s[k] - if k == y { 1.0 } else { 0.0 });
            let hab = w * (s[k] * (row[k] - m));
            h[[0, 1 + k]] += hab;
            h[[1 + k, 0]] += hab;
            for j in 0..c {
                h[[1 + k, 1 + j]] += w * (if j == k { s[k] } else { 0.0 } - s[k] * s[j]);
            }
        }
    }
    f /= n;
    g.iter_mut().for_each(|v| *v /= n);
    h.mapv_inplace(|v| v / n);
    for k in 0..c {
        f += 0.5 * RIDGE * b[k] * b[k];
        g[1 + k] += RIDGE * b[k];
        h[[1 + k, 1 + k]] += RIDGE;
    }
    (f, g, h)
}

/// Fits BCTS on hold-out probabilities (n × c, rows summing to 1) and labels.
pub fn fit_bcts(probs: ArrayView2<f32>, labels: &[usize]) -> Result<Bcts> {
    fit_bcts_counted(probs, labels, RowCounts::ONCE)
}

/// [`fit_bcts`] with each row counted as `counts` says (one multiplicity per row): the fit to
/// the rows repeated that often, up to summation order.
pub(crate) fn fit_bcts_counted(
    probs: ArrayView2<f32>,
    labels: &[usize],
    counts: RowCounts,
) -> Result<Bcts> {
    const WHAT: &str = "BCTS calibration";
    check_probs(probs, "BCTS hold-out probabilities")?;
    let c = probs.ncols();
    check_len(labels.len(), probs.nrows(), "BCTS hold-out labels")?;
    check_labels(labels, c, "BCTS hold-out labels")?;
    counts.check(probs.nrows(), "BCTS hold-out row counts")?;
    let logp = log_probs(probs);
    let nll = |a: f64, b: &[f64]| nll_of(logp.view(), labels, counts, a, b);
    let obj = |th: &[f64]| {
        nll(th[0], &th[1..]) + 0.5 * RIDGE * th[1..].iter().map(|v| v * v).sum::<f64>()
    };
    let mut th = vec![0.0; c + 1];
    th[0] = 1.0;
    let nll_uncalibrated = nll(1.0, &th[1..]);
    let mut iterations = 0;
    for _ in 0..MAX_NEWTON {
        let (f, g, h) = derivatives(logp.view(), labels, counts, &th);
        let hm = Mat::from_fn(c + 1, c + 1, |i, j| h[[i, j]]);
        let gm = Mat::from_fn(c + 1, 1, |i, _| -g[i]);
        let sol = hm.partial_piv_lu().solve(gm);
        let mut d: Vec<f64> = (0..=c).map(|i| sol[(i, 0)]).collect();
        let mut slope: f64 = d.iter().zip(&g).map(|(a, b)| a * b).sum();
        if slope.is_nan() || slope >= 0.0 || d.iter().any(|v| !v.is_finite()) {
            d = g.iter().map(|v| -v).collect();
            slope = -g.iter().map(|v| v * v).sum::<f64>();
        }
        if -slope / 2.0 < NEWTON_TOL {
            break;
        }
        iterations += 1;
        let mut t = 1.0;
        let mut accepted = false;
        for _ in 0..60 {
            let cand: Vec<f64> = th.iter().zip(&d).map(|(x, s)| x + t * s).collect();
            let fc = obj(&cand);
            if fc.is_finite() && fc <= f + 1e-4 * t * slope {
                th = cand;
                accepted = true;
                break;
            }
            t *= 0.5;
        }
        if !accepted {
            break;
        }
    }
    if th.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(WHAT, format!("non-finite parameters {th:?}")));
    }
    let nll = nll(th[0], &th[1..]);
    Ok(Bcts { inv_temperature: th[0], bias: th[1..].to_vec(), iterations, nll, nll_uncalibrated })
}
