//! The four estimators side by side, in the shape `glshift shift` reports them:
//! an object keyed by `bbse`, `bbse-qp`, `rlls`, `mlls`, each entry holding `weights`,
//! `prior`, `prior_ci_low`/`prior_ci_high` (when bootstrapped) and `prior_l1_error` (only when
//! a true prior is known — evaluation only; it is never an input of an estimator).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    bootstrap, l1_distance, Bbse, BbseQp, Interval, IntervalMethod, Mlls, Rlls, ShiftEstimator,
    ShiftInputs,
};
use crate::{Error, Result};

/// Report keys of the four estimators, in report order.
pub const SUITE: [&str; 4] = ["bbse", "bbse-qp", "rlls", "mlls"];

/// Every name [`estimator_for`] accepts: the four keys and the explicit variants.
pub const ESTIMATOR_NAMES: [&str; 11] = [
    "bbse",
    "bbse-qp",
    "rlls",
    "mlls",
    "bbse-hard",
    "bbse-soft",
    "bbse-qp-hard",
    "bbse-qp-soft",
    "rlls-hard",
    "rlls-soft",
    "mlls-bcts",
];

/// The estimator behind a name. The four keys map to one variant each:
/// - `bbse` → BBSE by linear solve on the **hard** confusion matrix (Lipton et al. 2018's);
/// - `bbse-qp` → BBSE-QP on the **soft** confusion matrix (what MUL uses with its default
///   `label_shift.soft = true`);
/// - `rlls` → RLLS on the **hard** confusion matrix (as in the RLLS paper and its code);
/// - `mlls` → EM after BCTS calibration on the hold-out.
///
/// The explicit names (`bbse-soft`, `rlls-soft`, ...) select the other variants.
pub fn estimator_for(name: &str) -> Option<Box<dyn ShiftEstimator>> {
    Some(match name {
        "bbse" | "bbse-hard" => Box::new(Bbse { soft: false }),
        "bbse-soft" => Box::new(Bbse { soft: true }),
        "bbse-qp" | "bbse-qp-soft" => Box::new(BbseQp { soft: true }),
        "bbse-qp-hard" => Box::new(BbseQp { soft: false }),
        "rlls" | "rlls-hard" => Box::new(Rlls { soft: false }),
        "rlls-soft" => Box::new(Rlls { soft: true }),
        "mlls" | "mlls-bcts" => Box::new(Mlls::default()),
        _ => return None,
    })
}

/// Resolves `--estimator` values: `all` (or nothing) = [`SUITE`]; otherwise each name must be
/// one of [`ESTIMATOR_NAMES`] (an [`Error::Param`] names the unknown one). Duplicates are dropped.
pub fn resolve_names(names: &[String]) -> Result<Vec<String>> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(SUITE.iter().map(|s| s.to_string()).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if estimator_for(n).is_none() {
            return Err(Error::param(
                "estimator",
                n,
                format!("unknown estimator (known: all, {})", ESTIMATOR_NAMES.join(", ")),
            ));
        }
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    Ok(out)
}

/// Bootstrap settings (see [`bootstrap`]).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct BootstrapSpec {
    /// Resamples (≥ 2).
    pub resamples: usize,
    /// Nominal coverage in (0, 1).
    pub level: f64,
    /// Seed of the resampling (the same for every estimator: paired resamples).
    pub seed: u64,
    /// Interval from the replicates (basic by default, see [`IntervalMethod`]).
    pub method: IntervalMethod,
}

/// One estimator's entry of the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteEntry {
    /// The variant that ran (`bbse-hard`, `bbse-qp-soft`, `rlls-hard`, `mlls-bcts`, ...).
    pub variant: String,
    /// Importance weights `w = p̂ᵗ / pˢ`.
    pub weights: Vec<f64>,
    /// Estimated target prior `p̂ᵗ`.
    pub prior: Vec<f64>,
    /// Lower end of the bootstrap interval per class (when bootstrapped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_ci_low: Option<Vec<f64>>,
    /// Upper end of the bootstrap interval per class (when bootstrapped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_ci_high: Option<Vec<f64>>,
    /// How the interval was formed (`basic` or `percentile`; when bootstrapped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<IntervalMethod>,
    /// The whole bootstrap result (replicate quantiles too), for callers that compare
    /// interval methods on the same replicates; not written to reports.
    #[serde(skip)]
    pub bootstrap: Option<Interval>,
    /// Bootstrap resamples whose estimate failed and were dropped (when bootstrapped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_failed: Option<usize>,
    /// Why the bootstrap gave no interval (the point estimate is still reported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_error: Option<String>,
    /// Fallbacks and reliability warnings of the point estimate.
    pub warnings: Vec<String>,
    /// Evaluations of the EM map (MLLS only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iterations: Option<usize>,
    /// `‖p̂ᵗ − pᵗ‖₁` against the true target prior — evaluation only, present only when the
    /// target's labels are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_l1_error: Option<f64>,
}

impl SuiteEntry {
    /// Per class: does the interval contain `truth[k]`? `None` without an interval.
    pub fn covers(&self, truth: &[f64]) -> Option<Vec<bool>> {
        let (lo, hi) = (self.prior_ci_low.as_ref()?, self.prior_ci_high.as_ref()?);
        Some(truth.iter().enumerate().map(|(k, &t)| lo[k] <= t && t <= hi[k]).collect())
    }

    /// The interval that `method` gives from the same replicates, with its per-class
    /// coverage of `truth`. `None` without an interval.
    pub fn interval_by(
        &self,
        method: IntervalMethod,
        truth: &[f64],
    ) -> Option<(Vec<f64>, Vec<f64>, Vec<bool>)> {
        let iv = self.bootstrap.as_ref()?;
        let (lo, hi) = method.bounds(&iv.point, &iv.q_low, &iv.q_high);
        let cov = truth.iter().enumerate().map(|(k, &t)| lo[k] <= t && t <= hi[k]).collect();
        Some((lo, hi, cov))
    }
}

/// Runs `name` ([`estimator_for`]) on `inp`, with a bootstrap interval if `boot` is given and
/// the ℓ1 error if `truth` is given. `truth` never reaches the estimator.
pub fn run_estimator(
    name: &str,
    inp: &ShiftInputs,
    boot: Option<&BootstrapSpec>,
    truth: Option<&[f64]>,
) -> Result<SuiteEntry> {
    let est = estimator_for(name).ok_or_else(|| {
        Error::param(
            "estimator",
            name,
            format!("unknown estimator (known: {})", ESTIMATOR_NAMES.join(", ")),
        )
    })?;
    let out = est.estimate(inp)?;
    let mut entry = SuiteEntry {
        variant: est.name().to_string(),
        prior_l1_error: truth.map(|t| l1_distance(&out.target_prior, t)),
        weights: out.weights,
        prior: out.target_prior,
        prior_ci_low: None,
        prior_ci_high: None,
        interval: None,
        bootstrap: None,
        bootstrap_failed: None,
        bootstrap_error: None,
        warnings: out.warnings,
        iterations: out.iterations,
    };
    if let Some(b) = boot {
        match bootstrap(est.as_ref(), inp, b.resamples, b.seed, b.level, b.method) {
            Ok(iv) => {
                if iv.failed > 0 {
                    entry.warnings.push(format!(
                        "{} of {} bootstrap resamples failed and were dropped",
                        iv.failed, iv.resamples
                    ));
                }
                entry.prior_ci_low = Some(iv.low.clone());
                entry.prior_ci_high = Some(iv.high.clone());
                entry.interval = Some(iv.method);
                entry.bootstrap_failed = Some(iv.failed);
                entry.bootstrap = Some(iv);
            }
            Err(e @ Error::Param { .. }) => return Err(e),
            Err(e) => entry.bootstrap_error = Some(e.to_string()),
        }
    }
    Ok(entry)
}

/// Runs every name; an estimator that fails keeps its error message in place of an entry.
/// Errors on bad inputs (checked once, before any estimator), on a bad bootstrap parameter, and
/// when every estimator failed.
pub fn run_suite(
    names: &[String],
    inp: &ShiftInputs,
    boot: Option<&BootstrapSpec>,
    truth: Option<&[f64]>,
) -> Result<Vec<(String, std::result::Result<SuiteEntry, String>)>> {
    // Bad inputs (shapes, NaN, labels out of range) are reported once, as what they are,
    // rather than as every estimator failing.
    super::estimators::prepare(inp)?;
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        match run_estimator(n, inp, boot, truth) {
            Ok(e) => out.push((n.clone(), Ok(e))),
            Err(e @ Error::Param { .. }) => return Err(e),
            Err(e) => out.push((n.clone(), Err(e.to_string()))),
        }
    }
    if out.iter().all(|(_, r)| r.is_err()) {
        let why: Vec<String> =
            out.iter().map(|(n, r)| format!("{n}: {}", r.as_ref().err().unwrap())).collect();
        return Err(Error::numerical(
            "label-shift estimation",
            format!("every estimator failed: {}", why.join("; ")),
        ));
    }
    Ok(out)
}

/// One estimator's outcome as the reports hold it: its entry, or the variant and why it failed
/// (`{"variant", "error"}`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EstimatorOutcome {
    Estimated(Box<SuiteEntry>),
    Failed { variant: String, error: String },
}

impl EstimatorOutcome {
    /// The outcome of estimator `name` ([`run_suite`]'s result for it).
    pub fn new(name: &str, result: &std::result::Result<SuiteEntry, String>) -> EstimatorOutcome {
        match result {
            Ok(e) => EstimatorOutcome::Estimated(Box::new(e.clone())),
            Err(msg) => EstimatorOutcome::Failed {
                variant: estimator_for(name).map(|e| e.name()).unwrap_or("?").to_string(),
                error: msg.clone(),
            },
        }
    }
}

/// The `estimators` object of a report: estimator name → its outcome.
pub fn suite_outcomes(
    results: &[(String, std::result::Result<SuiteEntry, String>)],
) -> BTreeMap<String, EstimatorOutcome> {
    results.iter().map(|(name, r)| (name.clone(), EstimatorOutcome::new(name, r))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    /// 3 classes, 80% accurate classifier; the target holds classes 0 and 1 only.
    fn inputs() -> (Array2<f32>, Vec<usize>, Array2<f32>) {
        let row = |y: usize, i: usize| {
            let pred = if i % 5 == 0 { (y + 1) % 3 } else { y };
            let mut r = [0.15f32; 3];
            r[pred] = 0.7;
            r
        };
        let sp = Array2::from_shape_fn((300, 3), |(i, k)| row(i % 3, i)[k]);
        let sl = (0..300).map(|i| i % 3).collect();
        let tp = Array2::from_shape_fn((200, 3), |(i, k)| row(i % 2, i)[k]);
        (sp, sl, tp)
    }

    #[test]
    fn suite_reports_every_key_with_intervals_and_l1_error_only_when_truth_is_given() {
        let (sp, sl, tp) = inputs();
        let inp = ShiftInputs {
            source_probs: sp.view(),
            source_labels: &sl,
            target_probs: tp.view(),
            source_prior: None,
        };
        let names = resolve_names(&[]).unwrap();
        assert_eq!(names, SUITE);
        let boot =
            BootstrapSpec { resamples: 20, level: 0.9, seed: 1, method: IntervalMethod::Basic };
        let truth = [0.5, 0.5, 0.0];
        let r = run_suite(&names, &inp, Some(&boot), Some(&truth)).unwrap();
        let json = serde_json::to_value(suite_outcomes(&r)).unwrap();
        for key in SUITE {
            let e = &json[key];
            assert_eq!(e["prior"].as_array().unwrap().len(), 3, "{key}: {e}");
            assert_eq!(e["prior_ci_low"].as_array().unwrap().len(), 3, "{key}: {e}");
            assert!(e["prior_l1_error"].as_f64().unwrap() >= 0.0, "{key}: {e}");
        }
        assert_eq!(json["bbse"]["variant"], "bbse-hard");
        assert_eq!(json["mlls"]["interval"], "basic");
        assert!(json["mlls"].get("bootstrap").is_none(), "replicate details stay out of reports");
        assert_eq!(json["bbse-qp"]["variant"], "bbse-qp-soft");
        let r = run_suite(&names, &inp, None, None).unwrap();
        let json = serde_json::to_value(suite_outcomes(&r)).unwrap();
        for key in SUITE {
            assert!(
                json[key].get("prior_l1_error").is_none()
                    && json[key].get("prior_ci_low").is_none()
            );
        }
    }

    #[test]
    fn unknown_estimator_names_are_a_parameter_error_naming_the_value() {
        let e = resolve_names(&["bbse".into(), "bbse-x".into()]).unwrap_err();
        assert!(
            e.to_string().contains("bbse-x") && e.to_string().contains("unknown estimator"),
            "{e}"
        );
        assert_eq!(resolve_names(&["rlls".into(), "rlls".into()]).unwrap(), ["rlls"]);
    }

    #[test]
    fn identical_seeds_give_identical_intervals() {
        let (sp, sl, tp) = inputs();
        let inp = ShiftInputs {
            source_probs: sp.view(),
            source_labels: &sl,
            target_probs: tp.view(),
            source_prior: None,
        };
        let boot =
            BootstrapSpec { resamples: 30, level: 0.9, seed: 7, method: IntervalMethod::Basic };
        let a = run_estimator("mlls", &inp, Some(&boot), None).unwrap();
        let b = run_estimator("mlls", &inp, Some(&boot), None).unwrap();
        assert_eq!(a.prior_ci_low, b.prior_ci_low);
        assert_eq!(a.prior_ci_high, b.prior_ci_high);
    }

    #[test]
    fn suite_reports_bad_inputs_as_themselves_not_as_every_estimator_failing() {
        let (mut sp, sl, tp) = inputs();
        sp[[3, 1]] = f32::NAN;
        let inp = ShiftInputs {
            source_probs: sp.view(),
            source_labels: &sl,
            target_probs: tp.view(),
            source_prior: None,
        };
        let err = run_suite(&resolve_names(&[]).unwrap(), &inp, None, None).unwrap_err();
        assert!(matches!(err, Error::BadData { .. }), "{err}");
        let (sp, _, _) = inputs();
        let inp = ShiftInputs {
            source_probs: sp.view(),
            source_labels: &sl,
            target_probs: tp.view(),
            source_prior: Some(&[0.5, 0.5]),
        };
        let err = run_suite(&resolve_names(&[]).unwrap(), &inp, None, None).unwrap_err();
        assert!(matches!(err, Error::Shape { .. }), "{err}");
    }
}
