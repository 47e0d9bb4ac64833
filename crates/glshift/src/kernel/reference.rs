//! Test oracle: the paper's literal dense estimators (section "Conditional Metric Operator"),
//! f64 only, with n×n inverses — O(n³) time, O(n²) memory. Use on small n to check the c×c
//! implementation in the parent module; never in training.
//!
//! Conventions as in the paper: L = Y B Yᵀ, L̃ = εnI + L, M^{ab} = L̃_a⁻¹ K^{ab} L̃_b⁻¹, and the
//! label-feature vector of class k is L_{y=k} = Y B e_k (column k of [`embedding_coeffs`];
//! for one-hot Y it is the column of L of any row labelled k, as in the paper). Sums "over
//! i ≠ j" in J_DU run over pairs of classes, as in `mcmd-math.md`.

use super::cme::{from_faer, to_faer};
use super::{Labelled, McmdParams};
use crate::{Error, Result};
use faer::linalg::solvers::DenseSolveCore;
use ndarray::{Array1, Array2, ArrayView1, ArrayView2};

/// K^{ab}_ij = exp(−‖za_i − zb_j‖²/h) by direct differences (n_a×n_b).
pub fn gaussian_gram(za: ArrayView2<f64>, zb: ArrayView2<f64>, h: f64) -> Array2<f64> {
    Array2::from_shape_fn((za.nrows(), zb.nrows()), |(i, j)| {
        let d2: f64 = za.row(i).iter().zip(zb.row(j)).map(|(a, b)| (a - b).powi(2)).sum();
        (-d2 / h).exp()
    })
}

/// Label Gram L = Y B Yᵀ (n×n).
pub fn label_gram(y: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    y.dot(&b).dot(&y.t())
}

/// L̃⁻¹ = (εnI + L)⁻¹ (n×n), dense LU inverse.
pub fn regularised_inverse(
    y: ArrayView2<f64>,
    b: ArrayView2<f64>,
    eps: f64,
) -> Result<Array2<f64>> {
    let n = y.nrows();
    let mut lt = label_gram(y, b);
    lt.diag_mut().mapv_inplace(|v| v + eps * n as f64);
    let inv = from_faer(&to_faer(lt.view()).partial_piv_lu().inverse());
    if inv.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical("reference L̃⁻¹", "singular"));
    }
    Ok(inv)
}

/// Columns L_{y=k} = Y B e_k, k = 0..c (n×c).
pub fn embedding_coeffs(y: ArrayView2<f64>, b: ArrayView2<f64>) -> Array2<f64> {
    y.dot(&b)
}

/// Conditional metric matrix M^{ab} = L̃_a⁻¹ K^{ab} L̃_b⁻¹ (n_a×n_b).
pub fn metric_matrix(
    a: &Labelled<f64>,
    b: &Labelled<f64>,
    p: &McmdParams,
    h: f64,
) -> Result<Array2<f64>> {
    let bm = p.label_kernel.basis_gram(a.y.ncols())?;
    let ia = regularised_inverse(a.y, bm.view(), p.eps)?;
    let ib = regularised_inverse(b.y, bm.view(), p.eps)?;
    Ok(ia.dot(&gaussian_gram(a.z, b.z, h)).dot(&ib))
}

fn quad(u: ArrayView1<f64>, m: &Array2<f64>, v: ArrayView1<f64>) -> f64 {
    u.dot(&m.dot(&v))
}

/// D_kl = L^{aT}_k M^{aa} L^a_k + L^{bT}_l M^{bb} L^b_l − 2 L^{aT}_k M^{ab} L^b_l (c×c).
pub fn mcmd2_matrix(
    a: &Labelled<f64>,
    b: &Labelled<f64>,
    p: &McmdParams,
    h: f64,
) -> Result<Array2<f64>> {
    let bm = p.label_kernel.basis_gram(a.y.ncols())?;
    let (la, lb) = (embedding_coeffs(a.y, bm.view()), embedding_coeffs(b.y, bm.view()));
    let (maa, mbb, mab) =
        (metric_matrix(a, a, p, h)?, metric_matrix(b, b, p, h)?, metric_matrix(a, b, p, h)?);
    let c = bm.nrows();
    Ok(Array2::from_shape_fn((c, c), |(k, l)| {
        let (u, v) = (la.column(k), lb.column(l));
        quad(u, &maa, u) + quad(v, &mbb, v) - 2.0 * quad(u, &mab, v)
    }))
}

/// J_DU = Σ_{k≠l, both active} (L_k − L_l)ᵀ M (L_k − L_l), M = L̃⁻¹ K L̃⁻¹ (paper eq.
/// MAL-Mahalanobis-distance-Euclid). `active = None` uses all classes; unlike
/// [`super::j_du`], classes without rows are not dropped automatically.
pub fn j_du(a: &Labelled<f64>, p: &McmdParams, h: f64, active: Option<&[bool]>) -> Result<f64> {
    let bm = p.label_kernel.basis_gram(a.y.ncols())?;
    let l = embedding_coeffs(a.y, bm.view());
    let m = metric_matrix(a, a, p, h)?;
    let c = bm.nrows();
    let on = |k: usize| active.is_none_or(|s| s[k]);
    let mut total = 0.0;
    for k in (0..c).filter(|&k| on(k)) {
        for j in (0..c).filter(|&j| j != k && on(j)) {
            let diff: Array1<f64> = &l.column(k) - &l.column(j);
            total += quad(diff.view(), &m, diff.view());
        }
    }
    Ok(total)
}

/// J_TU = Σ_k prior_k L^{aT}_k M^{aa} L^a_k with L^a_k = [L^s_k; −L^t_k] and the block matrix
/// M^{aa} = [[M^{ss}, M^{st}]; [M^{ts}, M^{tt}]] (paper eq. Conditional-Matching-esitimation).
pub fn j_tu(
    s: &Labelled<f64>,
    t: &Labelled<f64>,
    prior: &[f64],
    p: &McmdParams,
    h: f64,
) -> Result<f64> {
    let bm = p.label_kernel.basis_gram(s.y.ncols())?;
    let (ls, lt) = (embedding_coeffs(s.y, bm.view()), embedding_coeffs(t.y, bm.view()));
    let (ns, nt) = (s.z.nrows(), t.z.nrows());
    let mut maa = Array2::<f64>::zeros((ns + nt, ns + nt));
    maa.slice_mut(ndarray::s![..ns, ..ns]).assign(&metric_matrix(s, s, p, h)?);
    maa.slice_mut(ndarray::s![..ns, ns..]).assign(&metric_matrix(s, t, p, h)?);
    maa.slice_mut(ndarray::s![ns.., ..ns]).assign(&metric_matrix(t, s, p, h)?);
    maa.slice_mut(ndarray::s![ns.., ns..]).assign(&metric_matrix(t, t, p, h)?);
    let mut total = 0.0;
    for (k, &pk) in prior.iter().enumerate() {
        let mut v = Array1::<f64>::zeros(ns + nt);
        v.slice_mut(ndarray::s![..ns]).assign(&ls.column(k));
        v.slice_mut(ndarray::s![ns..]).assign(&lt.column(k).mapv(|x| -x));
        total += pk * quad(v.view(), &maa, v.view());
    }
    Ok(total)
}
