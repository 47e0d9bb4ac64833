//! MUL's terms on a device's kept Z ([`Method::step_resident`](crate::methods::Method)): the
//! terms of [`super::mul_terms`] for the exact MCMD with the linear label kernel, with rows
//! named by index and the gradients added into ∂ℓ/∂Z where Z lies. The host computes what
//! needs only the labels — the classes present, the renormalised prior, the Γ of each term
//! (`kernel::j_tu_objective`, `j_du_objective`) — and the scalars: the bandwidth from the
//! device's statistic, the balance rule from the gradients' norms.

use ndarray::{concatenate, Axis};

use crate::methods::mul_config::MulConfig;
use super::{balanced_lambda_du, class_presence, shared_class_prior};
use crate::device::ResidentZ;
use crate::kernel::{self, McmdParams};
use crate::methods::method::AdaptInputs;
use crate::nn::one_hot;
use crate::{Error, Result};

/// What [`resident_terms`] measured (its gradients are on the device).
pub(super) struct ResidentTerms {
    pub(super) j_tu: f64,
    pub(super) j_du: f64,
    pub(super) j_du_source_only: Option<f64>,
    pub(super) lambda_du_effective: f64,
    /// Σ of the squared norms of the scaled gradients added into ∂ℓ/∂Z.
    pub(super) grad_sq: f64,
}

fn device(reason: String) -> Error {
    Error::Device { requested: "cuda".into(), reason }
}

/// λ_TU·J_TU − λ_DU·J_DU of one iteration on `z`, the kept pass's Z (source training rows
/// `0..rows.0`, target row i at `rows.1 + i`): J_TU on the source rows and the confident
/// target rows with their pseudo-labels, J_DU on the source rows or, `du_pooled`, on both;
/// their gradients added into ∂ℓ/∂Z there. The same terms, bandwidth and balance rule as
/// [`super::mul_terms`].
pub(super) fn resident_terms(cfg: &MulConfig, params: &McmdParams, du_pooled: bool, inp: &AdaptInputs, z: &dyn ResidentZ, (n_train, off): (usize, usize)) -> Result<ResidentTerms> {
    let c = inp.prior.len();
    let (ys, yt) = (one_hot::<f32>(inp.ys, c), one_hot::<f32>(inp.pseudo_labels, c));
    let source: Vec<usize> = (0..n_train).collect();
    let target: Vec<usize> = inp.confident.iter().map(|&i| off + i).collect();
    let both: Vec<usize> = source.iter().chain(&target).copied().collect();
    let h = kernel::bandwidth_of(z.mean_pairwise_sq_dist(&both).map_err(device)?, both.len(), cfg.bandwidth_multiplier)?;

    let (mut j_tu, mut tu_norm, mut tu) = (0.0, 0.0, None);
    if cfg.use_tu && cfg.lambda_tu > 0.0 && !target.is_empty() {
        if let Some(prior) = shared_class_prior(inp.prior, ys.view(), yt.view()) {
            let objective = kernel::j_tu_objective(ys.view(), yt.view(), &prior, params)?;
            let (value, id) = z.kernel_sums(&[(&source, ys.view()), (&target, yt.view())], &[objective.terms], h).map_err(device)?[0];
            j_tu = value;
            tu_norm = cfg.lambda_tu * z.grad_sq_norm(id).map_err(device)?.sqrt();
            tu = Some(id);
        }
    }

    let (mut j_du, mut lambda_du_effective, mut j_du_source_only, mut du) = (0.0, 0.0, None, None);
    if cfg.use_du && cfg.lambda_du > 0.0 {
        let pooled = du_pooled && !target.is_empty();
        let (rows, y) = if pooled { (&both, concatenate![Axis(0), ys, yt]) } else { (&source, ys.clone()) };
        let active = class_presence(y.view());
        let m = active.iter().filter(|&&a| a).count();
        if m >= 2 {
            let pairs = (m * (m - 1)) as f64;
            let objective = kernel::j_du_objective(y.view(), params, Some(&active))?;
            let (value, id) = z.kernel_sums(&[(rows, y.view())], &[objective.terms], h).map_err(device)?[0];
            j_du = value / pairs;
            let du_norm = z.grad_sq_norm(id).map_err(device)?.sqrt() / pairs;
            lambda_du_effective = balanced_lambda_du(cfg.lambda_du, cfg.du_balance, tu_norm, du_norm);
            if !pooled {
                j_du_source_only = Some(j_du);
            }
            du = Some((id, lambda_du_effective * du_norm, -(lambda_du_effective / pairs) as f32));
        }
    }
    let mut grad_sq = tu_norm * tu_norm;
    if let Some(id) = tu {
        z.add_to_dz(id, cfg.lambda_tu as f32).map_err(device)?;
    }
    if let Some((id, norm, scale)) = du {
        z.add_to_dz(id, scale).map_err(device)?;
        grad_sq += norm * norm;
    }
    Ok(ResidentTerms { j_tu, j_du, j_du_source_only, lambda_du_effective, grad_sq })
}
