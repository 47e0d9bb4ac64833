//! CSV and MATLAB v5 files (the latter written by the minimal writer in `tests/mod.rs`).

use ndarray::arr2;
use tempfile::tempdir;

use super::{err, write_mat, MatData};
use crate::data::{load_domain, load_pair, FileFormat, LabelRule};
use crate::Error;

#[test]
fn csv_with_label_column_anywhere() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("s.csv"), "f0, label ,f1\n1.5,0,2\n-3,2,4e1\n\n").unwrap();
    let d = load_domain(dir.path(), "s").unwrap();
    assert_eq!(d.features, arr2(&[[1.5f32, 2.0], [-3.0, 40.0]]));
    assert_eq!(d.labels, Some(vec![0, 2]));
    assert_eq!((d.format, d.n_classes()), (FileFormat::Csv, 3));
}

#[test]
fn csv_without_label_column_is_unlabelled() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("t.csv"), "a,b,c\n1,2,3\n").unwrap();
    let d = load_domain(dir.path(), "t").unwrap();
    assert_eq!((d.dim(), d.labels), (3, None));
}

#[test]
fn csv_ragged_row_names_line() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("r.csv"), "a,b,label\n1,2,0\n3,4\n").unwrap();
    let e = err(load_domain(dir.path(), "r"));
    assert!(e.contains("r.csv") && e.contains("line 3") && e.contains("2 fields"), "{e}");
}

#[test]
fn csv_non_numeric_cell_names_line_and_column() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("n.csv"), "a,b\n1,2\n3,x7\n").unwrap();
    let e = err(load_domain(dir.path(), "n"));
    assert!(
        e.contains("n.csv") && e.contains("line 3, column 2 (`b`)") && e.contains("\"x7\""),
        "{e}"
    );
    std::fs::write(dir.path().join("n.csv"), "a,label\n1,2.5\n").unwrap();
    assert!(err(load_domain(dir.path(), "n")).contains("label \"2.5\" is not an integer"));
}

#[test]
fn csv_header_is_required() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("h.csv"), "1,2\n3,4\n").unwrap();
    assert!(err(load_domain(dir.path(), "h")).contains("header row"));
    std::fs::write(dir.path().join("h.csv"), "").unwrap();
    assert!(err(load_domain(dir.path(), "h")).contains("header row"));
}

#[test]
fn csv_pandas_numbered_header_accepted_index_column_rejected() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("p.csv"), "0,1,label\n5,6,1\n7,8,0\n").unwrap();
    let d = load_domain(dir.path(), "p").unwrap();
    assert_eq!((d.n(), d.dim(), d.labels), (2, 2, Some(vec![1, 0])));
    std::fs::write(dir.path().join("p.csv"), ",a,b\n0,6,1\n1,8,0\n").unwrap();
    assert!(err(load_domain(dir.path(), "p")).contains("column 1 has no name"));
}

#[test]
fn csv_header_only_is_empty_domain() {
    let dir = tempdir().unwrap();
    std::fs::write(dir.path().join("e.csv"), "a,b,label\n").unwrap();
    assert!(err(load_domain(dir.path(), "e")).contains("empty"));
}

#[test]
fn mat_column_major_values_and_one_based_labels() {
    let dir = tempdir().unwrap();
    // MATLAB 3×2 [[1,2],[3,4],[5,6]] stored column by column.
    write_mat(
        &dir.path().join("a_SURF.mat"),
        &[
            ("fts", &[3, 2], MatData::UInt8(vec![1, 3, 5, 2, 4, 6])),
            ("labels", &[3, 1], MatData::UInt8(vec![1, 2, 1])),
        ],
    );
    let d = load_domain(dir.path(), "a").unwrap();
    assert_eq!(d.features, arr2(&[[1f32, 2.0], [3.0, 4.0], [5.0, 6.0]]));
    assert_eq!(d.labels, Some(vec![0, 1, 0]));
    assert_eq!((d.format, d.label_rule), (FileFormat::Mat, LabelRule::OneBasedShifted));
}

#[test]
fn mat_label_beyond_classes_txt_shows_stored_value() {
    let dir = tempdir().unwrap();
    write_mat(
        &dir.path().join("a.mat"),
        &[
            ("fts", &[3, 1], MatData::UInt8(vec![1, 2, 3])),
            ("labels", &[3, 1], MatData::UInt8(vec![1, 2, 3])),
        ],
    );
    std::fs::write(dir.path().join("classes.txt"), "x\ny\n").unwrap();
    let e = err(load_domain(dir.path(), "a"));
    assert!(
        e.contains("a.mat") && e.contains("label 3 at position 2") && e.contains("2 classes"),
        "{e}"
    );
}

#[test]
fn mat_d_by_n_is_transposed_to_match_labels() {
    let dir = tempdir().unwrap();
    // 2×3 features (d×n) with 3 labels: samples are the columns.
    write_mat(
        &dir.path().join("w.mat"),
        &[
            ("X", &[2, 3], MatData::Double(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
            ("y", &[1, 3], MatData::Double(vec![0.0, 1.0, 1.0])),
        ],
    );
    let d = load_domain(dir.path(), "w").unwrap();
    assert_eq!(d.features, arr2(&[[1f32, 2.0], [3.0, 4.0], [5.0, 6.0]]));
    assert_eq!((d.labels, d.label_rule), (Some(vec![0, 1, 1]), LabelRule::ZeroBased));
}

#[test]
fn mat_one_based_rule_is_decided_over_the_folder() {
    let dir = tempdir().unwrap();
    let feats = || MatData::Double(vec![0.5; 4]);
    // The target alone has no label 1, but its sibling does: both are 1-based.
    write_mat(
        &dir.path().join("t_f.mat"),
        &[("feas", &[2, 2], feats()), ("label", &[2, 1], MatData::Double(vec![2.0, 3.0]))],
    );
    write_mat(
        &dir.path().join("s_f.mat"),
        &[("feas", &[2, 2], feats()), ("label", &[2, 1], MatData::Double(vec![1.0, 2.0]))],
    );
    let t = load_domain(dir.path(), "t").unwrap();
    assert_eq!((t.labels, t.label_rule), (Some(vec![1, 2]), LabelRule::OneBasedShifted));
    let (s, t) = load_pair(dir.path(), "s", "t").unwrap();
    assert_eq!((s.n_classes(), t.n_classes(), s.labels), (3, 3, Some(vec![0, 1])));
    // Without the sibling, labels 2,3 are taken as 0-based.
    std::fs::remove_file(dir.path().join("s_f.mat")).unwrap();
    let t = load_domain(dir.path(), "t").unwrap();
    assert_eq!((t.labels, t.label_rule), (Some(vec![2, 3]), LabelRule::ZeroBased));
}

#[test]
fn mat_suffix_features_key_and_trailing_singletons() {
    let dir = tempdir().unwrap();
    write_mat(
        &dir.path().join("office-D.mat"),
        &[
            (
                "resnet50_features",
                &[2, 3, 1, 1],
                MatData::Double(vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]),
            ),
            ("labels", &[1, 2], MatData::Double(vec![0.0, 1.0])),
        ],
    );
    let d = load_domain(dir.path(), "office-D").unwrap();
    assert_eq!(d.features, arr2(&[[1f32, 2.0, 3.0], [4.0, 5.0, 6.0]]));
}

#[test]
fn mat_without_feature_key_lists_keys() {
    let dir = tempdir().unwrap();
    write_mat(
        &dir.path().join("k.mat"),
        &[
            ("data", &[1, 1], MatData::Double(vec![1.0])),
            ("gnd", &[1, 1], MatData::Double(vec![1.0])),
        ],
    );
    let e = err(load_domain(dir.path(), "k"));
    assert!(e.contains("no features array") && e.contains("data, gnd"), "{e}");
}

#[test]
fn mat_v73_is_rejected_with_conversion_hint() {
    let dir = tempdir().unwrap();
    let mut bytes = format!(
        "{:<116}",
        "MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: Mon Jan 1 HDF5 schema 1.00 ."
    )
    .into_bytes();
    bytes.resize(1024, 0);
    std::fs::write(dir.path().join("v.mat"), bytes).unwrap();
    let e = load_domain(dir.path(), "v").unwrap_err();
    assert!(matches!(e, Error::BadFile { .. }));
    let e = e.to_string();
    assert!(e.contains("v7.3") && e.contains("format='5'") && e.contains("-v7"), "{e}");
}

#[test]
fn corrupt_mat_is_bad_file() {
    let dir = tempdir().unwrap();
    let p = dir.path().join("c.mat");
    write_mat(&p, &[("fts", &[3, 2], MatData::Double(vec![1.0; 6]))]);
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 20]).unwrap();
    assert!(matches!(load_domain(dir.path(), "c"), Err(Error::BadFile { .. })));
    // Dimensions whose product overflows i32 inside the parser.
    write_mat(&p, &[("fts", &[65536, 65536], MatData::Double(vec![1.0; 6]))]);
    assert!(matches!(load_domain(dir.path(), "c"), Err(Error::BadFile { .. })));
    std::fs::write(&p, b"not a mat file").unwrap();
    assert!(err(load_domain(dir.path(), "c")).contains("not a MATLAB v5"));
}
