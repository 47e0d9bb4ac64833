//! The estimator API and the model file: a model predicts exactly what its fit predicted, a
//! saved model loads to the same model, and damaged or mismatched files are errors naming the
//! file, never panics.

mod batch;
mod target_match;

use std::path::Path;

use ndarray::{Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::data::Preprocess;
use crate::methods::MethodKind;
use crate::Error;

/// Three Gaussian classes in 6 dimensions; the target is shifted by 0.3 and has another prior.
pub(super) fn task(seed: u64) -> (Array2<f32>, Vec<usize>, Array2<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut draw = |n: usize, prior: [f64; 3], shift: f32| {
        let mut y = Vec::with_capacity(n);
        let x = Array2::from_shape_fn((n, 6), |(i, j)| {
            if j == 0 {
                let u: f64 = rng.random();
                y.push(if u < prior[0] {
                    0
                } else if u < prior[0] + prior[1] {
                    1
                } else {
                    2
                });
            }
            let k = y[i];
            let centre = if j % 3 == k { 3.0 } else { 0.0 };
            centre + shift + rng.random::<f32>() * 2.0 - 1.0 + 10.0 * j as f32
        });
        (x, y)
    };
    let (xs, ys) = draw(90, [0.34, 0.33, 0.33], 0.0);
    let (xt, _) = draw(60, [0.6, 0.3, 0.1], 0.3);
    (xs, ys, xt)
}

pub(super) fn small(method: MethodKind) -> CheckedParams {
    FitParams::new(method).seed(3).pretrain_iters(40).adapt_iters(12).check().unwrap()
}

pub(super) fn dataset() -> Dataset {
    let (xs, ys, xt) = task(1);
    Dataset::new(xs, ys, xt)
        .unwrap()
        .with_class_names(vec!["a".into(), "b,c".into(), "d".into()])
        .unwrap()
}

#[test]
fn a_model_predicts_exactly_what_its_fit_predicted() {
    let data = dataset();
    for method in [MethodKind::Mul, MethodKind::Source] {
        let out = small(method).fit_detailed(&data, FitOptions::default()).unwrap();
        let p = out.model.predict_proba(data.target_x()).unwrap();
        assert_eq!(p, out.fitted.target_probs, "{method}: probabilities differ from the fit's");
        let z = out.model.transform(data.target_x()).unwrap();
        assert_eq!(z, out.fitted.target_z, "{method}: Z differs from the fit's");
        // Rows one at a time: the frozen statistics make a row's output independent of its batch.
        let one = out.model.predict_proba(data.target_x().slice(ndarray::s![5..6, ..])).unwrap();
        for (a, b) in one.row(0).iter().zip(p.row(5)) {
            assert!((a - b).abs() <= 1e-6, "{method}: a single row gives {a}, the batch {b}");
        }
        assert_eq!(out.model.target_prior().is_some(), method == MethodKind::Mul);
    }
}

#[test]
fn save_then_load_gives_the_same_model_and_predictions() {
    let data = dataset();
    for how in [Preprocess::ZScore, Preprocess::L2] {
        let params = FitParams::mul()
            .seed(2)
            .pretrain_iters(30)
            .adapt_iters(8)
            .preprocess(how)
            .check()
            .unwrap();
        let model = params.fit(&data).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.glshift");
        model.save(&path).unwrap();
        let loaded = FittedModel::load(&path).unwrap();
        assert_eq!(loaded, model, "{how}: the loaded model differs");
        assert_eq!(
            loaded.predict_proba(data.target_x()).unwrap(),
            model.predict_proba(data.target_x()).unwrap()
        );
        assert_eq!(loaded.history(), model.history());
        assert_eq!(loaded.class_names(), ["a", "b,c", "d"]);
        // Same model, same bytes.
        assert!(loaded.to_bytes().unwrap() == model.to_bytes().unwrap(), "{how}: the bytes differ");
    }
}

#[test]
fn predictions_sit_on_the_simplex_and_match_argmax() {
    let data = dataset();
    let model = small(MethodKind::Mul).fit(&data).unwrap();
    let p = model.predict_proba(data.target_x()).unwrap();
    for row in p.rows() {
        assert!(
            ((row.sum() as f64) - 1.0).abs() < 1e-5
                && row.iter().all(|&v| (0.0..=1.0).contains(&v))
        );
    }
    let labels = model.predict(data.target_x()).unwrap();
    for (row, &k) in p.rows().into_iter().zip(&labels) {
        assert!(row.iter().all(|&v| v <= row[k]));
    }
    let prior = model.target_prior().unwrap();
    assert!(
        (prior.iter().sum::<f64>() - 1.0).abs() < 1e-9 && prior.iter().all(|&v| v >= 0.0),
        "{prior:?}"
    );
    // The weights are training's; with the tracker as the reported estimator, w ⊙ pˢ = p̂ᵗ.
    let mut cfg = small(MethodKind::Mul).config().clone();
    cfg.label_shift.prior_estimator = crate::prior_policy::PriorEstimator::Tracker;
    let tracked = FitParams::from_config(cfg).check().unwrap().fit(&data).unwrap();
    let w = tracked.importance_weights().unwrap();
    assert_eq!(
        w,
        model.importance_weights().unwrap(),
        "the reported estimator does not change training"
    );
    let prior = tracked.target_prior().unwrap();
    for k in 0..3 {
        assert!(
            (w[k] * tracked.source_prior()[k] - prior[k]).abs() < 1e-9,
            "w ⊙ pˢ must be the tracker's p̂ᵗ"
        );
    }
}

#[test]
fn bad_rows_to_predict_are_errors() {
    let data = dataset();
    let model = small(MethodKind::Source).fit(&data).unwrap();
    let err = model.predict(Array2::<f32>::zeros((4, 5)).view()).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }) && err.to_string().contains('6'), "{err}");
    let mut x = data.target_x().to_owned();
    x[[2, 3]] = f32::NAN;
    assert!(model.predict(x.view()).unwrap_err().to_string().contains("row 2, column 3"));
    assert!(model.predict(Array2::<f32>::zeros((0, 6)).view()).is_err());
}

#[test]
fn datasets_refuse_what_a_fit_cannot_use() {
    let (xs, ys, xt) = task(4);
    let mut nan = xs.clone();
    nan[[0, 0]] = f32::INFINITY;
    assert!(Dataset::new(nan, ys.clone(), xt.clone())
        .unwrap_err()
        .to_string()
        .contains("source features"));
    assert!(Dataset::new(xs.clone(), vec![1; ys.len()], xt.clone())
        .unwrap_err()
        .to_string()
        .contains("at least 2"));
    assert!(Dataset::new(xs.clone(), ys[1..].to_vec(), xt.clone()).is_err());
    assert!(Dataset::new(xs.clone(), ys.clone(), xt.select(Axis(1), &[0, 1])).is_err());
    assert!(Dataset::new(xs.clone(), ys.clone(), Array2::zeros((0, 6))).is_err());
    let d = Dataset::new(xs, ys, xt).unwrap();
    assert_eq!(d.class_names(), ["0", "1", "2"]);
    assert!(d.with_class_names(vec!["x".into()]).is_err());
    assert!(FitParams::mul().adapt_iters(0).check().is_err());
}

// ---- damaged and mismatched model files -----------------------------------------------------

pub(super) fn model_bytes() -> Vec<u8> {
    small(MethodKind::Mul).fit(&dataset()).unwrap().to_bytes().unwrap()
}

pub(super) fn load_err(bytes: &[u8]) -> String {
    let path = Path::new("/data/broken.glshift");
    let err = FittedModel::from_bytes(bytes, path).expect_err("a damaged model must not load");
    let msg = err.to_string();
    assert!(msg.contains("broken.glshift"), "the error does not name the file: {msg}");
    msg
}

/// Replaces the safetensors header (a JSON object) by `edit(header)`, keeping the tensor bytes.
fn with_header(bytes: &[u8], edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + n]).unwrap();
    edit(&mut header);
    let text = serde_json::to_vec(&header).unwrap();
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend(text);
    out.extend(&bytes[8 + n..]);
    out
}

#[test]
fn truncated_files_and_foreign_bytes_are_errors_naming_the_file() {
    let bytes = model_bytes();
    for cut in [0, 4, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        load_err(&bytes[..cut]);
    }
    load_err(b"PK\x03\x04 not a model at all");
    let mut longer = bytes.clone();
    longer.push(0);
    load_err(&longer);
}

#[test]
fn a_flipped_byte_anywhere_in_the_tensors_is_detected() {
    let bytes = model_bytes();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    for _ in 0..20 {
        let mut damaged = bytes.clone();
        let at = rng.random_range(8 + n..bytes.len());
        damaged[at] ^= 0x10;
        assert!(load_err(&damaged).contains("checksum"));
    }
}

#[test]
fn wrong_version_foreign_format_and_mismatched_headers_are_errors() {
    let bytes = model_bytes();
    let set = |key: &'static str, value: serde_json::Value| {
        with_glshift_header(&bytes, move |h| h[key] = value.clone())
    };
    assert!(load_err(&set("format_version", 4.into())).contains("version 4"));
    assert!(load_err(&set("format_version", 0.into())).contains("version 0"));
    assert!(load_err(&set("format", "something-else".into())).contains("glshift-model"));
    assert!(load_err(&set("preprocess", "cubic".into())).contains("header"));
    let no_meta = with_header(&bytes, |h| {
        h.as_object_mut().unwrap().remove("__metadata__");
    });
    assert!(load_err(&no_meta).contains("not a glshift model"));
    // A header whose architecture disagrees with the tensors (checksum recomputed so that only
    // the mismatch is wrong): another width, another input dimension, too few class names.
    for (from, to) in [
        ("\"hidden\":[512,256]", "\"hidden\":[64,32]"),
        ("\"input_dim\":6", "\"input_dim\":7000000"),
    ] {
        let msg = load_err(&edit_info(&bytes, from, to));
        assert!(msg.contains("tensor") || msg.contains("dimension"), "{msg}");
    }
    let fewer = edit_info(
        &bytes,
        "\"class_names\":[\"a\",\"b,c\",\"d\"]",
        "\"class_names\":[\"a\",\"b,c\"]",
    );
    assert!(load_err(&fewer).contains("tensor"));
    // An edited header without a recomputed checksum is caught by the checksum.
    let unchecked = with_glshift_header(&bytes, |h| {
        let info = h["info"].as_str().unwrap().replace("\"seed\":3", "\"seed\":4");
        h["info"] = info.into();
    });
    assert!(load_err(&unchecked).contains("checksum"));
}

/// Edits glshift's header (the JSON object under `__metadata__.glshift`).
fn with_glshift_header(bytes: &[u8], edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    with_header(bytes, |h| {
        let mut inner: serde_json::Value =
            serde_json::from_str(h["__metadata__"]["glshift"].as_str().unwrap()).unwrap();
        edit(&mut inner);
        h["__metadata__"]["glshift"] = serde_json::Value::String(inner.to_string());
    })
}

/// Replaces `from` by `to` in the `info` text and recomputes the checksum.
fn edit_info(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    let model = FittedModel::from_bytes(bytes, Path::new("ok")).unwrap();
    let entries = model.tensor_entries();
    with_glshift_header(bytes, |h| {
        let info = h["info"].as_str().unwrap().to_string();
        assert!(info.contains(from), "test setup: {from} not in the header");
        let info = info.replace(from, to);
        h["checksum"] =
            file::checksum(&info, entries.iter().map(|(k, (_, _, b))| (k.as_str(), b.as_slice())))
                .into();
        h["info"] = info.into();
    })
}
