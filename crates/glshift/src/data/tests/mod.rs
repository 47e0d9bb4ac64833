//! Unit tests of the data module on small fixture files written into temporary folders.

mod csv_mat;
mod mat_check;
mod npy_load;
mod npy_rows;
mod pair;
mod parse_bytes;
mod preprocess;

use std::path::Path;

use ndarray::{Array, Array2, Dimension};
use ndarray_npy::{write_npy, WritableElement};

use crate::Result;

/// Writes `dir/name` as `.npy`.
fn npy<T: WritableElement, D: Dimension>(dir: &Path, name: &str, a: &Array<T, D>) {
    write_npy(dir.join(name), a).unwrap();
}

/// Writes `<name>_features.npy` and, if given, `<name>_labels.npy` (int64).
fn npy_domain(dir: &Path, name: &str, x: &Array2<f32>, y: Option<&[i64]>) {
    npy(dir, &format!("{name}_features.npy"), x);
    if let Some(y) = y {
        npy(dir, &format!("{name}_labels.npy"), &ndarray::arr1(y));
    }
}

/// A small feature matrix whose values encode their position (row*10 + col).
fn grid(n: usize, d: usize) -> Array2<f32> {
    Array2::from_shape_fn((n, d), |(i, j)| (i * 10 + j) as f32)
}

/// The error message of `r`, failing the test when `r` is Ok.
fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
    r.expect_err("expected an error").to_string()
}

/// Column-major numeric data for [`write_mat`].
enum MatData {
    Double(Vec<f64>),
    UInt8(Vec<u8>),
}

/// Writes a minimal uncompressed little-endian MATLAB v5 file (enough for the matfile
/// parser), so `.mat` handling can be tested with known values; `dims` are MATLAB sizes.
fn write_mat(path: &Path, vars: &[(&str, &[usize], MatData)]) {
    fn element(out: &mut Vec<u8>, ty: u32, data: &[u8]) {
        out.extend(ty.to_le_bytes());
        out.extend((data.len() as u32).to_le_bytes());
        out.extend(data);
        out.resize(out.len().next_multiple_of(8), 0);
    }
    let mut file = format!("{:<116}", "MATLAB 5.0 MAT-file, written by glshift tests").into_bytes();
    file.extend([0u8; 8]);
    file.extend(0x0100u16.to_le_bytes());
    file.extend(b"IM");
    for (name, dims, data) in vars {
        let (class, ty, bytes): (u32, u32, Vec<u8>) = match data {
            MatData::Double(v) => (6, 9, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            MatData::UInt8(v) => (9, 2, v.clone()),
        };
        let mut body = Vec::new();
        element(&mut body, 6, &[class.to_le_bytes(), 0u32.to_le_bytes()].concat());
        let d: Vec<u8> = dims.iter().flat_map(|&s| (s as i32).to_le_bytes()).collect();
        element(&mut body, 5, &d);
        element(&mut body, 1, name.as_bytes());
        element(&mut body, ty, &bytes);
        element(&mut file, 14, &body);
    }
    std::fs::write(path, file).unwrap();
}
