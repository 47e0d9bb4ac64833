//! Class-wise MMD, the paper's ablation metric ("MMD" row of its ablation table): the data are
//! split by (pseudo-)label and a plain MMD is measured between the class splits, in place of
//! MCMD in J_TU and J_DU.
//!
//! The class mean embedding of class k is μ̂_k = Φ Y e_k / n_k, i.e. the MCMD form Φ Y W e_k with
//! W = diag(1/n_k) instead of the CME coefficients (εnI + BN)⁻¹B. So both objectives reuse the
//! c×c algebra of `mcmd` (`j_du_from_coefficients`, `j_tu_from_coefficients`) and its tiled
//! kernel sums, and
//! MMD²(P^a_k, P^b_l) = G^{aa}_kk + G^{bb}_ll − 2G^{ab}_kl is the biased (V-statistic) estimate
//! (Gretton et al. 2012). Note: with the linear label kernel B = I, MCMD's W is
//! diag(1/(εn + n_k)), so MCMD differs from class-wise MMD only by this εn shrinkage of small
//! classes; with the Gaussian label kernel the classes also share mass.

use super::mcmd::{j_du_from_coefficients, j_tu_from_coefficients};
use super::{check_h, check_labelled, shape_err, Labelled, McmdEstimator, TermGrad, TuGrad};
use crate::{Error, Real, Result};
use ndarray::{Array2, Axis};

/// W = diag(1/n_k) with n_k the (soft) row mass of class k; 0 for a class without rows.
fn mean_coefficients<T: Real>(x: &Labelled<T>) -> Array2<f64> {
    let mass = x.y.sum_axis(Axis(0));
    Array2::from_diag(&mass.mapv(|m| {
        let m = m.to_f64_();
        if m > 0.0 {
            1.0 / m
        } else {
            0.0
        }
    }))
}

/// J_DU with class-wise MMD: Σ_{k≠l ∈ A} MMD²(P_{Z|k}, P_{Z|l}) on one (pooled) domain, and its
/// gradient wrt `a.z`. Active set and conventions as [`super::j_du`].
pub fn classwise_j_du<T: Real>(
    a: &Labelled<T>,
    h: f64,
    active: Option<&[bool]>,
) -> Result<TermGrad<T>> {
    check_h(h)?;
    check_labelled(a, "a", None, None)?;
    let c = a.y.ncols();
    if let Some(m) = active.filter(|m| m.len() != c) {
        return Err(shape_err("classwise_j_du active-class mask length (classes)", c, m.len()));
    }
    let mass = a.y.sum_axis(Axis(0));
    let act: Vec<f64> = (0..c)
        .map(|k| f64::from(u8::from(active.is_none_or(|m| m[k]) && mass[k] != T::zero())))
        .collect();
    Ok(j_du_from_coefficients(a, &mean_coefficients(a), &act, h, McmdEstimator::Exact))
}

/// J_TU with class-wise MMD: Σ_k prior_k MMD²(Pˢ_{Z|k}, Pᵗ_{Z|k}), and its gradients wrt `s.z`
/// and `t.z`. Conventions and checks as [`super::j_tu`].
pub fn classwise_j_tu<T: Real>(
    s: &Labelled<T>,
    t: &Labelled<T>,
    prior: &[f64],
    h: f64,
) -> Result<TuGrad<T>> {
    check_h(h)?;
    check_labelled(s, "s", None, None)?;
    check_labelled(t, "t", Some(s.z.ncols()), Some(s.y.ncols()))?;
    let c = s.y.ncols();
    if prior.len() != c {
        return Err(shape_err("classwise_j_tu prior length (classes)", c, prior.len()));
    }
    if let Some(&v) = prior.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
        return Err(Error::param("prior", v, "entries must be finite and >= 0"));
    }
    Ok(j_tu_from_coefficients(
        s,
        t,
        &mean_coefficients(s),
        &mean_coefficients(t),
        prior,
        h,
        McmdEstimator::Exact,
    ))
}
