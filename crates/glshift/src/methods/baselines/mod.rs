//! The baselines of the paper's tables, each a transfer loss added to the one training loop
//! (`train::fit`) on the same network G + F, after the same pre-training, full batch:
//!
//! | method | file | reference |
//! |---|---|---|
//! | `dan` | [`mmd`] | Long et al. 2015 (ICML), multi-kernel MMD on Z |
//! | `jan` | [`mmd`] | Long et al. 2017 (ICML), joint MMD over Z and softmax predictions |
//! | `dann`, `iw-dann`, `pada` | [`dann`] | Ganin et al. 2016 (JMLR); Combes et al. 2020 (NeurIPS); Cao et al. 2018 (ECCV) |
//! | `cdan`, `cdan-e`, `iw-cdan` | [`cdan`] | Long et al. 2018 (NeurIPS); Combes et al. 2020 |
//! | `mmd-classwise` | `methods::mul` with `Discrepancy::ClasswiseMmd` | the paper's ablation |
//!
//! A baseline sees the representation Z and the logits of the source training rows and of every
//! target row, never a target label. It returns the gradient of its term (already weighted) with
//! respect to Z and the logits, and optionally per-class weights for the source cross-entropy.

mod adversary;
pub mod cdan;
mod config;
pub mod dann;
pub mod mmd;

pub use adversary::{grl_coefficient, reverse_gradient, Discriminator};
pub use config::BaselineConfig;

use ndarray::{Array2, ArrayView2};

use super::config::{FitConfig, MethodKind};
use crate::label_shift::ShiftEstimate;
use crate::{Error, Real, Result};

/// What one adaptation iteration gives a baseline (training-mode outputs of the network).
/// Generic in the precision so the tests can check the gradients in f64; training runs f32.
pub struct AdaptInputs<'a, T = f32> {
    /// Z and logits of the source training rows, and their labels.
    pub zs: ArrayView2<'a, T>,
    pub logits_s: ArrayView2<'a, T>,
    pub ys: &'a [usize],
    /// Z and logits of every target row.
    pub zt: ArrayView2<'a, T>,
    pub logits_t: ArrayView2<'a, T>,
    /// Evaluation-mode target class probabilities at temperature 1 (PADA's class weights).
    pub target_probs: ArrayView2<'a, T>,
    /// Adaptation progress p = iteration / adaptation iterations, in [0, 1).
    pub progress: f64,
    /// This iteration's BBSE-QP estimate (the importance-weighted baselines only).
    pub estimate: Option<&'a ShiftEstimate>,
}

/// A baseline's term at one iteration.
#[derive(Clone, Debug)]
pub struct AdaptOutput<T = f32> {
    /// The transfer term itself (an MMD², or the discriminator's domain loss L_D).
    pub value: f64,
    /// Its contribution to the feature network's objective (λ·MMD², or −λ_p·L_D).
    pub objective: f64,
    /// The weight λ (or λ_p) applied at this iteration.
    pub lambda: f64,
    /// Gradients of `objective` wrt Z and the logits of the source and target rows.
    pub grad_zs: Array2<T>,
    pub grad_zt: Array2<T>,
    pub grad_logits_s: Option<Array2<T>>,
    pub grad_logits_t: Option<Array2<T>>,
    /// Per-class weights of the source cross-entropy, (1/n_s)·Σ w_{yᵢ}·CEᵢ (IW methods, PADA).
    pub class_weights: Option<Vec<f64>>,
}

/// A transfer loss with its own state (a discriminator and its optimiser, for example).
pub trait Baseline {
    fn step(&mut self, inp: &AdaptInputs) -> Result<AdaptOutput>;
}

/// The baseline of `cfg.method` for a Z of `z_dim` columns and `c` classes; `None` for `source`
/// and the MUL variants.
pub fn build(cfg: &FitConfig, z_dim: usize, c: usize) -> Result<Option<Box<dyn Baseline>>> {
    Ok(match cfg.method {
        MethodKind::Source | MethodKind::Mul | MethodKind::MmdClasswise => None,
        MethodKind::Dan => Some(Box::new(mmd::Dan::new(&cfg.baselines))),
        MethodKind::Jan => Some(Box::new(mmd::Jan::new(&cfg.baselines))),
        MethodKind::Dann | MethodKind::IwDann | MethodKind::Pada => Some(Box::new(dann::Dann::<f32>::new(cfg.method, z_dim, cfg)?)),
        MethodKind::Cdan | MethodKind::CdanE | MethodKind::IwCdan => {
            Some(Box::new(cdan::Cdan::<f32>::new(cfg.method, z_dim, c, cfg)?))
        }
    })
}

/// Backward of the row-wise softmax: given p = softmax(l) and ∂ℓ/∂p, returns
/// ∂ℓ/∂l = p ⊙ (∂ℓ/∂p − ⟨∂ℓ/∂p, p⟩).
pub fn softmax_backward<T: Real>(p: ArrayView2<T>, dp: ArrayView2<T>) -> Array2<T> {
    let mut out = Array2::<T>::zeros(p.raw_dim());
    for ((mut o, pr), dr) in out.rows_mut().into_iter().zip(p.rows()).zip(dp.rows()) {
        let inner = pr.iter().zip(dr).fold(T::zero(), |acc, (&a, &b)| acc + a * b);
        o.iter_mut().zip(pr).zip(dr).for_each(|((o, &pv), &dv)| *o = pv * (dv - inner));
    }
    out
}

/// Per-class weights of the source terms: BBSE-QP's w for the importance-weighted methods
/// (Combes et al. 2020), PADA's γ (Cao et al. 2018), none otherwise.
pub(crate) fn source_class_weights<T: Real>(kind: MethodKind, inp: &AdaptInputs<T>) -> Result<Option<Vec<f64>>> {
    match kind {
        MethodKind::IwDann | MethodKind::IwCdan => match inp.estimate {
            Some(e) => Ok(Some(e.weights.clone())),
            None => Err(Error::numerical(format!("{kind}"), "no BBSE-QP estimate was made for the importance weights")),
        },
        MethodKind::Pada => Ok(Some(dann::pada_class_weights(inp.target_probs))),
        _ => Ok(None),
    }
}

/// Row weights w_{yᵢ} from per-class weights, or 1 for every row.
pub(crate) fn row_weights<T: Real>(class_weights: Option<&[f64]>, ys: &[usize]) -> Vec<T> {
    match class_weights {
        Some(w) => ys.iter().map(|&k| T::from_f64_(w[k])).collect(),
        None => vec![T::one(); ys.len()],
    }
}

#[cfg(test)]
mod tests;
