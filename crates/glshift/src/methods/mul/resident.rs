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

/// The kept pass's rows of one iteration, by index: the source training rows, then the
/// confident target rows; their one-hot labels.
struct DeviceRows<'z> {
    z: &'z dyn ResidentZ,
    params: &'z McmdParams,
    /// Source rows (the first `n_source`), then target rows: the bandwidth's and pooled J_DU's.
    rows: Vec<usize>,
    n_source: usize,
    ys: Array2<f32>,
    yt: Array2<f32>,
    /// J_DU's labels where it pools ([`TermRows::du_labels`]; else `ys`).
    pooled_y: Option<Array2<f32>>,
    /// J_DU's gradient on the device ([`TermRows::j_du`]).
    du_grad: Option<usize>,
}

impl DeviceRows<'_> {
    fn source(&self) -> &[usize] {
        &self.rows[..self.n_source]
    }

    fn target(&self) -> &[usize] {
        &self.rows[self.n_source..]
    }
}

impl TermRows for DeviceRows<'_> {
    fn bandwidth(&mut self, multiplier: f64) -> Result<f64> {
        kernel::bandwidth_of(
            self.z.mean_pairwise_sq_dist(&self.rows).map_err(device)?,
            self.rows.len(),
            multiplier,
        )
    }

    fn tu_labels(&self) -> Option<(ArrayView2<'_, f32>, ArrayView2<'_, f32>)> {
        (!self.target().is_empty()).then(|| (self.ys.view(), self.yt.view()))
    }

    fn j_tu(&mut self, prior: &[f64], h: f64, lambda_tu: f64) -> Result<(f64, f64)> {
        let objective = kernel::j_tu_objective(self.ys.view(), self.yt.view(), prior, self.params)?;
        let domains = [(self.source(), self.ys.view()), (self.target(), self.yt.view())];
        let (value, id) = self.z.kernel_sums(&domains, &[objective.terms], h).map_err(device)?[0];
        let norm = lambda_tu * self.z.grad_sq_norm(id).map_err(device)?.sqrt();
        self.z.add_to_dz(id, lambda_tu as f32).map_err(device)?;
        Ok((value, norm))
    }

    fn du_has_target_rows(&self) -> bool {
        !self.target().is_empty()
    }

    fn du_labels(&mut self, pooled: bool) -> ArrayView2<'_, f32> {
        self.pooled_y = pooled.then(|| concatenate![Axis(0), self.ys, self.yt]);
        self.pooled_y.as_ref().unwrap_or(&self.ys).view()
    }

    fn j_du(&mut self, pooled: bool, active: &[bool], h: f64) -> Result<(f64, f64)> {
        let pooled_y = self.pooled_y.take();
        let (rows, y) = match &pooled_y {
            Some(y) if pooled => (self.rows.as_slice(), y.view()),
            None if !pooled => (self.source(), self.ys.view()),
            _ => unreachable!("TermRows::du_labels runs before j_du, with the same `pooled`"),
        };
        let objective = kernel::j_du_objective(y, self.params, Some(active))?;
        let (value, id) =
            self.z.kernel_sums(&[(rows, y)], &[objective.terms], h).map_err(device)?[0];
        let norm = self.z.grad_sq_norm(id).map_err(device)?.sqrt();
        self.du_grad = Some(id);
        Ok((value, norm))
    }

    fn add_du(&mut self, scale: f32, _pooled: bool) -> Result<()> {
        let id = self.du_grad.take().expect("TermRows::j_du runs before add_du");
        self.z.add_to_dz(id, scale).map_err(device)
    }
}

/// λ_TU·J_TU − λ_DU·J_DU of one iteration on `z`, the kept pass's Z (source training rows
/// `0..rows.0`, target row i at `rows.1 + i`): J_TU on the source rows and the confident
/// target rows with their pseudo-labels, J_DU on the source rows or, `settings.du_pooled`, on both;
/// their gradients added into ∂ℓ/∂Z there.
pub(super) fn resident_terms(
    settings: &TermSettings,
    params: &McmdParams,
    inp: &AdaptInputs,
    z: &dyn ResidentZ,
    (n_train, off): (usize, usize),
) -> Result<ResidentTerms> {
    let c = inp.prior.len();
    let mut rows = DeviceRows {
        z,
        params,
        rows: (0..n_train).chain(inp.confident.iter().map(|&i| off + i)).collect(),
        n_source: n_train,
        ys: one_hot::<f32>(inp.ys, c),
        yt: one_hot::<f32>(inp.pseudo_labels, c),
        pooled_y: None,
        du_grad: None,
    };
    let v = terms::terms(&mut rows, settings, inp.prior)?;
    Ok(ResidentTerms {
        j_tu: v.j_tu,
        j_du: v.j_du,
        j_du_source_only: v.j_du_source_only,
        lambda_du_effective: v.lambda_du_effective,
        grad_sq: v.tu_norm * v.tu_norm + v.du_norm * v.du_norm,
    })
}
