//! KMM's quadratic programme (Huang et al. 2007, the empirical KMM problem) solved with
//! clarabel:
//!
//! ```text
//! β̂ = argmin_β ½ βᵀKβ − κᵀβ   s.t.  0 ≤ βᵢ ≤ B,   |Σᵢ βᵢ − n_s| ≤ n_s·ε
//! ```
//!
//! clarabel form `min ½ βᵀPβ + qᵀβ, Aβ + s = b, s ≥ 0` with P = K (its upper triangle, dense),
//! q = −κ and 2n_s + 2 nonnegative rows: −βᵢ ≤ 0, βᵢ ≤ B, Σβ ≤ n_s(1 + ε) and
//! −Σβ ≤ −n_s(1 − ε).

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettings, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};
use ndarray::ArrayView2;

use crate::{Error, Result};

const WHAT: &str = "KMM QP (clarabel)";

/// β̂ of the QP above for K (n × n, symmetric positive semi-definite), κ (length n), the bound
/// `bound` = B and the tolerance `eps` = ε. The solution is clipped to [0, B] (the interior
/// point stops just inside the box). Deterministic: the same inputs give the same bits.
///
/// Errors: shapes that disagree, non-finite entries, a box and sum band with no common point
/// (n·B < n(1 − ε)), or a solve that clarabel does not report (almost) solved.
pub fn solve(k: ArrayView2<f64>, kappa: &[f64], bound: f64, eps: f64) -> Result<Vec<f64>> {
    let n = kappa.len();
    if k.dim() != (n, n) || n == 0 {
        return Err(Error::Shape {
            what: "KMM kernel matrix".into(),
            expected: format!("{n} × {n} (n ≥ 1, from κ)"),
            found: format!("{} × {}", k.nrows(), k.ncols()),
        });
    }
    if k.iter().chain(kappa).any(|v| !v.is_finite()) {
        return Err(Error::bad_data(WHAT, "the kernel matrix or κ contains NaN or Inf"));
    }
    check_feasible(bound, eps)?;
    let p = upper_triangle(k);
    let q: Vec<f64> = kappa.iter().map(|v| -v).collect();
    let (a, b) = constraints(n, bound, eps);
    let cones = [SupportedConeT::NonnegativeConeT(2 * n + 2)];
    // Tight tolerances put the weights that belong on a bound within about 1e-6 of it; if
    // that does not reach `Solved`, clarabel's defaults are tried.
    let tight = DefaultSettings {
        verbose: false,
        tol_gap_abs: 1e-11,
        tol_gap_rel: 1e-11,
        tol_feas: 1e-10,
        ..DefaultSettings::default()
    };
    let loose = DefaultSettings { verbose: false, ..DefaultSettings::default() };
    let solve = |settings| -> Result<(SolverStatus, Vec<f64>)> {
        let mut solver = DefaultSolver::new(&p, &q, &a, &b, &cones, settings)
            .map_err(|e| Error::numerical(WHAT, format!("setup failed: {e}")))?;
        solver.solve();
        Ok((solver.solution.status, solver.solution.x.clone()))
    };
    let (mut status, mut x) = solve(tight)?;
    if status != SolverStatus::Solved {
        (status, x) = solve(loose)?;
    }
    if !matches!(status, SolverStatus::Solved | SolverStatus::AlmostSolved) {
        return Err(Error::numerical(WHAT, format!("status {status}")));
    }
    if x.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(WHAT, "solution contains NaN or Inf"));
    }
    Ok(x.iter().map(|v| v.clamp(0.0, bound)).collect())
}

/// B finite and > 0, ε finite and ≥ 0, and the box [0, B]ⁿ meets the band
/// n(1 − ε) ≤ Σβ ≤ n(1 + ε): B ≥ 1 − ε.
pub fn check_feasible(bound: f64, eps: f64) -> Result<()> {
    if !(bound.is_finite() && bound > 0.0) {
        return Err(Error::param("baselines.kmm.weight_bound", bound, "must be finite and > 0"));
    }
    if !(eps.is_finite() && eps >= 0.0) {
        return Err(Error::param("baselines.kmm.sum_tolerance", eps, "must be finite and >= 0"));
    }
    if bound < 1.0 - eps {
        return Err(Error::param(
            "baselines.kmm.weight_bound",
            bound,
            format!(
                "infeasible: with every βᵢ ≤ B the sum cannot reach n_s·(1 − ε) (ε = {eps}); \
                 B must be ≥ 1 − ε"
            ),
        ));
    }
    Ok(())
}

/// K's upper triangle in compressed columns (column j holds rows 0..=j).
fn upper_triangle(k: ArrayView2<f64>) -> CscMatrix<f64> {
    let n = k.nrows();
    let mut colptr = Vec::with_capacity(n + 1);
    let mut rowval = Vec::with_capacity(n * (n + 1) / 2);
    let mut nzval = Vec::with_capacity(n * (n + 1) / 2);
    colptr.push(0);
    for j in 0..n {
        for i in 0..=j {
            rowval.push(i);
            // Symmetrised so that rounding in K cannot make the two triangles disagree.
            nzval.push(0.5 * (k[[i, j]] + k[[j, i]]));
        }
        colptr.push(rowval.len());
    }
    CscMatrix::new(n, n, colptr, rowval, nzval)
}

/// A ((2n + 2) × n) and b of the nonnegative rows, in compressed columns: column j has −1 in
/// row j, +1 in row n + j, +1 in row 2n and −1 in row 2n + 1.
fn constraints(n: usize, bound: f64, eps: f64) -> (CscMatrix<f64>, Vec<f64>) {
    let mut colptr = Vec::with_capacity(n + 1);
    let mut rowval = Vec::with_capacity(4 * n);
    let mut nzval = Vec::with_capacity(4 * n);
    colptr.push(0);
    for j in 0..n {
        rowval.extend([j, n + j, 2 * n, 2 * n + 1]);
        nzval.extend([-1.0, 1.0, 1.0, -1.0]);
        colptr.push(rowval.len());
    }
    let a = CscMatrix::new(2 * n + 2, n, colptr, rowval, nzval);
    let nf = n as f64;
    let mut b = vec![0.0; n];
    b.extend(std::iter::repeat_n(bound, n));
    b.extend([nf * (1.0 + eps), -nf * (1.0 - eps)]);
    (a, b)
}
