//! `.npy` reading on top of ndarray-npy (no optional features needed: plain `.npy` only).
//!
//! Accepted dtypes: float32, float64 and every integer width, either byte order. Features
//! are converted to f32; labels to i64 (float labels must hold whole numbers). Fortran-order
//! files are read correctly: ndarray-npy builds the array with Fortran strides and we copy
//! it to standard layout.

use std::path::Path;

use ndarray::{Array2, ArrayD, Axis, Ix2};
use ndarray_npy::npy::header::Header;
use ndarray_npy::{ReadNpyError, ReadNpyExt, ReadableElement};

use super::npy_header::{check_header_depth, declared_header_len};
use crate::{Error, Result};

/// The element types we convert from, grouped by what the conversion needs.
enum Values {
    F32(ArrayD<f32>),
    F64(ArrayD<f64>),
    I64(ArrayD<i64>),
    U64(ArrayD<u64>),
}

/// Reads `path` as an n×d feature matrix. Trailing singleton axes (e.g. n×d×1×1) are dropped.
/// Read a block of rows at a time into one allocation ([`super::npy_rows`]), so the file's bytes
/// are never held whole beside the matrix.
pub(super) fn read_features(path: &Path) -> Result<Array2<f32>> {
    super::npy_rows::NpyRows::open(path)?.read_all()
}

/// [`read_features`] on the bytes of a file; `path` only names it in errors.
pub(super) fn parse_features(bytes: &[u8], path: &Path) -> Result<Array2<f32>> {
    let (header, values) = parse_values(bytes, path)?;
    let shape = &header.shape;
    if shape.len() < 2 || shape[2..].iter().any(|&s| s != 1) {
        return Err(Error::bad_file(
            path,
            format!("features must be a 2-D array n×d (trailing singleton axes allowed), found shape {shape:?}"),
        ));
    }
    let x: ArrayD<f32> = match values {
        Values::F32(a) => a,
        Values::F64(a) => a.mapv(|v| v as f32),
        Values::I64(a) => a.mapv(|v| v as f32),
        Values::U64(a) => a.mapv(|v| v as f32),
    };
    Ok(squeeze_to_2d(x))
}

/// Reads `path` as a label vector: shape (n,), (n,1) or (1,n).
pub(super) fn read_labels(path: &Path) -> Result<Vec<i64>> {
    parse_labels(&read_file(path)?, path)
}

/// [`read_labels`] on the bytes of a file; `path` only names it in errors.
pub(super) fn parse_labels(bytes: &[u8], path: &Path) -> Result<Vec<i64>> {
    let (header, values) = parse_values(bytes, path)?;
    let shape = &header.shape;
    let ok = match shape.len() {
        1 => true,
        2 => shape[0] == 1 || shape[1] == 1,
        _ => false,
    };
    if !ok {
        return Err(Error::bad_file(
            path,
            format!("labels must have shape (n,), (n,1) or (1,n), found {shape:?}"),
        ));
    }
    match values {
        Values::I64(a) => Ok(a.iter().copied().collect()),
        Values::U64(a) => a
            .iter()
            .map(|&v| {
                i64::try_from(v)
                    .map_err(|_| Error::bad_file(path, format!("label {v} is too large")))
            })
            .collect(),
        Values::F32(a) => a.iter().map(|&v| float_label(path, f64::from(v))).collect(),
        Values::F64(a) => a.iter().map(|&v| float_label(path, v)).collect(),
    }
}

/// Float labels (common in files written from MATLAB or pandas) must be whole numbers.
pub(super) fn float_label(path: &Path, v: f64) -> Result<i64> {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 9.0e15 {
        Ok(v as i64)
    } else {
        Err(Error::bad_file(path, format!("label {v} is not an integer")))
    }
}

/// Drops axes 2.. (all of length 1, checked by the caller) and returns a standard-layout matrix.
pub(super) fn squeeze_to_2d<T: Clone>(mut x: ArrayD<T>) -> Array2<T> {
    while x.ndim() > 2 {
        let last = Axis(x.ndim() - 1);
        x = x.index_axis_move(last, 0);
    }
    let x =
        x.into_dimensionality::<Ix2>().expect("caller checked that there are at least two axes");
    if x.is_standard_layout() {
        x
    } else {
        x.as_standard_layout().into_owned()
    }
}

/// The whole content of `path`.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// Parses the header for shape checks, then the data in its dtype.
fn parse_values(bytes: &[u8], path: &Path) -> Result<(Header, Values)> {
    if bytes.is_empty() {
        return Err(Error::bad_file(path, "empty file (0 bytes): re-export it with numpy.save"));
    }
    let corrupt = |e: &dyn std::fmt::Display| {
        Error::bad_file(path, format!("not a valid .npy file (corrupt or truncated): {e}"))
    };
    // ndarray-npy allocates the header's declared length before reading it: check that
    // length against the file first (found by fuzzing: a 12-byte file claiming 2.6 GB).
    if let Some((preamble, header_len)) = declared_header_len(bytes) {
        if header_len > bytes.len() - preamble {
            return Err(Error::bad_file(
                path,
                format!(
                    "truncated .npy file: the header claims {header_len} bytes but the file has {} bytes",
                    bytes.len()
                ),
            ));
        }
        // The header's Python-literal parser backtracks exponentially in the nesting depth
        // of `{` and `[` (found by fuzzing: 60 nested `{` never finish, 12 take a minute).
        check_header_depth(&bytes[preamble..preamble + header_len], path)?;
    }
    let header = Header::from_reader(&mut &*bytes).map_err(|e| corrupt(&e))?;
    // Guard before reading: a corrupt header could ask for a huge allocation. Every value
    // takes at least one byte, so more values than bytes means the file is truncated.
    let count = header.shape.iter().try_fold(1usize, |acc, &s| acc.checked_mul(s));
    if count.is_none_or(|c| c > bytes.len()) {
        return Err(Error::bad_file(
            path,
            format!(
                "truncated .npy file: header says shape {:?} but the file has {} bytes",
                header.shape,
                bytes.len()
            ),
        ));
    }
    let data = bytes;
    let map_err = |e: ReadNpyError| corrupt(&e);
    if let Some(a) = try_read::<f32>(data).map_err(map_err)? {
        return Ok((header, Values::F32(a)));
    }
    if let Some(a) = try_read::<f64>(data).map_err(map_err)? {
        return Ok((header, Values::F64(a)));
    }
    macro_rules! int_as_i64 {
        ($($t:ty),*) => {$(
            if let Some(a) = try_read::<$t>(data).map_err(map_err)? {
                return Ok((header, Values::I64(a.mapv(i64::from))));
            }
        )*};
    }
    int_as_i64!(i64, i32, i16, i8, u32, u16, u8);
    if let Some(a) = try_read::<u64>(data).map_err(map_err)? {
        return Ok((header, Values::U64(a)));
    }
    Err(Error::bad_file(
        path,
        format!(
            "unsupported dtype {}: expected a float (f4, f8) or integer array",
            header.type_descriptor
        ),
    ))
}

/// `Ok(None)` when the file's dtype is not `T`, so the caller can try the next type.
fn try_read<T: ReadableElement>(
    data: &[u8],
) -> std::result::Result<Option<ArrayD<T>>, ReadNpyError> {
    match ArrayD::<T>::read_npy(data) {
        Ok(a) => Ok(Some(a)),
        Err(ReadNpyError::WrongDescriptor(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
