//! MUL's settings (`[mul]` of the config): the weights of J_TU and J_DU, τ, the CME
//! regulariser, the label kernel, the kernel-sum estimator, the ablation switches and the
//! conditional discrepancy ([`Discrepancy`]). Kept beside the method, read by it without the
//! rest of the configuration; checked by [`MulConfig::validate`] (called by `FitConfig::validate`).

use serde::{Deserialize, Serialize};

use crate::kernel::{LabelKernel, McmdEstimator, McmdParams};
use crate::{Error, Result};

/// The conditional discrepancy of J_TU and J_DU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Discrepancy {
    /// MCMD through the conditional metric operator (the paper's method).
    #[default]
    Mcmd,
    /// Class-wise MMD between (pseudo-)label splits (`kernel::classwise_j_tu`/`classwise_j_du`).
    ClasswiseMmd,
}

/// MUL's own hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MulConfig {
    pub lambda_tu: f64,
    /// Weight of J_DU; with `du_balance` it is relative to J_TU's gradient (a ratio).
    pub lambda_du: f64,
    /// Scale J_DU's gradient to `lambda_du` × J_TU's each iteration (see `mul::MulTerms`).
    pub du_balance: bool,
    /// Confidence threshold τ for target pseudo-labels.
    pub tau: f64,
    /// CME regulariser ε; `None` = the rule 0.01/c.
    pub eps: Option<f64>,
    /// Label kernel of MCMD: `"linear"` (default) or `"gaussian"` (CKB's σ rule, soft target
    /// labels in J_TU; docs/ablation.md "Label kernel").
    pub label_kernel: LabelKernel,
    /// How the kernel sums of J_TU and J_DU are computed: `"exact"` (default) or
    /// `{ random_features = r }` (linear time, error ~ 1/√r; docs/performance.md "Random features").
    pub mcmd: McmdEstimator,
    /// Gaussian bandwidth h = multiplier × mean pairwise squared distance of Z.
    pub bandwidth_multiplier: f64,
    /// Confident target rows join J_DU once its relative change over `du_window` iterations
    /// falls below this (the paper's "when the objective value is stable").
    pub du_stable_tol: f64,
    pub du_window: usize,
    /// Ablation switches: importance-weighted CE, J_TU, J_DU.
    pub importance_weighting: bool,
    pub use_tu: bool,
    pub use_du: bool,
    /// Ablation switch "y": weight J_TU by the estimated target prior p̂ᵗ and keep classes
    /// estimated absent out of the pseudo-labels. Off: J_TU weights classes by pˢ (w ≡ 1).
    pub prior_weighting: bool,
    /// The conditional discrepancy in J_TU and J_DU: MCMD, or class-wise MMD (ablation).
    pub discrepancy: Discrepancy,
}

impl Default for MulConfig {
    fn default() -> Self {
        MulConfig {
            lambda_tu: 1.0,
            lambda_du: 0.1,
            du_balance: true,
            tau: 0.9,
            eps: None,
            label_kernel: LabelKernel::Linear,
            mcmd: McmdEstimator::Exact,
            bandwidth_multiplier: 1.0,
            du_stable_tol: 0.01,
            du_window: 10,
            importance_weighting: true,
            use_tu: true,
            use_du: true,
            prior_weighting: true,
            discrepancy: Discrepancy::Mcmd,
        }
    }
}

impl MulConfig {
    /// Checks every field of the section (`mul.*`).
    pub fn validate(&self) -> Result<()> {
        let m = self;
        Error::check_range("mul.lambda_tu", m.lambda_tu, 0.0, f64::MAX, "must be finite and >= 0")?;
        Error::check_range("mul.lambda_du", m.lambda_du, 0.0, f64::MAX, "must be finite and >= 0")?;
        if !(m.tau > 0.0 && m.tau < 1.0) {
            return Err(Error::param("mul.tau", m.tau, "confidence threshold must lie in (0, 1)"));
        }
        if let Some(eps) = m.eps {
            if !(eps.is_finite() && eps > 0.0) {
                return Err(Error::param("mul.eps", eps, "CME regulariser must be > 0"));
            }
        }
        if let LabelKernel::Gaussian { sigma } = m.label_kernel {
            if !(sigma.is_finite() && sigma > 0.0) {
                return Err(Error::param("mul.label_kernel.sigma", sigma, "must be > 0"));
            }
        }
        m.mcmd.validate()?;
        if !(m.bandwidth_multiplier.is_finite() && m.bandwidth_multiplier > 0.0) {
            return Err(Error::param(
                "mul.bandwidth_multiplier",
                m.bandwidth_multiplier,
                "must be > 0",
            ));
        }
        Error::check_range(
            "mul.du_stable_tol",
            m.du_stable_tol,
            0.0,
            f64::MAX,
            "must be finite and >= 0",
        )?;
        if m.du_window == 0 {
            return Err(Error::param("mul.du_window", 0, "must be >= 1"));
        }
        Ok(())
    }

    /// ε actually used for `c` classes.
    pub fn eps_for(&self, c: usize) -> f64 {
        self.eps.unwrap_or(0.01 / c as f64)
    }

    pub fn mcmd_params(&self, c: usize) -> McmdParams {
        McmdParams { eps: self.eps_for(c), label_kernel: self.label_kernel }
    }
}
