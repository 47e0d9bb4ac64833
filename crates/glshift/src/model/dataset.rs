//! The in-memory training data of a fit: labelled source rows and unlabelled target rows.

use std::path::PathBuf;

use ndarray::{Array2, ArrayView2};

use crate::data::{check_feature_rows, Domain, FileFormat, LabelRule, Rows};
use crate::{Error, Result};

/// Source features `n_s × d` with labels `0..c`, target features `n_t × d` (no labels: a fit
/// never sees them), and the `c` class names. Built only through [`Dataset::new`] (or
/// [`Dataset::from_domains`]), which checks everything a fit relies on, so a `Dataset` is
/// always trainable.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    source_x: Array2<f32>,
    source_y: Vec<usize>,
    target_x: Array2<f32>,
    class_names: Vec<String>,
}

impl Dataset {
    /// Checks and wraps the arrays. Classes are `0..c` with `c` = the largest source label + 1,
    /// named `"0"`, `"1"`, … (see [`Dataset::with_class_names`]).
    ///
    /// Errors (each naming the array and the value): an empty source or target, no feature
    /// columns, a NaN/Inf feature, labels not one per source row, another feature dimension in
    /// the target, fewer than two classes present in the source, every source row identical.
    pub fn new(source_x: Array2<f32>, source_y: Vec<usize>, target_x: Array2<f32>) -> Result<Self> {
        let c = source_y.iter().max().map_or(0, |&m| m + 1);
        let class_names = (0..c).map(|k| k.to_string()).collect();
        check_arrays(
            "source features",
            Rows::Memory(source_x.view()),
            &source_y,
            c,
            "target features",
            Rows::Memory(target_x.view()),
        )?;
        Ok(Dataset { source_x, source_y, target_x, class_names })
    }

    /// Names the classes (`names[k]` is class `k`). There may be more names than classes seen in
    /// the source (classes without source rows are never predicted), not fewer.
    pub fn with_class_names(mut self, names: Vec<String>) -> Result<Self> {
        if names.len() < self.class_names.len() {
            return Err(Error::Shape {
                what: "class names vs the largest source label + 1".into(),
                expected: format!("at least {}", self.class_names.len()),
                found: names.len().to_string(),
            });
        }
        self.class_names = names;
        Ok(self)
    }

    /// The source domain's rows and labels and the target domain's rows; the target's labels,
    /// if it has any, are not taken. Errors name the domains' files.
    pub fn from_domains(source: &Domain, target: &Domain) -> Result<Self> {
        let labels = check_domains(source, target)?;
        Ok(Dataset {
            source_x: source.features.clone(),
            source_y: labels.to_vec(),
            target_x: target.features.clone(),
            class_names: source.class_names.clone(),
        })
    }

    /// The arrays by value: source features `n_s × d`, labels `n_s`, target features `n_t × d`,
    /// class names `c` (for a fit that preprocesses the features in place).
    pub(crate) fn into_parts(self) -> (Array2<f32>, Vec<usize>, Array2<f32>, Vec<String>) {
        (self.source_x, self.source_y, self.target_x, self.class_names)
    }

    /// Source features, `n_s × d`.
    pub fn source_x(&self) -> ArrayView2<'_, f32> {
        self.source_x.view()
    }

    /// Source labels, `n_s`, each `< n_classes()`.
    pub fn source_y(&self) -> &[usize] {
        &self.source_y
    }

    /// Target features, `n_t × d`.
    pub fn target_x(&self) -> ArrayView2<'_, f32> {
        self.target_x.view()
    }

    /// Class names, `c`.
    pub fn class_names(&self) -> &[String] {
        &self.class_names
    }

    pub fn n_classes(&self) -> usize {
        self.class_names.len()
    }

    /// Feature dimension d.
    pub fn dim(&self) -> usize {
        self.source_x.ncols()
    }

    /// The two in-memory domains `source` (labelled) and `target` (no labels), for the APIs
    /// that take domains (`glshift::select`); their paths name them `<source array>` and
    /// `<target array>` in errors.
    pub fn to_domains(&self) -> (Domain, Domain) {
        let domain = |name: &str, x: &Array2<f32>, labels: Option<Vec<usize>>| Domain {
            name: name.to_string(),
            features: x.clone(),
            labels,
            class_names: self.class_names.clone(),
            path: PathBuf::from(format!("<{name} array>")),
            format: FileFormat::Npy,
            label_rule: LabelRule::ZeroBased,
            feature_names: None,
        };
        (
            domain("source", &self.source_x, Some(self.source_y.clone())),
            domain("target", &self.target_x, None),
        )
    }
}

/// [`check_arrays`] on two loaded domains, naming their files; returns the source labels.
pub(crate) fn check_domains<'a>(source: &'a Domain, target: &Domain) -> Result<&'a [usize]> {
    check_domain_rows(
        (source, Rows::Memory(source.features.view())),
        (target, Rows::Memory(target.features.view())),
    )
}

/// [`check_domains`] with each domain's rows given apart (in memory or in its file).
pub(crate) fn check_domain_rows<'a>(
    source: (&'a Domain, Rows),
    target: (&Domain, Rows),
) -> Result<&'a [usize]> {
    let ((source, source_x), (target, target_x)) = (source, target);
    let labels = source.labels.as_deref().ok_or_else(|| {
        Error::bad_data(source.path.display().to_string(), "the source domain has no labels")
    })?;
    check_arrays(
        &format!("source '{}' ({})", source.name, source.path.display()),
        source_x,
        labels,
        source.n_classes(),
        &format!("target '{}' ({})", target.name, target.path.display()),
        target_x,
    )?;
    Ok(labels)
}

/// Everything a fit needs of its arrays: finite non-empty features of one dimension, one label
/// `< c` per source row, two classes present, not every source row identical. `what_*` name the
/// arrays in errors.
pub(crate) fn check_arrays(
    what_s: &str,
    source_x: Rows,
    source_y: &[usize],
    c: usize,
    what_t: &str,
    target_x: Rows,
) -> Result<()> {
    check_feature_rows(what_s, source_x)?;
    check_feature_rows(what_t, target_x)?;
    if source_x.ncols() != target_x.ncols() {
        return Err(Error::Shape {
            what: format!("feature dimension of {what_t} vs {what_s}"),
            expected: source_x.ncols().to_string(),
            found: target_x.ncols().to_string(),
        });
    }
    if source_y.len() != source_x.nrows() {
        return Err(Error::Shape {
            what: format!("labels of {what_s} (one per row)"),
            expected: source_x.nrows().to_string(),
            found: source_y.len().to_string(),
        });
    }
    if let Some(&bad) = source_y.iter().find(|&&y| y >= c) {
        return Err(Error::bad_data(what_s, format!("label {bad} out of range 0..{c}")));
    }
    let mut present = vec![false; c];
    source_y.iter().for_each(|&y| present[y] = true);
    let n_present = present.iter().filter(|&&p| p).count();
    if n_present < 2 {
        return Err(Error::bad_data(
            what_s,
            format!("the source holds {n_present} class(es); at least 2 are needed to train a classifier"),
        ));
    }
    // Every column constant = all source rows identical: z-score maps them to 0, the kernel
    // bandwidth is 0 and there is nothing to learn. (Some constant columns are fine.)
    if source_x.nrows() > 1 && all_rows_identical(source_x)? {
        return Err(Error::bad_data(
            what_s,
            format!(
                "all {} rows are identical (every feature column is constant): nothing to learn \
                 and the kernel bandwidth would be 0; check that the right features were exported",
                source_x.nrows()
            ),
        ));
    }
    Ok(())
}

/// Whether every row of `x` (at least one) equals its first.
fn all_rows_identical(x: Rows) -> Result<bool> {
    let first = x.gather(&[0])?;
    // Stops at the first block with a differing row (in practice the first block), so a file
    // is not read through again after the finiteness check.
    x.blocks_while(|_, block| Ok(block.rows().into_iter().all(|r| r == first.row(0))))
}
