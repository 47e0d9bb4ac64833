//! Feature preprocessing fitted on the SOURCE only (the target's statistics are unknown
//! to a fair method, so they must not leak into the transform). Sums run in f64.

use std::fmt;
use std::str::FromStr;

use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis};

use super::Rows;

use crate::{Error, Result};

/// Preprocessing applied to source and target with source statistics only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Preprocess {
    /// Features as stored.
    None,
    /// Per-column z-score with the source mean and (population) standard deviation.
    #[default]
    #[serde(alias = "zscore")]
    ZScore,
    /// Each row scaled to unit Euclidean norm (zero rows stay zero).
    L2,
    /// Each row divided by its L1 norm (the sum, for bag-of-words counts), then z-score.
    #[serde(alias = "l1-zscore")]
    L1ZScore,
}

impl Preprocess {
    /// The name used in configs and reports (same as serde's).
    pub fn as_str(self) -> &'static str {
        match self {
            Preprocess::None => "none",
            Preprocess::ZScore => "z-score",
            Preprocess::L2 => "l2",
            Preprocess::L1ZScore => "l1-z-score",
        }
    }
}

impl fmt::Display for Preprocess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Preprocess {
    type Err = Error;
    /// Accepts `none`, `z-score`/`zscore`, `l2`, `l1-z-score`/`l1-zscore`.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "none" => Ok(Preprocess::None),
            "z-score" | "zscore" => Ok(Preprocess::ZScore),
            "l2" => Ok(Preprocess::L2),
            "l1-z-score" | "l1-zscore" => Ok(Preprocess::L1ZScore),
            _ => Err(Error::param("preprocess", s, "expected none, zscore, l2 or l1-zscore")),
        }
    }
}

/// Applies `how` in place to both matrices, with statistics of `source` only:
/// [`PreprocessStats::fit`] on `source`, then [`PreprocessStats::apply`] to each.
///
/// - z-score: per column, `(x - mean_s) / std_s`. A column that is constant in the source
///   (std zero, or below 1e-10·|mean| which is rounding noise) uses std = 1, so it becomes 0
///   in the source and keeps its offset from the source value in the target; never a
///   division by zero, never NaN.
/// - l2: rows divided by their Euclidean norm; a zero row stays zero.
/// - l1-zscore: rows divided by their L1 norm (= sum for non-negative counts); zero rows
///   stay zero; then z-score as above.
///
/// Errors: different column counts, or an empty source when statistics are needed.
pub fn preprocess(
    source: &mut Array2<f32>,
    target: &mut Array2<f32>,
    how: Preprocess,
) -> Result<()> {
    if source.ncols() != target.ncols() {
        return Err(Error::Shape {
            what: "preprocess: target feature dimension".into(),
            expected: source.ncols().to_string(),
            found: target.ncols().to_string(),
        });
    }
    let stats = PreprocessStats::fit(source.view(), how)?;
    stats.apply(source)?;
    stats.apply(target)
}

/// A fitted preprocessing: the kind and, for the z-score kinds, the source column means and
/// scales (length d each, f64; empty for `none` and `l2`). Kept in a saved model so that new
/// rows are transformed exactly as the training rows were.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PreprocessStats {
    pub how: Preprocess,
    /// Number of feature columns the statistics were fitted on.
    pub dim: usize,
    /// Source column means (after L1 scaling for `l1-z-score`), length `dim` or 0.
    pub mean: Vec<f64>,
    /// Source column standard deviations, 1 for constant columns, length `dim` or 0.
    pub scale: Vec<f64>,
}

impl PreprocessStats {
    /// Fits `how` on the source rows (`n × d`). Errors: an empty source for the z-score kinds.
    pub fn fit(source: ArrayView2<f32>, how: Preprocess) -> Result<Self> {
        Self::fit_rows(Rows::Memory(source), how)
    }

    /// [`PreprocessStats::fit`] on rows in memory or in a file (read a block at a time, the
    /// sums in the same order: the same statistics, bit for bit). `source` must not carry
    /// statistics of its own. Errors: an empty source for the z-score kinds, a read error.
    pub fn fit_rows(source: Rows, how: Preprocess) -> Result<Self> {
        let dim = source.ncols();
        let (mean, scale) = match how {
            Preprocess::None | Preprocess::L2 => (Vec::new(), Vec::new()),
            Preprocess::ZScore => zscore_stats(source, false)?,
            // The L1-scaled rows are made one at a time, not as an n × d copy.
            Preprocess::L1ZScore => zscore_stats(source, true)?,
        };
        Ok(PreprocessStats { how, dim, mean, scale })
    }

    /// Transforms `x` (`n × dim`) in place. Errors: another column count, or statistics whose
    /// lengths do not match `dim` (a damaged model file).
    pub fn apply(&self, x: &mut Array2<f32>) -> Result<()> {
        self.apply_view(x.view_mut())
    }

    /// [`PreprocessStats::apply`] on a view (`n × dim`, e.g. a block read from a file).
    pub fn apply_view(&self, mut x: ArrayViewMut2<f32>) -> Result<()> {
        let x = &mut x;
        if x.ncols() != self.dim {
            return Err(Error::Shape {
                what: "preprocess: feature dimension".into(),
                expected: self.dim.to_string(),
                found: x.ncols().to_string(),
            });
        }
        let needs_stats = matches!(self.how, Preprocess::ZScore | Preprocess::L1ZScore);
        let expected = if needs_stats { self.dim } else { 0 };
        if self.mean.len() != expected || self.scale.len() != expected {
            return Err(Error::Shape {
                what: format!("{} statistics (mean, scale)", self.how),
                expected: expected.to_string(),
                found: format!("{}, {}", self.mean.len(), self.scale.len()),
            });
        }
        match self.how {
            Preprocess::None => {}
            Preprocess::ZScore => zscore_apply(x, &self.mean, &self.scale),
            Preprocess::L2 => scale_rows(x, l2_norm),
            Preprocess::L1ZScore => {
                scale_rows(x, l1_norm);
                zscore_apply(x, &self.mean, &self.scale);
            }
        }
        Ok(())
    }
}

fn l2_norm(r: &[f32]) -> f64 {
    r.iter().map(|&v| f64::from(v).powi(2)).sum::<f64>().sqrt()
}

fn l1_norm(r: &[f32]) -> f64 {
    r.iter().map(|&v| f64::from(v).abs()).sum()
}

/// Divides each row by `norm(row)`, leaving rows with norm 0 untouched.
fn scale_rows(x: &mut ArrayViewMut2<f32>, norm: impl Fn(&[f32]) -> f64) {
    for mut row in x.axis_iter_mut(Axis(0)) {
        let n = match row.as_slice() {
            Some(s) => norm(s),
            None => norm(&row.to_vec()),
        };
        if n > 0.0 {
            row.mapv_inplace(|v| (f64::from(v) / n) as f32);
        }
    }
}

/// Calls `f` on each row of `source` (`n × d`), divided by its L1 norm when `l1` (exactly as
/// [`scale_rows`] with [`l1_norm`] would leave it), through one row buffer.
fn for_each_row(source: ArrayView2<f32>, l1: bool, mut f: impl FnMut(&[f32])) {
    let mut buf = vec![0f32; source.ncols()];
    for row in source.axis_iter(Axis(0)) {
        buf.iter_mut().zip(row.iter()).for_each(|(b, &v)| *b = v);
        if l1 {
            let n = l1_norm(&buf);
            if n > 0.0 {
                buf.iter_mut().for_each(|v| *v = (f64::from(*v) / n) as f32);
            }
        }
        f(&buf);
    }
}

/// Column means and standard deviations of `source` (std 1 for a constant column), of its
/// L1-scaled rows when `l1`.
fn zscore_stats(source: Rows, l1: bool) -> Result<(Vec<f64>, Vec<f64>)> {
    let n = source.nrows();
    if n == 0 {
        return Err(Error::bad_data(
            "preprocess",
            "the source is empty: z-score needs its statistics",
        ));
    }
    let d = source.ncols();
    // Two passes (mean, then squared deviations): accurate for columns with a large offset.
    let mut mean = vec![0f64; d];
    source.for_each_block(|_, block| {
        for_each_row(block, l1, |row| {
            for (m, &v) in mean.iter_mut().zip(row) {
                *m += f64::from(v);
            }
        });
        Ok(())
    })?;
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut var = vec![0f64; d];
    source.for_each_block(|_, block| {
        for_each_row(block, l1, |row| {
            for ((s, &m), &v) in var.iter_mut().zip(&mean).zip(row) {
                *s += (f64::from(v) - m).powi(2);
            }
        });
        Ok(())
    })?;
    let scale: Vec<f64> = var
        .iter()
        .zip(&mean)
        .map(|(&s, &m)| {
            let std = (s / n as f64).sqrt();
            // Constant column: std 1 keeps x - mean (0 in the source) instead of 0/0 or noise/noise.
            if std > 1e-10 * m.abs() && std > 0.0 {
                std
            } else {
                1.0
            }
        })
        .collect();
    Ok((mean, scale))
}

fn zscore_apply(x: &mut ArrayViewMut2<f32>, mean: &[f64], scale: &[f64]) {
    for mut row in x.axis_iter_mut(Axis(0)) {
        for ((v, &m), &s) in row.iter_mut().zip(mean).zip(scale) {
            *v = ((f64::from(*v) - m) / s) as f32;
        }
    }
}

/// Target root-mean-square above which a z-scored column counts as badly scaled: the source's
/// is 1 by construction, so 10 means the target varies ten times more than the source there.
pub const ZSCORE_TARGET_RMS_LIMIT: f64 = 10.0;

/// A warning when z-scoring with source statistics left the target's geometry dominated by
/// badly scaled columns — columns (nearly) constant in the source that vary in the target, e.g.
/// the border pixels of MNIST against USPS — or `None`. It fires when the columns whose target
/// RMS exceeds [`ZSCORE_TARGET_RMS_LIMIT`] hold more than half of the target's squared norm, so
/// they, not the features, set the kernel distances. (A few such columns are common with deep
/// features: on Office-Caltech10 they hold at most a third, and z-score works well there.)
/// Reads the *preprocessed* target features only, no labels. Other preprocessings: `None`.
pub fn preprocess_warning(target: &Array2<f32>, how: Preprocess) -> Option<String> {
    preprocess_warning_rows(Rows::Memory(target.view()), how).ok().flatten()
}

/// [`preprocess_warning`] on preprocessed rows in memory or in a file (read a block at a time).
/// Errors: a read error.
pub fn preprocess_warning_rows(target: Rows, how: Preprocess) -> Result<Option<String>> {
    if !matches!(how, Preprocess::ZScore | Preprocess::L1ZScore) || target.nrows() == 0 {
        return Ok(None);
    }
    let n = target.nrows() as f64;
    // Column sums of squares, each accumulated row after row.
    let mut sum_sq = vec![0f64; target.ncols()];
    target.for_each_block(|_, block| {
        for row in block.rows() {
            sum_sq.iter_mut().zip(row).for_each(|(s, &v)| *s += f64::from(v).powi(2));
        }
        Ok(())
    })?;
    let mean_sq: Vec<f64> = sum_sq.iter().map(|s| s / n).collect();
    let limit_sq = ZSCORE_TARGET_RMS_LIMIT * ZSCORE_TARGET_RMS_LIMIT;
    let total: f64 = mean_sq.iter().sum();
    let bad: Vec<f64> = mean_sq.iter().copied().filter(|&m| m > limit_sq).collect();
    let share = bad.iter().sum::<f64>() / total;
    // `share` is NaN when the target is all zeros: no warning then either.
    if bad.is_empty() || share.is_nan() || share <= 0.5 {
        return Ok(None);
    }
    let worst = bad.iter().copied().fold(0.0, f64::max).sqrt();
    Ok(Some(format!(
        "{how}: {} of {} feature columns vary far more in the target than in the source (target \
         RMS after scaling up to {worst:.0}, the source's is 1) and hold {:.0}% of the target's \
         squared norm: the source is nearly constant there, so those columns, not the features, \
         set the distances. For features already on a common scale (pixels, probabilities) use \
         preprocess = \"none\" or \"l2\".",
        bad.len(),
        mean_sq.len(),
        100.0 * share,
        how = how.as_str(),
    )))
}
