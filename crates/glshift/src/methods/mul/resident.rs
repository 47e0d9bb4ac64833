//! MUL's terms on a device's kept Z ([`Method::step_resident`](crate::methods::Method)): the
//! rules of `super::terms` for the exact MCMD with the linear label kernel, with rows named by
//! index and the gradients added into ∂ℓ/∂Z where Z lies. The host builds what needs only the
//! labels — the rows' one-hot labels and the Γ of each term (`kernel::j_tu_objective`,
//! `j_du_objective`) — and the device the rest: the bandwidth's statistic, the kernel sums, the
//! gradients' norms.

use ndarray::{concatenate, Array2, ArrayView2, Axis};

use super::terms::{self, TermRows, TermSettings};
use crate::device::ResidentZ;
use crate::kernel::{self, McmdParams};
use crate::methods::method::AdaptInputs;
use crate::methods::mul_config::MulConfig;
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

/// The kept pass's rows of one iteration: the source training rows and the confident target
/// rows, by index, with their one-hot labels.
struct DeviceRows<'z> {
    z: &'z dyn ResidentZ,
    params: &'z McmdParams,
    source: Vec<usize>,
    target: Vec<usize>,
    ys: Array2<f32>,
    yt: Array2<f32>,
    /// J_DU's labels ([`TermRows::du_labels`]).
    du_y: Option<Array2<f32>>,
    /// J_DU's gradient on the device ([`TermRows::j_du`]).
    du_grad: Option<usize>,
}

impl DeviceRows<'_> {
    /// Source rows, then (J_DU pooled, and the bandwidth) the target rows.
    fn both(&self) -> Vec<usize> {
        self.source.iter().chain(&self.target).copied().collect()
    }
}

impl TermRows for DeviceRows<'_> {
    fn bandwidth(&mut self, multiplier: f64) -> Result<f64> {
        let both = self.both();
        kernel::bandwidth_of(self.z.mean_pairwise_sq_dist(&both).map_err(device)?, both.len(), multiplier)
    }

    fn tu_labels(&self) -> Option<(ArrayView2<'_, f32>, ArrayView2<'_, f32>)> {
        (!self.target.is_empty()).then(|| (self.ys.view(), self.yt.view()))
    }

    fn j_tu(&mut self, prior: &[f64], h: f64, lambda_tu: f64) -> Result<(f64, f64)> {
        let objective = kernel::j_tu_objective(self.ys.view(), self.yt.view(), prior, self.params)?;
        let domains = [(self.source.as_slice(), self.ys.view()), (self.target.as_slice(), self.yt.view())];
        let (value, id) = self.z.kernel_sums(&domains, &[objective.terms], h).map_err(device)?[0];
        let norm = lambda_tu * self.z.grad_sq_norm(id).map_err(device)?.sqrt();
        self.z.add_to_dz(id, lambda_tu as f32).map_err(device)?;
        Ok((value, norm))
    }

    fn du_has_target_rows(&self) -> bool {
        !self.target.is_empty()
    }

    fn du_labels(&mut self, pooled: bool) -> ArrayView2<'_, f32> {
        let y = if pooled { concatenate![Axis(0), self.ys, self.yt] } else { self.ys.clone() };
        self.du_y.insert(y).view()
    }

    fn j_du(&mut self, pooled: bool, active: &[bool], h: f64) -> Result<(f64, f64)> {
        let y = self.du_y.take().expect("TermRows::du_labels runs before j_du");
        let rows = if pooled { self.both() } else { self.source.clone() };
        let objective = kernel::j_du_objective(y.view(), self.params, Some(active))?;
        let (value, id) = self.z.kernel_sums(&[(&rows, y.view())], &[objective.terms], h).map_err(device)?[0];
        self.du_grad = Some(id);
        Ok((value, self.z.grad_sq_norm(id).map_err(device)?.sqrt()))
    }

    fn add_du(&mut self, scale: f32, _pooled: bool) -> Result<()> {
        let id = self.du_grad.take().expect("TermRows::j_du runs before add_du");
        self.z.add_to_dz(id, scale).map_err(device)
    }
}

/// λ_TU·J_TU − λ_DU·J_DU of one iteration on `z`, the kept pass's Z (source training rows
/// `0..rows.0`, target row i at `rows.1 + i`): J_TU on the source rows and the confident
/// target rows with their pseudo-labels, J_DU on the source rows or, `du_pooled`, on both;
/// their gradients added into ∂ℓ/∂Z there.
pub(super) fn resident_terms(cfg: &MulConfig, params: &McmdParams, du_pooled: bool, inp: &AdaptInputs, z: &dyn ResidentZ, (n_train, off): (usize, usize)) -> Result<ResidentTerms> {
    let c = inp.prior.len();
    let mut rows = DeviceRows {
        z,
        params,
        source: (0..n_train).collect(),
        target: inp.confident.iter().map(|&i| off + i).collect(),
        ys: one_hot::<f32>(inp.ys, c),
        yt: one_hot::<f32>(inp.pseudo_labels, c),
        du_y: None,
        du_grad: None,
    };
    let settings = TermSettings {
        bandwidth_multiplier: cfg.bandwidth_multiplier,
        lambda_tu: cfg.lambda_tu,
        lambda_du: cfg.lambda_du,
        use_tu: cfg.use_tu,
        use_du: cfg.use_du,
        du_balance: cfg.du_balance,
        du_pooled,
    };
    let v = terms::terms(&mut rows, &settings, inp.prior)?;
    Ok(ResidentTerms {
        j_tu: v.j_tu,
        j_du: v.j_du,
        j_du_source_only: v.j_du_source_only,
        lambda_du_effective: v.lambda_du_effective,
        grad_sq: v.tu_norm * v.tu_norm + v.du_norm * v.du_norm,
    })
}
