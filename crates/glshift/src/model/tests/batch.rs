//! A kept model on a new batch: the hold-out travels with the model file (version 2),
//! version-1 files still load but cannot adapt, the batch estimate equals the fit's own on the
//! fit's target, moves with the batch's proportions, and bad batches are errors.

use std::path::Path;

use ndarray::{s, Array2, Axis};

use super::super::tests::{dataset, load_err, small, task};
use super::super::*;
use crate::methods::MethodKind;

fn mul_model() -> (FittedModel, Dataset) {
    let data = dataset();
    (small(MethodKind::Mul).fit(&data).unwrap(), data)
}

#[test]
fn the_hold_out_travels_with_the_file_and_version_1_files_load_without_it() {
    let (model, data) = mul_model();
    assert!(model.can_adapt_batches());
    let again =
        FittedModel::from_bytes(&model.to_bytes().unwrap(), Path::new("v2.glshift")).unwrap();
    assert_eq!(again, model, "round trip");
    let v1 =
        FittedModel::from_bytes(&model.to_bytes_as(1).unwrap(), Path::new("v1.glshift")).unwrap();
    assert!(!v1.can_adapt_batches());
    assert_eq!(
        v1.predict_proba(data.target_x()).unwrap(),
        model.predict_proba(data.target_x()).unwrap()
    );
    let err =
        v1.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap_err().to_string();
    assert!(err.contains("refit"), "{err}");
}

#[test]
fn on_the_fits_own_target_the_batch_prior_is_the_models_and_nothing_moved() {
    let (model, data) = mul_model();
    let a = model.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap();
    let b = &a.prior;
    assert_eq!(
        b.batch_prior.as_slice(),
        model.target_prior().unwrap(),
        "the same estimator on the same outputs"
    );
    assert_eq!(b.batch_prior_move_l1, 0.0);
    assert_eq!(b.batch_prior_move_p_value, 1.0);
    for k in 0..3 {
        assert!(
            b.batch_prior_ci_low[k] <= b.batch_prior[k]
                && b.batch_prior[k] <= b.batch_prior_ci_high[k]
        );
    }
    assert!(b.label_shift_p_value > 0.0 && b.label_shift_p_value <= 1.0);
    for row in a.probs.rows() {
        assert!((row.sum() - 1.0).abs() < 1e-5 && row.iter().all(|&v| v >= 0.0));
    }
    // Nothing moved, so nothing is re-weighted: the same predicted classes as without it.
    assert_eq!(
        model.predict(data.target_x()).unwrap(),
        a.probs.rows().into_iter().map(|r| crate::nn::argmax_row(r).0).collect::<Vec<_>>()
    );
    let again = model.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap();
    assert_eq!(again.prior, a.prior, "same seed, same numbers");
    assert_eq!(again.probs, a.probs);
}

#[test]
fn a_batch_of_mostly_one_class_moves_the_prior_there() {
    let (model, _) = mul_model();
    // Source-like rows of another draw: 45 of class 0 and 5 of class 2 (prior 0.9, 0, 0.1).
    let (xs, ys, _) = task(7);
    let rows: Vec<usize> = (0..ys.len())
        .filter(|&i| ys[i] == 0)
        .take(45)
        .chain((0..ys.len()).filter(|&i| ys[i] == 2).take(5))
        .collect();
    let batch = xs.select(Axis(0), &rows);
    let a = model
        .predict_proba_adapted(batch.view(), &BatchParams { seed: 3, ..BatchParams::default() })
        .unwrap();
    let b = &a.prior;
    assert!(b.batch_prior[0] > 0.7, "{:?}", b.batch_prior);
    assert!(b.batch_prior_move_l1 > 0.3 && b.batch_prior_move_p_value < 0.05, "{b:?}");
    // The re-weighting moves mass towards class 0 (and away from the absent class 1).
    let plain = model.predict_proba(batch.view()).unwrap();
    let mean = |p: &Array2<f32>, k: usize| p.column(k).mean().unwrap();
    assert!(mean(&a.probs, 0) > mean(&plain, 0) && mean(&a.probs, 1) < mean(&plain, 1));
}

#[test]
fn bad_batches_and_settings_are_errors() {
    let (model, data) = mul_model();
    let p = BatchParams::default();
    assert!(
        model.predict_proba_adapted(Array2::<f32>::zeros((4, 5)).view(), &p).is_err(),
        "wrong width"
    );
    assert!(
        model.predict_proba_adapted(data.target_x().slice(s![0..0, ..]), &p).is_err(),
        "no rows"
    );
    let mut nan = data.target_x().to_owned();
    nan[[2, 1]] = f32::NAN;
    assert!(model.predict_proba_adapted(nan.view(), &p).is_err(), "NaN");
    assert!(
        model.adapt_batch(Array2::<f32>::zeros((3, 2)).view(), None, &p).is_err(),
        "probabilities of another class count"
    );
    for bad in [
        BatchParams { resamples: 1, ..p },
        BatchParams { level: 1.0, ..p },
        BatchParams { level: 0.0, ..p },
    ] {
        assert!(model.predict_proba_adapted(data.target_x(), &bad).is_err(), "{bad:?}");
    }
    // One row works (its interval is wide, but it is a batch).
    assert!(model.predict_proba_adapted(data.target_x().slice(s![0..1, ..]), &p).is_ok());
}

#[test]
fn a_hold_out_label_outside_the_classes_or_a_missing_tensor_is_an_error_naming_the_file() {
    let (mut model, _) = mul_model();
    let mut entries = model.tensor_entries();
    entries.remove("holdout.labels");
    assert!(
        load_err(&model.to_bytes_from(FORMAT_VERSION, entries).unwrap()).contains("holdout.labels")
    );
    let mut entries = model.tensor_entries();
    entries.get_mut("holdout.probs").unwrap().1 = vec![3, 3];
    entries.get_mut("holdout.probs").unwrap().2.truncate(36);
    assert!(
        load_err(&model.to_bytes_from(FORMAT_VERSION, entries).unwrap()).contains("holdout.probs")
    );
    model.holdout.as_mut().unwrap().labels[0] = 7;
    assert!(load_err(&model.to_bytes().unwrap()).contains("holdout.labels"));
}

#[test]
fn a_model_whose_guard_distrusted_its_estimate_does_not_reweight() {
    let (mut model, data) = mul_model();
    assert!(model.info.prior_guard_trusted.is_some(), "MUL records its guard's verdict");
    model.info.prior_guard_trusted = Some(false);
    let a = model.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap();
    assert!(!a.prior.reweighted && a.prior.warnings.iter().any(|w| w.contains("prior guard")));
    assert_eq!(a.probs, model.predict_proba(data.target_x()).unwrap(), "the plain posteriors");
    // No kept adaptation on record: the batch prior is reported as pˢ, flagged, and its interval
    // holds pˢ and the uniform proportions.
    let b = &a.prior;
    assert_eq!(b.batch_prior, model.source_prior());
    assert!(b.untrusted.as_deref().is_some_and(|w| w.contains("the source proportions")));
    let c = b.batch_prior.len() as f64;
    for k in 0..b.batch_prior.len() {
        let (lo, hi) = (b.batch_prior_ci_low[k], b.batch_prior_ci_high[k]);
        assert!(lo <= b.batch_prior[k] && b.batch_prior[k] <= hi && lo <= 1.0 / c && 1.0 / c <= hi);
    }
    // A kept adaptation (this model is confident on most of its target): the adapted network's
    // reading, a distribution other than pˢ.
    model.info.adaptation_kept = Some(true);
    let kept = model.predict_proba_adapted(data.target_x(), &BatchParams::default()).unwrap();
    assert!(kept.prior.untrusted.as_deref().is_some_and(|w| w.contains("confident target rows")));
    assert!((kept.prior.batch_prior.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert_ne!(kept.prior.batch_prior, model.source_prior());
    let again =
        FittedModel::from_bytes(&model.to_bytes().unwrap(), Path::new("m.glshift")).unwrap();
    assert_eq!(again.info.prior_guard_trusted, Some(false), "the verdict travels with the file");
    assert_eq!(again.info.adaptation_kept, Some(true));
}
