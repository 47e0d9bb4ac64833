//! RLLS (Azizzadenesheli, Liu, Yang, Anandkumar, "Regularized Learning for Domain Adaptation
//! under Label Shifts", ICLR 2019), solved as a second-order-cone program with clarabel.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT::*};

use super::bbse::moments;
use super::estimators::{finish_from_weights, ShiftEstimator, ShiftInputs};
use super::ShiftEstimate;
use crate::{Error, Result};

/// Confidence level `δ` of the concentration bound that sets [`rlls_regulariser`] (the value the
/// authors' reference implementation passes).
pub const RLLS_DELTA: f64 = 0.05;
/// Multiplier of the concentration bound in [`rlls_regulariser`] (the reference
/// implementation's `3·Δ_C`).
pub const RLLS_SCALE: f64 = 3.0;

/// The RLLS regulariser from the number `n_source` of labelled rows that estimate `Ĉ` (the
/// hold-out) and the number of classes `c`, never from the (unknown) true weights:
///
/// ```text
/// Δ_C(n, c, δ) = 2·ln(2c/δ) / (3n) + sqrt( 2·ln(2c/δ) / n )           (matrix Bernstein)
/// regulariser  = 3 · Δ_C(n_source, c, 0.05)
/// ```
///
/// Azizzadenesheli, Liu, Yang, Anandkumar (ICLR 2019, arXiv:1903.09734) regularise the
/// weight estimate by `Δ_C‖θ‖₂` with `Δ_C` a high-probability bound on the estimation error
/// `‖Ĉ − C‖₂` of the joint confusion matrix, so that `Δ_C = O(1/√n)`. The bracket above is that
/// bound: `Ĉ = (1/n) Σᵢ e_{ŷᵢ} e_{yᵢ}ᵀ` is a mean of `n` independent c×c matrices of spectral
/// norm 1, and the rectangular matrix Bernstein inequality (Tropp 2012, Thm 1.6, with summand
/// norm `R = 1/n`, variance `σ² ≤ 1/n` and dimension `2c`) gives `‖Ĉ − C‖₂ ≤ Δ_C` with probability
/// `≥ 1 − δ`. The factor 3 ([`RLLS_SCALE`]) and `δ = 0.05` ([`RLLS_DELTA`]) are those of the
/// authors' reference implementation (its `compute_3deltaC(n_class, n_train, delta)`, called
/// with `delta = 0.05` and `n_train` = the rows that estimate `Ĉ`); they are not tuned here.
///
/// Not taken from that implementation: its experiments multiply this value by a factor
/// `α ∈ {10, 1, 0.1, 0.01, 0.001, 0.0001}` chosen by the mean squared error against the **true**
/// weights (`choose_alpha`), or fixed at 0.001 / 0.01 in later versions. Selecting by true weights
/// is impossible without target labels, so here `α = 1`. Consequence (measured in the README
/// study): with a few hundred hold-out rows the regulariser exceeds `‖Ĉᵀb‖/‖b‖ ≤ σ_max(Ĉ)`
/// and the solution is exactly `θ̂ = 0`, i.e. `w = 1`, no correction; [`Rlls`] says so in a
/// warning. The target sample size does not enter the regulariser (it enters the error of
/// `b̂`, which the paper bounds separately). Larger values shrink `w` towards 1.
pub fn rlls_regulariser(c: usize, n_source: usize) -> f64 {
    let l = (2.0 * c as f64 / RLLS_DELTA).ln();
    let n = n_source.max(1) as f64;
    RLLS_SCALE * (2.0 * l / (3.0 * n) + (2.0 * l / n).sqrt())
}

/// RLLS (Azizzadenesheli et al. 2019, their regularised weight estimator): with
/// `θ = w − 1` and `b = q − C·1`,
///
/// ```text
/// θ̂ = argmin_θ ‖C θ − b‖₂ + Δ_C ‖θ‖₂   s.t.  1 + θ ≥ 0,       w = 1 + θ̂
/// ```
///
/// (norms not squared, as in the paper; `C` the joint hold-out confusion `P̂(ŷ = j, y = k)`),
/// `Δ_C` from [`rlls_regulariser`] with `n_source` = hold-out rows.
/// Since the subgradient of the objective at `θ = 0` contains 0 exactly when
/// `‖Cᵀb‖₂ / ‖b‖₂ ≤ Δ_C`, that case returns `w = 1` (the source prior) with a warning naming
/// both numbers. When `σ_min(C) ≥ Δ_C` and `C⁻¹q ≥ 0`, the penalty is exact and
/// the solution equals BBSE; otherwise `w` is shrunk towards 1. `w` is then clipped at 0 and
/// rescaled so that `p̂ = w ⊙ pˢ` sums to 1 (the paper does not constrain `wᵀpˢ = 1`).
///
/// SOCP for clarabel: variables `(θ, t₁, t₂)`, minimise `t₁ + Δ_C t₂` subject to
/// `(t₁, Cθ − b) ∈ SOC`, `(t₂, θ) ∈ SOC`, `1 + θ ≥ 0`. Needs no invertibility of `C`.
#[derive(Clone, Copy, Debug)]
pub struct Rlls {
    /// Soft instead of hard confusion and `q`.
    pub soft: bool,
}

impl ShiftEstimator for Rlls {
    fn name(&self) -> &'static str {
        if self.soft {
            "rlls-soft"
        } else {
            "rlls-hard"
        }
    }

    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        let m = moments(inp, self.soft)?;
        let c = m.q.len();
        let delta = rlls_regulariser(c, inp.source_labels.len());
        let theta = solve_rlls(&m.c_mat, &m.q, delta)?;
        let mut warnings = m.warnings;
        let b: Vec<f64> = (0..c).map(|j| m.q[j] - m.c_mat.row(j).sum()).collect();
        let b_norm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
        if b_norm > 0.0 {
            let ctb = (0..c)
                .map(|k| (0..c).map(|j| m.c_mat[[j, k]] * b[j]).sum::<f64>().powi(2))
                .sum::<f64>()
                .sqrt();
            if ctb / b_norm <= delta {
                warnings.push(format!(
                    "RLLS regulariser Δ_C = {delta:.3e} (from {} hold-out rows) ≥ ‖Cᵀb‖/‖b‖ = {:.3e}: \
                     the solution is w = 1 (no correction, the source prior)",
                    inp.source_labels.len(),
                    ctb / b_norm
                ));
            }
        }
        let w: Vec<f64> = theta.iter().map(|t| 1.0 + t).collect();
        finish_from_weights(self.name(), &w, &m.source_prior, warnings, None)
    }
}

/// Solves the RLLS SOCP; returns `θ̂`.
pub(crate) fn solve_rlls(cm: &ndarray::Array2<f64>, q: &[f64], delta: f64) -> Result<Vec<f64>> {
    const WHAT: &str = "RLLS (clarabel SOCP)";
    let c = q.len();
    let n = c + 2;
    let (t1, t2) = (c, c + 1);
    let b: Vec<f64> = (0..c).map(|j| q[j] - cm.row(j).sum()).collect();
    let (mut ai, mut aj, mut av) = (Vec::new(), Vec::new(), Vec::new());
    let mut rhs = Vec::new();
    // cone 1: (t1, Cθ − b)
    ai.push(0);
    aj.push(t1);
    av.push(-1.0);
    rhs.push(0.0);
    for j in 0..c {
        for k in 0..c {
            if cm[[j, k]] != 0.0 {
                ai.push(1 + j);
                aj.push(k);
                av.push(-cm[[j, k]]);
            }
        }
        rhs.push(-b[j]);
    }
    // cone 2: (t2, θ)
    let r0 = c + 1;
    ai.push(r0);
    aj.push(t2);
    av.push(-1.0);
    rhs.push(0.0);
    for k in 0..c {
        ai.push(r0 + 1 + k);
        aj.push(k);
        av.push(-1.0);
        rhs.push(0.0);
    }
    // cone 3: 1 + θ ≥ 0
    let r1 = 2 * c + 2;
    for k in 0..c {
        ai.push(r1 + k);
        aj.push(k);
        av.push(-1.0);
        rhs.push(1.0);
    }
    let a_mat = CscMatrix::new_from_triplets(3 * c + 2, n, ai, aj, av);
    let p_mat = CscMatrix::new_from_triplets(n, n, vec![], vec![], vec![]);
    let mut lin = vec![0.0; n];
    lin[t1] = 1.0;
    lin[t2] = delta;
    let cones = [SecondOrderConeT(c + 1), SecondOrderConeT(c + 1), NonnegativeConeT(c)];
    let settings = DefaultSettings { verbose: false, ..DefaultSettings::default() };
    let mut solver = DefaultSolver::new(&p_mat, &lin, &a_mat, &rhs, &cones, settings)
        .map_err(|e| Error::numerical(WHAT, format!("setup failed: {e}")))?;
    solver.solve();
    let status = solver.solution.status;
    if !matches!(status, SolverStatus::Solved | SolverStatus::AlmostSolved) {
        return Err(Error::numerical(WHAT, format!("solver status {status}")));
    }
    let theta = solver.solution.x[..c].to_vec();
    if theta.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(WHAT, "non-finite solution"));
    }
    Ok(theta)
}
