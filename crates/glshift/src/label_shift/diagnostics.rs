//! Conditioning of the confusion matrix `C` that BBSE inverts.

use faer::Mat;
use ndarray::ArrayView2;

/// Condition number above which [`confusion_diagnostics`] warns: a relative error `ε` in `q`
/// or `C` can become an error up to `κ·ε` in `w`. With `C_jk = P(ŷ=j|y=k)·pˢ_k`, κ also grows
/// with the imbalance of `pˢ` (max/min prior).
pub const COND_WARN: f64 = 1e4;
/// `σ_min / σ_max` at or below which `C` is treated as singular.
pub const SINGULAR_RTOL: f64 = 1e-12;

/// Result of [`confusion_diagnostics`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Diagnostics {
    /// Smallest singular value of `C`.
    pub smallest_singular_value: f64,
    /// `σ_max / σ_min` (`f64::INFINITY` for a singular or empty `C`; JSON holds it as `null`).
    #[serde(deserialize_with = "null_as_infinity")]
    pub condition_number: f64,
    /// Set when `C` is singular (`σ_min ≤ 1e-12·σ_max`) or `κ > COND_WARN`: the inverse
    /// (BBSE linear solve) is then unreliable.
    pub warning: Option<String>,
}

/// JSON has no infinity (serde_json writes `null`): read `null` back as `f64::INFINITY`.
fn null_as_infinity<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    let v: Option<f64> = serde::Deserialize::deserialize(d)?;
    Ok(v.unwrap_or(f64::INFINITY))
}

impl Diagnostics {
    /// `σ_min ≤ SINGULAR_RTOL · σ_max` (or SVD failure / non-finite input).
    pub fn is_singular(&self) -> bool {
        !self.condition_number.is_finite() || self.condition_number >= 1.0 / SINGULAR_RTOL
    }
}

/// Singular values of `c` with faer's SVD, smallest one, condition number and a warning.
/// Non-finite entries or an SVD failure give `σ_min = 0`, `κ = ∞` and a warning (no panic).
pub fn confusion_diagnostics(c: ArrayView2<f64>) -> Diagnostics {
    let bad = |why: String| Diagnostics {
        smallest_singular_value: 0.0,
        condition_number: f64::INFINITY,
        warning: Some(why),
    };
    if c.is_empty() || c.iter().any(|v| !v.is_finite()) {
        return bad("confusion matrix is empty or has non-finite entries".into());
    }
    let m = Mat::from_fn(c.nrows(), c.ncols(), |i, j| c[[i, j]]);
    let sv = match m.singular_values() {
        Ok(s) => s,
        Err(e) => return bad(format!("SVD of the confusion matrix failed: {e:?}")),
    };
    let smax = sv.iter().cloned().fold(0.0f64, f64::max);
    let smin = sv.iter().cloned().fold(f64::INFINITY, f64::min);
    let cond = if smin > 0.0 { smax / smin } else { f64::INFINITY };
    let singular = !(cond.is_finite()) || smin <= SINGULAR_RTOL * smax;
    let warning = if singular {
        Some(format!(
            "confusion matrix is singular (σ_min = {smin:.3e}, σ_max = {smax:.3e}): a class is never predicted or two classes are confused identically; its inverse does not exist"
        ))
    } else if cond > COND_WARN {
        Some(format!(
            "confusion matrix is ill-conditioned (κ = {cond:.3e} > {COND_WARN:.0e}, σ_min = {smin:.3e}): the inverse is unreliable"
        ))
    } else {
        None
    };
    Diagnostics {
        smallest_singular_value: smin,
        condition_number: if singular { f64::INFINITY } else { cond },
        warning,
    }
}

/// Warning when `σ_min(Ĉ)` is below the sampling error of `Ĉ`, about `sqrt(c / n_s)` in
/// spectral norm (one Bernoulli-type entry error `~1/sqrt(n_s)` per column): then even a
/// well-conditioned-looking `Ĉ` may be a noisy version of a singular `C`.
pub(crate) fn sampling_warning(d: &Diagnostics, c: usize, n_source: usize) -> Option<String> {
    let noise = (c as f64 / n_source.max(1) as f64).sqrt();
    (d.smallest_singular_value.is_finite() && d.smallest_singular_value < noise).then(|| {
        format!(
            "σ_min(C) = {:.3e} is below the sampling error ≈ sqrt(c/n_source) = {noise:.3e}: the inverse is unreliable",
            d.smallest_singular_value
        )
    })
}
