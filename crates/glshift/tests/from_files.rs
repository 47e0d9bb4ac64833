//! Fits that read their feature rows from the `.npy` files (`data::open_pair_files`,
//! `pipeline::run_files`), or preprocess borrowed arrays a batch at a time: the same results,
//! bit for bit, as the fit on the loaded pair, and files that are damaged, or change under the
//! fit, are errors naming them.

use std::path::Path;

use glshift::config::{FitConfig, MiniBatchConfig, Training};
use glshift::data::{self, Domain};
use glshift::methods::MethodKind;
use glshift::pipeline::{self, RunOutput};
use glshift_experiments::synthetic::{generate, SyntheticConfig};
use ndarray_npy::write_npy;

fn minibatch(method: MethodKind) -> FitConfig {
    let minibatch = MiniBatchConfig {
        batch_size: 64,
        context_rows: 128,
        bn_stats_rows: 256,
        chunk_rows: 100,
        ..Default::default()
    };
    FitConfig {
        method,
        seed: 3,
        pretrain_iters: 60,
        adapt_iters: 40,
        training: Training::MiniBatch,
        minibatch,
        ..Default::default()
    }
}

/// Writes `<name>_features.npy` and `<name>_labels.npy` of `d` into `dir`.
fn write_domain(dir: &Path, name: &str, d: &Domain) {
    write_npy(dir.join(format!("{name}_features.npy")), &d.features).unwrap();
    let labels: ndarray::Array1<i64> =
        d.labels.as_ref().unwrap().iter().map(|&y| y as i64).collect();
    write_npy(dir.join(format!("{name}_labels.npy")), &labels).unwrap();
}

fn folder(n_source: usize, n_target: usize) -> tempfile::TempDir {
    let task =
        generate(&SyntheticConfig { n_source, n_target, seed: 11, ..Default::default() }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    write_domain(dir.path(), "src", &task.source);
    write_domain(dir.path(), "tgt", &task.target);
    dir
}

fn same_run(a: &RunOutput, b: &RunOutput) {
    assert_eq!(a.target_probs, b.target_probs);
    assert_eq!(a.holdout_probs, b.holdout_probs);
    assert_eq!(a.source_z, b.source_z);
    assert_eq!(a.target_z, b.target_z);
    assert_eq!(a.report.estimated_target_prior, b.report.estimated_target_prior);
    assert_eq!(a.report.target_accuracy, b.report.target_accuracy);
    let history = |o: &RunOutput| serde_json::to_string(&o.report.history).unwrap();
    assert_eq!(history(a), history(b));
    let x = ndarray::Array2::from_shape_fn((5, a.model.info().input_dim), |(i, j)| {
        (i * 7 + j) as f32 * 0.01
    });
    assert_eq!(a.model.predict_proba(x.view()).unwrap(), b.model.predict_proba(x.view()).unwrap());
}

#[test]
fn a_fit_reading_its_files_equals_the_fit_on_the_loaded_pair() {
    let dir = folder(400, 300);
    for method in [MethodKind::Mul, MethodKind::Source, MethodKind::Dann] {
        let cfg = minibatch(method);
        let (s, t) = data::load_pair(dir.path(), "src", "tgt").unwrap();
        // Borrowed arrays: preprocessed a batch at a time (`Rows::Scaled`), not copied.
        let borrowed = pipeline::run(&s, &t, &cfg, &mut |_| {}).unwrap();
        let loaded = pipeline::run_owned(s, t, &cfg, &mut |_| {}).unwrap();
        same_run(&loaded, &borrowed);
        let pair = data::open_pair_files(dir.path(), "src", "tgt")
            .unwrap()
            .expect("two C-order .npy domains");
        assert_eq!((pair.source_rows.nrows(), pair.target_rows.nrows()), (400, 300));
        let from_files = pipeline::run_files(&pair, &cfg, &mut |_| {}).unwrap();
        same_run(&loaded, &from_files);
        assert!(from_files.report.minibatch_training, "{method}");
    }
}

#[test]
fn full_batch_settings_are_refused_for_rows_in_files() {
    let dir = folder(200, 150);
    let pair = data::open_pair_files(dir.path(), "src", "tgt").unwrap().unwrap();
    let cfg = FitConfig { training: Training::FullBatch, ..minibatch(MethodKind::Mul) };
    assert!(!pipeline::reads_from_files(&cfg, 350, pair.source_rows.ncols()));
    let err = pipeline::run_files(&pair, &cfg, &mut |_| {}).err().expect("an error").to_string();
    assert!(err.contains("mini-batch only"), "{err}");
}

#[test]
fn a_non_finite_value_is_reported_with_its_file_and_row() {
    let dir = folder(200, 150);
    let (mut s, _) = data::load_pair(dir.path(), "src", "tgt").unwrap();
    s.features[[123, 1]] = f32::NAN;
    write_npy(dir.path().join("src_features.npy"), &s.features).unwrap();
    let pair = data::open_pair_files(dir.path(), "src", "tgt").unwrap().unwrap();
    let err = pipeline::run_files(&pair, &minibatch(MethodKind::Mul), &mut |_| {})
        .err()
        .expect("an error")
        .to_string();
    assert!(err.contains("src_features.npy") && err.contains("row 123, column 1"), "{err}");
}

#[test]
fn a_file_truncated_after_opening_stops_the_fit_with_its_name() {
    let dir = folder(200, 150);
    let pair = data::open_pair_files(dir.path(), "src", "tgt").unwrap().unwrap();
    let path = dir.path().join("tgt_features.npy");
    let len = std::fs::metadata(&path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(len / 2).unwrap();
    let err = pipeline::run_files(&pair, &minibatch(MethodKind::Mul), &mut |_| {})
        .err()
        .expect("an error")
        .to_string();
    assert!(
        err.contains("tgt_features.npy") && err.contains("changed while glshift was reading it"),
        "{err}"
    );
}

#[test]
fn other_formats_and_fortran_order_are_left_to_the_loader() {
    let dir = folder(100, 80);
    let (s, _) = data::load_pair(dir.path(), "src", "tgt").unwrap();
    let fortran = s.features.t().as_standard_layout().into_owned().reversed_axes();
    assert!(!fortran.is_standard_layout());
    write_npy(dir.path().join("src_features.npy"), &fortran).unwrap();
    assert!(data::open_pair_files(dir.path(), "src", "tgt").unwrap().is_none());
}
