//! `glshift shift estimate` end to end on small `.npy` fixtures.

mod common;

use std::path::Path;

use common::*;
use ndarray::{Array1, Array2};
use ndarray_npy::WriteNpyExt;

fn write<T: ndarray_npy::WritableElement, D: ndarray::Dimension>(
    path: &Path,
    a: &ndarray::Array<T, D>,
) {
    a.write_npy(std::fs::File::create(path).unwrap()).unwrap();
}

/// 3 classes; a row of class y puts 0.7 on its prediction, 0.15 elsewhere; every 5th row is
/// predicted as the next class. Source labels cycle 0,1,2; the target has prior (0.5, 0.5, 0).
fn fixture(dir: &Path) {
    let row = |y: usize, i: usize| {
        let pred = if i % 5 == 0 { (y + 1) % 3 } else { y };
        let mut r = [0.15f32; 3];
        r[pred] = 0.7;
        r
    };
    let ns = 300;
    let sp = Array2::from_shape_fn((ns, 3), |(i, k)| row(i % 3, i)[k]);
    let sl = Array1::from_shape_fn(ns, |i| (i % 3) as i64);
    let nt = 200;
    let tp = Array2::from_shape_fn((nt, 3), |(i, k)| row(i % 2, i)[k]);
    write(&dir.join("sp.npy"), &sp);
    write(&dir.join("sl.npy"), &sl);
    write(&dir.join("tp.npy"), &tp);
}

fn args<'a>(dir: &'a str, out: &'a str) -> Vec<String> {
    [
        "shift",
        "estimate",
        "--source-probs",
        &format!("{dir}/sp.npy"),
        "--source-labels",
        &format!("{dir}/sl.npy"),
        "--target-probs",
        &format!("{dir}/tp.npy"),
        "--out",
        out,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn shift_estimate_writes_every_estimator_with_bootstrap_intervals() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("report.json");
    let mut a = args(d, out.to_str().unwrap());
    a.extend(["--bootstrap", "20", "--seed", "3"].map(String::from));
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r["n_classes"], 3);
    assert_eq!(r["n_source"], 300);
    // The file reads back as the record type that wrote it, in its saved-probabilities form.
    let typed: glshift::records::ShiftEstimateFile =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(matches!(typed.input, glshift::records::EstimateInput::Saved { .. }));
    assert_eq!(
        typed.estimators.keys().collect::<Vec<_>>(),
        r["estimators"].as_object().unwrap().keys().collect::<Vec<_>>()
    );
    assert!(r["diagnostics"]["hard"]["condition_number"].as_f64().unwrap() > 1.0);
    let est = r["estimators"].as_object().unwrap();
    assert_eq!(est.keys().collect::<Vec<_>>(), ["bbse", "bbse-qp", "mlls", "rlls"]);
    for (k, e) in est {
        let p: Vec<f64> =
            serde_json::from_value(e["prior"].clone()).unwrap_or_else(|_| panic!("{k}: {e}"));
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{e}");
        assert_eq!(e["weights"].as_array().unwrap().len(), 3);
        let low: Vec<f64> = serde_json::from_value(e["prior_ci_low"].clone()).unwrap();
        let high: Vec<f64> = serde_json::from_value(e["prior_ci_high"].clone()).unwrap();
        assert!(low.iter().zip(&high).all(|(l, h)| l <= h), "{k}: {e}");
        // No target labels given: no ℓ1 error.
        assert!(e.get("prior_l1_error").is_none(), "{k}: {e}");
    }
    // BBSE hard recovers (0.5, 0.5, 0) here (the fixture is noise-free in expectation).
    let bbse: Vec<f64> = serde_json::from_value(est["bbse"]["prior"].clone()).unwrap();
    assert!((bbse[0] - 0.5).abs() < 0.05 && bbse[2] < 0.05, "{bbse:?}");
    // The prior guard's test of label shift, as a fit runs it, is part of the record.
    let g = typed.prior_guard.as_ref().expect("the label-shift test ran");
    assert!((0.0..=1.0).contains(&g.p_value) && g.resamples > 100, "{g:?}");
    assert_eq!(g.trusted, !stderr(&o).contains("label shift looks broken"), "{}", stderr(&o));
}

#[test]
fn shift_estimate_with_target_labels_reports_the_l1_error_of_each_estimator() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    write(&dir.path().join("tl.npy"), &Array1::from_shape_fn(200, |i| (i % 2) as i64));
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("report.json");
    let mut a = args(d, out.to_str().unwrap());
    a.extend([
        "--target-labels".to_string(),
        format!("{d}/tl.npy"),
        "--estimator".into(),
        "bbse,mlls-bcts".into(),
    ]);
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r["true_target_prior"], serde_json::json!([0.5, 0.5, 0.0]));
    let est = r["estimators"].as_object().unwrap();
    assert_eq!(est.len(), 2);
    assert!(est["bbse"]["prior_l1_error"].as_f64().unwrap() < 0.1, "{}", est["bbse"]);
    assert_eq!(est["mlls-bcts"]["variant"], "mlls-bcts");
    // Wrong number of target labels: an error naming the file, nothing written.
    std::fs::remove_file(&out).unwrap();
    write(&dir.path().join("tl.npy"), &Array1::from_shape_fn(7, |i| (i % 2) as i64));
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(
        !o.status.success() && stderr(&o).contains("tl.npy") && stderr(&o).contains("7 labels"),
        "{}",
        stderr(&o)
    );
    assert!(!out.exists());
}

#[test]
fn shift_estimate_with_a_class_never_predicted_warns_and_writes_no_nan() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    // Every row's class-2 mass moved to class 0: class 2 is never predicted, C is singular.
    for f in ["sp.npy", "tp.npy"] {
        let p = dir.path().join(f);
        let mut x: Array2<f32> = ndarray_npy::read_npy(&p).unwrap();
        for mut r in x.rows_mut() {
            r[0] += r[2];
            r[2] = 0.0;
        }
        write(&p, &x);
    }
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("report.json");
    let a = args(d, out.to_str().unwrap());
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("never predicted") && stderr(&o).contains("fell back"),
        "{}",
        stderr(&o)
    );
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    // serde_json writes NaN as null: every number of every estimate must be present and finite.
    for (k, e) in r["estimators"].as_object().unwrap() {
        for field in ["prior", "weights"] {
            let v: Vec<f64> = serde_json::from_value(e[field].clone())
                .unwrap_or_else(|_| panic!("{k}.{field}: {e}"));
            assert!(v.iter().all(|x| x.is_finite() && *x >= 0.0), "{k}.{field}: {v:?}");
        }
    }
    assert!(r["diagnostics"]["hard"]["warning"].as_str().unwrap().contains("singular"));
}

/// `--data D --source src --target tgt --config CFG` followed by `extra`: the data form's
/// arguments with the fixture's domains.
fn data_form<'a>(d: &'a str, cfg: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["--data", d, "--source", "src", "--target", "tgt", "--config", cfg];
    a.extend_from_slice(extra);
    a
}

/// Runs `shift estimate` in the data form (see [`data_form`]) with `extra`, then `--out OUT`.
fn run_data_form(d: &str, cfg: &str, extra: &[&str], out: &Path) -> std::process::Output {
    let mut a = vec!["shift", "estimate"];
    a.extend(data_form(d, cfg, extra));
    a.extend(["--out", out.to_str().unwrap()]);
    run(&a)
}

/// The JSON file at `path`, untyped.
fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn shift_estimate_data_form_trains_the_source_classifier_and_reports_all_four() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let d = dir.path().to_str().unwrap();
    let c = cfg.to_str().unwrap();
    let out = dir.path().join("r/report.json");
    let probs = dir.path().join("probs");
    let seeded = ["--bootstrap", "10", "--seed", "1"];
    let mut extra = seeded.to_vec();
    extra.extend(["--save-probs", probs.to_str().unwrap()]);
    let o = run_data_form(d, c, &extra, &out);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = read_json(&out);
    assert_eq!(r["n_source"], 60);
    assert_eq!(r["n_source_holdout"].as_u64().unwrap() + r["n_source_train"].as_u64().unwrap(), 60);
    let typed: glshift::records::ShiftEstimateFile =
        serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    match &typed.input {
        glshift::records::EstimateInput::Trained(t) => assert_eq!(t.classifier.method, "source"),
        other => panic!("the --data form reads back as trained: {other:?}"),
    }
    assert_eq!(r["classifier"]["method"], "source");
    assert!(r["true_target_prior"].is_array());
    for key in ["bbse", "bbse-qp", "rlls", "mlls"] {
        let e = &r["estimators"][key];
        assert_eq!(e["prior"].as_array().unwrap().len(), 3, "{key}: {e}");
        assert_eq!(e["prior_ci_high"].as_array().unwrap().len(), 3, "{key}: {e}");
        assert!(e["prior_l1_error"].as_f64().unwrap() >= 0.0, "{key}: {e}");
    }
    let hp: Array2<f32> = ndarray_npy::read_npy(probs.join("holdout_probs.npy")).unwrap();
    let tp: Array2<f32> = ndarray_npy::read_npy(probs.join("target_probs.npy")).unwrap();
    assert_eq!((hp.nrows() as u64, tp.nrows()), (r["n_source_holdout"].as_u64().unwrap(), 45));
    // Same seed, same report.
    let out2 = dir.path().join("r/report2.json");
    let o = run_data_form(d, c, &seeded, &out2);
    assert!(o.status.success(), "{}", stderr(&o));
    let r2 = read_json(&out2);
    assert_eq!(r["estimators"], r2["estimators"]);
    // An unlabelled target: no ℓ1 error, no true prior.
    std::fs::remove_file(dir.path().join("tgt_labels.npy")).unwrap();
    let o = run_data_form(d, c, &[], &out2);
    assert!(o.status.success(), "{}", stderr(&o));
    let r3 = read_json(&out2);
    assert!(r3.get("true_target_prior").is_none());
    assert!(
        r3["estimators"]["mlls"].get("prior_l1_error").is_none()
            && r3["estimators"]["mlls"].get("prior_ci_low").is_none()
    );
}

#[test]
fn shift_estimate_data_form_with_cross_fit_shows_every_source_row_to_the_estimators() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("report.json");
    let probs = dir.path().join("probs");
    let a = [
        "shift",
        "estimate",
        "--data",
        d,
        "--source",
        "src",
        "--target",
        "tgt",
        "--config",
        cfg.to_str().unwrap(),
        "--cross-fit",
        "3",
        "--bootstrap",
        "10",
        "--save-probs",
        probs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!((r["n_source_holdout"].as_u64(), r["cross_fit"].as_u64()), (Some(60), Some(3)));
    let trained: Vec<u64> = serde_json::from_value(r["n_source_train"].clone()).unwrap();
    assert_eq!(
        trained.iter().sum::<u64>(),
        2 * 60,
        "each row trains 2 of the 3 models: {trained:?}"
    );
    assert_eq!(r["estimators"]["mlls"]["interval"], "basic");
    let hp: Array2<f32> = ndarray_npy::read_npy(probs.join("holdout_probs.npy")).unwrap();
    assert_eq!(hp.nrows(), 60);
    // Deterministic under the seed.
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let r2: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r["estimators"], r2["estimators"]);
}

#[test]
fn shift_estimate_data_form_bad_inputs_name_the_problem_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    fixture(dir.path());
    let cfg = fast_config(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("report.json");
    let o_s = out.to_str().unwrap();
    let c = cfg.to_str().unwrap();
    let sp = format!("{d}/sp.npy");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--data", d, "--source", "src"], "--target"),
        (
            vec!["--data", d, "--source", "src", "--target", "tgt", "--source-probs", &sp],
            "cannot be combined with --source-probs",
        ),
        (vec!["--data", d, "--source", "src", "--target", "nope", "--config", c], "nope"),
        (data_form(d, c, &["--bootstrap", "1"]), "--bootstrap 1"),
        (data_form(d, c, &["--estimator", "em"]), "em"),
        (data_form(d, c, &["--bootstrap", "5", "--level", "1.5"]), "--level"),
        (vec!["--source-probs", &sp], "give either"),
        (data_form(d, c, &["--cross-fit", "0"]), "--cross-fit 0"),
        (data_form(d, c, &["--bootstrap", "5", "--interval", "bca"]), "bca"),
        (
            vec!["--data", "/nonexistent/folder", "--source", "a", "--target", "b"],
            "/nonexistent/folder",
        ),
    ];
    for (extra, want) in cases {
        let mut a = vec!["shift", "estimate", "--out", o_s];
        a.extend(extra.iter());
        let o = run(&a);
        assert!(!o.status.success(), "{a:?} succeeded");
        let e = stderr(&o);
        assert!(e.contains(want) && !e.contains("panicked"), "{a:?}: {e}");
        assert!(!out.exists(), "{a:?} left {out:?}");
    }
}

#[test]
fn shift_simulate_writes_a_loadable_known_truth_target_disjoint_from_the_source_part() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let d = dir.path().to_str().unwrap();
    let sim = dir.path().join("sim");
    let s = sim.to_str().unwrap();
    let args = [
        "shift",
        "simulate",
        "--data",
        d,
        "--domain",
        "src",
        "--prior",
        "0.6,0.4,0",
        "--seed",
        "5",
        "--n",
        "40",
        "--out",
        s,
    ];
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let rep: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sim.join("simulation.json")).unwrap()).unwrap();
    assert_eq!(rep["target"]["true_prior"], serde_json::json!([0.6, 0.4, 0.0]));
    assert_eq!(rep["n_source"].as_u64().unwrap() + rep["n_pool"].as_u64().unwrap(), 60);
    let src_rows: Vec<u64> = serde_json::from_value(rep["source_rows"].clone()).unwrap();
    let tgt_rows: Vec<u64> = serde_json::from_value(rep["target"]["rows"].clone()).unwrap();
    assert_eq!(tgt_rows.len(), 40);
    assert!(
        tgt_rows.iter().all(|r| !src_rows.contains(r)),
        "target shares rows with the source part"
    );
    let tl: Array1<i64> = ndarray_npy::read_npy(sim.join("target_labels.npy")).unwrap();
    assert_eq!(tl.iter().filter(|&&y| y == 0).count(), 24);
    assert_eq!(std::fs::read_to_string(sim.join("classes.txt")).unwrap(), "a\nb\nc\n");
    // Deterministic: the same seed gives the same bytes.
    let first = std::fs::read(sim.join("target_features.npy")).unwrap();
    assert!(run(&args).status.success());
    assert_eq!(first, std::fs::read(sim.join("target_features.npy")).unwrap());
    // The result is a data folder for `shift estimate --data`.
    let cfg = fast_config(dir.path());
    let out = dir.path().join("est.json");
    let o = run(&[
        "shift",
        "estimate",
        "--data",
        s,
        "--source",
        "source",
        "--target",
        "target",
        "--config",
        cfg.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(r["true_target_prior"], serde_json::json!([0.6, 0.4, 0.0]));
}

#[test]
fn shift_simulate_bad_inputs_name_the_problem_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let (xs, _) = blobs(30, 0.0);
    write_domain(dir.path(), "unl", &xs, None);
    let d = dir.path().to_str().unwrap();
    let sim = dir.path().join("sim");
    let s = sim.to_str().unwrap();
    std::fs::write(dir.path().join("afile"), b"").unwrap();
    let f = dir.path().join("afile");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--domain", "src", "--prior", "dirichlet:-1", "--out", s], "dirichlet"),
        (vec!["--domain", "src", "--prior", "0.5,0.5", "--out", s], "3 classes"),
        (vec!["--domain", "src", "--prior", "0.5,0.6,0", "--out", s], "sum to"),
        (vec!["--domain", "unl", "--prior", "pda", "--out", s], "no labels"),
        (vec!["--domain", "nope", "--prior", "pda", "--out", s], "nope"),
        (
            vec!["--domain", "src", "--prior", "pda", "--source-fraction", "1", "--out", s],
            "source-fraction",
        ),
        (vec!["--domain", "src", "--prior", "pda", "--n", "0", "--out", s], "at least 1 row"),
        (
            vec!["--domain", "src", "--prior", "pda", "--out", f.to_str().unwrap()],
            "must be a folder",
        ),
    ];
    for (extra, want) in cases {
        let mut a = vec!["shift", "simulate", "--data", d];
        a.extend(extra.iter());
        let o = run(&a);
        assert!(!o.status.success(), "{a:?} succeeded");
        let e = stderr(&o);
        assert!(e.contains(want) && !e.contains("panicked"), "{a:?}: {e}");
        assert!(!sim.exists(), "{a:?} left {sim:?}");
    }
}

#[test]
fn shift_study_writes_json_and_markdown_and_refuses_bad_settings() {
    let dir = tempfile::tempdir().unwrap();
    write_fixture(dir.path());
    let cfg = fast_config(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("study");
    let o_s = out.to_str().unwrap();
    let a = [
        "shift",
        "study",
        "--data",
        d,
        "--domains",
        "src",
        "--draws",
        "2",
        "--n-target",
        "30",
        "--config",
        cfg.to_str().unwrap(),
        "--prior",
        "pda",
        "--prior",
        "dirichlet:1",
        "--bootstrap",
        "5",
        "--out",
        o_s,
    ];
    let o = run(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("study.json")).unwrap()).unwrap();
    assert_eq!(r["summary"].as_array().unwrap().len(), 8);
    assert_eq!(r["domains"][0]["draws"].as_array().unwrap().len(), 4);
    let md = std::fs::read_to_string(out.join("study.md")).unwrap();
    assert!(md.contains("| src | pda |") && md.contains("| src | dirichlet:1 |"), "{md}");
    assert!(
        md.contains("5-fold cross-fitted")
            && md.contains("basic intervals")
            && md.contains("percentile intervals"),
        "{md}"
    );
    assert!(md.contains("Averages over the 2 (domain, prior) cells"), "{md}");
    let d0 = &r["domains"][0];
    assert_eq!(
        d0["n_source_holdout"], d0["n_source"],
        "cross-fitting shows every source row to the estimators"
    );
    let bad: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--domains", "src", "--bootstrap", "1"], "bootstrap"),
        (vec!["--domains", "src", "--prior", "dirichlet:0"], "dirichlet"),
        (vec!["--domains", "nope"], "nope"),
        (vec!["--domains", "src", "--draws", "0"], "draws"),
        (vec!["--domains", "src", "--interval", "bca"], "interval"),
        (vec!["--domains", "src", "--cross-fit", "0"], "cross-fit"),
    ];
    let out = dir.path().join("bad");
    for (extra, want) in bad {
        let mut a = vec![
            "shift",
            "study",
            "--data",
            d,
            "--n-target",
            "30",
            "--config",
            cfg.to_str().unwrap(),
        ];
        a.extend(extra.iter());
        a.extend(["--out", out.to_str().unwrap()]);
        let o = run(&a);
        let e = stderr(&o);
        assert!(!o.status.success() && e.contains(want) && !e.contains("panicked"), "{a:?}: {e}");
        assert!(out_is_empty(&out), "{a:?} left output");
    }
}

#[test]
fn shift_estimate_rejects_unnormalised_probabilities_and_unknown_estimators() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let d = dir.path().to_str().unwrap();
    let out = dir.path().join("report.json");
    let bad = Array2::<f32>::from_elem((10, 3), 0.5);
    write(&dir.path().join("tp.npy"), &bad);
    let a = args(d, out.to_str().unwrap());
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(!o.status.success());
    assert!(stderr(&o).contains("sums to"), "{}", stderr(&o));
    assert!(!out.exists());
    let mut a = args(d, out.to_str().unwrap());
    a.extend(["--estimator", "bbse-x"].map(String::from));
    std::fs::remove_file(dir.path().join("tp.npy")).unwrap();
    fixture(dir.path());
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(!o.status.success() && stderr(&o).contains("unknown estimator"), "{}", stderr(&o));
}
