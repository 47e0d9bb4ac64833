//! Gaussian feature kernels, the bandwidth rule, conditional mean embeddings (CME), MCMD and
//! the two MUL objectives J_DU and J_TU, with their gradients with respect to the features.
//!
//! The paper (section "Conditional Metric Operator") writes every estimator with n×n
//! inverses (L̃ = εnI + L). Because the label Gram has the form L = Y B Yᵀ, all of them
//! collapse to c×c algebra on W = (εnI + BN)⁻¹B and S = Yᵀ K Y (see
//! `shared/docs/mcmd-math.md`); [`reference`](mod@reference) keeps the literal dense formulas as the test
//! oracle.
//!
//! The label kernel enters through [`label_map`](mod@label_map): the bilinear map L = Y B Yᵀ
//! (linear, or Gaussian with a fixed σ) or the vertex map of the Gaussian kernel on one-hot
//! and soft labels with CKB's σ rule, both low-rank, so memory stays O(n(d + c)).
//!
//! Conventions: `z` is n×d (one row per sample), `y` is n×c (one-hot or soft labels),
//! the feature kernel is K_ij = exp(−‖z_i − z_j‖²/h), and h is a constant in backprop.
//!
//! The O(n²) kernel sums run on a fused tiled engine ([`tiled`](mod@tiled): O(n(d + c))
//! memory, symmetric blocks on half the tiles, rayon over tiles, thread-count independent
//! results); [`McmdEstimator::RandomFeatures`] swaps in the linear-time random-feature
//! approximation ([`rff`](mod@rff)).

mod bandwidth;
mod classwise;
mod cme;
pub mod cond_shift;
mod gemm;
mod gram;
mod joint;
mod label_map;
mod mcmd;
pub mod reference;
pub mod rff;
mod simd;
#[cfg(test)]
mod tests;
pub(crate) mod tiled;

pub(crate) use bandwidth::bandwidth_of;
pub use bandwidth::{bandwidth, mean_pairwise_sq_dist, scaled_bandwidth};
pub use classwise::{classwise_j_du, classwise_j_tu};
pub use cme::cme_coefficients;
pub use gemm::tile_gemm_gflops;
pub use gram::{kernel_sum, kernel_sum_backward};
pub use joint::{joint_mmd2, GaussianFamily, JointMmd};
pub use label_map::{ckb_sigma, vertex_coefficients, vertex_features, SIGMA_FALLBACK};
pub use mcmd::{
    embedding_gram, j_du, j_du_with, j_tu, j_tu_du, j_tu_du_flops, j_tu_with, mcmd2_matrix, DuRows,
    MulObjectives, TuDuGrad,
};
pub(crate) use mcmd::{j_du_objective, j_tu_objective};

use crate::{Error, Real, Result};
use ndarray::{Array2, ArrayView2};

/// Label kernel of the conditional mean embeddings.
///
/// - `Linear`: B = I, L = Y Yᵀ (valid for one-hot and soft labels).
/// - `Gaussian { sigma }`: k(y, y') = exp(−‖y − y'‖²/σ_Y) on one-hot vectors with a fixed σ_Y,
///   i.e. B = (1 − γ)I + γ11ᵀ with γ = exp(−2/σ_Y); with soft labels L = Y B Yᵀ is its
///   bilinear extension.
/// - `GaussianAuto`: the same Gaussian kernel evaluated on the labels themselves (one-hot or
///   soft), σ_Y by CKB's rule (mean squared label distance of the rows a call reads), in the
///   low-rank vertex form of [`label_map`](mod@label_map). On one-hot labels it equals
///   `Gaussian { sigma: ckb_sigma(labels) }`.
///
/// TOML: `label_kernel = "linear"`, `label_kernel = "gaussian"` (= `GaussianAuto`), or the
/// tagged tables `{ kind = "linear" }`, `{ kind = "gaussian", sigma = 1.5 }`,
/// `{ kind = "gaussian-auto" }` (the form written back).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum LabelKernel {
    Linear,
    Gaussian { sigma: f64 },
    GaussianAuto,
}

impl LabelKernel {
    /// The c×c basis Gram matrix B of a kernel with a fixed σ; `GaussianAuto` has none (its σ
    /// depends on the labels) and is an error here.
    pub fn basis_gram(&self, c: usize) -> Result<Array2<f64>> {
        match *self {
            LabelKernel::Linear => Ok(Array2::eye(c)),
            LabelKernel::Gaussian { sigma } => Ok(gaussian_basis(sigma, c)),
            LabelKernel::GaussianAuto => Err(Error::param(
                "label_kernel",
                "gaussian-auto",
                "σ depends on the labels: resolve it with kernel::ckb_sigma and use Gaussian { sigma }",
            )),
        }
    }

    /// Rejects σ_Y ≤ 0 or non-finite: B would stop being positive definite (γ ≥ 1).
    pub fn validate(&self) -> Result<()> {
        match *self {
            LabelKernel::Gaussian { sigma } if !(sigma.is_finite() && sigma > 0.0) => {
                Err(Error::param("label_kernel.sigma", sigma, "must be finite and > 0"))
            }
            _ => Ok(()),
        }
    }
}

/// B = (1 − γ)I + γ11ᵀ, γ = exp(−2/σ): the Gaussian kernel's Gram on the c one-hot vectors.
pub(crate) fn gaussian_basis(sigma: f64, c: usize) -> Array2<f64> {
    let gamma = (-2.0 / sigma).exp();
    Array2::from_shape_fn((c, c), |(k, l)| if k == l { 1.0 } else { gamma })
}

/// Hyper-parameters of the MCMD estimators: the regulariser ε of L̃ = εnI + L and the
/// label kernel.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct McmdParams {
    pub eps: f64,
    pub label_kernel: LabelKernel,
}

impl McmdParams {
    /// Checks ε > 0 (finite) and the label kernel.
    pub fn validate(&self) -> Result<()> {
        if !(self.eps.is_finite() && self.eps > 0.0) {
            return Err(Error::param("eps", self.eps, "must be finite and > 0"));
        }
        self.label_kernel.validate()
    }
}

/// Threads the kernel sums run on (rayon's pool: `RAYON_NUM_THREADS`, default all cores).
pub fn threads() -> usize {
    rayon::current_num_threads()
}

/// How the O(n²) kernel sums S = Y_aᵀ K Y_b are computed.
///
/// In TOML: `mcmd = "exact"` or `mcmd = { random_features = 2048 }`; on the command line
/// `exact` or `random-features:2048`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McmdEstimator {
    /// Every kernel entry, on the fused tiled path: O(n²(d + c)) time, O(n(d + c)) memory.
    #[default]
    Exact,
    /// r random Fourier features (fixed seed [`rff::DEFAULT_SEED`]): O(n r (d + c)) time,
    /// error ~ 1/√r.
    RandomFeatures(usize),
}

impl McmdEstimator {
    /// Rejects r = 0.
    pub fn validate(&self) -> Result<()> {
        match *self {
            McmdEstimator::RandomFeatures(0) => Err(Error::param(
                "mcmd.random_features",
                0,
                "the number of random features must be >= 1",
            )),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for McmdEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            McmdEstimator::Exact => f.write_str("exact"),
            McmdEstimator::RandomFeatures(r) => write!(f, "random-features:{r}"),
        }
    }
}

impl std::str::FromStr for McmdEstimator {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::param("mcmd", s, "expected `exact` or `random-features:R` with R >= 1");
        let est = match s.trim() {
            "exact" => McmdEstimator::Exact,
            other => {
                let r = other.strip_prefix("random-features:").ok_or_else(bad)?;
                McmdEstimator::RandomFeatures(r.trim().parse().map_err(|_| bad())?)
            }
        };
        est.validate()?;
        Ok(est)
    }
}

/// One domain's labelled rows: `z` (n×d features), `y` (n×c one-hot or soft labels).
#[derive(Clone, Copy, Debug)]
pub struct Labelled<'a, T> {
    pub z: ArrayView2<'a, T>,
    pub y: ArrayView2<'a, T>,
}

impl<'a, T> Labelled<'a, T> {
    pub fn new(z: ArrayView2<'a, T>, y: ArrayView2<'a, T>) -> Self {
        Labelled { z, y }
    }
}

/// A scalar objective and its gradient with respect to the features `z` (same shape as z).
#[derive(Clone, Debug)]
pub struct TermGrad<T> {
    pub value: f64,
    pub grad: Array2<T>,
}

/// J_TU and its gradients with respect to the source and target features.
#[derive(Clone, Debug)]
pub struct TuGrad<T> {
    pub value: f64,
    pub grad_s: Array2<T>,
    pub grad_t: Array2<T>,
}

fn shape_err(what: impl Into<String>, expected: impl ToString, found: impl ToString) -> Error {
    Error::Shape { what: what.into(), expected: expected.to_string(), found: found.to_string() }
}

/// Checks one labelled block: at least one row, z and y row counts agree, y has `c`
/// columns and `z` has `d` columns when given, and all values are finite.
fn check_labelled<T: Real>(
    x: &Labelled<T>,
    name: &str,
    d: Option<usize>,
    c: Option<usize>,
) -> Result<()> {
    let (n, zd) = x.z.dim();
    if n == 0 {
        return Err(shape_err(format!("{name}.z rows"), "at least 1", 0));
    }
    if x.y.nrows() != n {
        return Err(shape_err(format!("{name}.y rows (= {name}.z rows)"), n, x.y.nrows()));
    }
    if zd == 0 {
        return Err(shape_err(format!("{name}.z columns (feature dim)"), "at least 1", 0));
    }
    if x.y.ncols() == 0 {
        return Err(shape_err(format!("{name}.y columns (classes)"), "at least 1", 0));
    }
    if let Some(d) = d.filter(|&d| d != zd) {
        return Err(shape_err(format!("{name}.z columns (feature dim)"), d, zd));
    }
    if let Some(c) = c.filter(|&c| c != x.y.ncols()) {
        return Err(shape_err(format!("{name}.y columns (classes)"), c, x.y.ncols()));
    }
    if x.z.iter().any(|v| !v.is_finite()) {
        return Err(Error::bad_data(format!("{name}.z"), "contains NaN or Inf"));
    }
    if x.y.iter().any(|v| !v.is_finite()) {
        return Err(Error::bad_data(format!("{name}.y"), "contains NaN or Inf"));
    }
    Ok(())
}

fn check_h(h: f64) -> Result<()> {
    if h.is_finite() && h > 0.0 {
        Ok(())
    } else {
        Err(Error::param("h (bandwidth)", h, "must be finite and > 0"))
    }
}
