//! BBSE (Lipton et al., ICML 2018) by linear solve, and its QP form, behind [`ShiftEstimator`].

use faer::prelude::Solve;
use faer::Mat;
use ndarray::Array2;

use super::diagnostics::{confusion_diagnostics, sampling_warning, Diagnostics};
use super::estimators::{finish_from_weights, prepare, ShiftEstimator, ShiftInputs};
use super::ShiftEstimate;
use super::{bbse_qp, confusion_matrix, predicted_distribution};
use crate::Result;

/// `C`, `q`, `pˢ`, the conditioning of `C` and the warnings gathered so far.
pub(crate) struct Moments {
    pub c_mat: Array2<f64>,
    pub q: Vec<f64>,
    pub source_prior: Vec<f64>,
    pub diag: Diagnostics,
    pub warnings: Vec<String>,
}

/// Builds `C_jk = P̂_hold(ŷ=j|y=k)·pˢ_k` and `q_j = P̂_target(ŷ=j)` (hard argmax or soft
/// average) and collects warnings: classes without hold-out rows (their column is filled with
/// `pˢ_k e_k`, see [`confusion_matrix`]), classes never predicted on the hold-out (hard), a
/// target predicted as a single class, and the conditioning of `C`.
pub(crate) fn moments(inp: &ShiftInputs, soft: bool) -> Result<Moments> {
    let prep = prepare(inp)?;
    let mut warnings = prep.warnings;
    let conf = confusion_matrix(inp.source_probs, inp.source_labels, &prep.source_prior, soft)?;
    if !conf.filled_classes.is_empty() {
        warnings.push(format!(
            "classes {:?} have no hold-out rows: their confusion column was set to pˢ_k·e_k",
            conf.filled_classes
        ));
    }
    let q = predicted_distribution(inp.target_probs, soft)?;
    let c = prep.c;
    let never: Vec<usize> =
        (0..c).filter(|&j| conf.matrix.row(j).iter().all(|&v| v == 0.0)).collect();
    if !never.is_empty() {
        warnings.push(format!("classes {never:?} are never predicted on the source hold-out"));
    }
    if q.iter().filter(|&&v| v > 0.0).count() == 1 {
        warnings.push("every target row is predicted as the same class".into());
    }
    let diag = confusion_diagnostics(conf.matrix.view());
    if let Some(w) = &diag.warning {
        warnings.push(w.clone());
    } else if let Some(w) = sampling_warning(&diag, c, inp.source_labels.len()) {
        warnings.push(w);
    }
    Ok(Moments { c_mat: conf.matrix, q, source_prior: prep.source_prior, diag, warnings })
}

/// BBSE by linear solve (Lipton et al. 2018): `ŵ = C⁻¹ q` (faer LU with partial pivoting),
/// negative entries clipped to 0, then `p̂ = ŵ ⊙ pˢ` renormalised to sum 1 and `w = p̂ / pˢ`.
/// A warning lists clipped classes.
///
/// Fallback: if `C` is singular (see [`super::Diagnostics::is_singular`]: a class never
/// predicted, no hold-out rows with `pˢ_k = 0`, identical columns) or the solve gives a
/// non-finite `w`, the estimate is that of [`BbseQp`] (a least-squares solution on the
/// simplex, which exists without invertibility), with a warning saying so.
#[derive(Clone, Copy, Debug)]
pub struct Bbse {
    /// Soft (averaged probabilities) instead of hard (argmax counts) confusion and `q`.
    pub soft: bool,
}

impl ShiftEstimator for Bbse {
    fn name(&self) -> &'static str {
        if self.soft {
            "bbse-soft"
        } else {
            "bbse-hard"
        }
    }

    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        let mut m = moments(inp, self.soft)?;
        let c = m.q.len();
        let solved = if m.diag.is_singular() {
            None
        } else {
            let a = Mat::from_fn(c, c, |i, j| m.c_mat[[i, j]]);
            let b = Mat::from_fn(c, 1, |i, _| m.q[i]);
            let x = a.partial_piv_lu().solve(b);
            let w: Vec<f64> = (0..c).map(|i| x[(i, 0)]).collect();
            w.iter().all(|v| v.is_finite()).then_some(w)
        };
        match solved {
            Some(w) => {
                let neg: Vec<usize> = (0..c).filter(|&k| w[k] < 0.0).collect();
                if !neg.is_empty() {
                    m.warnings.push(format!(
                        "negative weights of classes {neg:?} clipped to 0 (min {:.3e}) and the prior renormalised",
                        neg.iter().map(|&k| w[k]).fold(0.0, f64::min)
                    ));
                }
                finish_from_weights(self.name(), &w, &m.source_prior, m.warnings, None)
            }
            None => {
                m.warnings.push(
                    "linear solve impossible (singular confusion matrix): fell back to the BBSE QP"
                        .into(),
                );
                let est = bbse_qp(m.c_mat.view(), &m.q, &m.source_prior)?;
                finish_from_weights(self.name(), &est.weights, &m.source_prior, m.warnings, None)
            }
        }
    }
}

/// BBSE in its QP form ([`bbse_qp`]: `min ‖q − Cw‖²`, `w ≥ 0`, `wᵀpˢ = 1`) on the hard or
/// soft confusion matrix. Needs no invertibility; warnings as for [`Bbse`].
#[derive(Clone, Copy, Debug)]
pub struct BbseQp {
    /// Soft instead of hard confusion and `q`.
    pub soft: bool,
}

impl ShiftEstimator for BbseQp {
    fn name(&self) -> &'static str {
        if self.soft {
            "bbse-qp-soft"
        } else {
            "bbse-qp-hard"
        }
    }

    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        let m = moments(inp, self.soft)?;
        let est = bbse_qp(m.c_mat.view(), &m.q, &m.source_prior)?;
        finish_from_weights(self.name(), &est.weights, &m.source_prior, m.warnings, None)
    }
}
