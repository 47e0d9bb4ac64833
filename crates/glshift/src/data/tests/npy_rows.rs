//! The block-by-block `.npy` reader against the whole-file reader: identical values at every
//! block size and dtype, and clear errors naming the file for bad or truncated files.

use std::path::Path;

use ndarray::{concatenate, Array2, Axis, ShapeBuilder};
use tempfile::tempdir;

use super::{err, npy};
use crate::data::{parse_npy_matrix, NpyRows};

/// A 37 × 5 matrix of awkward values (negative, fractional, large).
fn values() -> Array2<f32> {
    Array2::from_shape_fn((37, 5), |(i, j)| ((i * 7919 + j * 104729) % 1000) as f32 * 0.37 - 150.0)
}

/// Every block of `path` read `rows` at a time, stacked back into one matrix.
fn by_blocks(path: &Path, rows: usize) -> Array2<f32> {
    let mut r = NpyRows::open(path).unwrap();
    let d = r.ncols();
    let mut blocks = Vec::new();
    while let Some(b) = r.next_chunk(rows).unwrap() {
        assert!(b.nrows() <= rows && b.ncols() == d);
        blocks.push(b);
    }
    let views: Vec<_> = blocks.iter().map(|b| b.view()).collect();
    concatenate(Axis(0), &views).unwrap()
}

/// The whole-file reader's result on the same file's bytes.
fn whole(path: &Path) -> Array2<f32> {
    parse_npy_matrix(&std::fs::read(path).unwrap(), path).unwrap()
}

/// Bit patterns, so that -0.0 vs 0.0 and NaN payloads would show.
fn bits(x: &Array2<f32>) -> Vec<u32> {
    x.iter().map(|v| v.to_bits()).collect()
}

#[test]
fn blocks_of_every_size_equal_the_whole_file_reader() {
    let dir = tempdir().unwrap();
    npy(dir.path(), "c.npy", &values());
    // The same values in Fortran order (column-major data, `fortran_order: True`).
    npy(
        dir.path(),
        "f.npy",
        &Array2::from_shape_vec((37, 5).f(), values().t().iter().copied().collect()).unwrap(),
    );
    for name in ["c.npy", "f.npy"] {
        let p = dir.path().join(name);
        let expected = whole(&p);
        assert_eq!(expected, values(), "{name}");
        for rows in [1, 2, 7, 36, 37, 38, 8192] {
            assert_eq!(
                bits(&by_blocks(&p, rows)),
                bits(&expected),
                "{name}, {rows} rows per block"
            );
        }
        assert_eq!(bits(&NpyRows::open(&p).unwrap().read_all().unwrap()), bits(&expected));
    }
    let header = String::from_utf8_lossy(&std::fs::read(dir.path().join("f.npy")).unwrap()[..100])
        .to_string();
    assert!(header.contains("'fortran_order': True"), "{header}");
}

#[test]
fn every_dtype_converts_as_the_whole_file_reader_does() {
    let dir = tempdir().unwrap();
    let base = Array2::from_shape_fn((9, 3), |(i, j)| (i * 3 + j) as i64 * 17 - 60);
    npy(dir.path(), "f8.npy", &base.mapv(|v| v as f64 * 1.0000001));
    npy(dir.path(), "i1.npy", &base.mapv(|v| v as i8));
    npy(dir.path(), "i2.npy", &base.mapv(|v| v as i16));
    npy(dir.path(), "i4.npy", &base.mapv(|v| v as i32));
    npy(dir.path(), "i8.npy", &base.mapv(|v| v * 1_000_000_007));
    npy(dir.path(), "u1.npy", &base.mapv(|v| v.unsigned_abs() as u8));
    npy(dir.path(), "u2.npy", &base.mapv(|v| v.unsigned_abs() as u16));
    npy(dir.path(), "u4.npy", &base.mapv(|v| v.unsigned_abs() as u32));
    npy(dir.path(), "u8.npy", &base.mapv(|v| v.unsigned_abs() * (u64::MAX / 400)));
    for name in ["f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"] {
        let p = dir.path().join(format!("{name}.npy"));
        assert_eq!(bits(&by_blocks(&p, 4)), bits(&whole(&p)), "{name}");
    }
}

#[test]
fn big_endian_files_are_read() {
    let dir = tempdir().unwrap();
    let p = dir.path().join("be.npy");
    let mut bytes = npy_header("'>f8'", "False", "(2, 2)");
    for v in [1.5f64, -2.0, 3.25, 1e300] {
        bytes.extend_from_slice(&v.to_be_bytes());
    }
    std::fs::write(&p, &bytes).unwrap();
    assert_eq!(bits(&by_blocks(&p, 1)), bits(&whole(&p)));
    assert_eq!(by_blocks(&p, 1)[[1, 0]], 3.25);
}

/// A version 1.0 `.npy` preamble and header for `descr`, `fortran` and `shape` (Python text).
fn npy_header(descr: &str, fortran: &str, shape: &str) -> Vec<u8> {
    let mut dict = format!("{{'descr': {descr}, 'fortran_order': {fortran}, 'shape': {shape}, }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out
}

#[test]
fn a_truncated_file_is_refused_on_opening_naming_it() {
    let dir = tempdir().unwrap();
    let p = dir.path().join("cut_features.npy");
    npy(dir.path(), "cut_features.npy", &values());
    let full = std::fs::read(&p).unwrap();
    for keep in [full.len() - 1, full.len() - 20, 140, 60, 9] {
        std::fs::write(&p, &full[..keep]).unwrap();
        let e = err(NpyRows::open(&p).map(|_| ()));
        assert!(e.contains("cut_features.npy"), "{keep} bytes: {e}");
        assert!(e.contains("truncated"), "{keep} bytes: {e}");
    }
    let mut longer = full.clone();
    longer.extend_from_slice(&[0; 4]);
    std::fs::write(&p, &longer).unwrap();
    assert!(err(NpyRows::open(&p).map(|_| ())).contains("4 extra bytes"));
}

#[test]
fn bad_headers_are_errors_naming_the_file() {
    let dir = tempdir().unwrap();
    let p = dir.path().join("bad.npy");
    let cases: [(Vec<u8>, &str); 6] = [
        (Vec::new(), "empty file"),
        (b"not a numpy file at all, just text".to_vec(), "not a valid .npy file"),
        (npy_header("'<f4'", "False", "(4,)"), "2-D array"),
        (npy_header("'<f4'", "False", "(2, 3, 2)"), "2-D array"),
        (npy_header("'|b1'", "False", "(1, 1)"), "unsupported dtype"),
        (npy_header("'<c8'", "False", "(1, 1)"), "unsupported dtype"),
    ];
    for (bytes, expected) in cases {
        let mut bytes = bytes;
        bytes.extend_from_slice(&[0; 8]);
        if expected == "empty file" {
            bytes.clear();
        }
        std::fs::write(&p, &bytes).unwrap();
        let e = err(NpyRows::open(&p).map(|_| ()));
        assert!(e.contains("bad.npy") && e.contains(expected), "expected '{expected}': {e}");
    }
    // A header claiming more bytes than the file has.
    let mut claim = b"\x93NUMPY\x01\x00".to_vec();
    claim.extend_from_slice(&u16::MAX.to_le_bytes());
    std::fs::write(&p, &claim).unwrap();
    assert!(err(NpyRows::open(&p).map(|_| ())).contains("header claims 65535 bytes"));
    let e = err(NpyRows::open(&dir.path().join("missing.npy")).map(|_| ()));
    assert!(e.contains("missing.npy"), "{e}");
}

#[test]
fn trailing_singleton_axes_and_empty_files_read_like_the_whole_file_reader() {
    let dir = tempdir().unwrap();
    npy(dir.path(), "x4.npy", &values().into_shape_with_order((37, 5, 1, 1)).unwrap());
    let p = dir.path().join("x4.npy");
    assert_eq!(by_blocks(&p, 5), values());
    npy(dir.path(), "none.npy", &Array2::<f32>::zeros((0, 5)));
    let mut r = NpyRows::open(&dir.path().join("none.npy")).unwrap();
    assert_eq!((r.nrows(), r.ncols()), (0, 5));
    assert!(r.next_chunk(8).unwrap().is_none());
}
