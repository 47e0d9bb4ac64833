//! Label-shift estimation: BBSE in its QP form (Lipton et al. 2018; Combes et al. 2020),
//! eq. `BBSE_QP_estimation` of the paper:
//!
//! ```text
//! ŵ = argmin_w ‖q − C w‖²   s.t.  w ≥ 0,  wᵀpˢ = 1,      p̂ᵗ = ŵ ⊙ pˢ
//! ```
//!
//! with `C_jk = P̂_hold(ŷ = j | y = k) · pˢ_k` (c × c, see [`confusion_matrix`]),
//! `q_j = P̂_target(ŷ = j)` (length c, see [`predicted_distribution`]) and
//! `pˢ_k = P̂_source(y = k)` (length c, see [`class_prior`]). The cross-entropy weight of a
//! source row with label k is `ŵ_k`.
//!
//! Typical use: split the source with [`stratified_holdout`], train on the train part,
//! build `C` on the hold-out, `q` on the target, call [`bbse_qp`], then [`apply_prior_floor`].
//! The three pitfalls of `../shared/docs/pitfalls-label-shift.md` handled here: (1) a class without
//! hold-out rows keeps a non-erasing column, (2) `C` uses the full-source prior, (3) a floor on
//! the estimated prior.
//!
//! Estimators behind one trait ([`ShiftEstimator`]): [`Bbse`] (linear solve, hard or
//! soft), [`BbseQp`], [`Rlls`] (Azizzadenesheli et al. 2019), [`Mlls`] (EM of Saerens et al.
//! 2002 after [`fit_bcts`], Alexandari et al. 2020); [`bootstrap`] intervals for any of them;
//! [`confusion_diagnostics`] for the conditioning of `C`; [`fit_diagnostics`] for how far a
//! fit's correction can be trusted (QP vs MLLS, κ(C), confident share, label-shift residual).

mod bbse;
mod bbse_qp;
pub mod bcts;
mod bootstrap;
pub mod calibration;
pub(crate) mod confusion;
mod diagnostics;
pub(crate) mod estimators;
pub(crate) mod exact_shift;
mod floor;
mod holdout;
mod log_sum;
pub mod mlls;
mod polish;
pub(crate) mod prior;
pub(crate) mod resample;
mod rlls;
pub mod suite;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;

pub use bbse::{Bbse, BbseQp};
pub use bbse_qp::bbse_qp;
pub use bcts::{fit_bcts, Bcts};
pub use bootstrap::{bootstrap, bootstrap_replicates, Interval, IntervalMethod, Replicates};
pub use calibration::{fit_temperature, softmax_with_temperature};
pub use confusion::{confusion_matrix, Confusion};
pub use diagnostics::{confusion_diagnostics, Diagnostics, COND_WARN};
pub use estimators::{ShiftEstimator, ShiftInputs};
pub use floor::{apply_prior_floor, restrict_to_support};
pub use holdout::{stratified_folds, stratified_holdout};
pub use mlls::{em_prior, EmFit, Mlls};
pub use prior::{class_prior, l1_distance, predicted_distribution};
pub use rlls::{rlls_regulariser, Rlls};

/// A label-shift estimate: what [`bbse_qp`], every [`ShiftEstimator`] and the training loop's
/// shift tracker produce, and what a fit keeps. One record for writer and reader alike.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ShiftEstimate {
    /// Importance weights `w_k = p̂ᵗ_k / pˢ_k` (length c), `w ≥ 0`, `wᵀpˢ = 1` (0 where `pˢ_k = 0`).
    pub weights: Vec<f64>,
    /// Estimated target prior `p̂ᵗ = w ⊙ pˢ` (length c, ≥ 0, sums to 1).
    pub target_prior: Vec<f64>,
    /// `‖q − C w‖²` at the solution of the QP when the estimate comes from [`bbse_qp`] (kept
    /// through [`apply_prior_floor`] and [`restrict_to_support`]); `None` for the other estimators.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objective: Option<f64>,
    /// Fallbacks taken and reliability warnings (empty when nothing is suspicious).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Iterations of an iterative estimator (EM of [`Mlls`]); `None` for direct ones.
    #[serde(default)]
    pub iterations: Option<usize>,
}
