//! CME coefficients W = (εnI + BN)⁻¹B: the c×c system that replaces the paper's n×n L̃⁻¹.

use crate::{Error, Result};
use faer::prelude::Solve;
use faer::Mat;
use ndarray::{Array2, ArrayView2};

pub(crate) fn to_faer(a: ArrayView2<f64>) -> Mat<f64> {
    Mat::from_fn(a.nrows(), a.ncols(), |i, j| a[[i, j]])
}

pub(crate) fn from_faer(m: &Mat<f64>) -> Array2<f64> {
    Array2::from_shape_fn((m.nrows(), m.ncols()), |(i, j)| m[(i, j)])
}

/// CME coefficients W = (ε n I + B N)⁻¹ B (c×c), from N = YᵀY (c×c class counts, or soft
/// counts), the label basis Gram B (c×c), ε and the row count n.
///
/// Why it works: (εnI + Y B Yᵀ) Y X = Y (εnX + B N X), hence L̃⁻¹ Y B = Y W, and the paper's
/// empirical CME μ̂_{Z|y=k} = Φ L̃⁻¹ L_{y=k} (eq. conditional-embeddings_empirical, with
/// L̃ = εnI + L) equals Φ Y W e_k. Solved in f64 with a partial-pivoting LU (faer);
/// εnI + BN is invertible for ε > 0 since BN has non-negative eigenvalues.
pub fn cme_coefficients(
    n_matrix: ArrayView2<f64>,
    b: ArrayView2<f64>,
    eps: f64,
    n: usize,
) -> Result<Array2<f64>> {
    let c = b.nrows();
    for (what, m) in [("label basis Gram B", b), ("class count matrix N", n_matrix)] {
        if m.dim() != (c, c) {
            return Err(Error::Shape {
                what: what.into(),
                expected: format!("{c}x{c}"),
                found: format!("{}x{}", m.nrows(), m.ncols()),
            });
        }
        if m.iter().any(|v| !v.is_finite()) {
            return Err(Error::bad_data(what, "contains NaN or Inf"));
        }
    }
    if !(eps.is_finite() && eps > 0.0) {
        return Err(Error::param("eps", eps, "must be finite and > 0"));
    }
    if n == 0 {
        return Err(Error::param("n", n, "the domain must have at least one row"));
    }
    let mut a = b.dot(&n_matrix);
    a.diag_mut().mapv_inplace(|v| v + eps * n as f64);
    let w = from_faer(&to_faer(a.view()).partial_piv_lu().solve(to_faer(b)));
    if w.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(
            "CME coefficients (εnI + BN)⁻¹B",
            format!("singular or ill-conditioned system (eps = {eps}, n = {n})"),
        ));
    }
    Ok(w)
}
