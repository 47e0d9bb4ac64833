//! `glshift monitor`: a folder of batches gives batches.csv (one line per batch and class) and
//! monitor.html; a bad batch is reported by its file and the others go on; a version-1 model
//! or an empty folder is one clear error and nothing is written.

mod common;

use common::*;
use ndarray_npy::write_npy;

#[test]
fn a_folder_of_batches_with_one_bad_file() {
    let dir = tempfile::tempdir().unwrap();
    let fit = fitted_fixture(dir.path());
    let model = fit.join("model.glshift");
    let batches = dir.path().join("batches");
    std::fs::create_dir(&batches).unwrap();
    let (x1, y1) = blobs(30, 0.3);
    write_npy(batches.join("day1_features.npy"), &x1).unwrap();
    write_npy(batches.join("day1_labels.npy"), &y1).unwrap();
    let (x2, _) = blobs(24, 0.2);
    write_npy(batches.join("day2_features.npy"), &x2).unwrap();
    std::fs::write(batches.join("day3_features.npy"), b"\x93NUMPY broken").unwrap();
    let wide = ndarray::Array2::<f32>::zeros((5, 7));
    write_npy(batches.join("day4_features.npy"), &wide).unwrap();
    let out = dir.path().join("mon");
    let o = run(&[
        "monitor",
        "--model",
        model.to_str().unwrap(),
        "--batches",
        batches.to_str().unwrap(),
        "--bootstrap",
        "40",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("day3: skipped") && err.contains("day3_features.npy"), "{err}");
    assert!(err.contains("day4: skipped") && err.contains("day4_features.npy"), "{err}");
    let csv = std::fs::read_to_string(out.join("batches.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    // header, 3 classes for each good batch, one line for each bad one
    assert_eq!(lines.len(), 1 + 3 + 3 + 1 + 1, "{csv}");
    assert!(lines[1].starts_with("day1,30,") && lines[4].starts_with("day2,24,"));
    let truth: Vec<&str> = lines[1..4].iter().map(|l| l.split(',').nth(6).unwrap()).collect();
    assert!(truth.iter().all(|t| !t.is_empty()), "day1 has labels: {csv}");
    assert!(lines[4].split(',').nth(6).unwrap().is_empty(), "day2 has none");
    let target_p = lines[0].split(',').position(|h| h == "target_p").expect("a target_p column");
    // day1 is rows of the fitted target itself: tested, and no alarm.
    let p: f64 = lines[1].split(',').nth(target_p).unwrap().parse().expect("day1 is tested");
    assert!(p > 0.05 && p <= 1.0, "day1's target test: {csv}");
    let html = std::fs::read_to_string(out.join("monitor.html")).unwrap();
    assert!(html.contains("day3") && html.contains("2 failed"), "{html}");
    assert!(out.join("figures/batch_priors.svg").exists());
    // An empty folder: one error, no output folder.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out2 = dir.path().join("mon2");
    let o = run(&[
        "monitor",
        "--model",
        model.to_str().unwrap(),
        "--batches",
        empty.to_str().unwrap(),
        "--out",
        out2.to_str().unwrap(),
    ]);
    assert!(!o.status.success() && stderr(&o).contains("no batch"), "{}", stderr(&o));
    assert!(!out2.exists());
}
