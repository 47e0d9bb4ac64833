//! Checks on loaded data. Each error names the file or domain and the offending value.

use std::path::Path;

use ndarray::ArrayView2;

use super::{Domain, Rows};
use crate::{Error, Result};

/// Checks a features matrix: at least one row and one column, and every value finite.
/// The error for a NaN/Inf names its row and column (0-based) and the value.
pub fn check_features(what: &str, x: ArrayView2<f32>) -> Result<()> {
    check_feature_rows(what, Rows::Memory(x))
}

/// [`check_features`] on rows in memory or in a file (read a block at a time).
pub fn check_feature_rows(what: &str, x: Rows) -> Result<()> {
    if x.nrows() == 0 {
        return Err(Error::bad_data(what, "empty: no samples (0 rows)"));
    }
    if x.ncols() == 0 {
        return Err(Error::bad_data(what, "no feature columns (0 columns)"));
    }
    x.for_each_block(|first, block| {
        for (i, row) in block.outer_iter().enumerate() {
            if let Some((j, v)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(Error::bad_data(
                    what,
                    format!(
                        "non-finite feature value {v} at row {}, column {j} (0-based)",
                        first + i
                    ),
                ));
            }
        }
        Ok(())
    })
}

/// Maps stored labels to 0-based indices: checks the count against the feature rows,
/// subtracts `shift`, and rejects negative results (the error shows the stored value).
pub(super) fn to_indices(
    raw: &[i64],
    shift: i64,
    n_rows: usize,
    labels_path: &Path,
    features_path: &Path,
) -> Result<Vec<usize>> {
    if raw.len() != n_rows {
        return Err(Error::bad_file(
            labels_path,
            format!(
                "{} labels, but {} has {} feature rows",
                raw.len(),
                features_path.display(),
                n_rows
            ),
        ));
    }
    raw.iter()
        .enumerate()
        .map(|(i, &v)| {
            usize::try_from(v - shift).map_err(|_| {
                let why = if shift == 0 {
                    "is negative".to_string()
                } else {
                    format!(
                        "is below {shift}, but the .mat labels of this folder are {shift}-based"
                    )
                };
                Error::bad_data(
                    labels_path.display().to_string(),
                    format!("label {v} at position {i} (0-based) {why}"),
                )
            })
        })
        .collect()
}

/// Every label must index `n_classes` classes (`classes_from` says where c came from;
/// `shift` is added back so the message shows the value as stored in the file).
pub(super) fn check_label_range(
    labels: &[usize],
    n_classes: usize,
    shift: usize,
    labels_path: &Path,
    classes_from: &str,
) -> Result<()> {
    if let Some((i, &v)) = labels.iter().enumerate().find(|(_, &v)| v >= n_classes) {
        return Err(Error::bad_data(
            labels_path.display().to_string(),
            format!(
                "label {} at position {i} (0-based) is out of range: {n_classes} classes ({classes_from})",
                v + shift
            ),
        ));
    }
    Ok(())
}

/// The joint checks of a source/target pair (see [`super::load_pair`]).
pub(super) fn check_pair(source: &Domain, target: &Domain) -> Result<()> {
    check_pair_rows(
        (source, Rows::Memory(source.features.view())),
        (target, Rows::Memory(target.features.view())),
    )
}

/// [`check_pair`] with each domain's rows given apart (in memory or in its file).
fn check_pair_rows<'r>(source: (&Domain, Rows<'r>), target: (&Domain, Rows<'r>)) -> Result<()> {
    for (role, (d, rows)) in [("source", source), ("target", target)] {
        check_feature_rows(&format!("{role} '{}' ({})", d.name, d.path.display()), rows)?;
    }
    check_pair_shapes(source, target)
}

/// [`check_pair`] but the values: dimensions, feature names, classes, source labels.
pub(super) fn check_pair_shapes<'r>(
    source: (&Domain, Rows<'r>),
    target: (&Domain, Rows<'r>),
) -> Result<()> {
    let (source, source_rows) = source;
    let (target, target_rows) = target;
    if source_rows.ncols() != target_rows.ncols() {
        return Err(Error::Shape {
            what: format!(
                "feature dimension of target '{}' (must equal the source '{}')",
                target.name, source.name
            ),
            expected: source_rows.ncols().to_string(),
            found: target_rows.ncols().to_string(),
        });
    }
    if let (Some(a), Some(b)) = (&source.feature_names, &target.feature_names) {
        if let Some(j) = (0..a.len().min(b.len())).find(|&j| a[j] != b[j]) {
            return Err(Error::bad_file(
                &target.path,
                format!(
                    "feature column {} is `{}` but in the source {} it is `{}`; \
                     the two files must have the same feature columns in the same order",
                    j + 1,
                    b[j],
                    source.path.display(),
                    a[j]
                ),
            ));
        }
    }
    if source.class_names != target.class_names {
        return Err(Error::bad_data(
            format!("domains '{}' and '{}'", source.name, target.name),
            "the class lists differ",
        ));
    }
    let Some(labels) = &source.labels else {
        return Err(Error::bad_data(
            format!("source '{}' ({})", source.name, source.path.display()),
            "the source has no labels",
        ));
    };
    let mut present = vec![false; source.n_classes()];
    for &l in labels {
        // Labels were range-checked when loaded; `get_mut` keeps this panic-free anyway.
        if let Some(p) = present.get_mut(l) {
            *p = true;
        }
    }
    let k = present.iter().filter(|&&p| p).count();
    if k < 2 {
        return Err(Error::bad_data(
            format!("source '{}' ({})", source.name, source.path.display()),
            format!("only {k} class present in the source labels; at least 2 are needed"),
        ));
    }
    Ok(())
}
