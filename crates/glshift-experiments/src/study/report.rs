//! The records of `study.json` ([`StudyReport`] and its parts).

use std::collections::BTreeMap;

use serde::Serialize;

use super::StudyConfig;

/// One estimator on one draw.
#[derive(Clone, Debug, Serialize)]
pub struct DrawEstimate {
    pub prior: Vec<f64>,
    /// Interval of the study's `interval` method.
    pub prior_ci_low: Vec<f64>,
    pub prior_ci_high: Vec<f64>,
    pub prior_l1_error: f64,
    pub covered: Vec<bool>,
    /// Per interval method (all of [`IntervalMethod::ALL`], same replicates): the interval and
    /// its per-class coverage.
    pub intervals: BTreeMap<String, MethodInterval>,
    pub warnings: Vec<String>,
}

/// One interval method's interval on one draw.
#[derive(Clone, Debug, Serialize)]
pub struct MethodInterval {
    pub low: Vec<f64>,
    pub high: Vec<f64>,
    pub covered: Vec<bool>,
}

/// One simulated target.
#[derive(Clone, Debug, Serialize)]
pub struct DrawRecord {
    pub family: String,
    pub draw: usize,
    /// Seed of this draw (prior, rows, bootstrap): `glshift shift simulate --seed` reproduces
    /// the target with the same `--split-seed`, `--source-fraction` and `--n`.
    pub seed: u64,
    pub requested_prior: Vec<f64>,
    pub true_prior: Vec<f64>,
    pub distinct_rows: usize,
    /// `‖pˢ − pᵗ‖₁`: the error of not correcting at all.
    pub source_target_l1: f64,
    /// Per estimator key: the estimate with its interval.
    pub estimates: BTreeMap<String, DrawEstimate>,
    /// Per estimator key whose estimate or interval failed: the message.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, String>,
}

/// One domain of the study.
#[derive(Clone, Debug, Serialize)]
pub struct DomainStudy {
    pub data: String,
    pub domain: String,
    pub n_rows: usize,
    pub n_classes: usize,
    pub n_source: usize,
    /// Source rows each classifier trained on (one entry per fold model when cross-fitted).
    pub n_source_train: Vec<usize>,
    /// Source rows whose probabilities and labels the estimators see (the hold-out, or every
    /// source row when cross-fitted).
    pub n_source_holdout: usize,
    pub n_pool: usize,
    pub source_prior: Vec<f64>,
    /// Accuracy of the source classifier on the rows the estimators see (hold-out or out of
    /// fold).
    pub holdout_accuracy: f64,
    /// Accuracy on the whole target pool (evaluation only).
    pub pool_accuracy: f64,
    pub train_seconds: f64,
    pub draws: Vec<DrawRecord>,
}

/// Aggregate over the draws of one (domain, family, estimator).
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    pub data: String,
    pub domain: String,
    pub family: String,
    pub estimator: String,
    pub draws: usize,
    /// Draws whose estimate or interval failed (not in the ℓ1 statistics; counted uncovered).
    pub failures: usize,
    pub l1_mean: f64,
    pub l1_std: f64,
    /// Mean `‖pˢ − pᵗ‖₁` over the draws (no correction).
    pub no_correction_l1_mean: f64,
    pub coverage: f64,
    pub coverage_present: f64,
    pub coverage_absent: Option<f64>,
    pub joint_coverage: f64,
    /// The same four coverages for every interval method (the fields above repeat the
    /// study's `interval` method).
    pub coverage_by_interval: BTreeMap<String, Coverage>,
}

/// Per-class coverage (all / present / absent classes) and joint coverage of one method.
#[derive(Clone, Debug, Serialize)]
pub struct Coverage {
    pub coverage: f64,
    pub coverage_present: f64,
    pub coverage_absent: Option<f64>,
    pub joint_coverage: f64,
}

/// Everything `study.json` holds.
#[derive(Clone, Debug, Serialize)]
pub struct StudyReport {
    pub glshift_version: &'static str,
    pub config: StudyConfig,
    pub estimators: Vec<String>,
    pub domains: Vec<DomainStudy>,
    pub summary: Vec<SummaryRow>,
    /// The only timing field besides `train_seconds`.
    pub elapsed_seconds: f64,
}
