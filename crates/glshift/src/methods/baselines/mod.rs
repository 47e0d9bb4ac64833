//! The baselines of the paper's tables, each a transfer loss added to the one training loop
//! (`train::fit`) on the same network G + F, after the same pre-training; all but CORAL adapt
//! by mini-batch SGD as their papers (`BaselineConfig`, the loop's `minibatch` stage):
//!
//! | method | file | reference |
//! |---|---|---|
//! | `dan` | [`mmd`] | Long et al. 2015 (ICML), multi-kernel MMD on Z |
//! | `jan` | [`mmd`] | Long et al. 2017 (ICML), joint MMD over Z and softmax predictions |
//! | `dann`, `iw-dann`, `pada` | [`dann`] | Ganin et al. 2016 (JMLR); Combes et al. 2020 (NeurIPS); Cao et al. 2018 (ECCV) |
//! | `cdan`, `cdan-e`, `iw-cdan` | [`cdan`] | Long et al. 2018 (NeurIPS); Combes et al. 2020 |
//! | `mmd-classwise` | `methods::mul` with `Discrepancy::ClasswiseMmd` | the paper's ablation |
//! | `coral` | [`coral`] | Sun & Saenko 2016 (ECCV workshops), Deep CORAL: covariances of Z aligned |
//! | `kmm` | [`kmm`] | Huang et al. 2007 (NIPS), kernel mean matching: source rows re-weighted on the input features |
//!
//! A baseline sees the representation Z and the logits of the source training rows and of every
//! target row, never a target label. It returns the gradient of its term (already weighted) with
//! respect to Z and the logits, and optionally per-class weights for the source cross-entropy.
//! Each is a `methods::Method`, registered by one line in `methods::kind`.

mod adversary;
pub mod cdan;
pub(crate) mod config;
mod config_file;
pub mod coral;
pub mod dann;
pub mod kmm;
pub mod mcc;
pub mod mmd;
mod sections;

pub use adversary::{grl_coefficient, reverse_gradient, Discriminator};
pub use config::{BaselineConfig, BaselineSchedule};
pub use sections::{AdversarialConfig, CdanConfig, JanConfig, KmmConfig, MmdConfig, PadaConfig};

use ndarray::{Array2, ArrayView2};

pub use super::method::AdaptInputs;
use super::method::TransferRecord;
use super::method::{CeWeights, StepOutput};
use super::method_info::ClassWeights;
use crate::{Error, Real, Result};

/// A baseline's term at one iteration (the pure function of each baseline file; the loop sees
/// it as a [`StepOutput`]).
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

/// How the loop's error names a baseline's gradient wrt Z when it is not finite.
pub(crate) const GRADIENT_NAME: &str =
    "the gradient of the baseline's transfer term with respect to Z";

impl From<AdaptOutput> for StepOutput {
    fn from(o: AdaptOutput) -> StepOutput {
        StepOutput {
            terms: vec![o.objective],
            grad_zs: Some(o.grad_zs),
            grad_zt: Some(o.grad_zt),
            grad_logits_s: o.grad_logits_s,
            grad_logits_t: o.grad_logits_t,
            ce_weights: o.class_weights.map_or(CeWeights::Uniform, CeWeights::WeightedSum),
            transfer: Some(TransferRecord { value: o.value, lambda: o.lambda }),
            ..StepOutput::none()
        }
    }
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
/// `name` is the method's, for the error.
pub(crate) fn source_class_weights<T: Real>(
    weights: ClassWeights,
    name: &str,
    inp: &AdaptInputs<T>,
) -> Result<Option<Vec<f64>>> {
    match weights {
        ClassWeights::Importance => match inp.estimate {
            Some(e) => Ok(Some(e.weights.clone())),
            None => Err(Error::numerical(
                name,
                "no BBSE-QP estimate was made for the importance weights",
            )),
        },
        ClassWeights::Pada => Ok(Some(dann::pada_class_weights(inp.target_probs))),
        // KMM's weights are per row and set by `kmm` itself, not per class.
        ClassWeights::None | ClassWeights::KernelMeanMatching => Ok(None),
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
