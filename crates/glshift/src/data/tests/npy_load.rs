//! The npy layout, discovery, and per-domain errors.

use std::path::Path;

use ndarray::{arr1, arr2, Array2, Array3, Array4, ShapeBuilder};
use tempfile::tempdir;

use super::{err, grid, npy, npy_domain};
use crate::data::{list_domains, load_domain, FileFormat, LabelRule};
use crate::Error;

#[test]
fn npy_domain_round_trips_with_classes_txt() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "amazon", &grid(4, 3), Some(&[0, 1, 2, 1]));
    std::fs::write(dir.path().join("classes.txt"), "cat\ndog\nbird\n\n").unwrap();
    let d = load_domain(dir.path(), "amazon").unwrap();
    assert_eq!(d.features, grid(4, 3));
    assert_eq!(d.labels, Some(vec![0, 1, 2, 1]));
    assert_eq!(d.class_names, ["cat", "dog", "bird"]);
    assert_eq!((d.n(), d.dim(), d.n_classes()), (4, 3, 3));
    assert_eq!((d.format, d.label_rule), (FileFormat::Npy, LabelRule::ZeroBased));
    assert!(d.path.ends_with("amazon_features.npy"));
}

#[test]
fn npy_without_labels_or_classes_is_unlabelled() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "t", &grid(2, 2), None);
    let d = load_domain(dir.path(), "t").unwrap();
    assert_eq!(d.labels, None);
    assert_eq!(d.n_classes(), 0);
}

#[test]
fn npy_f64_and_integer_features_are_converted() {
    let dir = tempdir().unwrap();
    npy(dir.path(), "a_features.npy", &arr2(&[[1.5f64, -2.0], [3.0, 4.25]]));
    npy(dir.path(), "b_features.npy", &arr2(&[[1u8, 2], [3, 255]]));
    npy(dir.path(), "c_features.npy", &arr2(&[[-7i64, 2], [3, 4]]));
    assert_eq!(
        load_domain(dir.path(), "a").unwrap().features,
        arr2(&[[1.5f32, -2.0], [3.0, 4.25]])
    );
    assert_eq!(load_domain(dir.path(), "b").unwrap().features, arr2(&[[1f32, 2.0], [3.0, 255.0]]));
    assert_eq!(load_domain(dir.path(), "c").unwrap().features, arr2(&[[-7f32, 2.0], [3.0, 4.0]]));
}

#[test]
fn npy_fortran_order_is_read_by_logical_index() {
    let dir = tempdir().unwrap();
    // Fortran strides: ndarray-npy writes this with fortran_order = True.
    let f = Array2::from_shape_vec((3, 2).f(), vec![0f32, 10.0, 20.0, 1.0, 11.0, 21.0]).unwrap();
    assert!(!f.is_standard_layout());
    npy(dir.path(), "f_features.npy", &f);
    let bytes = std::fs::read(dir.path().join("f_features.npy")).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..128]).contains("'fortran_order': True"));
    let d = load_domain(dir.path(), "f").unwrap();
    assert_eq!(d.features, grid(3, 2));
    assert!(d.features.is_standard_layout());
}

#[test]
fn npy_label_shapes_and_dtypes() {
    let dir = tempdir().unwrap();
    let p = dir.path();
    npy(p, "a_features.npy", &grid(3, 2));
    npy(p, "a_labels.npy", &arr2(&[[2i32], [0], [1]])); // (n,1) int32
    npy(p, "b_features.npy", &grid(3, 2));
    npy(p, "b_labels.npy", &arr2(&[[1u8, 0, 2]])); // (1,n) uint8
    npy(p, "c_features.npy", &grid(3, 2));
    npy(p, "c_labels.npy", &arr1(&[1.0f64, 2.0, 0.0])); // whole-number floats
    assert_eq!(load_domain(p, "a").unwrap().labels, Some(vec![2, 0, 1]));
    assert_eq!(load_domain(p, "b").unwrap().labels, Some(vec![1, 0, 2]));
    assert_eq!(load_domain(p, "c").unwrap().labels, Some(vec![1, 2, 0]));
    npy(p, "d_features.npy", &grid(3, 2));
    npy(p, "d_labels.npy", &arr1(&[1.0f64, 2.5, 0.0]));
    assert!(err(load_domain(p, "d")).contains("2.5 is not an integer"));
    npy(p, "e_features.npy", &grid(4, 2));
    npy(p, "e_labels.npy", &arr2(&[[1i64, 0], [0, 1]]));
    assert!(err(load_domain(p, "e")).contains("labels must have shape"));
}

#[test]
fn npy_trailing_singleton_axes_are_squeezed_other_3d_rejected() {
    let dir = tempdir().unwrap();
    let x4 = Array4::from_shape_fn((3, 2, 1, 1), |(i, j, _, _)| (i * 10 + j) as f32);
    npy(dir.path(), "sq_features.npy", &x4);
    assert_eq!(load_domain(dir.path(), "sq").unwrap().features, grid(3, 2));
    npy(dir.path(), "cube_features.npy", &Array3::<f32>::zeros((3, 2, 2)));
    let e = err(load_domain(dir.path(), "cube"));
    assert!(e.contains("cube_features.npy") && e.contains("[3, 2, 2]"), "{e}");
    npy(dir.path(), "flat_features.npy", &arr1(&[1f32, 2.0]));
    assert!(err(load_domain(dir.path(), "flat")).contains("2-D"));
}

#[test]
fn truncated_npy_is_bad_file() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &grid(50, 4), None);
    let p = dir.path().join("a_features.npy");
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, &bytes[..bytes.len() - 9]).unwrap();
    let e = load_domain(dir.path(), "a").unwrap_err();
    assert!(matches!(&e, Error::BadFile { path, .. } if path == &p), "{e:?}");
    // The length is checked against the header before any data is read.
    assert!(e.to_string().contains("truncated .npy file"), "{e}");
    // Cut inside the header, and a file that is not npy at all.
    std::fs::write(&p, &bytes[..20]).unwrap();
    assert!(matches!(load_domain(dir.path(), "a"), Err(Error::BadFile { .. })));
    std::fs::write(&p, b"hello, world").unwrap();
    assert!(err(load_domain(dir.path(), "a")).contains("not a valid .npy"));
}

#[test]
fn npy_header_claiming_huge_shape_is_truncated_not_oom() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &grid(2, 2), None);
    let p = dir.path().join("a_features.npy");
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes.windows(6).position(|w| w == b"(2, 2)").unwrap();
    bytes.splice(at..at + 6, b"(999999999999, 2)".iter().copied());
    // Keep the header length: drop 11 of the padding spaces.
    let sp = bytes.windows(11).position(|w| w == [b' '; 11]).unwrap();
    bytes.drain(sp..sp + 11);
    std::fs::write(&p, bytes).unwrap();
    let e = err(load_domain(dir.path(), "a"));
    assert!(e.contains("header says shape [999999999999, 2]"), "{e}");
}

#[test]
fn npy_header_length_beyond_the_file_is_refused_before_reading() {
    // Found by fuzzing: version 2.0 with a u32 header length of about 2.6 GB; the header
    // parser would allocate that much before noticing the file ends.
    let mut bytes = b"\x93NUMPY\x02\x00".to_vec();
    bytes.extend(2_670_328_892u32.to_le_bytes());
    let e = err(crate::data::parse_npy_matrix(&bytes, Path::new("h.npy")));
    assert!(
        e.contains("h.npy")
            && e.contains("header claims 2670328892 bytes but the file has 12 bytes"),
        "{e}"
    );
}

#[test]
fn npy_header_nested_too_deep_is_refused_before_parsing() {
    // Found by fuzzing: the header parser backtracks exponentially in `{`/`[` nesting;
    // 60 levels never finish. Header: 60 `{` and the closing newline (61 bytes).
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(61u16.to_le_bytes());
    bytes.extend([b'{'; 60]);
    bytes.push(b'\n');
    let e = err(crate::data::parse_npy_matrix(&bytes, Path::new("deep.npy")));
    assert!(e.contains("deep.npy") && e.contains("nests brackets 60 deep"), "{e}");
}

#[test]
fn unsupported_dtype_is_rejected() {
    let dir = tempdir().unwrap();
    npy(dir.path(), "b_features.npy", &arr2(&[[true, false]]));
    let e = err(load_domain(dir.path(), "b"));
    assert!(e.contains("unsupported dtype") && e.contains("b1"), "{e}");
}

#[test]
fn missing_folder_is_reported() {
    let dir = tempdir().unwrap();
    let missing = dir.path().join("nope");
    let e = err(load_domain(&missing, "amazon"));
    assert!(e.contains("nope") && e.contains("does not exist"), "{e}");
    assert!(list_domains(&missing).is_err());
}

#[test]
fn unknown_domain_lists_existing_domains() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "amazon", &grid(2, 2), Some(&[0, 1]));
    npy_domain(dir.path(), "webcam", &grid(2, 2), None);
    std::fs::write(dir.path().join("dslr.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(dir.path().join("caltech_SURF_L10.mat"), b"").unwrap();
    assert_eq!(list_domains(dir.path()).unwrap(), ["amazon", "caltech", "dslr", "webcam"]);
    let e = load_domain(dir.path(), "amazn").unwrap_err();
    assert!(matches!(e, Error::UnknownDomain { .. }));
    assert!(e.to_string().contains("amazon, caltech, dslr, webcam"), "{e}");
    assert!(err(load_domain(dir.path(), "../x")).contains("not a valid domain name"));
}

#[test]
fn ambiguous_domain_lists_candidates() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &grid(2, 2), None);
    std::fs::write(dir.path().join("a.csv"), "x,y\n1,2\n").unwrap();
    let e = err(load_domain(dir.path(), "a"));
    assert!(e.contains("ambiguous") && e.contains("a_features.npy") && e.contains("a.csv"), "{e}");
    std::fs::write(dir.path().join("m_SURF.mat"), b"").unwrap();
    std::fs::write(dir.path().join("m_decaf.mat"), b"").unwrap();
    let e = err(load_domain(dir.path(), "m"));
    assert!(e.contains("m_SURF.mat") && e.contains("m_decaf.mat"), "{e}");
}

#[test]
fn label_count_mismatch_names_file_and_counts() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &grid(3, 2), Some(&[0, 1]));
    let e = err(load_domain(dir.path(), "a"));
    assert!(
        e.contains("a_labels.npy") && e.contains("2 labels") && e.contains("3 feature rows"),
        "{e}"
    );
}

#[test]
fn labels_out_of_range_or_negative_are_rejected() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &grid(3, 2), Some(&[0, 3, 1]));
    std::fs::write(dir.path().join("classes.txt"), "x\ny\nz\n").unwrap();
    let e = err(load_domain(dir.path(), "a"));
    assert!(
        e.contains("a_labels.npy")
            && e.contains("label 3 at position 1")
            && e.contains("3 classes"),
        "{e}"
    );
    npy_domain(dir.path(), "b", &grid(3, 2), Some(&[0, -1, 1]));
    let e = err(load_domain(dir.path(), "b"));
    assert!(
        e.contains("b_labels.npy") && e.contains("label -1 at position 1 (0-based) is negative"),
        "{e}"
    );
}

#[test]
fn bad_classes_txt_is_rejected() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &grid(2, 2), Some(&[0, 1]));
    std::fs::write(dir.path().join("classes.txt"), "x\n\ny\n").unwrap();
    assert!(err(load_domain(dir.path(), "a")).contains("line 2 is empty"));
    std::fs::write(dir.path().join("classes.txt"), "x\nx\n").unwrap();
    assert!(err(load_domain(dir.path(), "a")).contains("lines 1 and 2"));
}

#[test]
fn non_finite_features_name_row_and_column() {
    let dir = tempdir().unwrap();
    let mut x = grid(3, 4);
    x[[1, 2]] = f32::NAN;
    npy_domain(dir.path(), "a", &x, None);
    let e = err(load_domain(dir.path(), "a"));
    assert!(e.contains("NaN at row 1, column 2"), "{e}");
    x[[1, 2]] = 0.0;
    x[[2, 0]] = f32::NEG_INFINITY;
    npy_domain(dir.path(), "a", &x, None);
    assert!(err(load_domain(dir.path(), "a")).contains("-inf at row 2, column 0"));
}

#[test]
fn empty_domain_is_rejected() {
    let dir = tempdir().unwrap();
    npy_domain(dir.path(), "a", &Array2::<f32>::zeros((0, 5)), Some(&[]));
    assert!(err(load_domain(dir.path(), "a")).contains("empty"));
    npy_domain(dir.path(), "b", &Array2::<f32>::zeros((3, 0)), None);
    assert!(err(load_domain(dir.path(), "b")).contains("no feature columns"));
}
