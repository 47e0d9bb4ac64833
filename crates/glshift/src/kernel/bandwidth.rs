//! The bandwidth rule h = multiplier × mean pairwise squared distance, in O(nd).

use crate::{Error, Real, Result};
use ndarray::{Array1, ArrayView2};

/// Mean squared distance over all ordered pairs (i, j), diagonal included, of the rows of
/// `z` (n×d): (1/n²) Σ_ij ‖z_i − z_j‖² = 2(mean_i ‖z_i‖² − ‖mean_i z_i‖²). Returns 0 for n = 0.
pub fn mean_pairwise_sq_dist<T: Real>(z: ArrayView2<T>) -> f64 {
    pooled_mean_pairwise_sq_dist(&[z], 1.0)
}

/// The same quantity for the vertical concatenation of `blocks` (which must share the
/// column count), every value read as `v · scale` in f64 (a scale of 1 multiplies exactly).
/// Two passes around the mean: the one-pass form mean‖z‖² − ‖mean z‖² cancels
/// catastrophically when the features have a large offset.
fn pooled_mean_pairwise_sq_dist<T: Real>(blocks: &[ArrayView2<T>], scale: f64) -> f64 {
    let n: usize = blocks.iter().map(|b| b.nrows()).sum();
    let d = blocks.first().map_or(0, |b| b.ncols());
    if n == 0 {
        return 0.0;
    }
    let mut mean = Array1::<f64>::zeros(d);
    for b in blocks {
        for row in b.rows() {
            mean.iter_mut().zip(row).for_each(|(m, v)| *m += v.to_f64_() * scale);
        }
    }
    mean /= n as f64;
    let mut ss = 0.0;
    for b in blocks {
        for row in b.rows() {
            ss +=
                row.iter().zip(&mean).map(|(v, m)| (v.to_f64_() * scale - m).powi(2)).sum::<f64>();
        }
    }
    2.0 * ss / n as f64
}

/// Bandwidth h = `multiplier` × [`mean_pairwise_sq_dist`] of the pooled rows of `blocks`
/// (e.g. `[z_s, z_t]`), without copying them. This is the "mean pairwise squared distance"
/// rule of `mcmd-math.md`; h enters K_ij = exp(−‖z_i − z_j‖²/h) and is a constant in backprop.
///
/// Errors: blocks with different column counts (`Error::Shape`), a multiplier that is not
/// finite and > 0 (`Error::Param`), no rows, or h not finite or ≤ 0, e.g. when all rows
/// are identical (`Error::Numerical`).
pub fn bandwidth<T: Real>(blocks: &[ArrayView2<T>], multiplier: f64) -> Result<f64> {
    scaled_bandwidth(blocks, 1.0, multiplier)
}

/// [`bandwidth`] of the rows of `blocks` multiplied by `scale` (each value `v · scale` in
/// f64), without a scaled copy of them: the bandwidth of the evaluation metrics' rescaled Z.
pub fn scaled_bandwidth<T: Real>(
    blocks: &[ArrayView2<T>],
    scale: f64,
    multiplier: f64,
) -> Result<f64> {
    check_multiplier(multiplier)?;
    if let Some(first) = blocks.first() {
        if let Some(b) = blocks.iter().find(|b| b.ncols() != first.ncols()) {
            return Err(Error::Shape {
                what: "bandwidth blocks (feature dim)".into(),
                expected: first.ncols().to_string(),
                found: b.ncols().to_string(),
            });
        }
    }
    let n: usize = blocks.iter().map(|b| b.nrows()).sum();
    if n == 0 {
        return Err(no_rows());
    }
    bandwidth_of(pooled_mean_pairwise_sq_dist(blocks, scale), n, multiplier)
}

fn check_multiplier(multiplier: f64) -> Result<()> {
    if !(multiplier.is_finite() && multiplier > 0.0) {
        return Err(Error::param("bandwidth multiplier", multiplier, "must be finite and > 0"));
    }
    Ok(())
}

fn no_rows() -> Error {
    Error::numerical("bandwidth", "no rows to measure distances on")
}

/// h = `multiplier` × `mean_sq_dist` (the statistic of [`mean_pairwise_sq_dist`] over `n`
/// rows, measured elsewhere: on a device's kept Z), with [`bandwidth`]'s checks.
pub(crate) fn bandwidth_of(mean_sq_dist: f64, n: usize, multiplier: f64) -> Result<f64> {
    check_multiplier(multiplier)?;
    if n == 0 {
        return Err(no_rows());
    }
    let h = multiplier * mean_sq_dist;
    if !h.is_finite() {
        return Err(Error::numerical(
            "bandwidth",
            format!("h = {h} is not finite (features contain NaN/Inf or overflow)"),
        ));
    }
    if h <= 0.0 {
        return Err(Error::numerical(
            "bandwidth",
            format!(
                "h = {h}: all {n} feature rows are identical, the Gaussian kernel is undefined"
            ),
        ));
    }
    Ok(h)
}
