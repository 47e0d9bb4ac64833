//! What a fit reports about itself without target labels, after training: the diagnostics of
//! [`label_shift::fit_diagnostics`], the estimated target prior (`label_shift.prior_estimator`)
//! and its bootstrap interval.

use crate::label_shift;
use crate::methods::FitConfig;
use crate::Result;

/// Bootstrap replicates of the label-shift residual in a fit's diagnostics.
pub const DIAGNOSTICS_RESAMPLES: usize = 200;

/// [`label_shift::fit_diagnostics`] of a fit's final network, or a warning saying why not.
pub(super) fn diagnose(
    fitted: &crate::methods::Fitted,
    holdout_labels: &[usize],
    cfg: &FitConfig,
    warnings: &mut Vec<String>,
) -> Option<label_shift::FitDiagnostics> {
    if fitted.n_holdout == 0 {
        return None;
    }
    let params = label_shift::DiagnosticsParams {
        tau: cfg.mul.tau,
        soft: cfg.label_shift.soft,
        resamples: DIAGNOSTICS_RESAMPLES,
        seed: cfg.seed,
    };
    let d = label_shift::fit_diagnostics(
        fitted.holdout_probs.view(),
        holdout_labels,
        fitted.target_probs.view(),
        &fitted.source_prior,
        &params,
    );
    d.map_err(|e| warnings.push(format!("diagnostics not computed: {e}"))).ok()
}

/// Resamples and level of the interval of `estimated_target_prior`.
pub const PRIOR_CI_RESAMPLES: usize = 200;
pub const PRIOR_CI_LEVEL: f64 = 0.9;

/// The fit's reported prior estimate and its bootstrap interval (None without a tracker
/// estimate, i.e. for methods that estimate no shift, or without a hold-out). The replicates
/// are unfloored: a class the floor or the fixed support sets to 0 keeps the spread of its
/// unfloored estimate. Without a hold-out the tracker's estimate is reported without interval.
pub(super) fn prior_estimate(
    fitted: &crate::methods::train::Fitted,
    holdout_labels: &[usize],
    cfg: &FitConfig,
) -> Result<Option<label_shift::FitPriorInterval>> {
    let Some(tracker) = fitted.shift.as_ref() else { return Ok(None) };
    if holdout_labels.is_empty() {
        return Ok(None);
    }
    let iv = label_shift::fit_prior_interval(
        cfg.label_shift.prior_estimator,
        cfg.label_shift.soft,
        fitted.holdout_probs.view(),
        holdout_labels,
        fitted.target_probs.view(),
        &fitted.source_prior,
        tracker,
        cfg.label_shift.calibrate,
        PRIOR_CI_RESAMPLES,
        PRIOR_CI_LEVEL,
        cfg.seed ^ 0x5eed_c1,
    )?;
    Ok(Some(iv))
}
