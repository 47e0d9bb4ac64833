//! Hyper-parameters of the baselines: each default is the one its paper (or the authors'
//! released configuration) states, never tuned here; the method files say which.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BaselineConfig {
    /// λ, the weight of the transfer term in the feature network's objective. For the
    /// adversarial methods it is the final value of the scheduled gradient-reversal coefficient.
    pub trade_off: f64,
    /// γ of the gradient-reversal schedule λ_p = λ·(2/(1 + exp(−γp)) − 1), p ∈ [0, 1] the
    /// adaptation progress (Ganin et al. 2016, sec. 5.2.2: γ = 10).
    pub grl_gamma: f64,
    /// Hidden widths of the domain discriminator (Ganin et al. 2016 and Long et al. 2018:
    /// 1024 → 1024 → 1, ReLU, dropout 0.5).
    pub discriminator_hidden: Vec<usize>,
    pub discriminator_dropout: f32,
    /// Number of Gaussian kernels of the multi-kernel on Z (DAN, JAN): bandwidths
    /// 2^(−2..=2) × the mean pairwise squared distance for 5.
    pub mk_kernels: usize,
    /// JAN's Gaussian bandwidth on the softmax predictions, exp(−‖ŷ − ŷ'‖²/1.68).
    pub jan_prediction_bandwidth: f64,
    /// CDAN: above this many dimensions (d_Z·c) the multilinear map is replaced by the
    /// randomized one (Long et al. 2018, sec. 3.1: 4096).
    pub cdan_max_multilinear_dim: usize,
    /// CDAN: output dimension of the randomized multilinear map (Long et al. 2018: 1024).
    pub cdan_random_dim: usize,
}

impl Default for BaselineConfig {
    fn default() -> Self {
        BaselineConfig {
            trade_off: 1.0,
            grl_gamma: 10.0,
            discriminator_hidden: vec![1024, 1024],
            discriminator_dropout: 0.5,
            mk_kernels: 5,
            jan_prediction_bandwidth: 1.68,
            cdan_max_multilinear_dim: 4096,
            cdan_random_dim: 1024,
        }
    }
}

impl BaselineConfig {
    /// Checks every field; part of `FitConfig::validate`.
    pub fn validate(&self) -> Result<()> {
        let positive = |name: &'static str, v: f64| -> Result<()> {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(Error::param(name, v, "must be finite and > 0"))
            }
        };
        if !(self.trade_off.is_finite() && self.trade_off >= 0.0) {
            return Err(Error::param("baselines.trade_off", self.trade_off, "must be finite and >= 0"));
        }
        positive("baselines.grl_gamma", self.grl_gamma)?;
        positive("baselines.jan_prediction_bandwidth", self.jan_prediction_bandwidth)?;
        if self.discriminator_hidden.is_empty() || self.discriminator_hidden.contains(&0) {
            return Err(Error::param(
                "baselines.discriminator_hidden",
                format!("{:?}", self.discriminator_hidden),
                "needs at least one layer, every width >= 1",
            ));
        }
        if !(self.discriminator_dropout.is_finite() && (0.0..1.0).contains(&self.discriminator_dropout)) {
            return Err(Error::param("baselines.discriminator_dropout", self.discriminator_dropout, "must be in [0, 1)"));
        }
        if !(1..=32).contains(&self.mk_kernels) {
            return Err(Error::param("baselines.mk_kernels", self.mk_kernels, "must lie in 1..=32"));
        }
        if self.cdan_random_dim == 0 {
            return Err(Error::param("baselines.cdan_random_dim", 0, "must be >= 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::methods::FitConfig;

    #[test]
    fn defaults_validate_and_bad_values_name_the_parameter() {
        BaselineConfig::default().validate().unwrap();
        let bad = [
            BaselineConfig { trade_off: -1.0, ..Default::default() },
            BaselineConfig { grl_gamma: 0.0, ..Default::default() },
            BaselineConfig { discriminator_hidden: vec![], ..Default::default() },
            BaselineConfig { discriminator_dropout: 1.0, ..Default::default() },
            BaselineConfig { mk_kernels: 0, ..Default::default() },
            BaselineConfig { jan_prediction_bandwidth: f64::NAN, ..Default::default() },
            BaselineConfig { cdan_random_dim: 0, ..Default::default() },
        ];
        for b in bad {
            let err = FitConfig { baselines: b, ..Default::default() }.validate().unwrap_err().to_string();
            assert!(err.contains("baselines."), "{err}");
        }
        let c: FitConfig = toml::from_str("[baselines]\ntrade_off = 0.3\ndiscriminator_hidden = [64]").unwrap();
        assert_eq!((c.baselines.trade_off, c.baselines.discriminator_hidden.clone()), (0.3, vec![64]));
        assert!(toml::from_str::<FitConfig>("[baselines]\nlambda = 1").is_err());
    }
}
