//! `load_domain` / `load_pair`: find the files, read them, map labels, assign classes, check.

use std::path::{Path, PathBuf};

use super::classes::{read_classes, CLASSES_FILE};
use super::discover::{find_domain, mat_files, Source};
use super::validate::{
    check_features, check_label_range, check_pair, check_pair_shapes, to_indices,
};
use super::{csv, mat, npy, Domain, FeatureFile, FileFormat, LabelRule, RawDomain, Rows};
use crate::Result;

/// A domain read from disk, labels still as stored.
struct Loaded {
    name: String,
    raw: RawDomain,
    path: PathBuf,
    format: FileFormat,
    /// Feature rows (those of `raw.features`, or of the file left on disk).
    n_rows: usize,
}

/// Finds and loads one domain of `dir`; the format is detected by which files exist:
/// `<domain>_features.npy` (+ optional `<domain>_labels.npy`), `<domain>.mat` or the single
/// `<domain>_*.mat`, or `<domain>.csv`. `classes.txt` in `dir`, when present, names the classes.
///
/// Errors: [`crate::Error::UnknownDomain`] (listing the domains that exist) when nothing
/// matches; [`crate::Error::BadFile`] when several files match, or a file is malformed;
/// [`crate::Error::BadData`] for empty or non-finite features and bad labels.
///
/// `.npy` features may be float32, float64 or any integer dtype (converted to f32; large
/// integers lose precision); C or Fortran order; n×d or n×d×1×…×1. Labels: any integer
/// dtype, or floats holding whole numbers. Without `classes.txt` the class names are
/// `"0"..="c-1"` with c = largest label + 1 (none for an unlabelled domain). `.mat` labels
/// follow the folder-wide 1-based rule described in [`crate::data`].
pub fn load_domain(dir: &Path, domain: &str) -> Result<Domain> {
    let loaded = read(dir, domain)?;
    let rule = label_rule(dir, &[&loaded])?;
    let mut domains = finish(dir, vec![loaded], rule)?;
    let d = domains.remove(0);
    check_features(&format!("domain '{}' ({})", d.name, d.path.display()), d.features.view())?;
    Ok(d)
}

/// Loads `source` and `target` from one folder (as [`load_domain`]) and checks them
/// together: non-empty, all values finite, the same feature dimension, the same class list,
/// labelled source with at least 2 classes present, all labels in range. The target may be
/// unlabelled. Without `classes.txt`, c = largest label over both domains + 1.
pub fn load_pair(dir: &Path, source: &str, target: &str) -> Result<(Domain, Domain)> {
    let s = read(dir, source)?;
    let t = read(dir, target)?;
    let rule = label_rule(dir, &[&s, &t])?;
    let mut both = finish(dir, vec![s, t], rule)?;
    let t = both.pop().expect("two domains were loaded");
    let s = both.pop().expect("two domains were loaded");
    check_pair(&s, &t)?;
    Ok((s, t))
}

fn read(dir: &Path, domain: &str) -> Result<Loaded> {
    let (raw, path, format) = match find_domain(dir, domain)? {
        Source::Npy { features, labels } => {
            let x = npy::read_features(&features)?;
            let (labels, labels_path) = match labels {
                Some(p) => (Some(npy::read_labels(&p)?), p),
                None => (None, features.clone()),
            };
            let raw = RawDomain { features: x, labels, labels_path, feature_names: None };
            (raw, features, FileFormat::Npy)
        }
        Source::Mat(p) => (mat::read_mat(&p)?, p, FileFormat::Mat),
        Source::Csv(p) => (csv::read_csv(&p)?, p, FileFormat::Csv),
    };
    let n_rows = raw.features.nrows();
    Ok(Loaded { name: domain.to_string(), raw, path, format, n_rows })
}

/// A source/target pair of `.npy` domains whose feature rows stay in their files: labels,
/// classes, names and paths in the two [`Domain`]s (whose `features` are empty, `0 × d`), the
/// rows in two [`FeatureFile`]s, read a block at a time by whoever trains on them.
#[derive(Debug)]
pub struct FilePair {
    pub source: Domain,
    pub target: Domain,
    pub source_rows: FeatureFile,
    pub target_rows: FeatureFile,
}

/// [`load_pair`] leaving the feature rows in their files: headers, lengths and labels are
/// checked here, the values by whoever reads them (`pipeline::run_files` checks every value
/// before training, a block at a time), so opening costs no pass over the rows. `Ok(None)`
/// when a domain is not stored as `.npy` or its features file is in Fortran order: load those
/// with [`load_pair`].
pub fn open_pair_files(dir: &Path, source: &str, target: &str) -> Result<Option<FilePair>> {
    let (Some((s, source_rows)), Some((t, target_rows))) =
        (open_npy_domain(dir, source)?, open_npy_domain(dir, target)?)
    else {
        return Ok(None);
    };
    // `.npy` labels are 0-based (the folder-wide 1-based rule is for `.mat` files).
    let mut both = finish(dir, vec![s, t], LabelRule::ZeroBased)?;
    let target = both.pop().expect("two domains were opened");
    let source = both.pop().expect("two domains were opened");
    check_pair_shapes(
        (&source, Rows::File(&source_rows, None)),
        (&target, Rows::File(&target_rows, None)),
    )?;
    Ok(Some(FilePair { source, target, source_rows, target_rows }))
}

/// One `.npy` domain with its labels read and its features file opened (not read).
fn open_npy_domain(dir: &Path, domain: &str) -> Result<Option<(Loaded, FeatureFile)>> {
    let Source::Npy { features, labels } = find_domain(dir, domain)? else { return Ok(None) };
    let Some(rows) = FeatureFile::open(&features)? else { return Ok(None) };
    let (labels, labels_path) = match labels {
        Some(p) => (Some(npy::read_labels(&p)?), p),
        None => (None, features.clone()),
    };
    let raw = RawDomain {
        features: ndarray::Array2::zeros((0, rows.ncols())),
        labels,
        labels_path,
        feature_names: None,
    };
    let loaded = Loaded {
        name: domain.to_string(),
        raw,
        path: features,
        format: FileFormat::Npy,
        n_rows: rows.nrows(),
    };
    Ok(Some((loaded, rows)))
}

/// The 1-based rule, decided over all `.mat` files of the folder: the loaded ones plus their
/// siblings. Siblings that cannot be read or have no labels are skipped (a folder may hold
/// other `.mat` files, e.g. results); only `.mat` labels count, npy/csv are always 0-based.
fn label_rule(dir: &Path, loaded: &[&Loaded]) -> Result<LabelRule> {
    let mats: Vec<&&Loaded> = loaded.iter().filter(|l| l.format == FileFormat::Mat).collect();
    if mats.is_empty() {
        return Ok(LabelRule::ZeroBased);
    }
    let mut min = mats.iter().filter_map(|l| l.raw.labels.as_ref()?.iter().min().copied()).min();
    for p in mat_files(dir)? {
        if mats.iter().any(|l| l.path == p) {
            continue;
        }
        if let Ok(Some(labels)) = mat::read_mat_labels(&p) {
            min = min.into_iter().chain(labels.iter().copied().min()).min();
        }
    }
    Ok(if min == Some(1) { LabelRule::OneBasedShifted } else { LabelRule::ZeroBased })
}

/// Maps labels, assigns the folder's class list to every domain, and range-checks labels.
fn finish(dir: &Path, loaded: Vec<Loaded>, rule: LabelRule) -> Result<Vec<Domain>> {
    let mut out = Vec::with_capacity(loaded.len());
    for l in loaded {
        let label_rule = if l.format == FileFormat::Mat { rule } else { LabelRule::ZeroBased };
        let shift = i64::from(label_rule == LabelRule::OneBasedShifted);
        let labels = match &l.raw.labels {
            Some(raw) => Some(to_indices(raw, shift, l.n_rows, &l.raw.labels_path, &l.path)?),
            None => None,
        };
        let domain = Domain {
            name: l.name,
            features: l.raw.features,
            labels,
            class_names: Vec::new(),
            path: l.path,
            format: l.format,
            label_rule,
            feature_names: l.raw.feature_names,
        };
        out.push((domain, l.raw.labels_path));
    }
    let (names, from) = match read_classes(dir)? {
        Some(names) => {
            let from = format!("from {}", dir.join(CLASSES_FILE).display());
            (names, from)
        }
        None => {
            let c = out
                .iter()
                .filter_map(|(d, _)| d.labels.as_ref()?.iter().max().map(|&m| m + 1))
                .max()
                .unwrap_or(0);
            ((0..c).map(|i| i.to_string()).collect(), "no classes.txt".to_string())
        }
    };
    for (d, labels_path) in &mut out {
        if let Some(labels) = &d.labels {
            let shift = usize::from(d.label_rule == LabelRule::OneBasedShifted);
            check_label_range(labels, names.len(), shift, labels_path, &from)?;
        }
        d.class_names = names.clone();
    }
    Ok(out.into_iter().map(|(d, _)| d).collect())
}
