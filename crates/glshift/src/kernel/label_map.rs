//! How a label kernel enters the c×c MCMD algebra: the label matrix the tiled kernel sums read
//! and the coefficients W of the class embeddings μ̂_k = Φ F W e_k.
//!
//! # Maths
//! The paper's conditional embedding of class k in a domain with n rows is
//! μ̂_k = Φ (εnI + L)⁻¹ l_k, with L_ij = k_Y(y_i, y_j) the label Gram and l_k = (k_Y(y_i, e_k))_i
//! the kernel column of the class-k label (e_k the one-hot vector). Two label maps make
//! L low-rank, so that (εnI + L)⁻¹ never forms:
//!
//! - **Bilinear** (`Linear`, `Gaussian { sigma }`): L = Y B Yᵀ with B_kl = k_Y(e_k, e_l),
//!   F = Y and W = (εnI + BN)⁻¹B, N = YᵀY (`cme_coefficients`, `mcmd-math.md`). On soft
//!   labels this is the kernel's bilinear extension.
//! - **Vertex** (`GaussianAuto`): the Gaussian kernel k_Y(y, y') = exp(−‖y − y'‖²/σ) evaluated
//!   on the labels themselves, σ by the CKB rule below. F_ik = k_Y(y_i, e_k) (n×c) holds the
//!   exact kernel columns l_k = F e_k. Inside the inverse, L is replaced by its Nyström form
//!   on the c class vertices, L ≈ F B⁻¹ Fᵀ (B_kl = k_Y(e_k, e_l) = γ + (1 − γ)δ_kl,
//!   γ = exp(−2/σ), positive definite for σ > 0). The push-through identity
//!   (εnI + F B⁻¹ Fᵀ)⁻¹ F = F (εnB + FᵀF)⁻¹ B gives
//!   μ̂_k = Φ F W e_k with W = (εnB + FᵀF)⁻¹ B (c×c),
//!   so the tiled engine reads F where the bilinear map reads Y, and memory stays O(n·c).
//!   For one-hot rows F = Y B, F B⁻¹ Fᵀ = Y B Yᵀ is the exact Gram and F W = Y (εnI + BN)⁻¹B:
//!   the vertex map then equals the bilinear map with the same σ. For soft rows the kernel
//!   columns are exact and only the Gram inside the inverse is the rank-c projection of each
//!   ψ(y_i) onto span{ψ(e_1), …, ψ(e_c)} (the exact Gaussian Gram on soft labels has full
//!   rank; `tests_label` measures the gap against the dense n×n formula).
//!
//! **Bandwidth (CKB rule).** σ = (1/m²) Σ_ij ‖y_i − y_j‖² over the m label rows the call
//! reads (for two domains, both blocks together, so both embeddings use one label kernel),
//! computed in O(mc) as 2(mean_i ‖y_i‖² − ‖mean_i y_i‖²) and treated as a constant. When all
//! rows carry the same label σ would be 0; σ = 2 (the squared distance of two one-hot labels)
//! is used then.
//!
//! Labels, F, σ and W are constants in backprop: gradients flow into Z only (see
//! `methods::mul` for why soft target labels are detached).

use super::cme::{cme_coefficients, from_faer, to_faer};
use super::{gaussian_basis, LabelKernel};
use crate::{Error, Real, Result};
use faer::prelude::Solve;
use ndarray::{Array2, ArrayView2, Axis, CowArray, Ix2};

/// σ used when every row carries the same label (the squared distance of two one-hot labels).
pub const SIGMA_FALLBACK: f64 = 2.0;

/// The label map of one call, resolved from the kernel and the label rows it reads.
#[derive(Clone, Debug)]
pub(crate) enum LabelMap {
    /// F = Y, W = (εnI + BN)⁻¹B.
    Bilinear(Array2<f64>),
    /// F_ik = exp(−‖y_i − e_k‖²/σ), W = (εnB + FᵀF)⁻¹B.
    Vertex { sigma: f64, b: Array2<f64> },
}

/// CKB's bandwidth: the mean squared distance over all ordered pairs (diagonal included) of
/// the rows of `ys` stacked, 2(mean ‖y‖² − ‖mean y‖²); [`SIGMA_FALLBACK`] when it is 0.
pub fn ckb_sigma<T: Real>(ys: &[ArrayView2<T>]) -> f64 {
    let c = ys.first().map_or(0, |y| y.ncols());
    let (mut m, mut sq) = (0usize, 0.0f64);
    let mut mean = vec![0.0f64; c];
    for y in ys {
        for row in y.rows() {
            m += 1;
            for (acc, v) in mean.iter_mut().zip(row) {
                let v = v.to_f64_();
                *acc += v;
                sq += v * v;
            }
        }
    }
    if m == 0 {
        return SIGMA_FALLBACK;
    }
    let mf = m as f64;
    let sigma = 2.0 * (sq / mf - mean.iter().map(|s| (s / mf).powi(2)).sum::<f64>());
    if sigma > 1e-12 {
        sigma
    } else {
        SIGMA_FALLBACK
    }
}

/// F_ik = exp(−‖y_i − e_k‖²/σ) (n×c), with ‖y_i − e_k‖² = ‖y_i‖² − 2y_ik + 1.
pub fn vertex_features(y: ArrayView2<f64>, sigma: f64) -> Array2<f64> {
    let sq = y.map_axis(Axis(1), |r| r.dot(&r));
    Array2::from_shape_fn(y.dim(), |(i, k)| {
        (-(sq[i] - 2.0 * y[[i, k]] + 1.0).max(0.0) / sigma).exp()
    })
}

/// W = (εnB + M)⁻¹B (c×c) with M = FᵀF (summed over the blocks of a pooled domain).
pub fn vertex_coefficients(
    m: ArrayView2<f64>,
    b: ArrayView2<f64>,
    eps: f64,
    n: usize,
) -> Result<Array2<f64>> {
    if !(eps.is_finite() && eps > 0.0) {
        return Err(Error::param("eps", eps, "must be finite and > 0"));
    }
    if n == 0 {
        return Err(Error::param("n", n, "the domain must have at least one row"));
    }
    let a = &b * (eps * n as f64) + m;
    let w = from_faer(&to_faer(a.view()).partial_piv_lu().solve(to_faer(b)));
    if w.iter().any(|v| !v.is_finite()) {
        return Err(Error::numerical(
            "CME coefficients (εnB + FᵀF)⁻¹B",
            format!("singular or ill-conditioned system (eps = {eps}, n = {n})"),
        ));
    }
    Ok(w)
}

/// One domain's label matrix as the kernel sums read it (borrowed for the bilinear map) and
/// M = FᵀF in f64 (N = YᵀY for the bilinear map).
pub(crate) struct Features<'a, T> {
    pub y: CowArray<'a, T, Ix2>,
    pub gram: Array2<f64>,
}

impl LabelMap {
    /// Resolves `kernel` on the label rows `ys` (all with c columns).
    pub fn new<T: Real>(kernel: &LabelKernel, ys: &[ArrayView2<T>], c: usize) -> LabelMap {
        match *kernel {
            LabelKernel::GaussianAuto => {
                let sigma = ckb_sigma(ys);
                LabelMap::Vertex { sigma, b: gaussian_basis(sigma, c) }
            }
            LabelKernel::Gaussian { sigma } => LabelMap::Bilinear(gaussian_basis(sigma, c)),
            LabelKernel::Linear => LabelMap::Bilinear(Array2::eye(c)),
        }
    }

    pub fn c(&self) -> usize {
        match self {
            LabelMap::Bilinear(b) | LabelMap::Vertex { b, .. } => b.nrows(),
        }
    }

    /// F of `y` and its Gram FᵀF.
    pub fn features<'a, T: Real>(&self, y: ArrayView2<'a, T>) -> Features<'a, T> {
        match self {
            LabelMap::Bilinear(_) => {
                let y64 = y.mapv(|v| v.to_f64_());
                Features { gram: y64.t().dot(&y64), y: CowArray::from(y) }
            }
            LabelMap::Vertex { sigma, .. } => {
                let f = vertex_features(y.mapv(|v| v.to_f64_()).view(), *sigma);
                Features { gram: f.t().dot(&f), y: CowArray::from(f.mapv(T::from_f64_)) }
            }
        }
    }

    /// W from M (= FᵀF, or N = YᵀY) of `n` rows.
    pub fn coefficients(&self, m: ArrayView2<f64>, eps: f64, n: usize) -> Result<Array2<f64>> {
        match self {
            LabelMap::Bilinear(b) => cme_coefficients(m, b.view(), eps, n),
            LabelMap::Vertex { b, .. } => vertex_coefficients(m, b.view(), eps, n),
        }
    }
}

/// The written form (tagged table) and the short names of the configuration.
#[derive(serde::Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum Tagged {
    Linear,
    Gaussian { sigma: f64 },
    GaussianAuto,
}

#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Repr {
    Name(String),
    Tagged(Tagged),
}

impl<'de> serde::Deserialize<'de> for LabelKernel {
    /// `"linear"`, `"gaussian"` (σ by the CKB rule) or a tagged table (see [`LabelKernel`]).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error as _;
        Ok(match Repr::deserialize(d)? {
            Repr::Name(name) => match name.as_str() {
                "linear" => LabelKernel::Linear,
                "gaussian" | "gaussian-auto" => LabelKernel::GaussianAuto,
                other => {
                    return Err(D::Error::custom(format!(
                        "unknown label kernel `{other}`: expected \"linear\", \"gaussian\" or {{ kind = \"gaussian\", sigma = S }}"
                    )))
                }
            },
            Repr::Tagged(Tagged::Linear) => LabelKernel::Linear,
            Repr::Tagged(Tagged::Gaussian { sigma }) => LabelKernel::Gaussian { sigma },
            Repr::Tagged(Tagged::GaussianAuto) => LabelKernel::GaussianAuto,
        })
    }
}
