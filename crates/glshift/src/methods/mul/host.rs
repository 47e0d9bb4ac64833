//! MUL's terms on Z in the host's memory ([`super::mul_terms`]): every discrepancy (MCMD,
//! class-wise MMD) and estimator (exact, random features), the gradients built as arrays.

use ndarray::{concatenate, s, Array2, ArrayView2, Axis};

use super::terms::TermRows;
use super::MulInputs;
use crate::kernel::{self, Labelled};
use crate::methods::mul::config::Discrepancy;
use crate::Result;

/// The rows of [`MulInputs`] and the gradients on them (scaled as added).
pub(super) struct HostRows<'i, 'a> {
    inp: &'i MulInputs<'a>,
    pub(super) grad_zs: Array2<f32>,
    pub(super) grad_zt: Array2<f32>,
    /// The gradient on `du_target`'s rows where it was given and J_DU pooled them.
    pub(super) grad_zt_du: Option<Array2<f32>>,
    /// J_DU's rows and labels where it pools ([`TermRows::du_labels`]; else the source rows'
    /// views), then its gradient.
    pooled_rows: Option<(Array2<f32>, Array2<f32>)>,
    du_grad: Option<Array2<f32>>,
}

impl<'i, 'a> HostRows<'i, 'a> {
    pub(super) fn new(inp: &'i MulInputs<'a>) -> Self {
        HostRows {
            inp,
            grad_zs: Array2::zeros(inp.zs.raw_dim()),
            grad_zt: Array2::zeros(inp.zt.raw_dim()),
            grad_zt_du: None,
            pooled_rows: None,
            du_grad: None,
        }
    }

    /// J_DU's target rows: `du_target`, else J_TU's.
    fn du_target(&self) -> (ArrayView2<'a, f32>, ArrayView2<'a, f32>) {
        self.inp.du_target.unwrap_or((self.inp.zt, self.inp.yt))
    }
}

/// √Σ g² over the entries of `grads`, in f64.
fn norm<'g>(grads: impl IntoIterator<Item = &'g f32>) -> f64 {
    grads.into_iter().map(|&g| (g as f64).powi(2)).sum::<f64>().sqrt()
}

impl TermRows for HostRows<'_, '_> {
    fn bandwidth(&mut self, multiplier: f64) -> Result<f64> {
        kernel::bandwidth(&[self.inp.zs, self.inp.zt], multiplier)
    }

    fn tu_labels(&self) -> Option<(ArrayView2<'_, f32>, ArrayView2<'_, f32>)> {
        (self.inp.zt.nrows() > 0).then_some((self.inp.ys, self.inp.yt))
    }

    fn j_tu(&mut self, prior: &[f64], h: f64, lambda_tu: f64) -> Result<(f64, f64)> {
        let inp = self.inp;
        let (source, target) =
            (Labelled { z: inp.zs, y: inp.ys }, Labelled { z: inp.zt, y: inp.yt });
        let tu = match inp.discrepancy {
            Discrepancy::Mcmd => {
                kernel::j_tu_with(&source, &target, prior, &inp.params, h, inp.mcmd)?
            }
            Discrepancy::ClasswiseMmd => kernel::classwise_j_tu(&source, &target, prior, h)?,
        };
        self.grad_zs.scaled_add(lambda_tu as f32, &tu.grad_s);
        self.grad_zt.scaled_add(lambda_tu as f32, &tu.grad_t);
        Ok((tu.value, norm(self.grad_zs.iter().chain(self.grad_zt.iter()))))
    }

    fn du_has_target_rows(&self) -> bool {
        self.du_target().0.nrows() > 0
    }

    fn du_labels(&mut self, pooled: bool) -> ArrayView2<'_, f32> {
        let (zs, ys) = (self.inp.zs, self.inp.ys);
        let (zt, yt) = self.du_target();
        self.pooled_rows =
            pooled.then(|| (concatenate![Axis(0), zs, zt], concatenate![Axis(0), ys, yt]));
        self.pooled_rows.as_ref().map_or(ys, |(_, y)| y.view())
    }

    fn j_du(&mut self, pooled: bool, active: &[bool], h: f64) -> Result<(f64, f64)> {
        let pooled_rows = self.pooled_rows.take();
        let (z, y) = match &pooled_rows {
            Some((z, y)) if pooled => (z.view(), y.view()),
            None if !pooled => (self.inp.zs, self.inp.ys),
            _ => unreachable!("TermRows::du_labels runs before j_du, with the same `pooled`"),
        };
        let rows = Labelled { z, y };
        let du = match self.inp.discrepancy {
            Discrepancy::Mcmd => {
                kernel::j_du_with(&rows, &self.inp.params, h, Some(active), self.inp.mcmd)?
            }
            Discrepancy::ClasswiseMmd => kernel::classwise_j_du(&rows, h, Some(active))?,
        };
        let value_and_norm = (du.value, norm(du.grad.iter()));
        self.du_grad = Some(du.grad);
        Ok(value_and_norm)
    }

    fn add_du(&mut self, scale: f32, pooled: bool) -> Result<()> {
        let grad = self.du_grad.take().expect("TermRows::j_du runs before add_du");
        let ns = self.inp.zs.nrows();
        self.grad_zs.scaled_add(scale, &grad.slice(s![..ns, ..]));
        if pooled && self.inp.du_target.is_some() {
            self.grad_zt_du = Some(grad.slice(s![ns.., ..]).mapv(|g| scale * g));
        } else if pooled {
            self.grad_zt.scaled_add(scale, &grad.slice(s![ns.., ..]));
        }
        Ok(())
    }
}
