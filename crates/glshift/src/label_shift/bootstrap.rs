//! Bootstrap intervals (basic or percentile) for any [`ShiftEstimator`].

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

use super::estimators::{ShiftEstimator, ShiftInputs};
use super::ShiftEstimate;
use crate::{Error, Result};

/// How the bootstrap replicates become an interval.
///
/// With `θ̂` the point estimate of `pᵗ_k` and `q_lo`, `q_hi` the `(1 − level)/2` and
/// `(1 + level)/2` quantiles of the replicates `θ*`:
/// - [`IntervalMethod::Percentile`]: `[q_lo, q_hi]`;
/// - [`IntervalMethod::Basic`] (reverse percentile, Davison & Hinkley 1997, eq. 5.6):
///   `[2θ̂ − q_hi, 2θ̂ − q_lo]`, intersected with `[0, 1]`.
///
/// The basic interval estimates the law of `θ̂ − θ` by that of `θ* − θ̂`, so a bias that the
/// replicates repeat is subtracted instead of added. This matters at the boundary of the
/// simplex: for a class absent from the target (`θ = 0`), an estimator that cannot go below 0
/// (EM's fixed point, clipped BBSE) has `θ̂ > 0` and replicates mostly above `θ̂`, so the
/// percentile interval lies entirely above the truth, while the basic interval reaches 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IntervalMethod {
    /// `[2θ̂ − q_hi, 2θ̂ − q_lo] ∩ [0, 1]` (the default).
    #[default]
    Basic,
    /// `[q_lo, q_hi]`.
    Percentile,
}

impl IntervalMethod {
    /// Every method, default first.
    pub const ALL: [IntervalMethod; 2] = [IntervalMethod::Basic, IntervalMethod::Percentile];

    /// Stable name (`basic`, `percentile`).
    pub fn name(self) -> &'static str {
        match self {
            IntervalMethod::Basic => "basic",
            IntervalMethod::Percentile => "percentile",
        }
    }

    /// Parses a name of [`IntervalMethod::name`]; anything else is an [`Error::Param`].
    pub fn parse(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            Error::param("interval", s, "unknown interval method (known: basic, percentile)")
        })
    }

    /// Per-class bounds from the point estimate and the replicate quantiles.
    pub fn bounds(self, point: &[f64], q_low: &[f64], q_high: &[f64]) -> (Vec<f64>, Vec<f64>) {
        match self {
            IntervalMethod::Percentile => (q_low.to_vec(), q_high.to_vec()),
            IntervalMethod::Basic => point
                .iter()
                .zip(q_low.iter().zip(q_high))
                .map(|(&t, (&lo, &hi))| {
                    ((2.0 * t - hi).clamp(0.0, 1.0), (2.0 * t - lo).clamp(0.0, 1.0))
                })
                .unzip(),
        }
    }
}

impl std::fmt::Display for IntervalMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Per-class bootstrap interval of the target prior.
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
    /// `(1 − level)/2` quantile of the replicates per class.
    pub q_low: Vec<f64>,
    /// `(1 + level)/2` quantile of the replicates per class.
    pub q_high: Vec<f64>,
    /// The method of [`Interval::low`] and [`Interval::high`].
    pub method: IntervalMethod,
    /// Lower end per class ([`IntervalMethod::bounds`] of `method`).
    pub low: Vec<f64>,
    /// Upper end per class.
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

/// Bootstrap interval of the target prior (`method`, see [`IntervalMethod`]): `b` replicates, each resampling the source
/// hold-out rows (probabilities with their labels) and the target rows independently with
/// replacement, re-running `est` ([`bootstrap_replicates`]). Replicates whose estimate errs
/// (e.g. a class vanishes from a small resample) are dropped and counted in
/// [`Interval::failed`] with a warning; more than half failing is an `Err`.
///
/// Errors: `b < 2`, `level ∉ (0, 1)`, or the point estimate itself failing.
pub fn bootstrap(
    est: &dyn ShiftEstimator,
    inp: &ShiftInputs,
    b: usize,
    seed: u64,
    level: f64,
    method: IntervalMethod,
) -> Result<Interval> {
    if !(level > 0.0 && level < 1.0) {
        return Err(Error::param("level", level, "must lie in (0, 1)"));
    }
    let reps = bootstrap_replicates(est, inp, b, seed)?;
    let (q_low, q_high) = reps.quantiles(level);
    let (low, high) = method.bounds(&reps.point.target_prior, &q_low, &q_high);
    let mut warnings = reps.point.warnings;
    if reps.failed > 0 {
        warnings
            .push(format!("{} of {b} bootstrap resamples failed and were dropped", reps.failed));
    }
    Ok(Interval {
        estimator: est.name().to_string(),
        level,
        resamples: b,
        failed: reps.failed,
        point: reps.point.target_prior,
        q_low,
        q_high,
        method,
        low,
        high,
        warnings,
    })
}

/// The point estimate and the bootstrap replicates behind [`bootstrap`].
pub struct Replicates {
    pub point: ShiftEstimate,
    /// The target prior of every replicate whose estimate succeeded, in replicate order.
    pub replicates: Vec<Vec<f64>>,
    /// Replicates whose estimate failed.
    pub failed: usize,
}

impl Replicates {
    /// Per class, the `(1 − level)/2` and `(1 + level)/2` quantiles of the replicates (linear
    /// interpolation), as [`Interval::q_low`] and [`Interval::q_high`].
    pub fn quantiles(&self, level: f64) -> (Vec<f64>, Vec<f64>) {
        (0..self.point.target_prior.len())
            .map(|k| {
                let mut v: Vec<f64> = self.replicates.iter().map(|p| p[k]).collect();
                v.sort_by(f64::total_cmp);
                (quantile(&v, (1.0 - level) / 2.0), quantile(&v, (1.0 + level) / 2.0))
            })
            .unzip()
    }
}

/// `est` on `inp` and on `b` resamples of it (hold-out rows with their labels, and target rows,
/// each with replacement). Replicate `r` draws from a ChaCha8 stream seeded from `seed`, so the
/// result does not depend on the number of threads. A given `inp.source_prior` (full-source
/// prior) is kept fixed; `None` is re-estimated per replicate. Each replicate runs
/// [`ShiftEstimator::estimate_resample`] (on the distinct rows, counted, where the estimator
/// can).
///
/// Errors: `b < 2`, the point estimate failing, fewer than 2 or under half the replicates
/// succeeding.
pub fn bootstrap_replicates(
    est: &dyn ShiftEstimator,
    inp: &ShiftInputs,
    b: usize,
    seed: u64,
) -> Result<Replicates> {
    if b < 2 {
        return Err(Error::param("b", b, "need at least 2 bootstrap resamples"));
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
            est.estimate_resample(inp, &is, &it).ok().map(|o| o.target_prior)
        })
        .collect();
    let replicates: Vec<Vec<f64>> = reps.into_iter().flatten().collect();
    let failed = b - replicates.len();
    if replicates.len() < 2 || failed * 2 > b {
        return Err(Error::numerical(
            format!("bootstrap of {}", est.name()),
            format!("{failed} of {b} resamples failed"),
        ));
    }
    Ok(Replicates { point, replicates, failed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_interval_reaches_zero_when_replicates_sit_just_above_a_small_estimate() {
        // An absent class: point 0.004, replicates between 0.003 and 0.012 (biased upward).
        let (lo, hi) = IntervalMethod::Basic.bounds(&[0.004, 0.5], &[0.003, 0.45], &[0.012, 0.56]);
        assert_eq!(lo[0], 0.0, "2·0.004 − 0.012 < 0 is truncated at 0");
        assert!((hi[0] - 0.005).abs() < 1e-15);
        assert!(lo[0] <= 0.0 && 0.0 <= hi[0], "covers a true prior of 0");
        // The percentile interval of the same replicates does not.
        let (plo, _) =
            IntervalMethod::Percentile.bounds(&[0.004, 0.5], &[0.003, 0.45], &[0.012, 0.56]);
        assert!(plo[0] > 0.0);
        // Interior class: reflected around the point estimate.
        assert!((lo[1] - 0.44).abs() < 1e-12 && (hi[1] - 0.55).abs() < 1e-12, "{lo:?} {hi:?}");
    }

    #[test]
    fn basic_interval_stays_inside_the_unit_interval_and_ordered() {
        let (lo, hi) = IntervalMethod::Basic.bounds(&[0.0, 0.98], &[0.0, 0.9], &[0.3, 0.99]);
        assert_eq!((lo[0], hi[0]), (0.0, 0.0));
        assert!(hi[1] <= 1.0 && lo[1] <= hi[1], "{lo:?} {hi:?}");
    }

    #[test]
    fn interval_method_names_round_trip_and_unknown_names_are_errors() {
        for m in IntervalMethod::ALL {
            assert_eq!(IntervalMethod::parse(m.name()).unwrap(), m);
        }
        assert_eq!(IntervalMethod::default(), IntervalMethod::Basic);
        let e = IntervalMethod::parse("bca").unwrap_err().to_string();
        assert!(e.contains("bca") && e.contains("percentile"), "{e}");
    }
}
