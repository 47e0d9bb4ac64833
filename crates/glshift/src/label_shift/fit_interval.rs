//! The 90% bootstrap interval of `fit`'s estimated target prior
//! (`estimated_target_prior_ci_low` / `_ci_high` of `report.json`).
//!
//! `fit` reports p̂ᵗ from its label-shift tracker: BBSE-QP on the temperature-calibrated
//! probabilities of its last adaptation iteration, floored (or restricted to the support of the
//! first estimate). The interval bootstraps **the same estimator** ([`FitPrior`]: confusion on the
//! hold-out, `q` on the target, BBSE-QP, then the same floor or support) on the final network's
//! outputs, resampling hold-out rows (with their labels) and target rows with replacement.
//! With θ_f the estimator on the final network, θ* its replicates and θ̂ the reported estimate,
//! the interval is the basic one built from the deviations θ* − θ_f and placed around θ̂:
//!
//! ```text
//! [θ̂ − (q_hi − θ_f),  θ̂ − (q_lo − θ_f)] ∩ [0, 1]
//! ```
//!
//! (= [`IntervalMethod::Basic`] when θ̂ = θ_f), so the interval always describes the reported
//! number, while its width and skew come from the resampling. Calibration: the final network's
//! softmax outputs are turned back into logits (log p, softmax is shift-invariant) and re-tempered
//! with the temperature fitted on the hold-out, as the tracker does each iteration.

use ndarray::ArrayView2;

use super::{
    apply_prior_floor, bbse_qp, bootstrap, confusion_matrix, fit_temperature, predicted_distribution, restrict_to_support,
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
        let c = inp.source_probs.ncols();
        let owned;
        let ps = match inp.source_prior {
            Some(p) => p,
            None => {
                owned = super::class_prior(inp.source_labels, c)?;
                &owned
            }
        };
        let conf = confusion_matrix(inp.source_probs, inp.source_labels, ps, self.soft)?;
        let q = predicted_distribution(inp.target_probs, self.soft)?;
        let raw = bbse_qp(conf.matrix.view(), &q, ps)?;
        Ok(match &self.support {
            Some(keep) => restrict_to_support(&raw, ps, keep, self.floor),
            None => apply_prior_floor(&raw, ps, self.floor),
        })
    }
}

/// Per-class interval of the reported prior.
#[derive(Clone, Debug)]
pub struct FitPriorInterval {
    pub low: Vec<f64>,
    pub high: Vec<f64>,
    /// The estimator on the final network's outputs (θ_f).
    pub final_point: Vec<f64>,
    /// Resamples dropped because the estimate failed.
    pub failed: usize,
}

/// Interval of `reported` (see the module doc). `holdout_probs` n_h × c and `target_probs`
/// n_t × c are the final network's plain softmax outputs; `holdout_labels` length n_h;
/// `source_prior` the full-source prior; `b` resamples at `level`, seeded.
#[allow(clippy::too_many_arguments)]
pub fn fit_prior_interval(
    est: &FitPrior,
    holdout_probs: ArrayView2<f32>,
    holdout_labels: &[usize],
    target_probs: ArrayView2<f32>,
    source_prior: &[f64],
    reported: &ShiftEstimate,
    calibrate: bool,
    b: usize,
    level: f64,
    seed: u64,
) -> Result<FitPriorInterval> {
    let logits = |p: ArrayView2<f32>| p.mapv(|v| v.max(1e-30).ln());
    let (hl, tl) = (logits(holdout_probs), logits(target_probs));
    let temperature = if calibrate && !holdout_labels.is_empty() { fit_temperature(hl.view(), holdout_labels)? } else { 1.0 };
    let hp = softmax_with_temperature(hl.view(), temperature);
    let tp = softmax_with_temperature(tl.view(), temperature);
    let inp = ShiftInputs {
        source_probs: hp.view(),
        source_labels: holdout_labels,
        target_probs: tp.view(),
        source_prior: Some(source_prior),
    };
    let iv = bootstrap(est, &inp, b, seed, level, IntervalMethod::Basic)?;
    let shift = |q: &[f64]| -> Vec<f64> { q.iter().zip(&iv.point).zip(&reported.target_prior).map(|((q, f), r)| q - f + r).collect() };
    let (low, high) = IntervalMethod::Basic.bounds(&reported.target_prior, &shift(&iv.q_low), &shift(&iv.q_high));
    Ok(FitPriorInterval { low, high, final_point: iv.point, failed: iv.failed })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A noisy classifier's probabilities for labels `y` (c = 3, about 80% on the true class).
    fn probs(y: &[usize], rng: &mut ChaCha8Rng) -> Array2<f32> {
        let mut p = Array2::from_shape_fn((y.len(), 3), |(i, k)| if k == y[i] { 0.8f32 } else { 0.1 });
        for mut r in p.rows_mut() {
            r.mapv_inplace(|v| v * (0.5 + rng.random::<f32>()));
            let s = r.sum();
            r.mapv_inplace(|v| v / s);
        }
        p
    }

    #[test]
    fn interval_contains_the_reported_estimate_and_usually_the_truth() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let hy: Vec<usize> = (0..300).map(|i| i % 3).collect();
        let truth = [0.6, 0.3, 0.1];
        let ty: Vec<usize> = (0..600).map(|i| if i < 360 { 0 } else if i < 540 { 1 } else { 2 }).collect();
        let (hp, tp) = (probs(&hy, &mut rng), probs(&ty, &mut rng));
        let est = FitPrior { soft: true, floor: 0.25 / 3.0, support: None };
        let ps = [1.0 / 3.0; 3];
        let point = est.estimate(&ShiftInputs { source_probs: hp.view(), source_labels: &hy, target_probs: tp.view(), source_prior: Some(&ps) }).unwrap();
        let reported = point.clone();
        let iv = fit_prior_interval(&est, hp.view(), &hy, tp.view(), &ps, &reported, false, 200, 0.9, 1).unwrap();
        for k in 0..3 {
            assert!(iv.low[k] <= reported.target_prior[k] && reported.target_prior[k] <= iv.high[k], "{iv:?}");
            assert!(iv.low[k] <= truth[k] && truth[k] <= iv.high[k], "class {k}: {iv:?}");
            assert!(iv.high[k] - iv.low[k] < 0.2, "too wide to be informative: {iv:?}");
        }
        // Deterministic per seed, and a moved report moves the interval by the same amount.
        let again = fit_prior_interval(&est, hp.view(), &hy, tp.view(), &ps, &reported, false, 200, 0.9, 1).unwrap();
        assert_eq!(iv.low, again.low);
        let moved = ShiftEstimate { target_prior: vec![point.target_prior[0] + 0.01, point.target_prior[1] - 0.01, point.target_prior[2]], ..reported };
        let iv2 = fit_prior_interval(&est, hp.view(), &hy, tp.view(), &ps, &moved, false, 200, 0.9, 1).unwrap();
        assert!((iv2.low[0] - iv.low[0] - 0.01).abs() < 1e-9 && (iv2.high[1] - iv.high[1] + 0.01).abs() < 1e-9);
    }
}
