//! MATLAB v5 `.mat` reading on top of the matfile crate.
//!
//! matfile stores data column-major (MATLAB order: the first index varies fastest), so an
//! array of MATLAB size r×c is built with Fortran strides and then copied to row-major.
//! Rows are samples, unless only the columns match the number of labels (some files store
//! d×n); then the matrix is transposed.

use std::path::Path;

use matfile::{MatFile, NumericData};
use ndarray::{Array2, ArrayD, IxDyn, ShapeBuilder};

use super::mat_check;
use super::npy::{float_label, squeeze_to_2d};
use super::{ParsedFile, RawDomain};
use crate::{Error, Result};

/// Names tried for the features, in this order; then any single name ending in `_features`.
const FEATURE_KEYS: [&str; 4] = ["fts", "feas", "X", "features"];
/// Names tried for the labels, in this order.
const LABEL_KEYS: [&str; 4] = ["labels", "label", "Y", "y"];

/// Reads features and (if present) labels of one `.mat` domain file.
pub(super) fn read_mat(path: &Path) -> Result<RawDomain> {
    let parsed = parse_mat(&read_file(path)?, path)?;
    Ok(RawDomain::new(parsed, path))
}

/// [`read_mat`] on the bytes of a file; `path` only names it in errors.
pub(super) fn parse_mat(bytes: &[u8], path: &Path) -> Result<ParsedFile> {
    let mat = parse(bytes, path)?;
    let feat = find_features(&mat, path)?;
    let labels = read_labels(&mat, path)?;
    let mut features = to_f32_matrix(feat, path)?;
    if let Some(l) = &labels {
        // Orientation: samples are rows unless only the column count matches the labels.
        if features.nrows() != l.len() && features.ncols() == l.len() {
            features = features.t().as_standard_layout().into_owned();
        }
    }
    Ok(ParsedFile { features, labels, feature_names: None })
}

/// Labels of a `.mat` file only (used to decide the 1-based rule over a whole folder).
pub(super) fn read_mat_labels(path: &Path) -> Result<Option<Vec<i64>>> {
    read_labels(&parse(&read_file(path)?, path)?, path)
}

/// The whole content of `path`.
fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io { path: path.to_path_buf(), source })
}

/// Parses the bytes of a `.mat` file, turning every failure (including a panic inside the
/// parser on malformed input) into [`Error::BadFile`] naming `path`.
fn parse(bytes: &[u8], path: &Path) -> Result<MatFile> {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(116)]);
    if text.starts_with("MATLAB 7.3") || bytes.starts_with(b"\x89HDF") {
        return Err(Error::bad_file(
            path,
            "MATLAB v7.3 (HDF5) .mat files are not supported; re-save as v5/v7, e.g. in Python \
             `scipy.io.savemat(path, data, format='5')` or in MATLAB `save(path, '-v7')`",
        ));
    }
    if bytes.len() < 128 || !text.starts_with("MATLAB") {
        return Err(Error::bad_file(
            path,
            "not a MATLAB v5 .mat file (no 'MATLAB 5.0 MAT-file' header; v4 files are not supported)",
        ));
    }
    // matfile trusts sizes in the file: check them first (see `mat_check`), then parse the
    // checked, uncompressed copy. The catch_unwind stays as a last line of defence: a bad
    // file must give an error, not abort the program.
    let checked = mat_check::numeric_arrays(bytes, path)?;
    match std::panic::catch_unwind(|| MatFile::parse(&checked[..])) {
        Ok(Ok(mat)) => Ok(mat),
        Ok(Err(e)) => {
            Err(Error::bad_file(path, format!("corrupt or truncated MATLAB v5 file: {e} ({e:?})")))
        }
        Err(_) => Err(Error::bad_file(path, "corrupt MATLAB v5 file (the parser failed)")),
    }
}

fn find_features<'m>(mat: &'m MatFile, path: &Path) -> Result<&'m matfile::Array> {
    if let Some(a) = FEATURE_KEYS.iter().find_map(|k| mat.find_by_name(k)) {
        return Ok(a);
    }
    let suffixed: Vec<_> =
        mat.arrays().iter().filter(|a| a.name().ends_with("_features")).collect();
    match suffixed.as_slice() {
        [one] => Ok(one),
        [] => Err(Error::bad_file(
            path,
            format!(
                "no features array: expected one of {} or a name ending in `_features`; numeric arrays in the file: {}",
                FEATURE_KEYS.join(", "),
                names(mat)
            ),
        )),
        many => Err(Error::bad_file(
            path,
            format!(
                "several candidate features arrays: {}",
                many.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

fn names(mat: &MatFile) -> String {
    let n: Vec<_> = mat.arrays().iter().map(|a| a.name()).collect();
    if n.is_empty() {
        "(none)".into()
    } else {
        n.join(", ")
    }
}

fn read_labels(mat: &MatFile, path: &Path) -> Result<Option<Vec<i64>>> {
    let Some(a) = LABEL_KEYS.iter().find_map(|k| mat.find_by_name(k)) else {
        return Ok(None);
    };
    // A vector: at most one axis longer than 1; order of a vector is the same either way.
    if a.size().iter().filter(|&&s| s != 1).count() > 1 {
        return Err(Error::bad_file(
            path,
            format!(
                "labels `{}` must be a vector (1×n or n×1), found size {:?}",
                a.name(),
                a.size()
            ),
        ));
    }
    let bad_complex = || Error::bad_file(path, format!("labels `{}` are complex", a.name()));
    macro_rules! ints {
        ($real:expr, $imag:expr) => {{
            if $imag.is_some() {
                return Err(bad_complex());
            }
            $real.iter().map(|&v| i64::from(v)).collect::<Vec<i64>>()
        }};
    }
    let v = match a.data() {
        NumericData::Int8 { real, imag } => ints!(real, imag),
        NumericData::UInt8 { real, imag } => ints!(real, imag),
        NumericData::Int16 { real, imag } => ints!(real, imag),
        NumericData::UInt16 { real, imag } => ints!(real, imag),
        NumericData::Int32 { real, imag } => ints!(real, imag),
        NumericData::UInt32 { real, imag } => ints!(real, imag),
        NumericData::Int64 { real, imag } => ints!(real, imag),
        NumericData::UInt64 { real, imag } => {
            if imag.is_some() {
                return Err(bad_complex());
            }
            real.iter()
                .map(|&v| {
                    i64::try_from(v)
                        .map_err(|_| Error::bad_file(path, format!("label {v} is too large")))
                })
                .collect::<Result<Vec<_>>>()?
        }
        NumericData::Single { real, imag } => {
            if imag.is_some() {
                return Err(bad_complex());
            }
            real.iter().map(|&v| float_label(path, f64::from(v))).collect::<Result<Vec<_>>>()?
        }
        NumericData::Double { real, imag } => {
            if imag.is_some() {
                return Err(bad_complex());
            }
            real.iter().map(|&v| float_label(path, v)).collect::<Result<Vec<_>>>()?
        }
    };
    Ok(Some(v))
}

/// Converts any real numeric class to an n×d f32 matrix, squeezing trailing singleton axes.
fn to_f32_matrix(a: &matfile::Array, path: &Path) -> Result<Array2<f32>> {
    let size = a.size().clone();
    if size.len() < 2 || size[2..].iter().any(|&s| s != 1) {
        return Err(Error::bad_file(
            path,
            format!(
                "features `{}` must be 2-D (trailing singleton axes allowed), found size {size:?}",
                a.name()
            ),
        ));
    }
    macro_rules! conv {
        ($real:expr, $imag:expr) => {{
            if $imag.is_some() {
                return Err(Error::bad_file(path, format!("features `{}` are complex", a.name())));
            }
            $real.iter().map(|&v| v as f32).collect::<Vec<f32>>()
        }};
    }
    let data = match a.data() {
        NumericData::Int8 { real, imag } => conv!(real, imag),
        NumericData::UInt8 { real, imag } => conv!(real, imag),
        NumericData::Int16 { real, imag } => conv!(real, imag),
        NumericData::UInt16 { real, imag } => conv!(real, imag),
        NumericData::Int32 { real, imag } => conv!(real, imag),
        NumericData::UInt32 { real, imag } => conv!(real, imag),
        NumericData::Int64 { real, imag } => conv!(real, imag),
        NumericData::UInt64 { real, imag } => conv!(real, imag),
        NumericData::Single { real, imag } => conv!(real, imag),
        NumericData::Double { real, imag } => conv!(real, imag),
    };
    // Column-major: Fortran strides over the MATLAB size.
    let x = ArrayD::from_shape_vec(IxDyn(&size).f(), data).map_err(|e| {
        Error::bad_file(
            path,
            format!("features `{}`: size {size:?} does not match the data ({e})", a.name()),
        )
    })?;
    Ok(squeeze_to_2d(x))
}
