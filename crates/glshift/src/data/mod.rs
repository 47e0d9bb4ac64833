//! Loading domains of pre-extracted features, validating them, and preprocessing them.
//!
//! A data folder holds one or more domains, each in one of three formats:
//! - npy: `<domain>_features.npy` (+ optional `<domain>_labels.npy`);
//! - MATLAB v5: `<domain>.mat` or a single `<domain>_*.mat` (e.g. `amazon_SURF_L10.mat`);
//! - CSV: `<domain>.csv` with a header row and an optional integer `label` column.
//!
//! An optional `classes.txt` (one class name per line) in the folder names the classes of
//! every domain in it.
//!
//! Labels in `.npy` and `.csv` files are taken as 0-based. Labels in `.mat` files are
//! 1-based (MATLAB convention) when the smallest label over all `.mat` files of the folder
//! is 1; they are then shifted to 0-based and the domain records
//! [`LabelRule::OneBasedShifted`]. Deciding per folder (not per file) keeps a target whose
//! class 1 happens to be missing aligned with its source. Sibling `.mat` files that cannot
//! be parsed or hold no labels do not take part in that decision.
//!
//! Features are f32 in memory; float64 and integer files are converted (see [`load_domain`]).

mod classes;
mod csv;
mod discover;
mod feature_file;
mod load;
mod mat;
mod mat_check;
mod npy;
mod npy_header;
mod npy_rows;
mod preprocess;
mod rows;
mod sources;
mod validate;

use std::io::Read;
use std::path::{Path, PathBuf};

use ndarray::Array2;

/// The content of one features file as its format stores it: what the `parse_*` functions
/// return, before labels are mapped to class indices and checked against the rows.
///
/// `features` is in standard (row-major) layout. Values are not yet checked: they may be
/// NaN or infinite ([`check_features`] does that), and `labels` is not yet compared with the
/// row count (CSV guarantees one label per row; `.mat` does not).
#[derive(Clone, Debug)]
pub struct ParsedFile {
    /// n×d features.
    pub features: Array2<f32>,
    /// Labels exactly as stored (not shifted or range-checked); `None` when the file has none.
    pub labels: Option<Vec<i64>>,
    /// Feature column names, when the format has them (CSV header; one per column).
    pub feature_names: Option<Vec<String>>,
}

/// What a format reader returns, before labels are mapped to class indices and checked.
struct RawDomain {
    /// n×d features, standard layout.
    features: Array2<f32>,
    /// Labels exactly as stored (integers; not yet shifted or range-checked).
    labels: Option<Vec<i64>>,
    /// The file the labels came from (named in label errors).
    labels_path: PathBuf,
    /// Feature column names, when the format has them (CSV header).
    feature_names: Option<Vec<String>>,
}

impl RawDomain {
    /// A domain read from one file that holds the labels too (`.mat`, CSV).
    fn new(parsed: ParsedFile, path: &Path) -> Self {
        RawDomain {
            features: parsed.features,
            labels: parsed.labels,
            labels_path: path.to_path_buf(),
            feature_names: parsed.feature_names,
        }
    }
}

pub use discover::list_domains;
pub use feature_file::FeatureFile;
pub use load::{load_domain, load_pair, open_pair_files, FilePair};
pub use npy_rows::{NpyRows, CHUNK_ROWS};
pub use preprocess::{
    preprocess, preprocess_warning, preprocess_warning_rows, Preprocess, PreprocessStats,
    ZSCORE_TARGET_RMS_LIMIT,
};
pub use rows::{Rows, BLOCK_ROWS};
pub use sources::{
    check_source_names, holdout_by_class_and_domain, load_sources, pool, PooledSource, SourcePart,
};
pub use validate::{check_feature_rows, check_features};

/// Reads a `.npy` file as an n×d f32 matrix (any float or integer dtype; trailing singleton
/// axes dropped), e.g. class probabilities for `glshift shift estimate`.
pub fn read_npy_matrix(path: &Path) -> crate::Result<Array2<f32>> {
    npy::read_features(path)
}

/// Reads a `.npy` file as a label vector (shape (n,), (n,1) or (1,n); integers, or floats
/// holding whole numbers), stored values unchanged.
pub fn read_npy_labels(path: &Path) -> crate::Result<Vec<i64>> {
    npy::read_labels(path)
}

// The `parse_*` functions below run the same parsing code as the loaders on bytes already in
// memory (for fuzzing and for callers that do not hold files). Nothing is read from disk:
// `path` only names the file in error messages.

/// [`read_npy_matrix`] on the bytes of a `.npy` file.
pub fn parse_npy_matrix(bytes: &[u8], path: &Path) -> crate::Result<Array2<f32>> {
    npy::parse_features(bytes, path)
}

/// [`read_npy_labels`] on the bytes of a `.npy` file.
pub fn parse_npy_labels(bytes: &[u8], path: &Path) -> crate::Result<Vec<i64>> {
    npy::parse_labels(bytes, path)
}

/// Features and labels of a MATLAB v5 `.mat` file (the rules of [`load_domain`]: known
/// feature and label names, samples as rows), labels as stored.
pub fn parse_mat(bytes: &[u8], path: &Path) -> crate::Result<ParsedFile> {
    mat::parse_mat(bytes, path)
}

/// Features, labels (column `label`) and column names of a CSV file with a header row.
pub fn parse_csv(reader: impl Read, path: &Path) -> crate::Result<ParsedFile> {
    csv::parse_csv(reader, path)
}

/// How integer labels in the file were mapped to 0-based class indices (recorded in reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabelRule {
    /// Labels were used as stored (npy, csv, and `.mat` folders whose smallest label is not 1).
    ZeroBased,
    /// MATLAB-style labels 1..=c were shifted down by one.
    OneBasedShifted,
}

/// The file format a domain was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    /// NumPy `.npy` (features and labels in separate files).
    Npy,
    /// MATLAB v5 `.mat`.
    Mat,
    /// Comma-separated values with a header row.
    Csv,
}

/// One domain: features n×d (f32), optional 0-based labels, class names (len c).
#[derive(Clone, Debug)]
pub struct Domain {
    /// Domain name as asked for (e.g. `amazon`).
    pub name: String,
    /// Features, one row per sample, standard (row-major) layout.
    pub features: Array2<f32>,
    /// 0-based class indices, one per row; `None` for an unlabelled domain.
    pub labels: Option<Vec<usize>>,
    /// Class names, index = class index. Empty for an unlabelled domain without `classes.txt`.
    pub class_names: Vec<String>,
    /// The features file.
    pub path: PathBuf,
    /// The format of [`Domain::path`].
    pub format: FileFormat,
    /// How the stored labels were mapped to 0-based indices.
    pub label_rule: LabelRule,
    /// Feature column names when the file has them (CSV header); source and target must agree.
    pub feature_names: Option<Vec<String>>,
}

impl Domain {
    /// Number of samples (rows).
    pub fn n(&self) -> usize {
        self.features.nrows()
    }

    /// Feature dimension (columns).
    pub fn dim(&self) -> usize {
        self.features.ncols()
    }

    /// Number of classes (length of [`Domain::class_names`]).
    pub fn n_classes(&self) -> usize {
        self.class_names.len()
    }
}

#[cfg(test)]
mod tests;
