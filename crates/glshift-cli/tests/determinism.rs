//! Determinism: the same inputs and seed give byte-identical report.json
//! (all but `elapsed_seconds`, the only timing field), predictions.csv and model.glshift, whatever the number
//! of GEMM (matrixmultiply) and rayon threads.
//!
//! Why it holds: matrixmultiply splits a product over threads by blocks of output rows/columns
//! (its "loop 3"/"loop 2"), so every output element is still summed by one thread in the same
//! order; the library itself has no parallel reduction (rayon is a declared dependency but no
//! code of the crate calls it, and faer runs sequentially by default).

mod common;

use std::path::Path;

use common::*;
use ndarray::{Array1, Array2};

/// A fixture large enough that matrixmultiply actually splits its GEMMs over 2 threads: it
/// does when m·k + k·n ≥ 2¹⁵ (here the first layer: 700·96 + 96·128 ≈ 79 000).
fn write_medium_fixture(dir: &Path) {
    let blob = |n: usize, offset: f32| {
        let x = Array2::from_shape_fn((n, 96), |(i, j)| {
            let k = i % 4;
            let jitter = ((((i * 31 + j * 17) % 23) as f32) - 11.0) * 0.08;
            if j % 4 == k {
                1.5 + offset + jitter
            } else {
                jitter
            }
        });
        (x, Array1::from_shape_fn(n, |i| (i % 4) as i64))
    };
    let (xs, ys) = blob(400, 0.0);
    let (xt, yt) = blob(300, 0.4);
    write_domain(dir, "src", &xs, Some(&ys));
    write_domain(dir, "tgt", &xt, Some(&yt));
    std::fs::write(
        dir.join("cfg.toml"),
        "pretrain_iters = 15\nadapt_iters = 15\n[network]\nhidden = [128, 64]\n",
    )
    .unwrap();
}

/// Runs `fit` with `threads` GEMM and rayon threads; returns report.json without
/// `elapsed_seconds` (as bytes) and predictions.csv.
fn fit_with_threads(dir: &Path, out: &str, threads: &str) -> (Vec<u8>, Vec<u8>) {
    fit_method_with_threads(dir, out, threads, "mul")
}

fn fit_method_with_threads(
    dir: &Path,
    out: &str,
    threads: &str,
    method: &str,
) -> (Vec<u8>, Vec<u8>) {
    let out = dir.join(out);
    let o = glshift()
        .args([
            "fit",
            "--data",
            dir.to_str().unwrap(),
            "--source",
            "src",
            "--target",
            "tgt",
            "--seed",
            "3",
        ])
        .args(["--method", method])
        .args([
            "--config",
            dir.join("cfg.toml").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .env("MATMUL_NUM_THREADS", threads)
        .env("RAYON_NUM_THREADS", threads)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(out.join("report.json")).unwrap();
    // Drop the one timing line, keeping every other byte as written.
    let kept: Vec<&str> =
        text.lines().filter(|l| !l.trim_start().starts_with("\"elapsed_seconds\"")).collect();
    assert_eq!(kept.len() + 1, text.lines().count(), "exactly one elapsed_seconds line expected");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let obj = v.as_object_mut().unwrap();
    assert!(obj.remove("elapsed_seconds").is_some());
    assert!(
        !serde_json::to_string(&v).unwrap().contains("seconds"),
        "a timing field outside elapsed_seconds"
    );
    (kept.join("\n").into_bytes(), std::fs::read(out.join("predictions.csv")).unwrap())
}

#[test]
fn one_and_two_threads_give_byte_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    write_medium_fixture(dir.path());
    let (r1, p1) = fit_with_threads(dir.path(), "t1", "1");
    let (r2, p2) = fit_with_threads(dir.path(), "t2", "2");
    assert!(r1 == r2, "report.json differs between 1 and 2 threads");
    assert!(p1 == p2, "predictions.csv differs between 1 and 2 threads");
    // And a rerun with the same thread count is identical too.
    let (r3, p3) = fit_with_threads(dir.path(), "t2b", "2");
    assert!(r2 == r3 && p2 == p3, "two runs with 2 threads differ");
    // The saved model too (it holds no timing).
    let model = |run: &str| std::fs::read(dir.path().join(run).join("model.glshift")).unwrap();
    assert!(
        model("t1") == model("t2") && model("t2") == model("t2b"),
        "model.glshift differs between runs"
    );
}

#[test]
fn another_seed_changes_the_outputs() {
    // Guards the test above against comparing outputs that ignore their inputs.
    let dir = tempfile::tempdir().unwrap();
    write_medium_fixture(dir.path());
    let (_, p1) = fit_with_threads(dir.path(), "a", "1");
    let o = glshift()
        .args([
            "fit",
            "--data",
            dir.path().to_str().unwrap(),
            "--source",
            "src",
            "--target",
            "tgt",
            "--seed",
            "4",
        ])
        .args([
            "--config",
            dir.path().join("cfg.toml").to_str().unwrap(),
            "--out",
            dir.path().join("b").to_str().unwrap(),
            "--quiet",
        ])
        .env("MATMUL_NUM_THREADS", "1")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let p2 = std::fs::read(dir.path().join("b/predictions.csv")).unwrap();
    assert!(p1 != p2, "seed 3 and seed 4 gave identical predictions");
}

#[test]
fn baselines_are_independent_of_the_thread_count() {
    // The discriminator (with dropout), the multilinear map and the entropy weights (cdan-e),
    // and the multi-kernel MMD (dan) add GEMMs and reductions of their own.
    let dir = tempfile::tempdir().unwrap();
    write_medium_fixture(dir.path());
    for method in ["cdan-e", "dan"] {
        let (r1, p1) = fit_method_with_threads(dir.path(), &format!("{method}1"), "1", method);
        let (r2, p2) = fit_method_with_threads(dir.path(), &format!("{method}2"), "2", method);
        assert!(r1 == r2 && p1 == p2, "{method}: outputs differ between 1 and 2 threads");
    }
}

#[test]
fn minibatch_training_is_independent_of_the_thread_count() {
    // The memory bank's chunked views, the stratified sampler and the frozen BatchNorm sample.
    let dir = tempfile::tempdir().unwrap();
    write_medium_fixture(dir.path());
    let cfg = "training = \"mini-batch\"\npretrain_iters = 30\nadapt_iters = 30\n[network]\nhidden = [128, 64]\n\
               [minibatch]\nbatch_size = 64\ncontext_rows = 96\nbn_stats_rows = 200\nchunk_rows = 128\nrefresh_every = 10\n";
    std::fs::write(dir.path().join("cfg.toml"), cfg).unwrap();
    for method in ["mul", "source"] {
        let (r1, p1) = fit_method_with_threads(dir.path(), &format!("{method}1"), "1", method);
        let (r2, p2) = fit_method_with_threads(dir.path(), &format!("{method}2"), "2", method);
        assert!(
            r1 == r2 && p1 == p2,
            "{method}: mini-batch outputs differ between 1 and 2 threads"
        );
        assert!(
            String::from_utf8_lossy(&r1).contains("\"training\": \"mini-batch\""),
            "the report records the training mode"
        );
    }
}
