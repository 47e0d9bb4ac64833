//! What a fit reports about itself without target labels, after training: the diagnostics of
//! [`prior_policy::fit_diagnostics`], the estimated target prior (`label_shift.prior_estimator`)
//! and its bootstrap interval.

use crate::config::FitConfig;
use crate::model::ReportedPrior;
use crate::prior_policy;
use crate::seeds::{stream_seed, Stream};
use crate::Result;

/// What a fit reports without target labels.
pub(super) struct LabelFree {
    pub diagnostics: Option<prior_policy::FitDiagnostics>,
    pub prior_ci: Option<prior_policy::FitPriorInterval>,
    /// The reported prior: `label_shift.prior_estimator` on the final network, or the
    /// tracker's last estimate where no interval could be built (no hold-out).
    pub estimated: Option<Vec<f64>>,
    /// Why the reported prior is not trusted (`None`: trusted, or no prior).
    pub untrusted: Option<String>,
}

/// The diagnostics, the prior estimate and its interval of a fit (`holdout_labels`: the
/// hold-out rows' source labels); a distrusted prior guard adds its summary to `warnings`.
pub(super) fn label_free(
    fitted: &crate::train::Fitted,
    prior: Option<&ReportedPrior>,
    holdout_labels: &[usize],
    cfg: &FitConfig,
    warnings: &mut Vec<String>,
) -> Result<LabelFree> {
    let diagnostics = diagnose(fitted, holdout_labels, cfg, warnings);
    let mut prior_ci = prior.map(|p| prior_interval(p, cfg)).transpose()?.flatten();
    if let (Some(iv), Some(g)) = (prior_ci.as_mut(), fitted.prior_guard.as_ref()) {
        if prior.is_some_and(|p| p.untrusted.is_some()) {
            let check = fitted.adaptation_check.as_ref();
            (iv.low, iv.high) =
                prior_policy::untrusted_range(&iv.low, &iv.high, &fitted.source_prior, g, check);
        }
    }
    let estimated = prior.map(|p| p.estimate.target_prior.clone());
    if let Some(g) = fitted.prior_guard.as_ref().filter(|g| !g.trusted) {
        warnings.push(g.summary());
    }
    if let Some(check) = &fitted.adaptation_check {
        warnings.push(check.summary());
    }
    let untrusted = prior.and_then(|p| p.untrusted.clone());
    Ok(LabelFree { diagnostics, prior_ci, estimated, untrusted })
}

/// Bootstrap replicates of the label-shift residual in a fit's diagnostics.
pub const DIAGNOSTICS_RESAMPLES: usize = 200;

/// [`prior_policy::fit_diagnostics`] of a fit's final network, or a warning saying why not.
fn diagnose(
    fitted: &crate::train::Fitted,
    holdout_labels: &[usize],
    cfg: &FitConfig,
    warnings: &mut Vec<String>,
) -> Option<prior_policy::FitDiagnostics> {
    if fitted.n_holdout == 0 {
        return None;
    }
    let params = prior_policy::DiagnosticsParams {
        tau: cfg.mul.tau,
        soft: cfg.label_shift.soft,
        resamples: DIAGNOSTICS_RESAMPLES,
        seed: cfg.seed,
    };
    let d = prior_policy::fit_diagnostics(
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

/// The bootstrap interval around the fit's reported prior (None without a hold-out, where the
/// tracker's estimate is reported without interval). The replicates are unfloored: a class the
/// floor or the fixed support sets to 0 keeps the spread of its unfloored estimate.
fn prior_interval(
    prior: &ReportedPrior,
    cfg: &FitConfig,
) -> Result<Option<prior_policy::FitPriorInterval>> {
    let Some(outputs) = &prior.outputs else { return Ok(None) };
    let ls = &cfg.label_shift;
    let seed = stream_seed(cfg.seed, Stream::PriorInterval);
    let iv = outputs.interval_around(
        prior.estimate.clone(),
        ls.prior_estimator,
        ls.soft,
        PRIOR_CI_RESAMPLES,
        PRIOR_CI_LEVEL,
        seed,
    )?;
    Ok(Some(iv))
}
