//! The reported target prior where the prior guard distrusted the label-shift estimate.
//!
//! BBSE-QP and MLLS read the target through the source's confusion: `q = C w` holds when
//! `P_t(z|y) = P_s(z|y)`, which the guard found false on the pre-trained network. Correcting by
//! the source confusion then moves the estimate away from the truth as readily as towards it
//! (PACS: ℓ1 up to 1.3 where the source proportions are 0.37 away). So a distrusted fit reports:
//!
//! - **after a kept adaptation** (`adaptation_check`): the adapted classifier's own reading of the
//!   target, the mean of its calibrated target probabilities `p̂_k = (1/n_t) Σ_i P_t[i, k]`
//!   (probabilistic classify-and-count), which needs no source confusion: the check found the
//!   adapted network recognising the target at least as well as the pre-trained one;
//! - **otherwise** (the fit is `source`): the source proportions pˢ, the one value that
//!   assumes no correction it cannot support.
//!
//! Its interval is the per-class range of every estimate the fit made and could not choose
//! between — the bootstrap interval of `label_shift.prior_estimator` on the final network, the
//! guard's BBSE-QP and MLLS estimates on the pre-trained network, the adaptation check's on the
//! adapted one, and pˢ — rather than a sampling interval around one of them: under a conditional
//! shift their spread, not the resampling noise, is the uncertainty.

use super::{AdaptationCheck, FinalOutputs, PriorGuard};
use crate::label_shift::{predicted_distribution, ShiftEstimate};
use crate::Result;

/// Why a fit's prior is not trusted, for the report and the summary line.
pub fn untrusted_note(check: Option<&AdaptationCheck>) -> String {
    let what = match check {
        Some(c) if c.kept => "the mean calibrated target probability of the adapted network",
        _ => "the source proportions",
    };
    format!(
        "not trusted (the prior guard found the label-shift assumption broken): reported as {what}; its interval spans every estimate the fit made and the source proportions"
    )
}

/// The point reported for a distrusted fit (module docs): `outputs` the final network's
/// calibrated outputs, `kept` whether its adaptation passed the check; pˢ (length c) otherwise.
pub fn untrusted_estimate(outputs: &FinalOutputs, kept: bool) -> Result<ShiftEstimate> {
    let ps = outputs.source_prior();
    let prior = if kept { predicted_distribution(outputs.target(), true)? } else { ps.to_vec() };
    let weights = prior.iter().zip(ps).map(|(&p, &s)| if s > 0.0 { p / s } else { 0.0 }).collect();
    Ok(ShiftEstimate {
        weights,
        target_prior: prior,
        objective: None,
        warnings: Vec::new(),
        iterations: None,
    })
}

/// `(low, high)` widened, per class, to hold pˢ and every estimate of `guard` and `check`.
pub fn untrusted_range(
    low: &[f64],
    high: &[f64],
    source_prior: &[f64],
    guard: &PriorGuard,
    check: Option<&AdaptationCheck>,
) -> (Vec<f64>, Vec<f64>) {
    let mut points: Vec<&[f64]> = vec![source_prior, &guard.qp_prior, &guard.mlls_prior];
    if let Some(c) = check.filter(|c| !c.qp_prior_after.is_empty()) {
        points.extend([c.qp_prior_after.as_slice(), c.mlls_prior_after.as_slice()]);
    }
    (0..low.len())
        .map(|k| {
            let (lo, hi) =
                points.iter().fold((low[k], high[k]), |(l, h), p| (l.min(p[k]), h.max(p[k])));
            (lo.max(0.0), hi.min(1.0))
        })
        .unzip()
}

/// The prior guard's verdict on a classifier's plain softmax outputs, for estimates made outside
/// a fit (`glshift shift estimate`): `holdout_probs` (n_h × c) with `labels`, `target_probs`
/// (n_t × c), pˢ, both temperature-scaled on the hold-out as a fit's are, then tested with `p`.
pub fn label_shift_verdict(
    holdout_probs: ndarray::ArrayView2<f32>,
    labels: &[usize],
    target_probs: ndarray::ArrayView2<f32>,
    source_prior: &[f64],
    p: &super::GuardParams,
) -> Result<PriorGuard> {
    let (hold, target) =
        super::diagnostics::recalibrate_on_holdout(holdout_probs, labels, target_probs)?;
    super::prior_guard(hold.view(), labels, target.view(), source_prior, p)
}
