//! The 90% bootstrap interval of `fit`'s estimated target prior
//! (`estimated_target_prior_ci_low` / `_ci_high` of `report.json`), and the reported estimate.
//!
//! `fit` reports p̂ᵗ from the estimator of `label_shift.prior_estimator`
//! ([`PriorEstimator`]): an estimator on the final network's temperature-calibrated hold-out
//! and target outputs, or (`tracker`, the previous default) the BBSE-QP estimate of its last
//! adaptation iteration, floored (or restricted to the support of the first estimate). The
//! floor is a decision rule for absent classes, not an estimate: a class below it is reported
//! as 0 (or pinned at the floor) whatever its true share. The interval therefore bootstraps
//! the **unfloored** estimator ([`FinalPrior`]; for `tracker`, BBSE-QP with `floor = 0`,
//! `support = None`) on the final network's outputs, resampling hold-out rows (with their
//! labels) and target rows with replacement, so that the confusion matrix's (and BCTS's)
//! sampling error is included. With θ* the replicates, q_lo, q_hi their `(1 ∓ level)/2`
//! quantiles and θ̂ the reported estimate, per class
//!
//! ```text
//! [min(q_lo, θ̂),  max(q_hi, θ̂)]
//! ```
//!
//! the percentile interval of the unfloored replicates, widened to hold the reported number.
//! A class the floor sets to 0 keeps the spread of its unfloored estimate (width > 0 when its
//! replicates vary), where flooring every replicate gave [0, 0].
//!
//! Why percentile and not basic: BBSE-QP lives on the simplex, so for a small class most
//! replicates sit at or just above 0 and the basic interval `2θ − q`, reflected, falls below
//! the truth. Compared with the alternatives (basic, deviations placed around θ̂, the old floored
//! replicates) by `cargo run --release -p glshift --example prior_interval_dev`: on synthetic
//! exact-label-shift cases (no real target labels; `-- synthetic 200 3`: coverage 0.960 vs 0.920
//! basic, 0.762 floored) and on development draws of the cross-domain protocol (seeds 100 and
//! 101, whose target labels it reads; never the reported draws), both rank it first
//! (docs/label-shift-study.md).
//! Calibration: the final network's softmax outputs are turned back into logits (log p, softmax
//! is shift-invariant) and re-tempered with the temperature fitted on the hold-out, as the
//! tracker does each iteration.

use ndarray::{Array2, ArrayView2};

use super::PriorEstimator;
use crate::label_shift::confusion::counted_confusion_matrix;
use crate::label_shift::prior::{counted_class_prior, counted_predicted_distribution, RowCounts};
use crate::label_shift::resample::on_distinct_rows;
use crate::label_shift::{
    apply_prior_floor, bbse_qp, bootstrap, fit_temperature, restrict_to_support,
    softmax_with_temperature, IntervalMethod, ShiftEstimate, ShiftEstimator, ShiftInputs,
};
use crate::Result;

/// `fit`'s prior estimator as a [`ShiftEstimator`]: BBSE-QP (hard or soft) followed by the prior
/// floor, or, with `support`, by [`restrict_to_support`].
#[derive(Clone, Debug)]
pub struct FitPrior {
    pub soft: bool,
    pub floor: f64,
    /// Classes kept (fixed support); `None` = floor only.
    pub support: Option<Vec<bool>>,
}

impl ShiftEstimator for FitPrior {
    fn name(&self) -> &'static str {
        "fit-bbse-qp"
    }

    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        self.estimate_counted(inp, (RowCounts::ONCE, RowCounts::ONCE))
    }

    fn estimate_resample(
        &self,
        inp: &ShiftInputs,
        hold_rows: &[usize],
        target_rows: &[usize],
    ) -> Result<ShiftEstimate> {
        on_distinct_rows(inp, hold_rows, target_rows, |inp, counts| {
            self.estimate_counted(inp, counts)
        })
    }
}

impl FitPrior {
    /// [`ShiftEstimator::estimate`] with the hold-out rows and the target rows counted as
    /// `counts` says (`label_shift/resample.rs`); once each: `estimate`'s bits.
    pub(crate) fn estimate_counted(
        &self,
        inp: &ShiftInputs,
        (hold, target): (RowCounts, RowCounts),
    ) -> Result<ShiftEstimate> {
        let c = inp.source_probs.ncols();
        let owned;
        let ps = match inp.source_prior {
            Some(p) => p,
            None => {
                owned = counted_class_prior(inp.source_labels, hold, c)?;
                &owned
            }
        };
        let conf =
            counted_confusion_matrix(inp.source_probs, inp.source_labels, hold, ps, self.soft)?;
        let q = counted_predicted_distribution(inp.target_probs, target, self.soft)?;
        let raw = bbse_qp(conf.matrix.view(), &q, ps)?;
        Ok(match &self.support {
            Some(keep) => restrict_to_support(&raw, ps, keep, self.floor),
            None => apply_prior_floor(&raw, ps, self.floor),
        })
    }
}

/// The reported prior and its per-class interval.
#[derive(Clone, Debug)]
pub struct FitPriorInterval {
    /// The reported estimate: `tracker` as given, else the estimator on the final network.
    pub estimate: ShiftEstimate,
    pub low: Vec<f64>,
    pub high: Vec<f64>,
    /// The unfloored estimator on the final network's outputs.
    pub final_point: Vec<f64>,
    /// Resamples dropped because the estimate failed.
    pub failed: usize,
}

/// The final network's hold-out and target outputs, re-tempered once with the temperature
/// fitted on the hold-out (softmax is shift-invariant, so `ln p` serves as logits; unchanged
/// without `calibrate`): the inputs of the reported estimate and of its interval, built once
/// per fit (`CheckedParams` keeps it for the report's interval).
#[derive(Clone, Debug)]
pub struct FinalOutputs {
    /// Calibrated hold-out (n_h × c) and target (n_t × c) probabilities.
    hold: Array2<f32>,
    target: Array2<f32>,
    holdout_labels: Vec<usize>,
    source_prior: Vec<f64>,
    /// Fitted on the hold-out (1 without calibration).
    temperature: f64,
}

impl FinalOutputs {
    /// `holdout_probs` n_h × c and `target_probs` n_t × c are the final network's plain softmax
    /// outputs; `holdout_labels` length n_h; `source_prior` the full-source prior.
    pub fn new(
        holdout_probs: ArrayView2<f32>,
        holdout_labels: &[usize],
        target_probs: ArrayView2<f32>,
        source_prior: &[f64],
        calibrate: bool,
    ) -> Result<FinalOutputs> {
        let logits = |p: ArrayView2<f32>| p.mapv(|v| v.max(1e-30).ln());
        let (hl, tl) = (logits(holdout_probs), logits(target_probs));
        let temperature = if calibrate && !holdout_labels.is_empty() {
            fit_temperature(hl.view(), holdout_labels)?
        } else {
            1.0
        };
        Ok(FinalOutputs {
            hold: softmax_with_temperature(hl.view(), temperature),
            target: softmax_with_temperature(tl.view(), temperature),
            holdout_labels: holdout_labels.to_vec(),
            source_prior: source_prior.to_vec(),
            temperature,
        })
    }

    /// Other plain softmax outputs of the same network (`n × c`) calibrated with the
    /// hold-out's temperature, as the target's were.
    pub fn calibrate(&self, probs: ArrayView2<f32>) -> Array2<f32> {
        softmax_with_temperature(probs.mapv(|v| v.max(1e-30).ln()).view(), self.temperature)
    }

    /// The calibrated target probabilities (n_t × c).
    pub fn target(&self) -> ArrayView2<'_, f32> {
        self.target.view()
    }

    /// The full-source prior pˢ (length c).
    pub fn source_prior(&self) -> &[f64] {
        &self.source_prior
    }

    /// The calibrated outputs as an estimator's inputs (the hold-out with its labels, the target).
    pub fn inputs(&self) -> ShiftInputs<'_> {
        ShiftInputs {
            source_probs: self.hold.view(),
            source_labels: &self.holdout_labels,
            target_probs: self.target.view(),
            source_prior: Some(&self.source_prior),
        }
    }

    /// The reported estimate: `tracker` (the adaptation loop's last estimate) as given for
    /// [`PriorEstimator::Tracker`], else `estimator` (soft or hard BBSE-QP inputs) on these outputs.
    pub fn estimate(
        &self,
        estimator: PriorEstimator,
        soft: bool,
        tracker: &ShiftEstimate,
    ) -> Result<ShiftEstimate> {
        match estimator {
            PriorEstimator::Tracker => Ok(tracker.clone()),
            _ => estimator.estimator(soft).estimate(&self.inputs()),
        }
    }

    /// The reported estimate and its interval (see the module doc): `b` resamples at `level`,
    /// seeded (the same numbers whatever the thread count).
    pub fn interval(
        &self,
        estimator: PriorEstimator,
        soft: bool,
        tracker: &ShiftEstimate,
        b: usize,
        level: f64,
        seed: u64,
    ) -> Result<FitPriorInterval> {
        let estimate = self.estimate(estimator, soft, tracker)?;
        self.interval_around(estimate, estimator, soft, b, level, seed)
    }

    /// [`FinalOutputs::interval`] around an `estimate` already made by
    /// [`FinalOutputs::estimate`] with the same `estimator` and `soft`.
    pub fn interval_around(
        &self,
        estimate: ShiftEstimate,
        estimator: PriorEstimator,
        soft: bool,
        b: usize,
        level: f64,
        seed: u64,
    ) -> Result<FitPriorInterval> {
        let unfloored = estimator.estimator(soft);
        let iv = bootstrap(&unfloored, &self.inputs(), b, seed, level, IntervalMethod::Percentile)?;
        let (low, high) = hull_with_report(&iv.q_low, &iv.q_high, &estimate.target_prior);
        Ok(FitPriorInterval { estimate, low, high, final_point: iv.point, failed: iv.failed })
    }
}

/// [`FinalOutputs::interval`] from the final network's plain softmax outputs (arguments as
/// [`FinalOutputs::new`] and [`FinalOutputs::interval`]).
#[allow(clippy::too_many_arguments)]
pub fn fit_prior_interval(
    estimator: PriorEstimator,
    soft: bool,
    holdout_probs: ArrayView2<f32>,
    holdout_labels: &[usize],
    target_probs: ArrayView2<f32>,
    source_prior: &[f64],
    tracker: &ShiftEstimate,
    calibrate: bool,
    b: usize,
    level: f64,
    seed: u64,
) -> Result<FitPriorInterval> {
    FinalOutputs::new(holdout_probs, holdout_labels, target_probs, source_prior, calibrate)?
        .interval(estimator, soft, tracker, b, level, seed)
}

/// The reported estimate alone ([`FitPriorInterval::estimate`] without the bootstrap): what a
/// fitted model keeps as its target prior. Arguments as [`fit_prior_interval`]; the tracker
/// needs no calibration.
#[allow(clippy::too_many_arguments)]
pub fn fit_prior_estimate(
    estimator: PriorEstimator,
    soft: bool,
    holdout_probs: ArrayView2<f32>,
    holdout_labels: &[usize],
    target_probs: ArrayView2<f32>,
    source_prior: &[f64],
    tracker: &ShiftEstimate,
    calibrate: bool,
) -> Result<ShiftEstimate> {
    if estimator == PriorEstimator::Tracker {
        return Ok(tracker.clone());
    }
    FinalOutputs::new(holdout_probs, holdout_labels, target_probs, source_prior, calibrate)?
        .estimate(estimator, soft, tracker)
}

/// Per class `[min(lo, r), max(hi, r)]`: the replicates' interval widened to hold the report.
pub(crate) fn hull_with_report(lo: &[f64], hi: &[f64], reported: &[f64]) -> (Vec<f64>, Vec<f64>) {
    lo.iter().zip(hi).zip(reported).map(|((&l, &h), &r)| (l.min(r), h.max(r))).unzip()
}

#[cfg(test)]
pub(super) mod tests;
