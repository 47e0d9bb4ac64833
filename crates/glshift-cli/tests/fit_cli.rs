//! `glshift fit` end to end on small fixture folders: outputs, and clear errors on bad input.

mod common;

use common::*;
use ndarray::{Array1, Array2};

fn fit_args<'a>(data: &'a str, out: &'a str, cfg: &'a str) -> Vec<&'a str> {
    vec!["fit", "--data", data, "--source", "src", "--target", "tgt", "--config", cfg, "--out", out, "--quiet"]
}

#[test]
fn fit_writes_report_and_predictions() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("run");
    let o = run(&fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap()));
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    for key in [
        "method", "seed", "source", "target", "n_source", "n_target", "classes", "config",
        "estimated_target_prior", "importance_weights", "history", "elapsed_seconds",
        "target_accuracy", "per_class_accuracy", "true_target_prior", "prior_l1_error",
    ] {
        assert!(report.get(key).is_some(), "report.json lacks {key}");
    }
    assert_eq!(report["method"], "mul");
    assert_eq!(report["n_target"], 45);
    let acc = report["target_accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acc));
    let prior: Vec<f64> = serde_json::from_value(report["estimated_target_prior"].clone()).unwrap();
    assert!((prior.iter().sum::<f64>() - 1.0).abs() < 1e-6);
    let csv = std::fs::read_to_string(out.join("predictions.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "row,predicted,predicted_name,confidence,p_a,p_b,p_c");
    assert_eq!(lines.len(), 46);
}

#[test]
fn unlabelled_target_gives_a_report_without_scores() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    std::fs::remove_file(dir.path().join("tgt_labels.npy")).unwrap();
    let cfg = fast_config(dir.path());
    let out = dir.path().join("run");
    let o = run(&fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap()));
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert!(report.get("target_accuracy").is_none());
    assert!(report.get("estimated_target_prior").is_some());
}

/// Runs `fit` on a fixture broken by `breakage`, expects failure, a message containing every
/// string of `expect`, no panic and no output files.
fn expect_failure(breakage: impl FnOnce(&std::path::Path), extra: &[&str], expect: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    breakage(dir.path());
    let out = dir.path().join("run");
    let mut args = fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap());
    // A later `--flag value` replaces the fixture's own value of that flag.
    for pair in extra.chunks(2) {
        match args.iter().position(|a| *a == pair[0]) {
            Some(i) if pair.len() == 2 => args[i + 1] = pair[1],
            _ => args.extend_from_slice(pair),
        }
    }
    let o = run(&args);
    let err = stderr(&o);
    assert!(!o.status.success(), "expected failure, got success");
    assert!(!err.contains("panicked"), "panic: {err}");
    for e in expect {
        assert!(err.to_lowercase().contains(&e.to_lowercase()), "message lacks {e:?}: {err}");
    }
    assert!(out_is_empty(&out), "partial output left in {}", out.display());
}

#[test]
fn missing_features_file_is_named() {
    expect_failure(|d| std::fs::remove_file(d.join("tgt_features.npy")).unwrap(), &[], &["tgt"]);
}

#[test]
fn unknown_domain_lists_existing_domains() {
    expect_failure(|_| {}, &["--target", "nope"], &["nope", "src"]);
}

#[test]
fn different_feature_dimensions_are_rejected() {
    expect_failure(
        |d| {
            std::fs::remove_file(d.join("tgt_labels.npy")).unwrap();
            write_domain(d, "tgt", &Array2::<f32>::ones((10, 5)), None)
        },
        &[],
        &["dimension"],
    );
}

#[test]
fn nan_features_are_reported_with_file() {
    expect_failure(
        |d| {
            let (mut x, y) = blobs(45, 0.0);
            x[[3, 2]] = f32::NAN;
            write_domain(d, "tgt", &x, Some(&y));
        },
        &[],
        &["tgt_features.npy"],
    );
}

#[test]
fn infinite_features_are_reported_with_file() {
    expect_failure(
        |d| {
            let (mut x, y) = blobs(60, 0.0);
            x[[0, 0]] = f32::INFINITY;
            write_domain(d, "src", &x, Some(&y));
        },
        &[],
        &["src_features.npy"],
    );
}

#[test]
fn labels_out_of_range_are_rejected() {
    expect_failure(
        |d| {
            let (x, mut y) = blobs(60, 0.0);
            y[5] = 7;
            write_domain(d, "src", &x, Some(&y));
        },
        &[],
        &["src_labels.npy", "7"],
    );
}

#[test]
fn empty_domain_is_rejected() {
    expect_failure(
        |d| write_domain(d, "tgt", &Array2::<f32>::zeros((0, 4)), Some(&Array1::<i64>::zeros(0))),
        &[],
        &["tgt"],
    );
}

#[test]
fn single_class_source_is_rejected() {
    expect_failure(
        |d| {
            let (x, _) = blobs(60, 0.0);
            write_domain(d, "src", &x, Some(&Array1::<i64>::zeros(60)));
        },
        &[],
        &["class"],
    );
}

#[test]
fn label_count_mismatch_is_rejected() {
    expect_failure(
        |d| {
            let (x, _) = blobs(60, 0.0);
            write_domain(d, "src", &x, Some(&Array1::<i64>::zeros(59)));
        },
        &[],
        &["src_labels.npy"],
    );
}

#[test]
fn invalid_parameters_are_rejected_before_work() {
    expect_failure(|_| {}, &["--method", "dann-x"], &["method", "dann-x"]);
    expect_failure(
        |d| std::fs::write(d.join("fast.toml"), "[mul]\ntau = 1.5\n").unwrap(),
        &[],
        &["tau"],
    );
}

#[test]
fn truncated_npy_is_rejected() {
    expect_failure(
        |d| {
            let p = d.join("tgt_features.npy");
            let bytes = std::fs::read(&p).unwrap();
            std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
        },
        &[],
        &["tgt_features.npy"],
    );
}

#[test]
fn same_seed_gives_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let mut reports = Vec::new();
    for name in ["a", "b"] {
        let out = dir.path().join(name);
        let o = run(&fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap()));
        assert!(o.status.success(), "{}", stderr(&o));
        let mut r: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        r.as_object_mut().unwrap().remove("elapsed_seconds");
        reports.push((r, std::fs::read(out.join("predictions.csv")).unwrap()));
    }
    assert_eq!(reports[0], reports[1]);
}
