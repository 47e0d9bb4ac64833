//! MUL's adaptation terms on one forward pass: λ_TU·J_TU − λ_DU·J_DU and their gradient on Z.
//!
//! J_TU (paper eq. objective_conditional-matching) matches each class conditional across domains,
//! weighted by the estimated target prior; J_DU (eq. objective_discriminative) pushes the class
//! conditionals apart. Both use the c×c MCMD algebra of `kernel`. [`Mul`] is the method the
//! training loop calls: these terms on the confident target rows, the importance-weighted
//! cross-entropy and the J_DU pooling state of Algorithm 1.
//!
//! Label kernel (`mul.label_kernel`): with `"linear"` (default) both terms read the τ-confident
//! target rows and their one-hot pseudo-labels. With `"gaussian"` (Gaussian kernel on the labels,
//! σ by CKB's rule; `kernel::label_map`) J_TU reads every target row with its soft
//! probabilities, as CKB's conditional term does, detached (see [`soft_labels`]); J_DU keeps the
//! paper's confident pseudo-labels.

use ndarray::{Array2, ArrayView2, Axis};

use super::method::{AdaptInputs, CeWeights, Method, MulRecord, StepOutput};
use crate::device::ResidentZ;
use crate::kernel::{LabelKernel, McmdEstimator, McmdParams};
use crate::nn::one_hot;
use crate::Result;
use config::{Discrepancy, MulConfig};
pub use terms::TermSettings;

/// Inputs of one evaluation of the MUL terms.
pub struct MulInputs<'a> {
    /// Z of the source training rows (n_s × d) and their one-hot labels (n_s × c).
    pub zs: ArrayView2<'a, f32>,
    pub ys: ArrayView2<'a, f32>,
    /// Z of the target rows of J_TU and their labels: the confident rows and their one-hot
    /// pseudo-labels, or (Gaussian label kernel) every row and its soft probabilities.
    pub zt: ArrayView2<'a, f32>,
    pub yt: ArrayView2<'a, f32>,
    /// The target rows that join J_DU when pooled, where they differ from `zt`/`yt` (soft
    /// labels in J_TU, confident pseudo-labels in J_DU); None: `zt`/`yt`.
    pub du_target: Option<(ArrayView2<'a, f32>, ArrayView2<'a, f32>)>,
    /// Estimated target prior (length c) weighting J_TU.
    pub prior: &'a [f64],
    pub params: McmdParams,
    /// Exact kernel sums or random features.
    pub mcmd: McmdEstimator,
    /// The weights, switches, balance rule and pooling state of the terms.
    pub settings: TermSettings,
    /// MCMD (the method) or class-wise MMD (the ablation) in both terms.
    pub discrepancy: Discrepancy,
}

/// Values and gradients (already scaled by ±λ) of the MUL terms.
pub struct MulTerms {
    pub j_tu: f64,
    /// J_DU averaged over the ordered pairs of classes present (so one λ_DU serves any c).
    pub j_du: f64,
    /// J_DU on the source rows alone, the quantity whose stability decides pooling.
    pub j_du_source_only: Option<f64>,
    pub bandwidth: f64,
    /// The λ_DU actually applied. With the balance rule it is λ_DU·‖λ_TU∇J_TU‖/‖∇J_DU‖, so
    /// J_DU's pull on Z is a fixed fraction of J_TU's: once the conditionals are aligned (J_TU's
    /// gradient vanishes) J_DU cannot keep reshaping Z on its own. Without the rule, or when J_TU
    /// is off or has no gradient, it is λ_DU itself.
    pub lambda_du_effective: f64,
    pub grad_zs: Array2<f32>,
    pub grad_zt: Array2<f32>,
    /// Gradient on the rows of `du_target` when it was given and J_DU pooled them.
    pub grad_zt_du: Option<Array2<f32>>,
}

impl MulTerms {
    /// No adaptation term (the `source` method).
    pub fn none(ns: usize, nt: usize, d: usize) -> MulTerms {
        MulTerms {
            j_tu: 0.0,
            j_du: 0.0,
            j_du_source_only: None,
            bandwidth: 0.0,
            lambda_du_effective: 0.0,
            grad_zs: Array2::zeros((ns, d)),
            grad_zt: Array2::zeros((nt, d)),
            grad_zt_du: None,
        }
    }
}

/// Computes the terms and the gradient of λ_TU·J_TU − λ_DU·J_DU w.r.t. zs and zt (the rules of
/// `terms`, on the host's rows: `host`).
pub fn mul_terms(inp: &MulInputs) -> Result<MulTerms> {
    let mut rows = host::HostRows::new(inp);
    let v = terms::terms(&mut rows, &inp.settings, inp.prior)?;
    Ok(MulTerms {
        j_tu: v.j_tu,
        j_du: v.j_du,
        j_du_source_only: v.j_du_source_only,
        bandwidth: v.bandwidth,
        lambda_du_effective: v.lambda_du_effective,
        grad_zs: rows.grad_zs,
        grad_zt: rows.grad_zt,
        grad_zt_du: rows.grad_zt_du,
    })
}

/// Soft target labels of J_TU under the Gaussian label kernel: the network's evaluation-mode
/// probabilities (n_t × c) with the classes of zero `prior` (estimated absent) removed and each
/// row renormalised (a row left with no mass stays zero). They enter as constants, as in CKB
/// (`prob_t.detach()`): a gradient through them would let the network lower J_TU by blurring
/// its predictions instead of moving Z, and would add a term through F that the training loop
/// does not back-propagate.
fn soft_labels(probs: ArrayView2<f32>, prior: &[f64]) -> Array2<f32> {
    let mut y = probs.to_owned();
    for mut row in y.rows_mut() {
        row.iter_mut().zip(prior).filter(|(_, &p)| p <= 0.0).for_each(|(v, _)| *v = 0.0);
        let total: f32 = row.sum();
        if total > 0.0 {
            row /= total;
        }
    }
    y
}

/// MUL as a [`Method`] (paper, Algorithm 1): J_MUL = J_E + λ_TU·J_TU − λ_DU·J_DU
/// (eq. objective_MAL-final) with J_E the w-weighted cross-entropy (eq.
/// objective_entropy_functions), the kernel terms on the τ-confident target rows. With
/// `Discrepancy::ClasswiseMmd` it is the ablation's `mmd-classwise`.
///
/// State: J_DU starts on the source rows alone; once its relative change over `du_window`
/// iterations falls under `du_stable_tol` ("when the objective value is stable") the confident
/// target rows join it for the rest of the fit.
#[derive(Clone, Debug)]
pub struct Mul {
    cfg: MulConfig,
    params: McmdParams,
    discrepancy: Discrepancy,
    du_pooled: bool,
    du_trace: Vec<f64>,
}

impl Mul {
    pub fn new(cfg: &MulConfig, c: usize, discrepancy: Discrepancy) -> Mul {
        Mul {
            cfg: cfg.clone(),
            params: cfg.mcmd_params(c),
            discrepancy,
            du_pooled: false,
            du_trace: Vec::new(),
        }
    }

    /// Whether the confident target rows are part of J_DU at the next iteration.
    pub fn du_pooled(&self) -> bool {
        self.du_pooled
    }

    /// The terms' settings now: the config's, and whether J_DU pools.
    fn term_settings(&self) -> TermSettings {
        let m = &self.cfg;
        TermSettings {
            bandwidth_multiplier: m.bandwidth_multiplier,
            lambda_tu: m.lambda_tu,
            lambda_du: m.lambda_du,
            use_tu: m.use_tu,
            use_du: m.use_du,
            du_balance: m.du_balance,
            du_pooled: self.du_pooled,
        }
    }

    /// Records J_DU on the source rows and pools once it has been stable for `du_window` steps.
    fn track_pooling(&mut self, j_du_source_only: Option<f64>) {
        let Some(v) = j_du_source_only else { return };
        self.du_trace.push(v);
        let w = self.cfg.du_window;
        if self.du_trace.len() > w {
            let old = self.du_trace[self.du_trace.len() - 1 - w];
            if (v - old).abs() <= self.cfg.du_stable_tol * old.abs().max(1e-12) {
                self.du_pooled = true;
            }
        }
    }

    /// A step's output without its gradients: the terms λ_TU·J_TU and −λ_DU·J_DU (`values`:
    /// J_TU, J_DU and the λ_DU applied), the weighting of the cross-entropy, the record.
    fn output(
        &self,
        inp: &AdaptInputs,
        (j_tu, j_du, lambda_du_applied): (f64, f64, f64),
        was_pooled: bool,
    ) -> StepOutput {
        let ce_weights = match inp.estimate {
            Some(e) if self.cfg.importance_weighting => CeWeights::WeightedMean(e.weights.clone()),
            _ => CeWeights::Uniform,
        };
        StepOutput {
            terms: vec![self.cfg.lambda_tu * j_tu, -(lambda_du_applied * j_du)],
            ce_weights,
            mul: Some(MulRecord { j_tu, j_du, lambda_du_applied, du_pooled: was_pooled }),
            ..StepOutput::none()
        }
    }
}

impl Method for Mul {
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput> {
        let c = inp.prior.len();
        let ys = one_hot::<f32>(inp.ys, c);
        let zt = inp.zt.select(Axis(0), inp.confident);
        let yt = one_hot::<f32>(inp.pseudo_labels, c);
        // Gaussian label kernel: MCMD's J_TU on every target row with its soft labels (CKB);
        // class-wise MMD splits rows by pseudo-label and keeps them.
        let soft_tu = self.params.label_kernel == LabelKernel::GaussianAuto
            && self.discrepancy == Discrepancy::Mcmd;
        let soft = soft_tu.then(|| soft_labels(inp.target_probs, inp.prior));
        let terms = mul_terms(&MulInputs {
            zs: inp.zs,
            ys: ys.view(),
            zt: if soft.is_some() { inp.zt } else { zt.view() },
            yt: soft.as_ref().map_or(yt.view(), |p| p.view()),
            du_target: soft.as_ref().map(|_| (zt.view(), yt.view())),
            prior: inp.prior,
            params: self.params,
            mcmd: self.cfg.mcmd,
            settings: self.term_settings(),
            discrepancy: self.discrepancy,
        })?;
        let was_pooled = self.du_pooled;
        self.track_pooling(terms.j_du_source_only);
        // The kernel terms see the confident rows (J_DU, and J_TU unless soft); the loop wants
        // every target row.
        let grad_zt = match soft {
            Some(_) => {
                let mut g = terms.grad_zt;
                if let Some(du) = &terms.grad_zt_du {
                    for (r, &i) in inp.confident.iter().enumerate() {
                        let mut row = g.row_mut(i);
                        row += &du.row(r);
                    }
                }
                g
            }
            None => {
                let mut g = Array2::<f32>::zeros(inp.zt.raw_dim());
                for (r, &i) in inp.confident.iter().enumerate() {
                    g.row_mut(i).assign(&terms.grad_zt.row(r));
                }
                g
            }
        };
        Ok(StepOutput {
            grad_zs: Some(terms.grad_zs),
            grad_zt: Some(grad_zt),
            ..self.output(inp, (terms.j_tu, terms.j_du, terms.lambda_du_effective), was_pooled)
        })
    }

    /// Exact MCMD with the linear label kernel: the terms run on a device's kept Z.
    fn steps_resident(&self) -> bool {
        self.discrepancy == Discrepancy::Mcmd
            && self.cfg.mcmd == McmdEstimator::Exact
            && self.params.label_kernel == LabelKernel::Linear
    }

    fn step_resident(
        &mut self,
        inp: &AdaptInputs,
        z: &dyn ResidentZ,
        rows: (usize, usize),
    ) -> Result<StepOutput> {
        let t = resident::resident_terms(&self.term_settings(), &self.params, inp, z, rows)?;
        let was_pooled = self.du_pooled;
        self.track_pooling(t.j_du_source_only);
        Ok(StepOutput {
            resident_grad: Some(t.grad_sq),
            ..self.output(inp, (t.j_tu, t.j_du, t.lambda_du_effective), was_pooled)
        })
    }

    /// For w (importance weighting) or for p̂ᵗ in J_TU.
    fn needs_shift_estimate(&self) -> bool {
        self.cfg.importance_weighting || (self.cfg.use_tu && self.cfg.prior_weighting)
    }

    fn calibrates(&self) -> bool {
        true
    }

    fn gradient_name(&self) -> &'static str {
        "the gradient of the kernel terms (λ_TU·J_TU − λ_DU·J_DU) with respect to Z"
    }
}

pub mod config;
mod host;
mod resident;
mod terms;
#[cfg(test)]
mod tests;
