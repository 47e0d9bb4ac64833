//! MUL's two terms, written once: λ_TU·J_TU − λ_DU·J_DU over the rows of one iteration.
//!
//! What decides the terms lives here: the bandwidth first; J_TU only with target rows and a
//! class both domains hold, weighted by the prior renormalised over those classes; J_DU over
//! the classes present (at least two), averaged over their m(m − 1) ordered pairs, on the
//! source rows or, pooled, on the target rows too; the balance rule (λ_DU relative to J_TU's
//! pull); and the gradients' scales, λ_TU and −λ_DU/(m(m − 1)). Where Z lies and how the kernel
//! sums run is a [`TermRows`]: the host's arrays (`super::mul_terms`, every discrepancy and
//! estimator) or a device's kept Z (`super::resident`, exact MCMD with the linear label
//! kernel).

use ndarray::{ArrayView2, Axis};

use crate::Result;

/// The rows of one iteration's terms and their kernel sums, wherever Z lies. Gradients stay
/// with the rows: J_TU's is added scaled when it is computed, J_DU's when
/// [`TermRows::add_du`] gives its scale.
pub(super) trait TermRows {
    /// The kernel's bandwidth over the rows of both terms.
    fn bandwidth(&mut self, multiplier: f64) -> Result<f64>;

    /// J_TU's label matrices (source, target; n × c), or `None` with no target row.
    fn tu_labels(&self) -> Option<(ArrayView2<'_, f32>, ArrayView2<'_, f32>)>;

    /// J_TU with class weights `prior` and bandwidth `h`; its gradient times `lambda_tu` is
    /// added. Returns (J_TU, the norm of the scaled gradient).
    fn j_tu(&mut self, prior: &[f64], h: f64, lambda_tu: f64) -> Result<(f64, f64)>;

    /// Whether J_DU has target rows to pool.
    fn du_has_target_rows(&self) -> bool;

    /// J_DU's labels (n × c): the source rows', then the target rows' where `pooled`.
    fn du_labels(&mut self, pooled: bool) -> ArrayView2<'_, f32>;

    /// J_DU (summed over the ordered pairs of the classes `active`) on the rows of
    /// [`TermRows::du_labels`] with bandwidth `h`, its gradient kept. Returns (J_DU, the
    /// norm of its gradient).
    fn j_du(&mut self, pooled: bool, active: &[bool], h: f64) -> Result<(f64, f64)>;

    /// Adds `scale` times J_DU's kept gradient.
    fn add_du(&mut self, scale: f32, pooled: bool) -> Result<()>;
}

/// The settings the terms read (`MulConfig`'s, and the pooling state).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TermSettings {
    pub bandwidth_multiplier: f64,
    pub lambda_tu: f64,
    pub lambda_du: f64,
    pub use_tu: bool,
    pub use_du: bool,
    /// Balance rule: λ_DU is relative to J_TU's pull (see `MulTerms::lambda_du_effective`).
    pub du_balance: bool,
    /// Whether the confident target rows join J_DU (when it has some).
    pub du_pooled: bool,
}

/// What [`terms`] measured; the gradients are with the rows.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct TermValues {
    pub j_tu: f64,
    /// J_DU averaged over the ordered pairs of classes present.
    pub j_du: f64,
    /// J_DU where it ran on the source rows alone (the pooling rule's quantity).
    pub j_du_source_only: Option<f64>,
    pub bandwidth: f64,
    pub lambda_du_effective: f64,
    /// Norms of the gradients as added: λ_TU·∇J_TU and λ_DU,eff·∇(J_DU averaged).
    pub tu_norm: f64,
    pub du_norm: f64,
}

/// λ_TU·J_TU − λ_DU·J_DU on `rows`, with J_TU's class weights from `prior` (length c).
pub(super) fn terms(
    rows: &mut dyn TermRows,
    s: &TermSettings,
    prior: &[f64],
) -> Result<TermValues> {
    let bandwidth = rows.bandwidth(s.bandwidth_multiplier)?;
    let mut v = TermValues { bandwidth, ..TermValues::default() };
    if s.use_tu && s.lambda_tu > 0.0 {
        if let Some(prior) = rows.tu_labels().and_then(|(ys, yt)| shared_class_prior(prior, ys, yt))
        {
            (v.j_tu, v.tu_norm) = rows.j_tu(&prior, bandwidth, s.lambda_tu)?;
        }
    }
    if s.use_du && s.lambda_du > 0.0 {
        let pooled = s.du_pooled && rows.du_has_target_rows();
        let active = class_presence(rows.du_labels(pooled));
        let m = active.iter().filter(|&&a| a).count();
        if m >= 2 {
            let pairs = (m * (m - 1)) as f64;
            let (j_du, norm) = rows.j_du(pooled, &active, bandwidth)?;
            v.j_du = j_du / pairs;
            let du_norm = norm / pairs;
            v.lambda_du_effective =
                balanced_lambda_du(s.lambda_du, s.du_balance, v.tu_norm, du_norm);
            v.du_norm = v.lambda_du_effective * du_norm;
            rows.add_du(-(v.lambda_du_effective / pairs) as f32, pooled)?;
            if !pooled {
                v.j_du_source_only = Some(v.j_du);
            }
        }
    }
    Ok(v)
}

/// Which classes have rows in a label matrix (n × c).
pub(super) fn class_presence(y: ArrayView2<f32>) -> Vec<bool> {
    y.sum_axis(Axis(0)).iter().map(|&v| v > 0.0).collect()
}

/// J_TU's class weights: `prior` on the classes both label matrices (n × c) have rows of,
/// renormalised over them so J_TU keeps its scale as classes come and go; `None` where no
/// class with weight is shared.
fn shared_class_prior(prior: &[f64], ys: ArrayView2<f32>, yt: ArrayView2<f32>) -> Option<Vec<f64>> {
    let (src_has, tgt_has) = (class_presence(ys), class_presence(yt));
    let mut prior: Vec<f64> =
        (0..prior.len()).map(|k| if src_has[k] && tgt_has[k] { prior[k] } else { 0.0 }).collect();
    let total: f64 = prior.iter().sum();
    if total > 0.0 {
        prior.iter_mut().for_each(|p| *p /= total);
        Some(prior)
    } else {
        None
    }
}

/// The λ_DU applied: with the balance rule λ_DU·‖λ_TU∇J_TU‖/‖∇J_DU‖ (norms `tu_norm`,
/// `du_norm`; see `MulTerms::lambda_du_effective`), else, or where either norm is 0, λ_DU.
fn balanced_lambda_du(lambda_du: f64, balance: bool, tu_norm: f64, du_norm: f64) -> f64 {
    if balance && tu_norm > 0.0 && du_norm > 0.0 {
        lambda_du * tu_norm / du_norm
    } else {
        lambda_du
    }
}
