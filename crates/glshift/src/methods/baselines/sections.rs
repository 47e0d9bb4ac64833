//! Each baseline's own settings, one `[baselines.*]` section per method family: the knobs
//! each method file reads, with the source of every default. They live apart from the methods
//! so that the settings import nothing of the training code (`methods::method` reads
//! [`super::BaselineConfig`], which holds these).
//!
//! | section | read by |
//! |---|---|
//! | `[baselines.adversarial]` | DANN, CDAN, CDAN-E, IW-DANN, IW-CDAN, PADA (`adversary.rs`) |
//! | `[baselines.cdan]` | CDAN, CDAN-E, IW-CDAN (`cdan.rs`) |
//! | `[baselines.pada]` | PADA (`dann.rs`) |
//! | `[baselines.mmd]` | DAN, JAN (`mmd.rs`) |
//! | `[baselines.jan]` | JAN (`mmd.rs`) |
//! | `[baselines.kmm]` | KMM (`kmm/`, whose module docs give the defaults' sources) |

use serde::{Deserialize, Serialize};

use super::kmm::qp;
use crate::{Error, Result};

/// `[baselines.adversarial]`: the discriminator and reversal schedule shared by DANN, CDAN,
/// CDAN-E, IW-DANN, IW-CDAN and PADA.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdversarialConfig {
    /// γ of the gradient-reversal schedule λ_p = λ·(2/(1 + exp(−γp)) − 1), p ∈ [0, 1] the
    /// adaptation progress (Ganin et al. 2016, sec. 5.2.2: γ = 10).
    pub grl_gamma: f64,
    /// Hidden widths of the domain discriminator (Ganin et al. 2016 and Long et al. 2018:
    /// 1024 → 1024 → 1, ReLU, dropout 0.5).
    pub discriminator_hidden: Vec<usize>,
    /// Dropout after each hidden layer of the discriminator (the same sources: 0.5).
    pub discriminator_dropout: f32,
}

impl Default for AdversarialConfig {
    fn default() -> Self {
        AdversarialConfig {
            grl_gamma: 10.0,
            discriminator_hidden: vec![1024, 1024],
            discriminator_dropout: 0.5,
        }
    }
}

impl AdversarialConfig {
    /// Checks every field; part of `BaselineConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        if !(self.grl_gamma.is_finite() && self.grl_gamma > 0.0) {
            return Err(Error::param(
                "baselines.adversarial.grl_gamma",
                self.grl_gamma,
                "must be finite and > 0",
            ));
        }
        if self.discriminator_hidden.is_empty() || self.discriminator_hidden.contains(&0) {
            return Err(Error::param(
                "baselines.adversarial.discriminator_hidden",
                format!("{:?}", self.discriminator_hidden),
                "needs at least one layer, every width >= 1",
            ));
        }
        if !(self.discriminator_dropout.is_finite()
            && (0.0..1.0).contains(&self.discriminator_dropout))
        {
            return Err(Error::param(
                "baselines.adversarial.discriminator_dropout",
                self.discriminator_dropout,
                "must be in [0, 1)",
            ));
        }
        Ok(())
    }
}

/// `[baselines.cdan]`: the conditioning map of CDAN, CDAN-E and IW-CDAN.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CdanConfig {
    /// Above this many dimensions (d_Z·c) the multilinear map is replaced by the randomized
    /// one (Long et al. 2018, sec. 3.1: 4096).
    pub max_multilinear_dim: usize,
    /// Output dimension of the randomized multilinear map (Long et al. 2018: 1024).
    pub random_dim: usize,
}

impl Default for CdanConfig {
    fn default() -> Self {
        CdanConfig { max_multilinear_dim: 4096, random_dim: 1024 }
    }
}

impl CdanConfig {
    /// Checks every field; part of `BaselineConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        if self.random_dim == 0 {
            return Err(Error::param("baselines.cdan.random_dim", 0, "must be >= 1"));
        }
        Ok(())
    }
}

/// `[baselines.pada]`: PADA's own knob.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PadaConfig {
    /// Iterations between two refreshes of the class weights γ (500, the `update_iter` of
    /// PADA's released training script).
    pub update_interval: usize,
}

impl Default for PadaConfig {
    fn default() -> Self {
        PadaConfig { update_interval: 500 }
    }
}

impl PadaConfig {
    /// Checks every field; part of `BaselineConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        if self.update_interval == 0 {
            return Err(Error::param("baselines.pada.update_interval", 0, "must be >= 1"));
        }
        Ok(())
    }
}

/// `[baselines.mmd]`: the multi-kernel on Z of DAN and JAN.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MmdConfig {
    /// Number of Gaussian kernels: bandwidths 2^(−2..=2) × the mean pairwise squared distance
    /// for 5 (the `kernel_mul = 2.0`, `kernel_num = 5` family of DAN/JAN's released PyTorch
    /// code, thuml/Xlearn).
    pub kernels: usize,
}

impl Default for MmdConfig {
    fn default() -> Self {
        MmdConfig { kernels: 5 }
    }
}

/// `[baselines.jan]`: JAN's kernel on the predictions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JanConfig {
    /// The Gaussian bandwidth on the softmax predictions, exp(−‖ŷ − ŷ'‖²/1.68) (the fixed
    /// `fix_sigma = 1.68` of JAN's released code for the prediction layer).
    pub prediction_bandwidth: f64,
}

impl Default for JanConfig {
    fn default() -> Self {
        JanConfig { prediction_bandwidth: 1.68 }
    }
}

impl MmdConfig {
    /// Checks every field; part of `BaselineConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        if !(1..=32).contains(&self.kernels) {
            return Err(Error::param("baselines.mmd.kernels", self.kernels, "must lie in 1..=32"));
        }
        Ok(())
    }
}

impl JanConfig {
    /// Checks every field; part of `BaselineConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        let v = self.prediction_bandwidth;
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::param(
                "baselines.jan.prediction_bandwidth",
                v,
                "must be finite and > 0",
            ));
        }
        Ok(())
    }
}

/// KMM's settings (`[baselines.kmm]`); module docs for the sources of the defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KmmConfig {
    /// B, the bound on every weight βᵢ (the paper's experiments and skada: 1000).
    pub weight_bound: f64,
    /// ε of |Σᵢ βᵢ − n_s| ≤ n_s·ε; `None` = (√n_s − 1)/√n_s (the paper's experiments, skada).
    pub sum_tolerance: Option<f64>,
    /// γ of the Gaussian kernel exp(−γ‖x − x'‖²); `None` = 1/d (skada's `gamma=None` through
    /// scikit-learn's `rbf_kernel`).
    pub gamma: Option<f64>,
}

impl Default for KmmConfig {
    fn default() -> Self {
        KmmConfig { weight_bound: 1000.0, sum_tolerance: None, gamma: None }
    }
}

impl KmmConfig {
    /// Checks the settings that do not depend on the data; part of `BaselineConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        qp::check_feasible(self.weight_bound, self.sum_tolerance.unwrap_or(0.0))?;
        if let Some(g) = self.gamma {
            if !(g.is_finite() && g > 0.0) {
                return Err(Error::param("baselines.kmm.gamma", g, "must be finite and > 0"));
            }
        }
        Ok(())
    }

    /// ε for `n_s` source rows.
    pub fn eps(&self, n_s: usize) -> f64 {
        self.sum_tolerance.unwrap_or_else(|| {
            let r = (n_s as f64).sqrt();
            (r - 1.0) / r
        })
    }

    /// γ for `d` input features.
    pub fn gamma(&self, d: usize) -> f64 {
        self.gamma.unwrap_or(1.0 / d.max(1) as f64)
    }
}
