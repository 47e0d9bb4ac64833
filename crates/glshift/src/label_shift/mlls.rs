//! MLLS: maximum-likelihood label shift by EM (Saerens, Latinne, Decaestecker, Neural
//! Computation 2002), accelerated by SQUAREM (Varadhan & Roland 2008), on posteriors
//! calibrated with BCTS (Alexandari et al. 2020).

use ndarray::ArrayView2;

use super::bcts::fit_bcts_counted;
use super::estimators::{finish_from_prior, prepare_counted, ShiftEstimator, ShiftInputs};
use super::log_sum::LogSum;
use super::prior::{counted_class_prior, RowCounts};
use super::resample::on_distinct_rows;
use super::ShiftEstimate;
use crate::{Error, Result};

/// Default EM stopping tolerance on one EM step's move `‖F(p) − p‖₁`.
pub const EM_TOL: f64 = 1e-8;
/// Default cap on evaluations of the EM map F.
pub const EM_MAX_ITER: usize = 2000;

/// Result of [`em_prior`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct EmFit {
    /// Estimated target prior (length c, sums to 1).
    pub prior: Vec<f64>,
    /// Evaluations of the EM map F (plain EM's iterations; three per SQUAREM cycle).
    pub iterations: usize,
    /// A step moved the prior by less than `tol` (`‖F(p) − p‖₁ < tol`) before the cap.
    pub converged: bool,
    /// Mean target log-likelihood `(1/n) Σ_i ln Σ_k (p_k/π_k) f_k(x_i)` (up to a constant in
    /// `p`) at `p⁰ = π`, after every SQUAREM cycle and at the returned prior: non-decreasing.
    pub log_likelihood: Vec<f64>,
}

/// EM of Saerens et al. (2002): with posteriors `f_k(x_i) = P(y=k|x_i)` calibrated for the
/// prior `train_prior = π`, the map
///
/// ```text
/// F(p)_k = (1/n) Σ_i r_ik,    r_ik = (p_k / π_k) f_k(x_i) / Σ_j (p_j / π_j) f_j(x_i)
/// ```
///
/// is iterated from `p⁰ = π` until a step moves the prior by less than `tol`
/// (`‖F(p) − p‖₁ < tol`, and `F(p)` is returned) or `max_iter` evaluations of F. Classes with
/// `π_k = 0` keep `p_k = 0`. Every fixed point with `p > 0` maximises the concave target
/// likelihood `L(p) = (1/n) Σ_i ln Σ_k (p_k/π_k) f_k(x_i)` over the simplex.
///
/// The iteration is accelerated by SQUAREM (Varadhan & Roland, Scand. J. Statist. 2008,
/// scheme S3): from `p`, two EM steps give `r = F(p) − p` and `v = F(F(p)) − 2F(p) + p`; the
/// extrapolation `p − 2αr + α²v` with `α = −‖r‖₂/‖v‖₂` is kept when it stays in the open
/// simplex and its likelihood is at least that of `F(F(p))` (else α is halved towards −1,
/// where the extrapolation is `F(F(p))` itself), and one more EM step from it ends the cycle.
/// Why: plain EM converges linearly, with a rate near 1 when the classifier is weak and the
/// maximum lies on the simplex's boundary (absent classes). After two pre-training
/// iterations at the VisDA-2017 shape, 182 of a fit's 404 MLLS runs (the prior guard's and the
/// final prior's bootstraps) stopped at the 2 000-step cap unconverged, and they took most of
/// the fit's time (docs/performance.md, "MLLS's EM, accelerated"). Each cycle's likelihood is
/// at least its start's, so [`EmFit::log_likelihood`] never decreases; the first two steps are
/// plain EM's, bit for bit, so a run that converges within them is unchanged.
pub fn em_prior(
    posteriors: ArrayView2<f64>,
    train_prior: &[f64],
    tol: f64,
    max_iter: usize,
) -> Result<EmFit> {
    em(posteriors, RowCounts::ONCE, train_prior, tol, max_iter, true)
}

/// One EM problem: the posteriors' rows as one contiguous slice (n·c values, row after row),
/// how many times each row counts (the sums and the mean weigh it so), their class count and π.
struct EmProblem<'a> {
    rows: std::borrow::Cow<'a, [f64]>,
    counts: RowCounts<'a>,
    c: usize,
    train_prior: &'a [f64],
}

impl EmProblem<'_> {
    /// `p_k / π_k` (0 where π_k = 0).
    fn ratio(&self, p: &[f64]) -> Vec<f64> {
        p.iter().zip(self.train_prior).map(|(a, b)| if *b > 0.0 { a / b } else { 0.0 }).collect()
    }

    /// One EM step `F(p)` (module docs).
    fn step(&self, p: &[f64]) -> Vec<f64> {
        let c = self.c;
        let w = self.ratio(p);
        let mut r = vec![0.0; c];
        let mut next = vec![0.0; c];
        for (i, row) in self.rows.chunks_exact(c).enumerate() {
            let count = self.counts.at(i);
            let mut s = 0.0;
            for ((rk, &wk), &xk) in r.iter_mut().zip(&w).zip(row) {
                *rk = wk * xk;
                s += *rk;
            }
            if s > 0.0 {
                // One division per row, not per class: the divisions were most of a step.
                let inv = count / s;
                next.iter_mut().zip(&r).for_each(|(nk, &rk)| *nk += rk * inv);
            } else {
                // A row with zero posterior on every class that p still allows: keep p.
                next.iter_mut().zip(p).for_each(|(nk, &pk)| *nk += count * pk);
            }
        }
        let n = self.counts.total(self.rows.len() / c);
        next.iter_mut().for_each(|v| *v /= n);
        next
    }

    /// `L(p)`, the mean target log-likelihood up to a constant in p (each row's mixture
    /// floored at the smallest normal number).
    fn log_likelihood(&self, p: &[f64]) -> f64 {
        let w = self.ratio(p);
        let rows = self.rows.chunks_exact(self.c);
        let n = self.counts.total(rows.len());
        let mut sum = LogSum::new();
        for (i, r) in rows.enumerate() {
            let s = r.iter().zip(&w).map(|(f, w)| f * w).sum::<f64>().max(f64::MIN_POSITIVE);
            sum.add_times(s, self.counts.times(i));
        }
        sum.ln() / n
    }
}

/// Evaluations of F counted against the cap, each checked against the tolerance.
struct EmRun<'a> {
    problem: &'a EmProblem<'a>,
    tol: f64,
    max_iter: usize,
    iterations: usize,
}

impl EmRun<'_> {
    /// `F(from)`, and whether the step moved the prior by less than the tolerance.
    fn step(&mut self, from: &[f64]) -> Result<(Vec<f64>, bool)> {
        let next = self.problem.step(from);
        self.iterations += 1;
        let change: f64 = next.iter().zip(from).map(|(x, y)| (x - y).abs()).sum();
        if !change.is_finite() {
            return Err(Error::numerical("MLLS EM", "non-finite prior update"));
        }
        Ok((next, change < self.tol))
    }

    fn capped(&self) -> bool {
        self.iterations >= self.max_iter
    }
}

/// The SQUAREM extrapolation from `p0` (module docs), given `p1 = F(p0)` and `p2 = F(p1)`:
/// the point one more EM step starts from. `L(p2)` is evaluated only for a candidate inside
/// the simplex.
fn extrapolate(problem: &EmProblem, p0: &[f64], p1: &[f64], p2: &[f64]) -> Vec<f64> {
    let r: Vec<f64> = p1.iter().zip(p0).map(|(a, b)| a - b).collect();
    let v: Vec<f64> = p2.iter().zip(p1).zip(p0).map(|((c, b), a)| c - 2.0 * b + a).collect();
    let norm = |x: &[f64]| x.iter().map(|v| v * v).sum::<f64>().sqrt();
    let (nr, nv) = (norm(&r), norm(&v));
    let mut alpha = if nv > 0.0 { (-nr / nv).min(-1.0) } else { -1.0 };
    let mut l2 = None;
    // α = −1 gives p2; a few halvings towards it, then p2.
    for _ in 0..8 {
        if alpha >= -1.0 || !alpha.is_finite() {
            break;
        }
        let x: Vec<f64> =
            (0..p0.len()).map(|k| p0[k] - 2.0 * alpha * r[k] + alpha * alpha * v[k]).collect();
        // Inside the open simplex: EM never moves a share off 0, so none may land there.
        let inside =
            x.iter().zip(p2).all(|(&xk, &p2k)| if p2k > 0.0 { xk > 0.0 } else { xk == 0.0 });
        if inside
            && problem.log_likelihood(&x) >= *l2.get_or_insert_with(|| problem.log_likelihood(p2))
        {
            return x;
        }
        alpha = (alpha - 1.0) / 2.0;
        if alpha > -1.01 {
            break;
        }
    }
    p2.to_vec()
}

/// [`em_prior`] with rows counted as `counts` says; without `trace` the log-likelihood is not
/// recorded (`log_likelihood` is then empty): the same prior and iterations, bit for bit (the
/// bootstraps run MLLS on every resample).
fn em(
    posteriors: ArrayView2<f64>,
    counts: RowCounts,
    train_prior: &[f64],
    tol: f64,
    max_iter: usize,
    trace: bool,
) -> Result<EmFit> {
    let (n, c) = posteriors.dim();
    counts.check(n, "EM row counts")?;
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
    let rows = match posteriors.to_slice() {
        Some(s) => std::borrow::Cow::Borrowed(s),
        None => std::borrow::Cow::Owned(posteriors.iter().copied().collect()),
    };
    let problem = EmProblem { rows, counts, c, train_prior };
    let mut run = EmRun { problem: &problem, tol, max_iter, iterations: 0 };
    let mut log_likelihood = Vec::new();
    let mut record = |p: &[f64]| {
        if trace {
            log_likelihood.push(problem.log_likelihood(p));
        }
    };
    let mut p = train_prior.to_vec();
    record(&p);
    let mut converged = false;
    while run.iterations < max_iter {
        let (p1, done) = run.step(&p)?;
        if done || run.capped() {
            (p, converged) = (p1, done);
            record(&p);
            break;
        }
        let (p2, done) = run.step(&p1)?;
        if done || run.capped() {
            (p, converged) = (p2, done);
            record(&p);
            break;
        }
        let x = extrapolate(&problem, &p, &p1, &p2);
        let (p3, done) = run.step(&x)?;
        p = p3;
        record(&p);
        if done {
            converged = true;
            break;
        }
    }
    let iterations = run.iterations;
    Ok(EmFit { prior: p, iterations, converged, log_likelihood })
}

/// MLLS with BCTS: fit BCTS on the source hold-out, calibrate the target probabilities with
/// it, run [`em_prior`] with `π` = the hold-out label frequencies (the prior the calibrated
/// posteriors refer to), then `w = p̂ᵗ / pˢ`. [`ShiftEstimate::iterations`] = evaluations of F;
/// a warning is added if EM hit its cap.
#[derive(Clone, Copy, Debug)]
pub struct Mlls {
    /// Calibrate with BCTS (true, the default) or use the probabilities as given (they must
    /// then be calibrated for the hold-out prior).
    pub bcts: bool,
    /// EM tolerance on the ℓ1 change of the prior.
    pub tol: f64,
    /// Cap on evaluations of the EM map.
    pub max_iter: usize,
}

impl Default for Mlls {
    fn default() -> Self {
        Mlls { bcts: true, tol: EM_TOL, max_iter: EM_MAX_ITER }
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
        self.estimate_counted(inp, (RowCounts::ONCE, RowCounts::ONCE))
    }

    fn estimate_resample(
        &self,
        inp: &ShiftInputs,
        hold_rows: &[usize],
        target_rows: &[usize],
    ) -> Result<ShiftEstimate> {
        on_distinct_rows(inp, hold_rows, target_rows, |inp, counts| {
            self.estimate_counted(inp, counts)
        })
    }
}

impl Mlls {
    /// [`ShiftEstimator::estimate`] with the hold-out rows and the target rows counted as
    /// `counts` says (a bootstrap resample as its distinct rows, each with the number of times
    /// it was drawn): the estimate on the rows repeated that often, up to summation order, at
    /// the cost of the distinct rows. Once each: `estimate`'s bits.
    pub(crate) fn estimate_counted(
        &self,
        inp: &ShiftInputs,
        (hold, target): (RowCounts, RowCounts),
    ) -> Result<ShiftEstimate> {
        let prep = prepare_counted(inp, hold)?;
        let mut warnings = prep.warnings;
        let pi = counted_class_prior(inp.source_labels, hold, prep.c)?;
        let post = if self.bcts {
            let cal = fit_bcts_counted(inp.source_probs, inp.source_labels, hold)?;
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
        let fit = em(post.view(), target, &pi, self.tol, self.max_iter, false)?;
        if !fit.converged {
            warnings.push(format!(
                "EM stopped at its cap of {} steps before the tolerance {:.1e}",
                self.max_iter, self.tol
            ));
        }
        finish_from_prior(
            self.name(),
            &fit.prior,
            &prep.source_prior,
            warnings,
            Some(fit.iterations),
        )
    }
}

#[cfg(test)]
mod tests;
