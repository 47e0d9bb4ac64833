//! `glshift shift estimate` end to end on small `.npy` fixtures.

mod common;

use std::path::Path;

use common::*;
use ndarray::{Array1, Array2};
use ndarray_npy::WriteNpyExt;

fn write<T: ndarray_npy::WritableElement, D: ndarray::Dimension>(path: &Path, a: &ndarray::Array<T, D>) {
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
    ["shift", "estimate", "--source-probs", &format!("{dir}/sp.npy"), "--source-labels", &format!("{dir}/sl.npy"),
     "--target-probs", &format!("{dir}/tp.npy"), "--out", out]
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
    assert_eq!(r["classes"], 3);
    assert_eq!(r["n_source"], 300);
    assert!(r["diagnostics"]["hard"]["condition_number"].as_f64().unwrap() > 1.0);
    let est = r["estimates"].as_array().unwrap();
    assert_eq!(est.len(), 7);
    for e in est {
        let p: Vec<f64> = serde_json::from_value(e["result"]["target_prior"].clone()).unwrap_or_else(|_| panic!("{e}"));
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{e}");
        let low: Vec<f64> = serde_json::from_value(e["interval"]["low"].clone()).unwrap();
        assert_eq!(low.len(), 3);
    }
    // BBSE hard recovers (0.5, 0.5, 0) here (the fixture is noise-free in expectation).
    let bbse: Vec<f64> = serde_json::from_value(est[0]["result"]["target_prior"].clone()).unwrap();
    assert!((bbse[0] - 0.5).abs() < 0.05 && bbse[2] < 0.05, "{bbse:?}");
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
    let o = run(&a.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert!(!o.status.success() && stderr(&o).contains("unknown estimator"), "{}", stderr(&o));
}
