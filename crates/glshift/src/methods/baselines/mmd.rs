//! The kernel two-sample baselines, DAN and JAN, on `kernel::joint_mmd2`.

use super::{softmax_backward, AdaptInputs, AdaptOutput, BaselineConfig, GRADIENT_NAME};
use crate::kernel::{bandwidth, joint_mmd2, GaussianFamily};
use crate::methods::method::{Method, StepOutput};
use crate::nn::softmax;
use crate::{Real, Result};

/// DAN — Long, Cao, Wang & Jordan, "Learning Transferable Features with Deep Adaptation
/// Networks", ICML 2015 (and the TPAMI 2018 version the MUL paper cites): the source CE plus
/// λ·MK-MMD²(Zˢ, Zᵗ), the multi-kernel MMD with k = Σ_u β_u k_u, Σβ_u = 1.
///
/// Here: the adaptation layer is Z (this network's only hidden representation besides the input
/// MLP); k_u are `[baselines.mmd] kernels` = 5 Gaussians with bandwidths 2^(−2..=2) × the mean pairwise
/// squared distance of the pooled Z (the family of the authors' released code; the paper spans a
/// wider family); β_u = 1/5 equal weights instead of the paper's β learned by a QP per step;
/// the quadratic-time (biased) estimate over the mini-batch (36 + 36 rows, SGD as the other
/// baselines, `BaselineConfig`) instead of the paper's linear-time estimate; λ = 1
/// (`trade_off`), not tuned.
#[derive(Clone, Debug)]
pub struct Dan {
    trade_off: f64,
    kernels: usize,
    fixed_bandwidth: Option<f64>,
}

impl Dan {
    pub fn new(cfg: &BaselineConfig) -> Self {
        Dan { trade_off: cfg.trade_off, kernels: cfg.mmd.kernels, fixed_bandwidth: None }
    }

    /// Freezes the base bandwidth (the finite-difference tests: the bandwidth rule is a
    /// constant in backprop, so the gradient is checked at a fixed bandwidth).
    pub fn with_fixed_bandwidth(self, h: f64) -> Self {
        Dan { fixed_bandwidth: Some(h), ..self }
    }

    pub fn compute<T: Real>(&mut self, inp: &AdaptInputs<T>) -> Result<AdaptOutput<T>> {
        let h = match self.fixed_bandwidth {
            Some(h) => h,
            None => bandwidth(&[inp.zs, inp.zt], 1.0)?,
        };
        let family =
            GaussianFamily { base: h, count: self.kernels, weight: 1.0 / self.kernels as f64 };
        let r = joint_mmd2(&[inp.zs], &[inp.zt], &[family])?;
        let l = T::from_f64_(self.trade_off);
        Ok(AdaptOutput {
            value: r.value,
            objective: self.trade_off * r.value,
            lambda: self.trade_off,
            grad_zs: r.grad_s[0].mapv(|g| g * l),
            grad_zt: r.grad_t[0].mapv(|g| g * l),
            grad_logits_s: None,
            grad_logits_t: None,
            class_weights: None,
        })
    }
}

impl Method for Dan {
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput> {
        self.compute(inp).map(StepOutput::from)
    }

    fn gradient_name(&self) -> &'static str {
        GRADIENT_NAME
    }
}

/// JAN — Long, Zhu, Wang & Jordan, "Deep Transfer Learning with Joint Adaptation Networks",
/// ICML 2017: the source CE plus λ·JMMD², the MMD of the joint distribution of the adapted
/// layers under the product of per-layer kernels, here the layers Z and softmax(F(Z)).
///
/// Kernels as in the authors' released configuration: on Z, `[baselines.mmd] kernels` = 5 Gaussians with
/// bandwidths 2^(−2..=2) × the mean pairwise squared distance, summed; on the predictions one
/// Gaussian exp(−‖ŷ − ŷ'‖²/1.68) (`[baselines.jan] prediction_bandwidth`). The gradient flows into Z and,
/// through the softmax, into the logits (F is adapted too, as in the paper). Quadratic-time
/// estimate over the mini-batch (SGD as the other baselines); λ = 1 (`trade_off`), not tuned.
#[derive(Clone, Debug)]
pub struct Jan {
    trade_off: f64,
    kernels: usize,
    prediction_bandwidth: f64,
    fixed_bandwidth: Option<f64>,
}

impl Jan {
    pub fn new(cfg: &BaselineConfig) -> Self {
        Jan {
            trade_off: cfg.trade_off,
            kernels: cfg.mmd.kernels,
            prediction_bandwidth: cfg.jan.prediction_bandwidth,
            fixed_bandwidth: None,
        }
    }

    /// As [`Dan::with_fixed_bandwidth`], for Z's kernels.
    pub fn with_fixed_bandwidth(self, h: f64) -> Self {
        Jan { fixed_bandwidth: Some(h), ..self }
    }

    pub fn compute<T: Real>(&mut self, inp: &AdaptInputs<T>) -> Result<AdaptOutput<T>> {
        let h = match self.fixed_bandwidth {
            Some(h) => h,
            None => bandwidth(&[inp.zs, inp.zt], 1.0)?,
        };
        let families = [
            GaussianFamily { base: h, count: self.kernels, weight: 1.0 },
            GaussianFamily { base: self.prediction_bandwidth, count: 1, weight: 1.0 },
        ];
        let (ps, pt) = (softmax(inp.logits_s), softmax(inp.logits_t));
        let r = joint_mmd2(&[inp.zs, ps.view()], &[inp.zt, pt.view()], &families)?;
        let l = T::from_f64_(self.trade_off);
        let scaled = |g: &ndarray::Array2<T>| g.mapv(|v| v * l);
        Ok(AdaptOutput {
            value: r.value,
            objective: self.trade_off * r.value,
            lambda: self.trade_off,
            grad_zs: scaled(&r.grad_s[0]),
            grad_zt: scaled(&r.grad_t[0]),
            grad_logits_s: Some(softmax_backward(ps.view(), scaled(&r.grad_s[1]).view())),
            grad_logits_t: Some(softmax_backward(pt.view(), scaled(&r.grad_t[1]).view())),
            class_weights: None,
        })
    }
}

impl Method for Jan {
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput> {
        self.compute(inp).map(StepOutput::from)
    }

    fn gradient_name(&self) -> &'static str {
        GRADIENT_NAME
    }
}
