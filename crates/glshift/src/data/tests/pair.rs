//! `load_pair`: the joint checks of source and target.

use tempfile::tempdir;

use super::{err, grid, npy_domain};
use crate::data::{check_features, load_pair};
use crate::Error;

#[test]
fn pair_without_classes_txt_uses_max_label_over_both() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "s", &grid(3, 2), Some(&[0, 1, 1]));
    npy_domain(dir.path(), "t", &grid(2, 2), Some(&[4, 0]));
    let (s, t) = load_pair(dir.path(), "s", "t").unwrap();
    assert_eq!(s.class_names, ["0", "1", "2", "3", "4"]);
    assert_eq!(t.class_names, s.class_names);
    assert_eq!(t.labels, Some(vec![4, 0]));
}

#[test]
fn pair_with_unlabelled_target_is_fine() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "s", &grid(3, 2), Some(&[0, 1, 2]));
    npy_domain(dir.path(), "t", &grid(5, 2), None);
    let (s, t) = load_pair(dir.path(), "s", "t").unwrap();
    assert_eq!((s.n_classes(), t.n_classes(), t.labels), (3, 3, None));
}

#[test]
fn pair_target_label_outside_classes_txt_is_rejected() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "s", &grid(3, 2), Some(&[0, 1, 1]));
    npy_domain(dir.path(), "t", &grid(2, 2), Some(&[2, 0]));
    std::fs::write(dir.path().join("classes.txt"), "a\nb\n").unwrap();
    let e = err(load_pair(dir.path(), "s", "t"));
    assert!(e.contains("t_labels.npy") && e.contains("label 2 at position 0"), "{e}");
}

#[test]
fn pair_with_different_dims_is_shape_error() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "s", &grid(3, 2), Some(&[0, 1, 1]));
    npy_domain(dir.path(), "t", &grid(3, 5), None);
    let e = load_pair(dir.path(), "s", "t").unwrap_err();
    match &e {
        Error::Shape { expected, found, .. } => {
            assert_eq!((expected.as_str(), found.as_str()), ("2", "5"))
        }
        other => panic!("expected Shape, got {other:?}"),
    }
}

#[test]
fn pair_source_needs_labels_and_two_classes() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "one", &grid(3, 2), Some(&[1, 1, 1]));
    npy_domain(dir.path(), "none", &grid(3, 2), None);
    npy_domain(dir.path(), "t", &grid(3, 2), Some(&[0, 1, 0]));
    let e = err(load_pair(dir.path(), "one", "t"));
    assert!(e.contains("only 1 class present"), "{e}");
    assert!(err(load_pair(dir.path(), "none", "t")).contains("the source has no labels"));
}

#[test]
fn pair_checks_target_values_and_emptiness() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "s", &grid(3, 2), Some(&[0, 1, 1]));
    let mut x = grid(3, 2);
    x[[2, 1]] = f32::INFINITY;
    npy_domain(dir.path(), "bad", &x, None);
    npy_domain(dir.path(), "empty", &ndarray::Array2::zeros((0, 2)), None);
    let e = err(load_pair(dir.path(), "s", "bad"));
    assert!(e.contains("target 'bad'") && e.contains("row 2, column 1"), "{e}");
    assert!(err(load_pair(dir.path(), "s", "empty")).contains("empty"));
}

#[test]
fn check_features_accepts_finite_and_rejects_nan() {
    let mut x = grid(2, 2);
    assert!(check_features("x", x.view()).is_ok());
    x[[0, 1]] = f32::NAN;
    let e = check_features("my matrix", x.view()).unwrap_err().to_string();
    assert!(e.starts_with("my matrix:") && e.contains("row 0, column 1"), "{e}");
}
