//! The adaptation check: whether an adaptation run without the label-shift correction (w ≡ 1,
//! after the prior guard distrusted the pre-trained network's estimate) moved the target
//! towards what the source network recognises, or away from it.
//!
//! The paper's argument for re-estimating the weights as training goes (Algorithm 1) is that
//! BBSE becomes valid as the class-conditional distributions P(Z|Y) align. Two label-free
//! quantities of the guard measure how far that holds, and both are measured again on the final
//! network, on the same rows (the source hold-out, n_h × c with labels, and the target,
//! n_t × c, both temperature-scaled on the hold-out as the guard's are):
//!
//! - `D = ‖p̂_QP − p̂_MLLS‖₁`, the disagreement of BBSE-QP and MLLS-BCTS, which a conditional
//!   shift drives apart (`super::guard`);
//! - `m`, the share of target rows whose top probability exceeds τ.
//!
//! The adaptation is **kept** when `D_final ≤ D_pretrained`, `m_final ≥ m_pretrained` and
//! `m_final ≥ 1/2`: the estimators agree at least as well, the network recognises at least as
//! much of the target as before, and at least half of it — the guard's own confident-share floor
//! (rule 2), now met by the adapted network. Otherwise the alignment moved the target away from
//! the source classes (MNIST → USPS: `m` 0.90 → 0.06, `D` 0.13 → 1.21), or left most of it
//! unrecognised (SURF partial DA dslr → caltech: `m` 0.25 → 0.44, 4.3 points under `source`),
//! and the fit redoes its adaptation stage as `source`. The first two comparisons are against the
//! fit's own starting point; the floor is the guard's.

use ndarray::ArrayView2;
use serde::{Deserialize, Serialize};

use super::diagnostics::recalibrate_on_holdout;
use super::guard::both_estimates;
use super::PriorGuard;
use crate::label_shift::exact_shift::confident_share;
use crate::label_shift::l1_distance;
use crate::Result;

/// The guard's settings the check reads.
#[derive(Clone, Copy, Debug)]
pub struct CheckParams {
    /// MUL's pseudo-label threshold τ.
    pub tau: f64,
    /// Soft (probabilities) or hard (argmax) C and q.
    pub soft: bool,
    /// Temperature-scale both on the hold-out first (`label_shift.calibrate`).
    pub calibrate: bool,
    /// The confident share the adapted network must reach (the guard's
    /// `min_confident_share`).
    pub min_share: f64,
}

/// What the adaptation check found (`report.json` key `adaptation_check`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdaptationCheck {
    /// D on the pre-trained network (the guard's) and on the adapted one (`None`: the check
    /// could not be made, the fit having no source hold-out).
    pub qp_mlls_l1_before: f64,
    pub qp_mlls_l1_after: Option<f64>,
    /// τ-confident share of the target rows, before and after.
    pub confident_share_before: f64,
    pub confident_share_after: Option<f64>,
    /// BBSE-QP and MLLS-BCTS target priors of the adapted network (unfloored).
    pub qp_prior_after: Vec<f64>,
    pub mlls_prior_after: Vec<f64>,
    /// Both conditions held: the fit keeps the adaptation without correction; otherwise its
    /// adaptation stage was redone as `source`.
    pub kept: bool,
}

impl AdaptationCheck {
    /// The check of a fit without a source hold-out: not made, so not passed.
    pub fn not_made(guard: &PriorGuard) -> AdaptationCheck {
        AdaptationCheck {
            qp_mlls_l1_before: guard.qp_mlls_l1,
            qp_mlls_l1_after: None,
            confident_share_before: guard.confident_share,
            confident_share_after: None,
            qp_prior_after: Vec::new(),
            mlls_prior_after: Vec::new(),
            kept: false,
        }
    }

    /// One line for the fit's printed summary.
    pub fn summary(&self) -> String {
        let verdict = if self.kept {
            "kept: adapted without the label-shift correction (w ≡ 1)"
        } else {
            "not kept: the adaptation stage was redone as `source`"
        };
        let after =
            |v: Option<f64>| v.map_or("not measured (no hold-out)".into(), |v| format!("{v:.3}"));
        format!(
            "adaptation check: BBSE-QP vs MLLS ℓ1 {:.3} → {}, confident target rows {:.3} → {}: {verdict}",
            self.qp_mlls_l1_before,
            after(self.qp_mlls_l1_after),
            self.confident_share_before,
            after(self.confident_share_after)
        )
    }
}

/// The check of an adapted network (module docs): `holdout_probs` (n_h × c, plain softmax) with
/// `labels`, `target_probs` (n_t × c), `source_prior` pˢ (length c), against `guard`, the
/// verdict on the pre-trained network; `p` the guard's settings (τ, soft or hard C and q;
/// `calibrate`: temperature-scaled as the loop's when true). Errors on bad shapes or labels;
/// never panics.
pub fn adaptation_check(
    guard: &PriorGuard,
    holdout_probs: ArrayView2<f32>,
    labels: &[usize],
    target_probs: ArrayView2<f32>,
    source_prior: &[f64],
    p: &CheckParams,
) -> Result<AdaptationCheck> {
    let (hold, target) = if p.calibrate {
        recalibrate_on_holdout(holdout_probs, labels, target_probs)?
    } else {
        (holdout_probs.to_owned(), target_probs.to_owned())
    };
    let (soft, tau) = (p.soft, p.tau);
    let (qp, mlls) = both_estimates(hold.view(), labels, target.view(), source_prior, soft)?;
    let d = l1_distance(&qp, &mlls);
    let share = confident_share(target.view(), tau);
    Ok(AdaptationCheck {
        qp_mlls_l1_before: guard.qp_mlls_l1,
        qp_mlls_l1_after: Some(d),
        confident_share_before: guard.confident_share,
        confident_share_after: Some(share),
        qp_prior_after: qp,
        mlls_prior_after: mlls,
        kept: d <= guard.qp_mlls_l1 && share >= guard.confident_share && share >= p.min_share,
    })
}

#[cfg(test)]
mod tests;
