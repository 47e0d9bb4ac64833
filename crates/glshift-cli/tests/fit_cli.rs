//! `glshift fit` end to end on small fixture folders: the outputs it writes.

mod common;

use common::*;

fn fit_args<'a>(data: &'a str, out: &'a str, cfg: &'a str) -> Vec<&'a str> {
    vec![
        "fit", "--data", data, "--source", "src", "--target", "tgt", "--config", cfg, "--out", out,
        "--quiet",
    ]
}

#[test]
fn fit_writes_report_and_predictions() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("run");
    let o =
        run(&fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap()));
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    for key in [
        "method",
        "seed",
        "source",
        "target",
        "n_source",
        "n_target",
        "classes",
        "config",
        "estimated_target_prior",
        "importance_weights",
        "history",
        "elapsed_seconds",
        "target_accuracy",
        "per_class_accuracy",
        "true_target_prior",
        "prior_l1_error",
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
    let o =
        run(&fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap()));
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert!(report.get("target_accuracy").is_none());
    assert!(report.get("estimated_target_prior").is_some());
}

// Bad inputs are exercised in bad_inputs.rs.

#[test]
fn same_seed_gives_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let mut reports = Vec::new();
    for name in ["a", "b"] {
        let out = dir.path().join(name);
        let o = run(&fit_args(
            dir.path().to_str().unwrap(),
            out.to_str().unwrap(),
            cfg.to_str().unwrap(),
        ));
        assert!(o.status.success(), "{}", stderr(&o));
        let mut r: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
        r.as_object_mut().unwrap().remove("elapsed_seconds");
        reports.push((r, std::fs::read(out.join("predictions.csv")).unwrap()));
    }
    assert_eq!(reports[0], reports[1]);
}

#[test]
fn fit_saves_representations_and_embedding_metrics() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("run");
    let o =
        run(&fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap()));
    assert!(o.status.success(), "{}", stderr(&o));
    let zs: ndarray::Array2<f32> = ndarray_npy::read_npy(out.join("z_source.npy")).unwrap();
    let zt: ndarray::Array2<f32> = ndarray_npy::read_npy(out.join("z_target.npy")).unwrap();
    let yt: ndarray::Array1<i64> = ndarray_npy::read_npy(out.join("labels_target.npy")).unwrap();
    let ys: ndarray::Array1<i64> = ndarray_npy::read_npy(out.join("labels_source.npy")).unwrap();
    assert_eq!(zs.dim(), (60, 16));
    assert_eq!(zt.dim(), (45, 16));
    assert_eq!((ys.len(), yt.len()), (60, 45));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let m = &report["embedding_metrics"];
    assert!(m["target"]["ratio"].as_f64().unwrap() > 0.0, "{m}");
    assert_eq!(m["d_st"].as_array().unwrap().len(), 3);
    assert_eq!(report["protocol"]["setting"], "uda");
}

#[test]
fn fit_with_setting_pda_keeps_the_first_target_classes() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("run");
    let mut args =
        fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap());
    args.extend(["--setting", "pda", "--pda-classes", "2"]);
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["protocol"], serde_json::json!({"setting": "pda", "classes": 2}));
    assert_eq!(report["n_target"], 30);
    let d_st = &report["embedding_metrics"]["d_st"];
    assert!(
        d_st[0][2].is_null() && !d_st[2][0].is_null(),
        "absent target class 2 has no prototype: {d_st}"
    );
}

#[test]
fn fit_with_an_unknown_setting_fails_without_output() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let out = dir.path().join("run");
    let mut args =
        fit_args(dir.path().to_str().unwrap(), out.to_str().unwrap(), cfg.to_str().unwrap());
    args.extend(["--setting", "semi"]);
    let o = run(&args);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("semi"), "{}", stderr(&o));
    assert!(out_is_empty(&out));
}

#[test]
fn generate_writes_a_folder_that_fit_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (data, out) = (dir.path().join("gen"), dir.path().join("run"));
    let o = common::run(&[
        "generate",
        "--source-rows",
        "90",
        "--target-rows",
        "60",
        "--dims",
        "6",
        "--classes",
        "3",
        "--seed",
        "4",
        "--out",
        data.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("generate.json")).unwrap()).unwrap();
    assert_eq!(json["settings"]["seed"], 4);
    let cfg = common::fast_config(dir.path());
    let o = common::run(&[
        "fit",
        "--data",
        data.to_str().unwrap(),
        "--source",
        "source",
        "--target",
        "target",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", common::stderr(&o));
    assert!(out.join("report.json").exists());
    let bad = common::run(&[
        "generate",
        "--classes",
        "1",
        "--out",
        dir.path().join("bad").to_str().unwrap(),
    ]);
    assert!(
        !bad.status.success() && common::stderr(&bad).contains("n_classes"),
        "{}",
        common::stderr(&bad)
    );
    assert!(!dir.path().join("bad").exists());
}
