//! Kernel Mean Matching — Huang, Smola, Gretton, Borgwardt & Schölkopf, "Correcting Sample
//! Selection Bias by Unlabeled Data", NIPS 2007. The source rows are re-weighted so that the
//! β-weighted mean embedding of the source matches the target's in the RKHS of a Gaussian
//! kernel (the empirical KMM problem of the paper):
//!
//! ```text
//! β̂ = argmin_β ½ βᵀKβ − κᵀβ   s.t.  0 ≤ βᵢ ≤ B,   |Σᵢ βᵢ − n_s| ≤ n_s·ε
//! K_ij = k(xᵢ, xⱼ)  (n_s × n_s, source training rows),
//! κᵢ = (n_s/n_t)·Σⱼ k(xᵢ, x'ⱼ)  (n_t target rows),   k(x, x') = exp(−γ‖x − x'‖²)
//! ```
//!
//! which is (n_s²/2)·MMD²(β-weighted source, target) up to a constant. β̂ is computed once,
//! before the adaptation stage, from the preprocessed input features (not Z) of the source
//! training rows (the hold-out rows are neither weighted nor read) and of every target row;
//! the QP is solved exactly by clarabel ([`qp`]). The adaptation stage then trains G + F on
//! the source cross-entropy weighted per row, Σᵢ β̂ᵢ·CEᵢ / Σᵢ β̂ᵢ (`CeWeights::PerRow`), with no
//! other term — KMM followed by a sample-weighted classifier, as skada's `KMMReweight`
//! pipeline (a `LogisticRegression` fitted with `sample_weight`).
//!
//! Defaults ([`KmmConfig`]) and where they come from (skada's `KMMReweightAdapter` read for
//! facts only):
//! - B = 1000: the paper's experiments and skada's `B=1000.0`.
//! - ε = (√n_s − 1)/√n_s: the paper's experiments and skada's rule for `eps=None`.
//! - γ = 1/d (d input features): skada's `kernel="rbf", gamma=None`, which scikit-learn's
//!   `rbf_kernel` resolves to 1/n_features. The paper does not fix one bandwidth for all data.
//! - κ = n_s·(row means of the source × target Gram): as in skada and the paper.
//!
//! Departures: skada solves the QP by Frank-Wolfe (tol 1e-6, at most 1000 iterations); here
//! the interior point of clarabel gives the QP's solution to its default tolerances, the same
//! bits on every run. The classifier is this crate's network after the shared pre-training,
//! not a logistic regression, and the weighted cross-entropy is a weighted mean rather than
//! the sum Σᵢ βᵢ·CEᵢ (the two differ by Σβ/n_s ∈ [1 − ε, 1 + ε], a step size under AdamW).
//! The n_s × n_s kernel is dense: more than [`MAX_SOURCE_ROWS`] source training rows is an
//! error rather than a QP that would not finish.
//!
//! The history's `transfer` records MMD²(β̂-weighted source, target) on the input features
//! (a V-statistic, constant over the iterations) with λ = 0: it is not a term of the network's
//! objective.

pub mod qp;
#[cfg(test)]
mod tests;

use ndarray::{Array2, ArrayView2, Axis};

pub use super::KmmConfig;
use crate::methods::method::{AdaptInputs, CeWeights, Method, StepOutput, TransferRecord};
use crate::{Error, Result};

/// The most source training rows KMM takes: K alone is n_s² f64 (800 MB at 10 000) and the
/// QP's factorisation grows as n_s³.
pub const MAX_SOURCE_ROWS: usize = 10_000;

/// KMM's weights and what they leave of the discrepancy.
#[derive(Clone, Debug)]
pub struct KmmWeights {
    /// β̂ (length n_s, in the order of the source rows given).
    pub beta: Vec<f64>,
    /// MMD²(β̂-weighted source, target) = β̂ᵀKβ̂/n_s² − 2κᵀβ̂/n_s² + 1ᵀK_tt1/n_t².
    pub mmd2: f64,
}

/// exp(−γ‖aᵢ − bⱼ‖²) for the rows of `a` (n_a × d) and `b` (n_b × d), in f64.
pub fn gaussian_gram(a: ArrayView2<f64>, b: ArrayView2<f64>, gamma: f64) -> Array2<f64> {
    let na = a.map_axis(Axis(1), |r| r.dot(&r));
    let nb = b.map_axis(Axis(1), |r| r.dot(&r));
    let mut g = a.dot(&b.t());
    for ((i, j), v) in g.indexed_iter_mut() {
        // ‖a − b‖² by the expansion can round below 0 for near-identical rows.
        *v = (-gamma * (na[i] + nb[j] - 2.0 * *v).max(0.0)).exp();
    }
    g
}

/// KMM's β̂ for the source rows `xs` (n_s × d) against the target rows `xt` (n_t × d), module
/// docs. Errors: a domain without rows, widths that differ, non-finite features, more than
/// [`MAX_SOURCE_ROWS`] source rows, bad settings or a failed solve.
pub fn kmm_weights(
    xs: ArrayView2<f32>,
    xt: ArrayView2<f32>,
    cfg: &KmmConfig,
) -> Result<KmmWeights> {
    let (n_s, d) = xs.dim();
    let n_t = xt.nrows();
    if n_s == 0 || n_t == 0 {
        return Err(Error::bad_data("kmm", "needs at least one source and one target row"));
    }
    if xt.ncols() != d {
        return Err(Error::Shape {
            what: "KMM: target feature dimension".into(),
            expected: d.to_string(),
            found: xt.ncols().to_string(),
        });
    }
    if n_s > MAX_SOURCE_ROWS {
        return Err(Error::param(
            "method",
            "kmm",
            format!(
                "{n_s} source training rows: KMM's dense {n_s} × {n_s} kernel QP takes at most \
                 {MAX_SOURCE_ROWS}"
            ),
        ));
    }
    if xs.iter().chain(xt.iter()).any(|v| !v.is_finite()) {
        return Err(Error::bad_data("kmm", "the input features contain NaN or Inf"));
    }
    cfg.validate()?;
    let (eps, gamma) = (cfg.eps(n_s), cfg.gamma(d));
    let (xs, xt) = (xs.mapv(f64::from), xt.mapv(f64::from));
    let k = gaussian_gram(xs.view(), xs.view(), gamma);
    let ratio = n_s as f64 / n_t as f64;
    let kappa: Vec<f64> = gaussian_gram(xs.view(), xt.view(), gamma)
        .rows()
        .into_iter()
        .map(|r| ratio * r.sum())
        .collect();
    let beta = qp::solve(k.view(), &kappa, cfg.weight_bound, eps)?;
    let b = ndarray::ArrayView1::from(&beta[..]);
    let quad = b.dot(&k.dot(&b));
    let lin: f64 = kappa.iter().zip(&beta).map(|(k, b)| k * b).sum();
    let tt = gaussian_gram(xt.view(), xt.view(), gamma).sum() / (n_t * n_t) as f64;
    let mmd2 = ((quad - 2.0 * lin) / (n_s * n_s) as f64 + tt).max(0.0);
    Ok(KmmWeights { beta, mmd2 })
}

/// `kmm` (module docs): β̂ from the input features, then the β̂-weighted source cross-entropy.
#[derive(Clone, Debug)]
pub struct Kmm {
    cfg: KmmConfig,
    weights: Option<KmmWeights>,
}

impl Kmm {
    pub fn new(cfg: &KmmConfig) -> Kmm {
        Kmm { cfg: cfg.clone(), weights: None }
    }

    /// β̂ and the MMD² it leaves, once [`Method::set_features`] has run.
    pub fn weights(&self) -> Option<&KmmWeights> {
        self.weights.as_ref()
    }
}

impl Method for Kmm {
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput> {
        let Some(w) = &self.weights else {
            return Err(Error::numerical("kmm", "the weights were not computed before adaptation"));
        };
        if w.beta.len() != inp.ys.len() {
            return Err(Error::Shape {
                what: "KMM: weights vs source training rows".into(),
                expected: inp.ys.len().to_string(),
                found: w.beta.len().to_string(),
            });
        }
        Ok(StepOutput {
            ce_weights: CeWeights::PerRow(w.beta.clone()),
            transfer: Some(TransferRecord { value: w.mmd2, lambda: 0.0 }),
            ..StepOutput::none()
        })
    }

    fn reads_features(&self) -> bool {
        true
    }

    fn set_features(&mut self, x_train: ArrayView2<f32>, x_target: ArrayView2<f32>) -> Result<()> {
        self.weights = Some(kmm_weights(x_train, x_target, &self.cfg)?);
        Ok(())
    }
}
