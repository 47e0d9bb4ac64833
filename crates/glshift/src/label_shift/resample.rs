//! A bootstrap resample as its distinct rows, each counted as many times as it was drawn.
//!
//! n draws with replacement from n rows leave about `1 − e⁻¹ ≈ 63%` of them distinct. An
//! estimator whose sums over rows take a count per row ([`RowCounts`]: MLLS's EM and BCTS,
//! BBSE's confusion matrix and predicted distribution) gives on the distinct rows, counted, the
//! estimate of the drawn rows up to summation order, and reads (and copies) only the distinct
//! rows. [`ShiftEstimator::estimate_resample`](super::ShiftEstimator::estimate_resample) is the
//! hook through which [`super::bootstrap_replicates`] uses it; the prior guard's replicates use
//! it directly.

use ndarray::{Array2, Axis};

use super::estimators::ShiftInputs;
use super::prior::RowCounts;
use super::ShiftEstimate;
use crate::Result;

/// The distinct values of `drawn` (indices below `n`), ascending, and how many times each was
/// drawn.
pub(crate) fn distinct(drawn: &[usize], n: usize) -> (Vec<usize>, Vec<u32>) {
    let mut times = vec![0u32; n];
    drawn.iter().for_each(|&i| times[i] += 1);
    times.iter().enumerate().filter(|(_, &k)| k > 0).map(|(i, &k)| (i, k)).unzip()
}

/// `estimate`, an estimator's counted form, on the distinct rows of the resample of `inp` that
/// `hold_rows` and `target_rows` name, with their counts: the body of every counted
/// [`ShiftEstimator::estimate_resample`](super::ShiftEstimator::estimate_resample).
pub(crate) fn on_distinct_rows(
    inp: &ShiftInputs,
    hold_rows: &[usize],
    target_rows: &[usize],
    estimate: impl FnOnce(&ShiftInputs, (RowCounts, RowCounts)) -> Result<ShiftEstimate>,
) -> Result<ShiftEstimate> {
    let r = CountedResample::new(inp, hold_rows, target_rows);
    estimate(&r.inputs(), r.counts())
}

/// The distinct rows of a resample of some [`ShiftInputs`], copied, with their counts.
struct CountedResample<'a> {
    hold: Array2<f32>,
    labels: Vec<usize>,
    target: Array2<f32>,
    hold_times: Vec<u32>,
    target_times: Vec<u32>,
    source_prior: Option<&'a [f64]>,
}

impl<'a> CountedResample<'a> {
    /// The hold-out rows `hold_rows` (with their labels) and the target rows `target_rows` of
    /// `inp` (indices below each part's row count, repeats allowed); `inp.source_prior` is kept.
    fn new(
        inp: &ShiftInputs<'a>,
        hold_rows: &[usize],
        target_rows: &[usize],
    ) -> CountedResample<'a> {
        let (h_rows, hold_times) = distinct(hold_rows, inp.source_probs.nrows());
        let (t_rows, target_times) = distinct(target_rows, inp.target_probs.nrows());
        CountedResample {
            hold: inp.source_probs.select(Axis(0), &h_rows),
            labels: h_rows.iter().map(|&i| inp.source_labels[i]).collect(),
            target: inp.target_probs.select(Axis(0), &t_rows),
            hold_times,
            target_times,
            source_prior: inp.source_prior,
        }
    }

    /// The distinct rows as an estimator's inputs.
    fn inputs(&self) -> ShiftInputs<'_> {
        ShiftInputs {
            source_probs: self.hold.view(),
            source_labels: &self.labels,
            target_probs: self.target.view(),
            source_prior: self.source_prior,
        }
    }

    /// How many times each row of [`CountedResample::inputs`] was drawn: (hold-out, target).
    fn counts(&self) -> (RowCounts<'_>, RowCounts<'_>) {
        (RowCounts(Some(&self.hold_times)), RowCounts(Some(&self.target_times)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn distinct_rows_come_ascending_with_the_times_each_was_drawn() {
        assert_eq!(distinct(&[3, 1, 3, 0, 3], 5), (vec![0, 1, 3], vec![1, 1, 3]));
        assert_eq!(distinct(&[], 2), (vec![], vec![]));
    }

    #[test]
    fn a_counted_resample_keeps_each_drawn_row_once_with_its_labels_and_counts() {
        let hold = array![[0.9f32, 0.1], [0.2, 0.8], [0.6, 0.4]];
        let target = array![[0.5f32, 0.5], [0.3, 0.7]];
        let ps = [0.5, 0.5];
        let inp = ShiftInputs {
            source_probs: hold.view(),
            source_labels: &[0, 1, 0],
            target_probs: target.view(),
            source_prior: Some(&ps),
        };
        let r = CountedResample::new(&inp, &[2, 2, 1], &[1, 1]);
        let got = r.inputs();
        assert_eq!(got.source_probs, array![[0.2f32, 0.8], [0.6, 0.4]]);
        assert_eq!(got.source_labels, &[1, 0]);
        assert_eq!(got.target_probs, array![[0.3f32, 0.7]]);
        assert_eq!(got.source_prior, Some(&ps[..]));
        let (h, t) = r.counts();
        assert_eq!((h.0, t.0), (Some(&[1u32, 2][..]), Some(&[2u32][..])));
    }

    /// Every estimator that overrides `estimate_resample`, on a resample drawn with
    /// replacement: the estimate of the drawn rows copied (the trait's default), up to
    /// summation order; with and without a given source prior.
    #[test]
    fn the_counted_estimators_give_the_estimate_of_the_drawn_rows() {
        use super::super::test_support::{draw, rows};
        use super::super::{Mlls, ShiftEstimate, ShiftEstimator};
        use crate::prior_policy::{FinalPrior, FitPrior, PriorEstimator};
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let labels = draw([60, 40, 20]);
        let hold = rows(&labels, [2.0, 1.5, 1.0], &mut rng);
        let target = rows(&draw([20, 50, 80]), [2.0, 1.5, 1.0], &mut rng);
        let hold_rows: Vec<usize> =
            (0..labels.len()).map(|_| rng.random_range(0..labels.len())).collect();
        let target_rows: Vec<usize> = (0..150).map(|_| rng.random_range(0..150)).collect();
        let mut estimators: Vec<Box<dyn ShiftEstimator>> = vec![
            Box::new(Mlls::default()),
            Box::new(Mlls { bcts: false, ..Mlls::default() }),
            Box::new(FitPrior { soft: false, floor: 0.02, support: None }),
            Box::new(FitPrior { soft: true, floor: 0.0, support: Some(vec![true, true, false]) }),
        ];
        for soft in [false, true] {
            estimators.extend(
                PriorEstimator::ALL
                    .map(|k| Box::new(FinalPrior { kind: k, soft }) as Box<dyn ShiftEstimator>),
            );
        }
        struct Copied<'e>(&'e dyn ShiftEstimator);
        impl ShiftEstimator for Copied<'_> {
            fn name(&self) -> &'static str {
                self.0.name()
            }
            fn estimate(&self, inp: &ShiftInputs) -> crate::Result<ShiftEstimate> {
                self.0.estimate(inp)
            }
        }
        let ps = [0.3, 0.3, 0.4];
        for source_prior in [Some(&ps[..]), None] {
            let inp = ShiftInputs {
                source_probs: hold.view(),
                source_labels: &labels,
                target_probs: target.view(),
                source_prior,
            };
            for est in &estimators {
                let want =
                    Copied(est.as_ref()).estimate_resample(&inp, &hold_rows, &target_rows).unwrap();
                let got = est.estimate_resample(&inp, &hold_rows, &target_rows).unwrap();
                let gap = super::super::l1_distance(&want.target_prior, &got.target_prior);
                assert!(
                    gap < 1e-9,
                    "{}: ℓ1 {gap:e} ({:?} vs {:?})",
                    est.name(),
                    got.target_prior,
                    want.target_prior
                );
                assert_ne!(
                    got.target_prior,
                    est.estimate(&inp).unwrap().target_prior,
                    "{}: the resample was not used",
                    est.name()
                );
                let weights_gap = super::super::l1_distance(&want.weights, &got.weights);
                assert!(weights_gap < 1e-8, "{}: weights ℓ1 {weights_gap:e}", est.name());
            }
        }
    }
}
