//! One interface for the label-shift estimators: [`ShiftEstimator`] maps a labelled source
//! hold-out (probabilities + labels) and unlabelled target probabilities to importance weights
//! `w` and a target prior `p̂ᵗ = w ⊙ pˢ`.
//!
//! Shared rules, applied by every estimator:
//! - probabilities are n × c, finite, ≥ 0, rows summing to 1 within 1e-3, otherwise `Err`
//!   (no silent renormalisation of bad input); `c ≥ 2`;
//! - `source_prior = None` means `pˢ` = the hold-out label frequencies;
//! - a class with `pˢ_k = 0` gets `w_k = 0` (its target prior cannot be identified) and a warning;
//! - the output is checked: `w ≥ 0`, `p̂ᵗ` sums to 1, every entry finite; anything else is
//!   an `Err`, never NaN.

use ndarray::{ArrayView2, Axis};

use super::prior::{
    check_labels, check_len, check_prior, check_probs, counted_class_prior, RowCounts,
};
use super::ShiftEstimate;
use crate::{Error, Result};

/// Inputs shared by all estimators.
#[derive(Clone, Copy, Debug)]
pub struct ShiftInputs<'a> {
    /// Source hold-out class probabilities (n_s × c), rows not seen in training.
    pub source_probs: ArrayView2<'a, f32>,
    /// True labels of the hold-out rows (length n_s, each `< c`).
    pub source_labels: &'a [usize],
    /// Target class probabilities (n_t × c).
    pub target_probs: ArrayView2<'a, f32>,
    /// Prior of the full source `pˢ` (length c); `None` = hold-out label frequencies.
    pub source_prior: Option<&'a [f64]>,
}

/// A label-shift estimator. `Send + Sync` so that [`super::bootstrap`] can run replicates
/// in parallel.
pub trait ShiftEstimator: Send + Sync {
    /// Short stable name ("bbse-hard", "mlls-bcts", ...).
    fn name(&self) -> &'static str;
    /// Estimate `w` and `p̂ᵗ`; see the module doc for the shared rules.
    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate>;

    /// [`ShiftEstimator::estimate`] on a resample of `inp`: its hold-out rows `hold_rows` (with
    /// their labels) and its target rows `target_rows`, indices below each part's row count,
    /// repeats allowed (as a bootstrap draws them); `inp.source_prior` is kept. By default the
    /// drawn rows are copied and estimated. Estimators whose sums take a count per row (MLLS,
    /// BBSE-QP as `fit` runs it, the fit's final estimators) run on the distinct rows, each
    /// counted as often as it was drawn: the same estimate up to summation order, at the cost
    /// of the distinct rows (`label_shift/resample.rs`).
    fn estimate_resample(
        &self,
        inp: &ShiftInputs,
        hold_rows: &[usize],
        target_rows: &[usize],
    ) -> Result<ShiftEstimate> {
        let (hold, target) = (
            inp.source_probs.select(Axis(0), hold_rows),
            inp.target_probs.select(Axis(0), target_rows),
        );
        let labels: Vec<usize> = hold_rows.iter().map(|&i| inp.source_labels[i]).collect();
        self.estimate(&ShiftInputs {
            source_probs: hold.view(),
            source_labels: &labels,
            target_probs: target.view(),
            source_prior: inp.source_prior,
        })
    }
}

/// Checked inputs.
pub(crate) struct Prepared {
    pub c: usize,
    /// `pˢ` (given or hold-out frequencies).
    pub source_prior: Vec<f64>,
    pub warnings: Vec<String>,
}

/// Validates `inp` (see the module doc) and resolves the source prior.
pub(crate) fn prepare(inp: &ShiftInputs) -> Result<Prepared> {
    prepare_counted(inp, RowCounts::ONCE)
}

/// [`prepare`] with the hold-out rows counted as `hold` says (their label frequencies are the
/// source prior when `inp.source_prior` is `None`).
pub(crate) fn prepare_counted(inp: &ShiftInputs, hold: RowCounts) -> Result<Prepared> {
    check_probs(inp.source_probs, "source hold-out probabilities")?;
    check_probs(inp.target_probs, "target probabilities")?;
    let c = inp.source_probs.ncols();
    if inp.target_probs.ncols() != c {
        return Err(Error::Shape {
            what: "target probabilities (classes)".into(),
            expected: format!("{c} columns, as the source hold-out"),
            found: format!("{} columns", inp.target_probs.ncols()),
        });
    }
    if c < 2 {
        return Err(Error::param("c", c, "label shift needs at least 2 classes"));
    }
    check_len(
        inp.source_labels.len(),
        inp.source_probs.nrows(),
        "source hold-out labels (one per probability row)",
    )?;
    check_labels(inp.source_labels, c, "source hold-out labels")?;
    let source_prior = match inp.source_prior {
        Some(p) => {
            check_prior(p, c, "source prior")?;
            p.to_vec()
        }
        None => counted_class_prior(inp.source_labels, hold, c)?,
    };
    let mut warnings = Vec::new();
    let zero: Vec<usize> = (0..c).filter(|&k| source_prior[k] == 0.0).collect();
    if !zero.is_empty() {
        warnings.push(format!(
            "classes {zero:?} have source prior 0: their weight is set to 0 and their target prior is not identifiable"
        ));
    }
    Ok(Prepared { c, source_prior, warnings })
}

/// From raw weights (possibly negative) to a checked output: clip at 0, `p̂ = w ⊙ pˢ`
/// renormalised to sum 1, `w = p̂ / pˢ`. Errors if nothing positive is left or on NaN.
pub(crate) fn finish_from_weights(
    what: &str,
    raw: &[f64],
    source_prior: &[f64],
    warnings: Vec<String>,
    iterations: Option<usize>,
) -> Result<ShiftEstimate> {
    if raw.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(what, format!("non-finite weights {raw:?}")));
    }
    let prior: Vec<f64> = raw.iter().zip(source_prior).map(|(w, p)| w.max(0.0) * p).collect();
    finish_from_prior(what, &prior, source_prior, warnings, iterations)
}

/// From an (unnormalised, ≥ 0) target prior to a checked output.
pub(crate) fn finish_from_prior(
    what: &str,
    prior: &[f64],
    source_prior: &[f64],
    mut warnings: Vec<String>,
    iterations: Option<usize>,
) -> Result<ShiftEstimate> {
    let mut target_prior: Vec<f64> = prior.iter().map(|v| v.max(0.0)).collect();
    let s: f64 = target_prior.iter().sum();
    if !(s.is_finite() && s > 0.0) {
        return Err(Error::numerical(
            what,
            format!("estimated target prior {prior:?} has no positive mass"),
        ));
    }
    target_prior.iter_mut().for_each(|v| *v /= s);
    let mut lost = Vec::new();
    let weights: Vec<f64> = target_prior
        .iter()
        .zip(source_prior)
        .enumerate()
        .map(|(k, (t, p))| {
            if *p > 0.0 {
                t / p
            } else {
                if *t > 0.0 {
                    lost.push(k);
                }
                0.0
            }
        })
        .collect();
    if !lost.is_empty() {
        warnings.push(format!(
            "classes {lost:?} have estimated target mass but source prior 0: weight set to 0"
        ));
    }
    if weights.iter().chain(&target_prior).any(|v| !v.is_finite()) {
        return Err(Error::numerical(what, "non-finite output"));
    }
    Ok(ShiftEstimate { weights, target_prior, objective: None, warnings, iterations })
}
