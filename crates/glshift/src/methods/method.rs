//! The one trait through which the training loop calls every method (`source`, MUL and its
//! class-wise-MMD variant, every baseline): [`Method`]. A method owns its state (MUL's J_DU
//! pooling, a discriminator and its optimiser); the loop owns the network, the optimiser of
//! G + F, the label-shift estimate and the pseudo-labels.
//!
//! Per adaptation iteration the loop hands the method the training-mode Z and logits of the
//! source training rows and of every target row ([`AdaptInputs`], never a target label) and
//! gets back ([`StepOutput`]) the terms the method adds to the source cross-entropy, their
//! gradients with respect to Z and the logits, the weighting of the source cross-entropy, and
//! what the history records.

use ndarray::{Array2, ArrayView2};

use super::baselines::config::BaselineConfig;
use super::method_info::MethodInfo;
use super::mul::config::MulConfig;
use crate::device::ResidentZ;
use crate::label_shift::ShiftEstimate;
use crate::nn::AdamConfig;
use crate::Result;

/// What a method's constructor gets (`FitConfig::build_context`): the name and facts of its
/// registry row, the settings sections methods read, the fit's seed, the width of Z and the
/// number of classes. A method reads its settings here, never the whole configuration.
pub struct BuildContext<'a> {
    pub name: &'static str,
    pub info: MethodInfo,
    pub mul: &'a MulConfig,
    pub baselines: &'a BaselineConfig,
    pub optimizer: &'a AdamConfig,
    pub seed: u64,
    pub z_dim: usize,
    pub c: usize,
}

impl BuildContext<'_> {
    /// The method adapts by mini-batch SGD (`baselines.schedule = "paper"` and its row says so).
    pub fn minibatch(&self) -> bool {
        self.baselines.minibatch(self.info)
    }
}

/// What one adaptation iteration gives a method (training-mode outputs of the network).
/// Generic in the precision so the tests can check the gradients in f64; training runs f32.
pub struct AdaptInputs<'a, T = f32> {
    /// Z (n_s × d) and logits (n_s × c) of the source training rows, and their labels.
    pub zs: ArrayView2<'a, T>,
    pub logits_s: ArrayView2<'a, T>,
    pub ys: &'a [usize],
    /// Z (n_t × d) and logits (n_t × c) of every target row.
    pub zt: ArrayView2<'a, T>,
    pub logits_t: ArrayView2<'a, T>,
    /// Evaluation-mode target class probabilities (n_t × c) at temperature 1 (PADA's weights).
    pub target_probs: ArrayView2<'a, T>,
    /// Adaptation progress p = iteration / adaptation iterations, in [0, 1).
    pub progress: f64,
    /// This iteration's BBSE-QP estimate, when the method asked for one
    /// ([`Method::needs_shift_estimate`]).
    pub estimate: Option<&'a ShiftEstimate>,
    /// Target rows (indices into `zt`) whose calibrated top probability exceeds τ and whose
    /// class is not estimated absent, with their pseudo-labels (same length).
    pub confident: &'a [usize],
    pub pseudo_labels: &'a [usize],
    /// Class prior (length c) the pseudo-labels were filtered with: p̂ᵗ when the estimate is
    /// used for the prior (`mul.prior_weighting`), pˢ otherwise.
    pub prior: &'a [f64],
}

/// How the source cross-entropy is weighted: per class, or per source training row.
#[derive(Clone, Debug, PartialEq)]
pub enum CeWeights {
    /// The plain mean over the source training rows.
    Uniform,
    /// The weighted mean Σᵢ w_{yᵢ}·CEᵢ / Σᵢ w_{yᵢ} (MUL's importance-weighted J_E).
    WeightedMean(Vec<f64>),
    /// (1/n_s)·Σᵢ w_{yᵢ}·CEᵢ, as the baselines' papers write it (IW-DANN, IW-CDAN, PADA).
    WeightedSum(Vec<f64>),
    /// The weighted mean Σᵢ βᵢ·CEᵢ / Σᵢ βᵢ with one weight per source training row (length
    /// n_s, in the order of `AdaptInputs::ys`; KMM's β). The hold-out rows get none.
    PerRow(Vec<f64>),
}

/// A baseline's transfer term (MMD², or the discriminator's domain loss) and the weight λ applied.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TransferRecord {
    pub value: f64,
    pub lambda: f64,
}

/// A method's contribution to one adaptation iteration.
#[derive(Clone, Debug)]
pub struct StepOutput {
    /// Terms added to the cross-entropy, in this order: the recorded `total` is
    /// `ce + terms[0] + terms[1] + …` (MUL: λ_TU·J_TU, −λ_DU·J_DU; a baseline: its objective).
    pub terms: Vec<f64>,
    /// Gradients of Σ terms wrt Z of the source training rows (n_s × d) and of every target
    /// row (n_t × d); `None` = zero.
    pub grad_zs: Option<Array2<f32>>,
    pub grad_zt: Option<Array2<f32>>,
    /// Gradients of Σ terms wrt the logits (n_s × c, n_t × c); `None` = zero.
    pub grad_logits_s: Option<Array2<f32>>,
    pub grad_logits_t: Option<Array2<f32>>,
    pub ce_weights: CeWeights,
    /// MUL's quantities for the history and the adaptation stop; `None` for other methods.
    pub mul: Option<MulRecord>,
    /// A baseline's transfer term for the history; `None` for other methods.
    pub transfer: Option<TransferRecord>,
    /// From [`Method::step_resident`]: the terms' ∂ℓ/∂Z was added on the device (`grad_zs` and
    /// `grad_zt` are `None`); the sum of the squared norms of what was added, finite iff it is.
    pub resident_grad: Option<f64>,
}

/// What one MUL step reports beyond its terms (the history's `j_tu`, `j_du`, `lambda_du_applied`,
/// `du_pooled`; see `train::IterRecord`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MulRecord {
    pub j_tu: f64,
    pub j_du: f64,
    /// The λ_DU applied at this step (after the balance rule).
    pub lambda_du_applied: f64,
    /// Whether J_DU pooled the confident target rows at this step.
    pub du_pooled: bool,
}

impl StepOutput {
    /// No term, no gradient, uniform cross-entropy (the `source` method).
    pub fn none() -> StepOutput {
        StepOutput {
            terms: Vec::new(),
            grad_zs: None,
            grad_zt: None,
            grad_logits_s: None,
            grad_logits_t: None,
            ce_weights: CeWeights::Uniform,
            mul: None,
            transfer: None,
            resident_grad: None,
        }
    }

    /// The values the loop checks for NaN/Inf, with the names its error gives them.
    pub fn checked_values(&self) -> [(&'static str, f64); 3] {
        let mul = self.mul.unwrap_or_default();
        [
            ("J_TU", mul.j_tu),
            ("J_DU", mul.j_du),
            ("the transfer term", self.transfer.map_or(0.0, |t| t.value)),
        ]
    }
}

/// A method: the loss it adds to the one training loop, with whatever state it keeps between
/// iterations. Built once per fit by `MethodKind::build` (the registry in `methods::kind`).
pub trait Method {
    /// One adaptation iteration: the method's terms and their gradients.
    fn step(&mut self, inp: &AdaptInputs) -> Result<StepOutput>;

    /// Whether the loop should estimate the label shift (BBSE-QP) every iteration for it.
    fn needs_shift_estimate(&self) -> bool {
        false
    }

    /// Whether it reads calibrated probabilities (temperature fitted on the source hold-out
    /// when `label_shift.calibrate`): for BBSE and the τ-confident pseudo-labels.
    fn calibrates(&self) -> bool {
        false
    }

    /// Whether the adaptation stage forwards the target rows at all (everything but `source`).
    fn sees_target(&self) -> bool {
        true
    }

    /// Mini-batch training only: every how many iterations the method needs the evaluation-mode
    /// probabilities of every row (BBSE-QP's estimate, PADA's γ), given the number of batches
    /// in one pass over the source; `None` = never (its inputs are the batch alone).
    fn full_view_interval(&self, _batches_per_pass: usize) -> Option<usize> {
        None
    }

    /// Whether the method reads the input features (the preprocessed rows, not Z) of the source
    /// training rows and of the target rows, once before the adaptation stage
    /// ([`Method::set_features`]). Only full-batch fits hold them in memory.
    fn reads_features(&self) -> bool {
        false
    }

    /// Where [`Method::reads_features`]: called once before the first adaptation iteration with
    /// the source training rows `x_train` (n_s × d, the order of `AdaptInputs::ys`; the
    /// hold-out excluded) and every target row `x_target` (n_t × d).
    fn set_features(
        &mut self,
        _x_train: ArrayView2<f32>,
        _x_target: ArrayView2<f32>,
    ) -> Result<()> {
        Ok(())
    }

    /// How the loop's error names this method's gradient wrt Z when it is not finite.
    fn gradient_name(&self) -> &'static str {
        "the gradient of the method's term with respect to Z"
    }

    /// Whether [`Method::step_resident`] can take an iteration whose Z stays on a device
    /// (full-batch training on a GPU); the loop then never brings Z to the host.
    fn steps_resident(&self) -> bool {
        false
    }

    /// [`Method::step`] with Z kept on a device, `z`: rows are named by index, the source
    /// training rows `0..rows.0` and target row i as `rows.1 + i`; `inp.zs` and `inp.zt` are
    /// empty. The terms' ∂ℓ/∂Z is added there ([`ResidentZ::add_to_dz`]), so the output's
    /// `grad_zs` and `grad_zt` are `None` and `resident_grad` is set. Called only where
    /// [`Method::steps_resident`] says so.
    fn step_resident(
        &mut self,
        _inp: &AdaptInputs,
        _z: &dyn ResidentZ,
        _rows: (usize, usize),
    ) -> Result<StepOutput> {
        Err(crate::Error::Device {
            requested: "cuda".into(),
            reason: "this method's terms do not run on a device's kept Z".into(),
        })
    }
}

/// `source`: the same network and schedule, no adaptation term.
#[derive(Clone, Copy, Debug, Default)]
pub struct SourceOnly;

impl Method for SourceOnly {
    fn step(&mut self, _: &AdaptInputs) -> Result<StepOutput> {
        Ok(StepOutput::none())
    }

    fn sees_target(&self) -> bool {
        false
    }
}
