//! Target labels never reach training through the commands either: `glshift bench` over every
//! method gives the same records whether the target's labels are the true ones or ones with
//! other class counts (only the scores and the target counts may differ), and `glshift fit`
//! writes the same predictions with the target's labels present, removed or recounted.

mod common;

use std::path::Path;

use common::*;
use glshift::methods::MethodKind;
use ndarray::Array1;

const TINY: &str = "pretrain_iters = 15\nadapt_iters = 6\n[network]\nhidden = [16]\n[baselines]\niterations = 6\n[baselines.adversarial]\ndiscriminator_hidden = [16]\n";

/// Three fixture folders with the same features: target labels true, absent, and with every
/// class-1 row relabelled 0 (other class counts).
fn folders(root: &Path) -> [std::path::PathBuf; 3] {
    let names = ["labelled", "unlabelled", "recounted"];
    let (xs, ys) = blobs(60, 0.0);
    let (xt, yt) = blobs(45, 0.3);
    let recounted: Array1<i64> = yt.mapv(|k| if k == 1 { 0 } else { k });
    let targets = [Some(&yt), None, Some(&recounted)];
    names.map(|n| root.join(n)).into_iter().zip(targets).for_each(|(dir, y)| {
        std::fs::create_dir_all(&dir).unwrap();
        write_domain(&dir, "src", &xs, Some(&ys));
        write_domain(&dir, "tgt", &xt, y);
        std::fs::write(dir.join("classes.txt"), "a\nb\nc\n").unwrap();
        std::fs::write(dir.join("tiny.toml"), TINY).unwrap();
    });
    names.map(|n| root.join(n))
}

/// `results.json` without what scoring or the clock decides.
fn training_fields(out: &Path) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    for r in &mut v {
        let m = r.as_object_mut().unwrap();
        for key in [
            "elapsed_seconds",
            "target_accuracy",
            "prior_l1_error",
            "prior_interval_coverage",
            "source_target_prior_l1",
            "target_class_counts",
        ] {
            m.remove(key);
        }
    }
    v
}

#[test]
fn bench_records_do_not_depend_on_the_target_labels_of_any_method() {
    let root = tempfile::tempdir().unwrap();
    let [labelled, _, recounted] = folders(root.path());
    let methods: Vec<&str> = MethodKind::ALL.iter().map(|m| m.name()).collect();
    let methods = methods.join(",");
    let bench = |dir: &Path| {
        let out = dir.join("bench");
        let o = run(&[
            "bench",
            "--data",
            dir.to_str().unwrap(),
            "--setting",
            "uda",
            "--tasks",
            "src:tgt",
            "--methods",
            &methods,
            "--seeds",
            "0",
            "--config",
            dir.join("tiny.toml").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        out
    };
    let (a, b) = (bench(&labelled), bench(&recounted));
    let (ra, rb) = (training_fields(&a), training_fields(&b));
    assert_eq!(ra.len(), MethodKind::ALL.len());
    assert_eq!(ra, rb, "a bench record changed with the target labels");
    // The removed fields did see the labels: the comparison above left them out on purpose.
    let counts = |out: &Path| std::fs::read_to_string(out.join("results.json")).unwrap();
    assert_ne!(counts(&a), counts(&b));
}

#[test]
fn fit_predictions_do_not_depend_on_the_target_labels_of_any_method() {
    let root = tempfile::tempdir().unwrap();
    let dirs = folders(root.path());
    for m in MethodKind::ALL {
        let predictions: Vec<Vec<u8>> = dirs
            .iter()
            .map(|dir| {
                let out = dir.join(format!("fit-{m}"));
                let o = run(&[
                    "fit",
                    "--data",
                    dir.to_str().unwrap(),
                    "--source",
                    "src",
                    "--target",
                    "tgt",
                    "--method",
                    m.name(),
                    "--config",
                    dir.join("tiny.toml").to_str().unwrap(),
                    "--out",
                    out.to_str().unwrap(),
                    "--quiet",
                ]);
                assert!(o.status.success(), "{m}: {}", stderr(&o));
                std::fs::read(out.join("predictions.csv")).unwrap()
            })
            .collect();
        assert!(!predictions[0].is_empty());
        assert_eq!(
            predictions[0], predictions[1],
            "{m}: removing the target labels changed the predictions"
        );
        assert_eq!(
            predictions[0], predictions[2],
            "{m}: other target class counts changed the predictions"
        );
    }
}
