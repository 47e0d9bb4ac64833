//! The target test (`target_test`): on exact posteriors it holds its level under a label shift
//! and rejects a shift of the features; a fitted model keeps its target sample in the file
//! (version 3), earlier versions load without it, and a damaged sample is an error.

use std::path::Path;

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::super::target_match::{target_shift_test, TargetSample};
use super::super::tests::{dataset, load_err, small};
use super::super::*;
use crate::methods::MethodKind;

/// Two unit-variance Gaussian classes in 3 dimensions, means 0 and (1.5, 0, 0), drawn with
/// `prior`, the features moved by `offset`: rows and the exact posteriors under `prior0`.
fn draw(
    n: usize,
    prior: f64,
    offset: f32,
    prior0: f64,
    rng: &mut ChaCha8Rng,
) -> (Array2<f32>, Array2<f32>) {
    let mut x = Array2::<f32>::zeros((n, 3));
    let mut q = Array2::<f32>::zeros((n, 2));
    for i in 0..n {
        let k = usize::from(rng.random::<f64>() >= prior);
        for j in 0..3 {
            let z: f64 = StandardNormal.sample(rng);
            x[[i, j]] = z as f32 + if j == 0 && k == 1 { 1.5 } else { 0.0 } + offset;
        }
        // log N(x; 1.5) − log N(x; 0) along the first axis, at the unshifted point.
        let x0 = (x[[i, 0]] - offset) as f64;
        let odds = (1.5 * x0 - 1.125).exp() * (1.0 - prior0) / prior0;
        q[[i, 1]] = (odds / (1.0 + odds)) as f32;
        q[[i, 0]] = 1.0 - q[[i, 1]];
    }
    (x, q)
}

/// Rejections at 5% among 20 batches of 150 rows with class-0 share `batch_prior` and `offset`,
/// against a target sample of 600 rows with class-0 share 0.5, the ratio from the true priors.
fn rejections(batch_prior: f64, offset: f32) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let (x, probs) = draw(600, 0.5, 0.0, 0.5, &mut rng);
    let sample = TargetSample::new(x, probs);
    let ratio = [batch_prior / 0.5, (1.0 - batch_prior) / 0.5];
    (0..20)
        .filter(|&b| {
            let (batch, _) = draw(150, batch_prior, offset, 0.5, &mut rng);
            let t = target_shift_test(&sample, sample.probs().view(), batch.view(), &ratio, 200, b)
                .unwrap()
                .expect("enough rows");
            assert!(t.p_value > 0.0 && t.p_value <= 1.0 && t.mmd2.is_finite());
            t.p_value < 0.05
        })
        .count()
}

#[test]
fn a_label_shift_of_the_target_is_not_rejected_more_than_its_level_and_a_feature_shift_is() {
    // A seeded draw: at 5% the expected count is 1 of 20; 3 leaves room for the weights' noise.
    assert!(rejections(0.5, 0.0) <= 3, "the target's own proportions");
    assert!(rejections(0.85, 0.0) <= 3, "a label shift, re-weighted");
    assert!(rejections(0.5, 0.8) >= 18, "features moved by 0.8 in every axis");
}

#[test]
fn too_few_rows_under_the_weights_make_no_test() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (x, probs) = draw(12, 0.5, 0.0, 0.5, &mut rng);
    let sample = TargetSample::new(x, probs);
    let (batch, _) = draw(50, 0.5, 0.0, 0.5, &mut rng);
    let t = target_shift_test(&sample, sample.probs().view(), batch.view(), &[1.0, 1.0], 50, 0)
        .unwrap();
    assert!(t.is_none(), "6 pool rows cannot stand for a batch: {t:?}");
    let (x, probs) = draw(200, 0.5, 0.0, 0.5, &mut rng);
    let sample = TargetSample::new(x, probs);
    let t = target_shift_test(&sample, sample.probs().view(), batch.view(), &[0.0, 0.0], 50, 0)
        .unwrap();
    assert!(t.is_none(), "a ratio that weighs no class leaves nothing to compare");
}

#[test]
fn the_target_sample_travels_with_the_file_and_earlier_versions_load_without_it() {
    let data = dataset();
    let model = small(MethodKind::Mul).fit(&data).unwrap();
    assert_eq!(
        model.info.n_target_sample,
        data.target_x().nrows(),
        "a 60-row target is kept whole"
    );
    let again =
        FittedModel::from_bytes(&model.to_bytes().unwrap(), Path::new("v3.glshift")).unwrap();
    assert_eq!(again, model, "version 3 round trip");
    let own = model.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap();
    let t = own.prior.target_shift.as_ref().expect("a version-3 model tests the batch");
    assert!(t.p_value > 0.05, "the fit's own target: {t:?}");
    let moved = data.target_x().mapv(|v| v + 3.0);
    let far = model.predict_proba_adapted(moved.view(), &BatchParams::default()).unwrap();
    let t = far.prior.target_shift.as_ref().expect("tested");
    assert!(t.p_value < 0.05 && far.prior.warnings.iter().any(|w| w.contains("refit")), "{t:?}");
    let v2 =
        FittedModel::from_bytes(&model.to_bytes_as(2).unwrap(), Path::new("v2.glshift")).unwrap();
    assert!(v2.target.is_none() && v2.info.n_target_sample == 0 && v2.can_adapt_batches());
    let b = v2.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap();
    assert!(b.prior.target_shift.is_none());
    assert_eq!(b.probs, own.probs, "the test changes no posterior");
}

#[test]
fn a_damaged_target_sample_is_an_error_naming_the_tensor() {
    let model = small(MethodKind::Mul).fit(&dataset()).unwrap();
    let mut entries = model.tensor_entries();
    entries.remove("target.probs");
    assert!(
        load_err(&model.to_bytes_from(FORMAT_VERSION, entries).unwrap()).contains("target.probs")
    );
    let mut entries = model.tensor_entries();
    let e = entries.get_mut("target.features").unwrap();
    e.1[0] -= 1;
    let cut = e.1.iter().product::<usize>() * 4;
    e.2.truncate(cut);
    assert!(load_err(&model.to_bytes_from(FORMAT_VERSION, entries).unwrap())
        .contains("target.features"));
    let mut nan = model.clone();
    let kept = nan.target.take().unwrap();
    let mut x = kept.x().clone();
    x[[0, 0]] = f32::NAN;
    nan.target = Some(TargetSample::new(x, kept.probs().clone()));
    assert!(load_err(&nan.to_bytes().unwrap()).contains("target sample"));
}

#[test]
fn the_kept_reference_gives_the_numbers_a_fresh_sample_gives() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (x, probs) = draw(300, 0.5, 0.0, 0.5, &mut rng);
    let kept = TargetSample::new(x.clone(), probs.clone());
    let batches: Vec<_> = (0..3).map(|_| draw(80, 0.7, 0.2, 0.5, &mut rng).0).collect();
    for (b, batch) in batches.iter().enumerate() {
        // `kept` computes its reference on the first batch and reuses it; each fresh one starts anew.
        let fresh = TargetSample::new(x.clone(), probs.clone());
        let ratio = [1.4, 0.6];
        let a =
            target_shift_test(&kept, probs.view(), batch.view(), &ratio, 100, b as u64).unwrap();
        let f =
            target_shift_test(&fresh, probs.view(), batch.view(), &ratio, 100, b as u64).unwrap();
        assert_eq!(a, f, "batch {b}");
        assert!(a.is_some());
    }
}
