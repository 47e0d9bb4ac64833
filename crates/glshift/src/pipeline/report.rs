//! `report.json`: [`FitReport`], and how a fit fills it before evaluation.

use serde::{Deserialize, Serialize};

use super::label_free::LabelFree;
use crate::config::FitConfig;
use crate::data::{Domain, LabelRule};
use crate::eval::EmbeddingMetrics;
use crate::prior_policy;
use crate::records::Protocol;
use crate::train::IterRecord;

/// Everything `report.json` holds: written by `glshift fit`, read back by `glshift report`.
/// Reading is lenient where older versions wrote less.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FitReport {
    pub glshift_version: String,
    pub method: String,
    pub seed: u64,
    pub source: String,
    pub target: String,
    /// How the task was built from the two domains (`Uda` = unchanged; set by the caller that
    /// applied a protocol, e.g. `glshift fit --setting pda`).
    #[serde(default)]
    pub protocol: Protocol,
    pub source_path: String,
    pub target_path: String,
    pub n_source: usize,
    pub n_target: usize,
    pub n_features: usize,
    pub classes: Vec<String>,
    pub label_rule: LabelRule,
    pub config: FitConfig,
    /// Source rows trained on and held out for the BBSE confusion matrix.
    pub n_source_train: usize,
    pub n_source_holdout: usize,
    pub source_prior: Vec<f64>,
    /// The target prior estimated by `label_shift.prior_estimator` (after training, on the
    /// final network's outputs; `tracker`: the training loop's last estimate); where the prior
    /// guard distrusted the estimate, what `estimated_target_prior_untrusted` says instead.
    pub estimated_target_prior: Option<Vec<f64>>,
    /// 90% bootstrap interval of `estimated_target_prior`, per class
    /// ([`prior_policy::fit_prior_interval`]; distrusted: widened to the range of every
    /// estimate, [`prior_policy::untrusted_range`]); absent without an estimate.
    #[serde(default)]
    pub estimated_target_prior_ci_low: Option<Vec<f64>>,
    #[serde(default)]
    pub estimated_target_prior_ci_high: Option<Vec<f64>>,
    /// Present where the prior guard distrusted the label-shift estimate: what is reported
    /// instead and how its interval is built (`prior_policy::untrusted_note`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_target_prior_untrusted: Option<String>,
    /// The importance weights training used (the tracker's last estimate, whatever
    /// `label_shift.prior_estimator` reports).
    pub importance_weights: Option<Vec<f64>>,
    pub confusion_filled_classes: Vec<usize>,
    #[serde(default)]
    pub floored_classes: Vec<usize>,
    /// Class counts of the target predictions.
    #[serde(default)]
    pub predicted_class_counts: Vec<usize>,
    #[serde(default)]
    pub history: Vec<IterRecord>,
    /// The only timing field (kept apart so reports can be compared byte for byte without it).
    #[serde(default)]
    pub elapsed_seconds: f64,
    /// Pre-training came from an earlier run of the same grid (`pipeline::run_cached`), so
    /// `elapsed_seconds` covers adaptation and scoring only. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pretraining_reused: bool,
    /// `training` resolved to mini-batch (large data, or forced): the iteration counts of
    /// `history` are mini-batch steps. Absent when false (full-batch).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub minibatch_training: bool,
    /// Where the fit's products ran (`device`): `{"kind": "cpu"}` or `{"kind": "cuda",
    /// "name": ...}`, with `fallback` saying why `auto` used the CPU.
    #[serde(default)]
    pub device: crate::device::DeviceUsed,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_accuracy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_class_accuracy: Option<Vec<Option<f64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub true_target_prior: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_l1_error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_target_prior_l1: Option<f64>,
    /// J_b, J_w, prototype distances and per-class MCMD of Z (evaluation only: uses the target
    /// labels, after training).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_metrics: Option<EmbeddingMetrics>,
    /// Problems found without labels that did not stop the run (e.g. badly scaled target
    /// features after z-score); the CLI prints them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Label-free diagnostics of the final network ([`prior_policy::fit_diagnostics`]): absent
    /// without a source hold-out, or when they could not be computed (a warning says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<prior_policy::FitDiagnostics>,
    /// The prior guard's test and box on the pre-trained network (MUL with the guard on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_guard: Option<prior_policy::PriorGuard>,
    /// What the adaptation check found where a distrusted guard's fallback is `adapt-checked`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptation_check: Option<prior_policy::AdaptationCheck>,
    /// A fit on several pooled sources: each source domain's counts, prior and hold-out
    /// accuracy (`source` then names them joined by `+`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_domains: Option<Vec<super::SourceDomainReport>>,
}

impl FitReport {
    /// Evaluation only: the share of classes whose true target prior lies in the reported
    /// interval (`None` without an interval or target labels).
    pub fn prior_interval_coverage(&self) -> Option<f64> {
        let truth = self.true_target_prior.as_ref()?;
        let low = self.estimated_target_prior_ci_low.as_ref()?;
        let high = self.estimated_target_prior_ci_high.as_ref()?;
        let inside =
            (0..truth.len()).filter(|&k| low[k] <= truth[k] && truth[k] <= high[k]).count();
        Some(inside as f64 / truth.len() as f64)
    }
}

/// `report.json` of a fit before evaluation (no target label read): the task, the settings,
/// the fitted state and the label-free estimates. `shape`: (source rows, dims, target rows).
#[allow(clippy::too_many_arguments)]
pub(super) fn fit_report(
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
    fitted: &crate::train::Fitted,
    shape: (usize, usize, usize),
    label_free: LabelFree,
    predicted_class_counts: Vec<usize>,
    elapsed_seconds: f64,
    warnings: Vec<String>,
) -> FitReport {
    let (n_source, n_features, n_target) = shape;
    FitReport {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        method: cfg.method.to_string(),
        seed: cfg.seed,
        source: source.name.clone(),
        target: target.name.clone(),
        protocol: Protocol::Uda,
        source_path: source.path.display().to_string(),
        target_path: target.path.display().to_string(),
        n_source,
        n_target,
        n_features,
        classes: source.class_names.clone(),
        label_rule: source.label_rule,
        config: cfg.clone(),
        n_source_train: fitted.n_train,
        n_source_holdout: fitted.n_holdout,
        source_prior: fitted.source_prior.clone(),
        importance_weights: fitted.shift.as_ref().map(|s| s.weights.clone()),
        estimated_target_prior: label_free.estimated,
        estimated_target_prior_ci_low: label_free.prior_ci.as_ref().map(|i| i.low.clone()),
        estimated_target_prior_ci_high: label_free.prior_ci.map(|i| i.high),
        estimated_target_prior_untrusted: label_free.untrusted,
        confusion_filled_classes: fitted.confusion_filled_classes.clone(),
        floored_classes: fitted.floored_classes.clone(),
        predicted_class_counts,
        history: fitted.history.clone(),
        elapsed_seconds,
        pretraining_reused: fitted.pretraining_reused,
        minibatch_training: fitted.bn_stats_rows.is_some(),
        device: fitted.device.clone(),
        target_accuracy: None,
        per_class_accuracy: None,
        true_target_prior: None,
        prior_l1_error: None,
        source_target_prior_l1: None,
        embedding_metrics: None,
        warnings,
        diagnostics: label_free.diagnostics,
        prior_guard: fitted.prior_guard.clone(),
        adaptation_check: fitted.adaptation_check.clone(),
        source_domains: None,
    }
}
