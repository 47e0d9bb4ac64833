//! `glshift predict`: a model saved by `glshift fit` and loaded in a fresh process gives fit's
//! predictions exactly; other inputs (a features file, another dimension, damaged model files)
//! give outputs; bad inputs are in bad_inputs.rs.

mod common;

use std::path::Path;

use common::*;
use ndarray_npy::write_npy;

#[test]
fn predict_on_the_fit_target_reproduces_fit_predictions_on_office_caltech10() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/office_caltech10_effnetlite2");
    if !data.is_dir() {
        eprintln!("SKIPPED: {} not found (test skipped)", data.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The default network and preprocessing, fewer iterations (CI time); the path under test —
    // BatchNorm statistics, z-score statistics, the file — is the default one.
    let cfg = dir.path().join("short.toml");
    std::fs::write(&cfg, "pretrain_iters = 60\nadapt_iters = 15\n").unwrap();
    let fit = fit_fixture(dir.path(), "amazon", "webcam", &data, &cfg);
    let out = dir.path().join("pred");
    let o = predict(&[
        "--model",
        fit.join("model.glshift").to_str().unwrap(),
        "--data",
        data.to_str().unwrap(),
        "--domain",
        "webcam",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let fitted = std::fs::read_to_string(fit.join("predictions.csv")).unwrap();
    let predicted = std::fs::read_to_string(out.join("predictions.csv")).unwrap();
    assert_eq!(fitted.lines().count(), 296);
    assert!(fitted == predicted, "predict's predictions.csv differs from fit's");
    let fit_report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fit.join("report.json")).unwrap()).unwrap();
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["accuracy"], fit_report["target_accuracy"]);
    assert_eq!(report["model_target_prior"], fit_report["estimated_target_prior"]);
}

#[test]
fn features_file_labels_and_an_unlabelled_domain() {
    let dir = tempfile::tempdir().unwrap();
    let fit = fitted_fixture(dir.path());
    let model = fit.join("model.glshift");
    let (xt, yt) = blobs(45, 0.3);
    let (x, y) = (dir.path().join("x.npy"), dir.path().join("y.npy"));
    write_npy(&x, &xt).unwrap();
    write_npy(&y, &yt).unwrap();
    let out = dir.path().join("p1");
    let o = predict(&[
        "--model",
        model.to_str().unwrap(),
        "--features",
        x.to_str().unwrap(),
        "--labels",
        y.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "--quiet printed: {}", stderr(&o));
    assert_eq!(
        std::fs::read(out.join("predictions.csv")).unwrap(),
        std::fs::read(fit.join("predictions.csv")).unwrap()
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert!(report["accuracy"].as_f64().is_some());
    // The target domain without its labels: predictions, no score.
    std::fs::remove_file(dir.path().join("tgt_labels.npy")).unwrap();
    let out2 = dir.path().join("p2");
    let o = predict(&[
        "--model",
        model.to_str().unwrap(),
        "--data",
        dir.path().to_str().unwrap(),
        "--domain",
        "tgt",
        "--out",
        out2.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out2.join("report.json")).unwrap()).unwrap();
    assert!(report.get("accuracy").is_none());
}

#[test]
fn adapt_prior_estimates_the_batch_reweights_and_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let fit = fitted_fixture(dir.path());
    let model = fit.join("model.glshift");
    // A batch of the target's rows, mostly of the first class.
    let (xt, yt) = blobs(45, 0.3);
    let keep: Vec<usize> = (0..yt.len()).filter(|&i| yt[i] == 0 || i % 5 == 0).collect();
    let (xb, yb) = (xt.select(ndarray::Axis(0), &keep), yt.select(ndarray::Axis(0), &keep));
    let (x, y) = (dir.path().join("xb.npy"), dir.path().join("yb.npy"));
    write_npy(&x, &xb).unwrap();
    write_npy(&y, &yb).unwrap();
    let out = dir.path().join("adapted");
    let args = [
        "--model",
        model.to_str().unwrap(),
        "--features",
        x.to_str().unwrap(),
        "--labels",
        y.to_str().unwrap(),
        "--adapt-prior",
        "--bootstrap",
        "50",
    ];
    let o = predict(&[&args[..], &["--out", out.to_str().unwrap()]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("batch prior"), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let c = report["classes"].as_array().unwrap().len();
    for key in ["batch_prior", "batch_prior_ci_low", "batch_prior_ci_high", "reference_prior"] {
        assert_eq!(report[key].as_array().map(Vec::len), Some(c), "{key}");
    }
    for key in [
        "batch_prior_move_l1",
        "batch_prior_move_p_value",
        "label_shift_p_value",
        "unadapted_accuracy",
        "batch_prior_l1_error",
        "accuracy",
    ] {
        assert!(report[key].as_f64().is_some(), "{key} missing: {report}");
    }
    assert_eq!(report["resamples"], 50);
    // The fixture's 45-row target is too small for the target test at these proportions (the
    // core's tests make it): the report says so rather than giving a p-value.
    assert!(report.get("target_shift").is_none(), "{report}");
    assert!(stderr(&o).contains("the target test was not made"), "{}", stderr(&o));
    let lines = std::fs::read_to_string(out.join("predictions.csv")).unwrap();
    assert_eq!(lines.lines().count(), keep.len() + 1);
    // The same seed gives the same files; without the flag, predict is as before.
    let again = dir.path().join("again");
    assert!(predict(&[&args[..], &["--out", again.to_str().unwrap()]].concat()).status.success());
    assert_eq!(
        std::fs::read(out.join("predictions.csv")).unwrap(),
        std::fs::read(again.join("predictions.csv")).unwrap()
    );
    let plain = dir.path().join("plain");
    let o = predict(&[
        "--model",
        model.to_str().unwrap(),
        "--features",
        x.to_str().unwrap(),
        "--out",
        plain.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(plain.join("report.json")).unwrap()).unwrap();
    assert!(report.get("batch_prior").is_none());
    // --bootstrap without --adapt-prior is refused by the parser.
    let o = predict(&[
        "--model",
        model.to_str().unwrap(),
        "--features",
        x.to_str().unwrap(),
        "--bootstrap",
        "10",
        "--out",
        dir.path().join("no").to_str().unwrap(),
    ]);
    assert!(!o.status.success());
}

// Damaged model files and bad rows to predict are in bad_inputs.rs ("model files").
