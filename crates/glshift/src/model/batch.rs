//! A kept model on a new batch: the batch's class proportions, re-weighted posteriors, and
//! whether the batch moved.
//!
//! The model keeps its source hold-out's probabilities and labels (format version 2). On a batch
//! of `n_b` rows with the model's probabilities P_b (`n_b × c`), the label-shift estimator of the
//! fit (`label_shift.prior_estimator`; `tracker` → `final-qp`, the loop is over) runs on the
//! temperature-calibrated hold-out and batch outputs, exactly as for the fit's own reported prior
//! (`prior_policy::FinalOutputs`), giving π̂_b. Then:
//!
//! - **interval:** `resamples` bootstrap replicates π*_r (hold-out and batch rows resampled with
//!   replacement), the per-class percentile interval at `level` widened to hold π̂_b (as the
//!   fit's `estimated_target_prior_ci_*`);
//! - **move:** m = ‖π̂_b − π₀‖₁ against the model's own target prior π₀ (its source prior for
//!   methods that estimate none), with the bootstrap p-value of "no move"
//!   (1 + #{‖π*_r − π̂_b‖₁ ≥ m}) / (1 + R): how often the estimate's own spread reaches π₀;
//! - **posteriors:** the calibrated probabilities q (temperature fitted on the hold-out) taken as
//!   posteriors under the model's own target prior π₀ (what the fit adapted the network to) and
//!   moved to the batch's (Saerens et al. 2002): p_b(y|x) ∝ q(y|x) · π̂_b(y) / π₀(y), with the
//!   ratio 0 for a class the fitted target holds less than half a row of (π₀ · n_t < 1/2: the
//!   ratio of two near-zero estimates is noise). A batch whose estimate equals π₀ (the fit's own
//!   target) is predicted as without the flag (but for a row predicted into such a class).
//!   (A first version divided by the hold-out's prior, as MLLS's E-step does; on batches at the
//!   target's own proportions it predicted slightly worse than the plain model, read from their
//!   labels, which is what this invariant removes: docs/model.md);
//! - **the fit's guard:** when the fit's prior guard distrusted the label-shift estimate on its
//!   own target, a batch's estimate through the source confusion is not trusted either: the
//!   batch prior is reported as the fit reports its own (`prior_policy::untrusted_estimate`:
//!   the adapted network's calibrated probabilities on the batch's confident rows and pˢ on the
//!   others where the fit's adaptation was kept and recognises half the batch, else pˢ; the
//!   interval widened to hold the bootstrap interval, pˢ and the uniform proportions), flagged
//!   `untrusted`, and the posteriors are not re-weighted,
//!   and when fewer than `label_shift.guard.min_confident_share`
//!   (one half) of the batch's rows are τ-confident, the model does not recognise most of the
//!   batch, so its estimate says little: the posteriors are left as the plain model's (and a
//!   warning says so), as the fit's prior guard falls back to `source` under the same floor.
//!   (Both added after models that scored 12% and 21% on their own targets, MNIST ↔ USPS on raw
//!   pixels, lost 0.8 to 6.1 points of batch accuracy to the re-weighting, read from the batches'
//!   labels.)
//! - **residual test:** the label-shift residual test of the fit's diagnostics
//!   (`prior_policy::fit_diagnostics`) with the batch as the target: small p-values say the batch
//!   is not a label shift of the *source*. A domain-adapted model's own target may already fail
//!   it (conditional shift is why it was adapted), so compare with the fit's own
//!   `diagnostics.label_shift_p_value` before reading it as a new change.
//! - **target test** (models of format version 3): is the batch a label shift of the *fitted
//!   target*? The batch's preprocessed features are compared with the model's sample of its
//!   target, re-weighted to π̂_b (`model::target_match`); a small p-value says the batch differs beyond
//!   class proportions, and a warning says to refit. The re-weighting itself does not depend on it.

use ndarray::{Array2, ArrayView2};
use serde::{Deserialize, Serialize};

use super::fitted::FittedModel;
use super::target_match::{batch_test_rows, target_shift_test, TargetShiftTest};
use crate::label_shift::{bootstrap_replicates, l1_distance};
use crate::prior_policy;
use crate::prior_policy::{hull_with_report, DiagnosticsParams, FinalOutputs, PriorEstimator};
use crate::{Error, Result};

/// Settings of [`FittedModel::adapt_batch`] (`resamples` < 2 is refused by the bootstrap).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchParams {
    /// Bootstrap replicates of the interval, the move test and the residual test (≥ 2).
    pub resamples: usize,
    /// Coverage of the per-class interval, in (0, 1).
    pub level: f64,
    /// Seed of the resampling (the same numbers whatever the thread count).
    pub seed: u64,
}

impl Default for BatchParams {
    fn default() -> Self {
        BatchParams { resamples: 200, level: 0.9, seed: 0 }
    }
}

/// What [`FittedModel::adapt_batch`] estimated (`report.json` of `glshift predict --adapt-prior`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchPrior {
    /// The estimator that ran (the fit's `label_shift.prior_estimator`; `final-qp` for `tracker`).
    pub estimator: PriorEstimator,
    /// π̂_b, length c.
    pub batch_prior: Vec<f64>,
    pub batch_prior_ci_low: Vec<f64>,
    pub batch_prior_ci_high: Vec<f64>,
    pub level: f64,
    pub resamples: usize,
    /// Replicates whose estimate failed (dropped).
    pub failed_resamples: usize,
    /// π₀: the model's target prior, or its source prior for a method that estimates none.
    pub reference_prior: Vec<f64>,
    /// ‖π̂_b − π₀‖₁ and the bootstrap p-value of "no move" (module docs).
    pub batch_prior_move_l1: f64,
    pub batch_prior_move_p_value: f64,
    /// Share of the batch's rows whose top calibrated probability exceeds τ, and whether the
    /// posteriors were re-weighted (only when that share reaches the guard's floor).
    pub confident_share: f64,
    pub reweighted: bool,
    /// The label-shift residual ‖q − C ŵ‖₂ of the batch against the source hold-out, and its
    /// p-value under exact label shift (small: not a label shift of the source).
    pub label_shift_residual: f64,
    pub label_shift_p_value: f64,
    /// The target test (module docs); `None` for a model that keeps no target sample (format
    /// version 1 or 2), when no batch rows were given, or when too few rows could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_shift: Option<TargetShiftTest>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Why `batch_prior` is not the estimator's (the fit's guard distrusted label shift; module
    /// docs); absent when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
}

/// A batch prior with its per-class interval, and why it is not the estimator's, if it is not.
struct PointAndRange {
    point: Vec<f64>,
    low: Vec<f64>,
    high: Vec<f64>,
    untrusted: Option<String>,
}

/// Re-weighted posteriors of a batch (`n_b × c`) and what was estimated.
#[derive(Clone, Debug)]
pub struct BatchAdaptation {
    pub probs: Array2<f32>,
    pub prior: BatchPrior,
}

impl FittedModel {
    /// The batch's class proportions with an interval, the move from the model's target prior
    /// and the residual test, and the batch's posteriors re-weighted to its proportions (module
    /// docs). `x` are raw feature rows (`n_b × d`, n_b ≥ 1).
    /// Errors: those of [`FittedModel::predict_proba`]; a model without a source hold-out (a
    /// version-1 file: refit); bad `params`.
    pub fn predict_proba_adapted(
        &self,
        x: ArrayView2<f32>,
        params: &BatchParams,
    ) -> Result<BatchAdaptation> {
        let probs = self.predict_proba(x)?;
        let test_rows = x.select(ndarray::Axis(0), &batch_test_rows(x.nrows(), params.seed));
        self.adapt_batch(probs.view(), Some(test_rows.view()), params)
    }

    /// The label-free diagnostics of a batch (`n_b × c` probabilities) against the kept
    /// source hold-out, with the fit's τ and estimator settings.
    fn batch_diagnostics(
        &self,
        hold: &super::fitted::SourceHoldout,
        probs: ArrayView2<f32>,
        params: &BatchParams,
    ) -> Result<prior_policy::FitDiagnostics> {
        let diag_params = DiagnosticsParams {
            tau: self.info.config.mul.tau,
            soft: self.info.config.label_shift.soft,
            resamples: params.resamples,
            seed: params.seed,
        };
        let source_prior = self.source_prior();
        prior_policy::fit_diagnostics(
            hold.probs.view(),
            &hold.labels,
            probs,
            source_prior,
            &diag_params,
        )
    }

    /// [`FittedModel::predict_proba_adapted`] from the model's plain probabilities of the batch
    /// (`n_b × c`, from [`FittedModel::predict_proba`] or its blocks) and, for the target test,
    /// the raw feature rows [`batch_test_rows`]`(n_b, params.seed)` of the batch (`None`: no
    /// target test).
    pub fn adapt_batch(
        &self,
        probs: ArrayView2<f32>,
        test_rows: Option<ArrayView2<f32>>,
        params: &BatchParams,
    ) -> Result<BatchAdaptation> {
        let hold = self.holdout.as_ref().ok_or_else(|| {
            Error::param(
                "adapt_prior",
                "requested",
                "this model keeps no source hold-out (a model file of format version 1, or a fit without a hold-out): refit it with this glshift to adapt to batches",
            )
        })?;
        check_batch(probs, self.n_classes(), params)?;
        let ls = &self.info.config.label_shift;
        let estimator = match ls.prior_estimator {
            PriorEstimator::Tracker => PriorEstimator::FinalQp,
            e => e,
        };
        let source_prior = self.source_prior();
        let outputs =
            FinalOutputs::new(hold.probs.view(), &hold.labels, probs, source_prior, ls.calibrate)?;
        let reps = bootstrap_replicates(
            &estimator.estimator(ls.soft),
            &outputs.inputs(),
            params.resamples,
            params.seed,
        )?;
        let guard_trusted = self.info.prior_guard_trusted != Some(false);
        let (q_low, q_high) = reps.quantiles(params.level);
        let PointAndRange { point, low, high, untrusted } = if guard_trusted {
            let point = reps.point.target_prior.clone();
            let (low, high) = hull_with_report(&q_low, &q_high, &point);
            PointAndRange { point, low, high, untrusted: None }
        } else {
            self.untrusted_batch_prior(&outputs, (&q_low, &q_high))?
        };
        let reference = self.target_prior().unwrap_or(source_prior).to_vec();
        let moved = l1_distance(&point, &reference);
        let reached = reps.replicates.iter().filter(|r| l1_distance(r, &point) >= moved).count();
        let move_p = (1 + reached) as f64 / (1 + reps.replicates.len()) as f64;
        let diag = self.batch_diagnostics(hold, probs, params)?;
        let floor = ls.guard.min_confident_share;
        let reweighted = guard_trusted && diag.confident_target_share >= floor;
        let n_target = self.info.n_target;
        let adapted = if reweighted {
            reweight(outputs.inputs().target_probs, &prior_ratio(&point, &reference, n_target))
        } else {
            probs.to_owned()
        };
        let mut warnings = reps.point.warnings;
        warnings.extend(diag.warnings);
        let target_shift =
            self.target_test(&outputs, (&point, &reference), test_rows, params, &mut warnings)?;
        if !guard_trusted {
            warnings.push("the fit's prior guard distrusted the label-shift estimate on its own target, so this batch's posteriors are not re-weighted either".into());
        } else if !reweighted {
            warnings.push(format!(
                "only {:.1}% of the batch's rows are confident (floor {:.0}%): the model does not recognise most of this batch, so its posteriors are not re-weighted",
                100.0 * diag.confident_target_share,
                100.0 * floor
            ));
        }
        let prior = BatchPrior {
            estimator,
            batch_prior: point,
            batch_prior_ci_low: low,
            batch_prior_ci_high: high,
            level: params.level,
            resamples: params.resamples,
            failed_resamples: reps.failed,
            reference_prior: reference,
            batch_prior_move_l1: moved,
            batch_prior_move_p_value: move_p,
            confident_share: diag.confident_target_share,
            reweighted,
            label_shift_residual: diag.label_shift_residual,
            label_shift_p_value: diag.label_shift_p_value,
            target_shift,
            warnings,
            untrusted,
        };
        Ok(BatchAdaptation { probs: adapted, prior })
    }

    /// The batch prior of a model whose fit distrusted label shift (module docs): the point,
    /// the bootstrap interval `(q_low, q_high)` widened to hold it, pˢ and 1/c, and the note.
    fn untrusted_batch_prior(
        &self,
        outputs: &FinalOutputs,
        (q_low, q_high): (&[f64], &[f64]),
    ) -> Result<PointAndRange> {
        let cfg = &self.info.config;
        let kept = self.info.adaptation_kept == Some(true);
        let floor = cfg.label_shift.guard.min_confident_share;
        let (estimate, read) = prior_policy::untrusted_estimate(outputs, kept, cfg.mul.tau, floor)?;
        let point = estimate.target_prior;
        let points = [point.as_slice(), self.source_prior()];
        let (low, high) = prior_policy::widened_with_uniform(q_low, q_high, &points);
        Ok(PointAndRange { point, low, high, untrusted: Some(prior_policy::untrusted_note(read)) })
    }

    /// The target test (module docs) of the batch rows `test_rows` (raw) with the ratio π̂_b/π₀
    /// of `(point, reference)`; `None` without a target sample or rows, or with too few rows
    /// (a warning says so). An alarm adds a warning.
    fn target_test(
        &self,
        outputs: &FinalOutputs,
        (point, reference): (&[f64], &[f64]),
        test_rows: Option<ArrayView2<f32>>,
        params: &BatchParams,
        warnings: &mut Vec<String>,
    ) -> Result<Option<TargetShiftTest>> {
        let (Some(sample), Some(x)) = (&self.target, test_rows) else { return Ok(None) };
        let ratio = prior_ratio(point, reference, self.info.n_target);
        let test = match x.nrows() >= 2 {
            true => target_shift_test(
                sample,
                outputs.calibrate(sample.probs().view()).view(),
                self.preprocessed(x)?.view(),
                &ratio,
                params.resamples,
                params.seed,
            )?,
            false => None,
        };
        match &test {
            None => warnings.push(format!(
                "the target test was not made: too few rows to compare (a batch of one row, or the model's {} target rows, weighted to this batch's proportions)",
                self.info.n_target_sample
            )),
            Some(t) if t.p_value < TARGET_ALARM_P => warnings.push(format!(
                "the batch is not a label shift of the target the model was fitted on (target test p = {:.3}): it differs beyond class proportions, so its estimate and re-weighted posteriors are not to be trusted; refit with this batch as the target",
                t.p_value
            )),
            Some(_) => {}
        }
        Ok(test)
    }

    /// Whether the model keeps the source hold-out batch adaptation needs (format version 2).
    pub fn can_adapt_batches(&self) -> bool {
        self.holdout.is_some()
    }
}

/// Below this p-value the target test warns.
pub const TARGET_ALARM_P: f64 = 0.05;

fn check_batch(probs: ArrayView2<f32>, c: usize, params: &BatchParams) -> Result<()> {
    if probs.nrows() == 0 || probs.ncols() != c {
        return Err(Error::Shape {
            what: "batch probabilities".into(),
            expected: format!("n ≥ 1 rows × {c}"),
            found: format!("{} × {}", probs.nrows(), probs.ncols()),
        });
    }
    if !(params.level > 0.0 && params.level < 1.0) {
        return Err(Error::param("level", params.level, "must lie in (0, 1)"));
    }
    Ok(())
}

/// The ratio π_k / π₀_k of a batch prior to the model's, 0 for a class the fitted target holds
/// less than half a row of (π₀_k · n_target < 1/2): such a class is absent from what the model
/// was fitted on, and the ratio of two near-zero estimates (1e-30 / 1e-140 on a model that
/// predicts one class) is noise that would swamp every other class.
fn prior_ratio(prior: &[f64], reference: &[f64], n_target: usize) -> Vec<f64> {
    let present = |r: f64| r > 0.0 && r * n_target as f64 >= 0.5;
    prior.iter().zip(reference).map(|(&p, &r)| if present(r) { p / r } else { 0.0 }).collect()
}

/// Rows of `q` (`n × c`) times the ratio `w` (length c), renormalised (a row left with no mass
/// keeps q's row).
fn reweight(q: ArrayView2<f32>, w: &[f64]) -> Array2<f32> {
    let mut out = Array2::<f32>::zeros(q.raw_dim());
    for (row, mut dst) in q.rows().into_iter().zip(out.rows_mut()) {
        let s: f64 = row.iter().zip(w).map(|(&v, &wk)| v as f64 * wk).sum();
        for ((d, &v), &wk) in dst.iter_mut().zip(row).zip(w) {
            *d = if s > 0.0 { (v as f64 * wk / s) as f32 } else { v };
        }
    }
    out
}

#[cfg(test)]
mod ratio_tests {
    use super::prior_ratio;

    /// A class the fitted target holds less than half a row of gets ratio 0, however its two
    /// near-zero estimates compare; the others get π/π₀.
    #[test]
    fn near_zero_classes_of_the_fitted_target_get_no_weight() {
        let r = prior_ratio(&[0.6, 0.4, 1e-30, 0.0], &[0.5, 0.5 - 1e-3, 1e-140, 1e-3], 100);
        assert_eq!(r[2], 0.0, "1e-30 / 1e-140 is noise");
        assert_eq!(r[3], 0.0, "0.1 of a row");
        assert!((r[0] - 1.2).abs() < 1e-12 && (r[1] - 0.4 / 0.499).abs() < 1e-12);
        assert!(prior_ratio(&[0.5], &[0.005], 100)[0] == 100.0, "half a row is present");
    }
}
