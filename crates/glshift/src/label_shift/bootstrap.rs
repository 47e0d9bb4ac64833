//! Percentile bootstrap intervals for any [`ShiftEstimator`].

use ndarray::Axis;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::estimators::{ShiftEstimator, ShiftInputs};
use crate::{Error, Result};

/// Per-class percentile interval of the target prior.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Interval {
    /// Estimator name.
    pub estimator: String,
    /// Nominal coverage (e.g. 0.9).
    pub level: f64,
    /// Resamples requested.
    pub resamples: usize,
    /// Resamples whose estimate failed (excluded from the percentiles).
    pub failed: usize,
    /// Point estimate of the target prior on the full data.
    pub point: Vec<f64>,
    /// Lower `(1 − level)/2` percentile per class.
    pub low: Vec<f64>,
    /// Upper `(1 + level)/2` percentile per class.
    pub high: Vec<f64>,
    /// Warnings of the point estimate, plus one about failed resamples if any.
    pub warnings: Vec<String>,
}

/// Linear-interpolation quantile of sorted values.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (pos - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Percentile bootstrap of the target prior: `b` replicates, each resampling the source
/// hold-out rows (probabilities with their labels) and the target rows independently with
/// replacement, re-running `est`. Replicate `r` draws from a ChaCha8 stream seeded from
/// `seed`, so the result does not depend on the number of threads. A given
/// `inp.source_prior` (full-source prior) is kept fixed; `None` is re-estimated per replicate.
/// Replicates whose estimate errs (e.g. a class vanishes from a small resample) are dropped
/// and counted in [`Interval::failed`] with a warning; more than half failing is an `Err`.
///
/// Errors: `b < 2`, `level ∉ (0, 1)`, or the point estimate itself failing.
pub fn bootstrap(
    est: &dyn ShiftEstimator,
    inp: &ShiftInputs,
    b: usize,
    seed: u64,
    level: f64,
) -> Result<Interval> {
    if b < 2 {
        return Err(Error::param("b", b, "need at least 2 bootstrap resamples"));
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(Error::param("level", level, "must lie in (0, 1)"));
    }
    let point = est.estimate(inp)?;
    let (ns, nt) = (inp.source_probs.nrows(), inp.target_probs.nrows());
    let mut master = ChaCha8Rng::seed_from_u64(seed);
    let seeds: Vec<u64> = (0..b).map(|_| master.random()).collect();
    let reps: Vec<Option<Vec<f64>>> = seeds
        .par_iter()
        .map(|&s| {
            let mut rng = ChaCha8Rng::seed_from_u64(s);
            let is: Vec<usize> = (0..ns).map(|_| rng.random_range(0..ns)).collect();
            let it: Vec<usize> = (0..nt).map(|_| rng.random_range(0..nt)).collect();
            let sp = inp.source_probs.select(Axis(0), &is);
            let sl: Vec<usize> = is.iter().map(|&i| inp.source_labels[i]).collect();
            let tp = inp.target_probs.select(Axis(0), &it);
            let r = ShiftInputs {
                source_probs: sp.view(),
                source_labels: &sl,
                target_probs: tp.view(),
                source_prior: inp.source_prior,
            };
            est.estimate(&r).ok().map(|o| o.target_prior)
        })
        .collect();
    let ok: Vec<Vec<f64>> = reps.into_iter().flatten().collect();
    let failed = b - ok.len();
    if ok.len() < 2 || failed * 2 > b {
        return Err(Error::numerical(
            format!("bootstrap of {}", est.name()),
            format!("{failed} of {b} resamples failed"),
        ));
    }
    let c = point.target_prior.len();
    let (mut low, mut high) = (vec![0.0; c], vec![0.0; c]);
    for k in 0..c {
        let mut v: Vec<f64> = ok.iter().map(|p| p[k]).collect();
        v.sort_by(f64::total_cmp);
        low[k] = quantile(&v, (1.0 - level) / 2.0);
        high[k] = quantile(&v, (1.0 + level) / 2.0);
    }
    let mut warnings = point.warnings;
    if failed > 0 {
        warnings.push(format!("{failed} of {b} bootstrap resamples failed and were dropped"));
    }
    Ok(Interval {
        estimator: est.name().to_string(),
        level,
        resamples: b,
        failed,
        point: point.target_prior,
        low,
        high,
        warnings,
    })
}
