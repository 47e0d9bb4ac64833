//! MLLS: maximum-likelihood label shift by EM (Saerens, Latinne, Decaestecker, Neural
//! Computation 2002) on posteriors calibrated with BCTS (Alexandari et al. 2020).

use ndarray::ArrayView2;

use super::bcts::fit_bcts;
use super::class_prior;
use super::estimators::{finish_from_prior, prepare, ShiftEstimator, ShiftInputs};
use super::ShiftEstimate;
use crate::{Error, Result};

/// Default EM stopping tolerance on `‖p^{t+1} − p^t‖₁`.
pub const EM_TOL: f64 = 1e-8;
/// Default EM iteration cap.
pub const EM_MAX_ITER: usize = 2000;

/// Result of [`em_prior`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct EmFit {
    /// Estimated target prior (length c, sums to 1).
    pub prior: Vec<f64>,
    /// EM iterations performed.
    pub iterations: usize,
    /// `‖p^{t+1} − p^t‖₁ < tol` reached before the cap.
    pub converged: bool,
    /// Mean target log-likelihood `(1/n) Σ_i ln Σ_k (p_k/π_k) f_k(x_i)` (up to a constant in
    /// `p`) at `p⁰ = π, p¹, …` — non-decreasing for EM.
    pub log_likelihood: Vec<f64>,
}

fn mean_loglik(post: ArrayView2<f64>, ratio: &[f64]) -> f64 {
    let n = post.nrows() as f64;
    post.rows()
        .into_iter()
        .map(|r| r.iter().zip(ratio).map(|(f, w)| f * w).sum::<f64>().max(f64::MIN_POSITIVE).ln())
        .sum::<f64>()
        / n
}

/// EM of Saerens et al. (2002): with posteriors `f_k(x_i) = P(y=k|x_i)` calibrated for the
/// prior `train_prior = π`, iterate from `p⁰ = π`
///
/// ```text
/// r_ik ∝ (p_k / π_k) f_k(x_i)  (normalised over k),    p_k ← (1/n) Σ_i r_ik
/// ```
///
/// until `‖p^{t+1} − p^t‖₁ < tol` or `max_iter` iterations. Classes with `π_k = 0` keep
/// `p_k = 0`. Each iteration is an EM step of the target likelihood, so
/// [`EmFit::log_likelihood`] never decreases.
pub fn em_prior(
    posteriors: ArrayView2<f64>,
    train_prior: &[f64],
    tol: f64,
    max_iter: usize,
) -> Result<EmFit> {
    em(posteriors, train_prior, tol, max_iter, true)
}

/// [`em_prior`]; without `trace` the log-likelihood is not evaluated (`log_likelihood` is then
/// empty): the same prior and iterations, bit for bit, at about half the cost — the trace's
/// logarithm per row and iteration is most of an EM step (the prior guard runs MLLS on every
/// bootstrap resample).
fn em(posteriors: ArrayView2<f64>, train_prior: &[f64], tol: f64, max_iter: usize, trace: bool) -> Result<EmFit> {
    const WHAT: &str = "MLLS EM";
    let (n, c) = posteriors.dim();
    if n == 0 || c == 0 || train_prior.len() != c {
        return Err(Error::Shape {
            what: "EM posteriors vs prior".into(),
            expected: format!("n ≥ 1 rows and {} columns", train_prior.len()),
            found: format!("{n} × {c}"),
        });
    }
    if posteriors.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(Error::bad_data("EM posteriors", "negative or non-finite entry"));
    }
    let mut p = train_prior.to_vec();
    let ratio = |p: &[f64]| -> Vec<f64> {
        p.iter()
            .zip(train_prior)
            .map(|(a, b)| if *b > 0.0 { a / b } else { 0.0 })
            .collect()
    };
    let mut log_likelihood = Vec::new();
    if trace {
        log_likelihood.push(mean_loglik(posteriors, &ratio(&p)));
    }
    let mut iterations = 0;
    let mut converged = false;
    let mut r = vec![0.0; c];
    // Rows as contiguous slices: the same operations in the same order as indexing each row
    // (so the same bits), without a bounds check and a stride per element.
    let flat = posteriors.as_standard_layout();
    let rows = flat.as_slice().expect("standard layout is contiguous");
    while iterations < max_iter {
        let w = ratio(&p);
        let mut next = vec![0.0; c];
        for row in rows.chunks_exact(c) {
            let mut s = 0.0;
            for ((rk, &wk), &xk) in r.iter_mut().zip(&w).zip(row) {
                *rk = wk * xk;
                s += *rk;
            }
            if s > 0.0 {
                next.iter_mut().zip(&r).for_each(|(nk, &rk)| *nk += rk / s);
            } else {
                // A row with zero posterior on every class that p still allows: keep p.
                next.iter_mut().zip(&p).for_each(|(nk, &pk)| *nk += pk);
            }
        }
        next.iter_mut().for_each(|v| *v /= n as f64);
        let change: f64 = next.iter().zip(&p).map(|(a, b)| (a - b).abs()).sum();
        p = next;
        iterations += 1;
        if trace {
            log_likelihood.push(mean_loglik(posteriors, &ratio(&p)));
        }
        if !change.is_finite() {
            return Err(Error::numerical(WHAT, "non-finite prior update"));
        }
        if change < tol {
            converged = true;
            break;
        }
    }
    Ok(EmFit {
        prior: p,
        iterations,
        converged,
        log_likelihood,
    })
}

/// MLLS with BCTS: fit BCTS on the source hold-out, calibrate the target probabilities with
/// it, run [`em_prior`] with `π` = the hold-out label frequencies (the prior the calibrated
/// posteriors refer to), then `w = p̂ᵗ / pˢ`. [`ShiftEstimate::iterations`] = EM iterations;
/// a warning is added if EM hit its cap.
#[derive(Clone, Copy, Debug)]
pub struct Mlls {
    /// Calibrate with BCTS (true, the default) or use the probabilities as given (they must
    /// then be calibrated for the hold-out prior).
    pub bcts: bool,
    /// EM tolerance on the ℓ1 change of the prior.
    pub tol: f64,
    /// EM iteration cap.
    pub max_iter: usize,
}

impl Default for Mlls {
    fn default() -> Self {
        Mlls {
            bcts: true,
            tol: EM_TOL,
            max_iter: EM_MAX_ITER,
        }
    }
}

impl ShiftEstimator for Mlls {
    fn name(&self) -> &'static str {
        if self.bcts {
            "mlls-bcts"
        } else {
            "mlls"
        }
    }

    fn estimate(&self, inp: &ShiftInputs) -> Result<ShiftEstimate> {
        let prep = prepare(inp)?;
        let mut warnings = prep.warnings;
        let pi = class_prior(inp.source_labels, prep.c)?;
        let post = if self.bcts {
            let cal = fit_bcts(inp.source_probs, inp.source_labels)?;
            if cal.inv_temperature <= 0.0 {
                warnings.push(format!(
                    "BCTS inverse temperature {:.3e} ≤ 0: the classifier carries no usable signal",
                    cal.inv_temperature
                ));
            }
            cal.apply(inp.target_probs)
        } else {
            inp.target_probs.mapv(|v| v as f64)
        };
        let fit = em(post.view(), &pi, self.tol, self.max_iter, false)?;
        if !fit.converged {
            warnings.push(format!(
                "EM stopped at its cap of {} iterations before the tolerance {:.1e}",
                self.max_iter, self.tol
            ));
        }
        finish_from_prior(self.name(), &fit.prior, &prep.source_prior, warnings, Some(fit.iterations))
    }
}

#[cfg(test)]
mod tests {
    use ndarray::Array2;
    use rand::{Rng, SeedableRng};

    /// The trace changes nothing but the trace: same prior (bit for bit), iterations and
    /// convergence with and without it.
    #[test]
    fn em_without_the_trace_gives_the_same_prior_bit_for_bit() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let post = Array2::from_shape_fn((500, 4), |_| rng.random::<f64>() + 0.01);
        let post = &post / &post.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1));
        let pi = [0.1, 0.2, 0.3, 0.4];
        let traced = super::em_prior(post.view(), &pi, 1e-10, 500).unwrap();
        let bare = super::em(post.view(), &pi, 1e-10, 500, false).unwrap();
        assert!(traced.iterations > 3 && traced.log_likelihood.len() == traced.iterations + 1);
        assert!(bare.log_likelihood.is_empty());
        assert_eq!((bare.iterations, bare.converged), (traced.iterations, traced.converged));
        let bits = |p: &[f64]| p.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&bare.prior), bits(&traced.prior));
    }
}
