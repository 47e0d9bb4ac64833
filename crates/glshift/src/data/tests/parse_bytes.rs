//! The `parse_*` functions: same results as the file readers, errors naming the given path.

use std::path::Path;

use ndarray::arr2;
use tempfile::tempdir;

use super::{err, grid, npy, write_mat, MatData};
use crate::data::{parse_csv, parse_mat, parse_npy_labels, parse_npy_matrix, read_npy_matrix};

#[test]
fn parse_npy_matrix_matches_the_file_reader() {
    let dir = tempdir().unwrap();
    npy(dir.path(), "x.npy", &grid(3, 2));
    let bytes = std::fs::read(dir.path().join("x.npy")).unwrap();
    let from_bytes = parse_npy_matrix(&bytes, Path::new("mem.npy")).unwrap();
    assert_eq!(from_bytes, read_npy_matrix(&dir.path().join("x.npy")).unwrap());
}

#[test]
fn parse_npy_errors_name_the_given_path() {
    let e = err(parse_npy_labels(b"\x93NUMPY\x01", Path::new("some/labels.npy")));
    assert!(e.starts_with("some/labels.npy: "), "{e}");
}

#[test]
fn parse_mat_reads_features_and_labels_from_bytes() {
    let dir = tempdir().unwrap();
    let p = dir.path().join("d.mat");
    write_mat(
        &p,
        &[
            ("X", &[2, 2], MatData::Double(vec![1.0, 2.0, 3.0, 4.0])),
            ("Y", &[2, 1], MatData::UInt8(vec![1, 2])),
        ],
    );
    let parsed = parse_mat(&std::fs::read(&p).unwrap(), Path::new("mem.mat")).unwrap();
    assert_eq!(parsed.features, arr2(&[[1.0f32, 3.0], [2.0, 4.0]]));
    assert_eq!(parsed.labels, Some(vec![1, 2]));
    let e = err(parse_mat(b"MATLAB 5.0", Path::new("short.mat")));
    assert!(e.starts_with("short.mat: "), "{e}");
}

#[test]
fn parse_csv_reads_any_reader_and_names_the_given_path() {
    let parsed = parse_csv(&b"a,label,b\n1,0,2\n"[..], Path::new("mem.csv")).unwrap();
    assert_eq!(parsed.features, arr2(&[[1.0f32, 2.0]]));
    assert_eq!(parsed.labels, Some(vec![0]));
    assert_eq!(parsed.feature_names, Some(vec!["a".to_string(), "b".to_string()]));
    let e = err(parse_csv(&b"a,b\n1\n"[..], Path::new("dir/bad.csv")));
    assert!(e.starts_with("dir/bad.csv: line 2"), "{e}");
}
