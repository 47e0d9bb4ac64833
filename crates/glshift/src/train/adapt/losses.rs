//! The pieces of one adaptation step's objective: τ-confident pseudo-labels, the weighted
//! source cross-entropy J_E, and the gradients of every row of the pass.

use ndarray::{s, Array2, ArrayView2};

use super::add_rows;
use crate::methods::method::{CeWeights, StepOutput};
use crate::nn::{argmax_row, weighted_cross_entropy};

/// τ-confident pseudo-labels (Algorithm 1): target rows whose top probability exceeds `tau`,
/// excluding classes the prior says are absent. Returns (row indices, labels).
pub fn pseudo_labels(
    target_probs: ArrayView2<f32>,
    prior: &[f64],
    tau: f64,
) -> (Vec<usize>, Vec<usize>) {
    let mut rows = Vec::new();
    let mut labels = Vec::new();
    for (i, row) in target_probs.rows().into_iter().enumerate() {
        let (k, p) = argmax_row(row);
        if p > tau as f32 && prior[k] > 0.0 {
            rows.push(i);
            labels.push(k);
        }
    }
    (rows, labels)
}

/// The source cross-entropy J_E on the training rows, weighted as the method asks, and its
/// gradient wrt their logits. All-zero weights fall back to the plain mean (no labelled mass
/// would leave the classifier without a loss).
pub fn source_cross_entropy(
    logits: ArrayView2<f32>,
    y: &[usize],
    weighting: &CeWeights,
) -> (f64, Array2<f32>) {
    let uniform = vec![1.0f32; y.len()];
    let (weights, sum_form) = match weighting {
        CeWeights::Uniform => (uniform.clone(), false),
        CeWeights::WeightedMean(w) => (y.iter().map(|&k| w[k] as f32).collect(), false),
        CeWeights::WeightedSum(w) => (y.iter().map(|&k| w[k] as f32).collect::<Vec<f32>>(), true),
        CeWeights::PerRow(w) => {
            debug_assert_eq!(w.len(), y.len(), "one weight per source training row");
            (w.iter().map(|&v| v as f32).collect(), false)
        }
    };
    let w = if weights.iter().any(|&w| w > 0.0) { &weights } else { &uniform };
    let (mut ce, mut grad) = weighted_cross_entropy(logits, y, w);
    if sum_form {
        // The baselines' papers weight the CE as (1/n_s)·Σ wᵢ·CEᵢ, not as a weighted mean.
        let scale = weights.iter().map(|&w| w as f64).sum::<f64>() / y.len() as f64;
        ce *= scale;
        grad.mapv_inplace(|g| g * scale as f32);
    }
    (ce, grad)
}

/// ∂/∂logits of every row of the pass (`logits_dim`): the cross-entropy's on the `n_train`
/// training rows plus the method's on the training rows and the target rows (from `off`); the
/// rows in between (hold-out) get none.
pub(super) fn logit_gradients(
    (n_train, off): (usize, usize),
    logits_dim: (usize, usize),
    d_train_logits: &Array2<f32>,
    out: &StepOutput,
) -> Array2<f32> {
    let mut d_logits = Array2::<f32>::zeros(logits_dim);
    d_logits.slice_mut(s![..n_train, ..]).assign(d_train_logits);
    add_rows(&mut d_logits, 0, out.grad_logits_s.as_ref());
    add_rows(&mut d_logits, off, out.grad_logits_t.as_ref());
    d_logits
}

/// ∂/∂Z of every row of the pass (`z_dim`): the method's on the training rows and the target
/// rows (from `off`).
pub(super) fn z_gradients(
    (_, off): (usize, usize),
    z_dim: (usize, usize),
    out: &StepOutput,
) -> Array2<f32> {
    let mut d_z = Array2::<f32>::zeros(z_dim);
    add_rows(&mut d_z, 0, out.grad_zs.as_ref());
    add_rows(&mut d_z, off, out.grad_zt.as_ref());
    d_z
}
