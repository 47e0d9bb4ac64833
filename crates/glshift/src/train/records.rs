//! What the training loop hands back and records: the stage of an iteration, its record
//! ([`IterRecord`], with the hold-out's and a baseline's parts), progress, the data of a fit and
//! the fitted result. Plain data: the stages import it, it imports none of them.

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::label_shift::ShiftEstimate;
use crate::methods::TransferRecord;
use crate::nn::Network;

/// Training stage of an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    Pretrain,
    Adapt,
}

/// What one iteration measured (all values before the parameter update).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IterRecord {
    pub stage: Stage,
    pub iter: usize,
    /// (Importance-weighted) cross-entropy on the source training rows.
    pub ce: f64,
    pub j_tu: f64,
    pub j_du: f64,
    /// CE + λ_TU·J_TU − λ_DU·J_DU (with the λ_DU actually applied).
    pub total: f64,
    /// λ_DU applied at this iteration: `mul.lambda_du` after the balance rule, which makes it
    /// vary (read as `lambda_du` from files written before the name said so).
    #[serde(alias = "lambda_du")]
    pub lambda_du_applied: f64,
    /// Target rows above the confidence threshold (adaptation only).
    pub n_confident: usize,
    /// Whether confident target rows are part of J_DU at this iteration.
    pub du_pooled: bool,
    /// Temperature fitted on the source hold-out (1 when not calibrating).
    pub temperature: f64,
    /// BBSE-QP target prior estimate used at this iteration (adaptation with label shift).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_prior: Option<Vec<f64>>,
    /// A baseline's transfer term at this iteration (its `total` includes it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfer: Option<TransferRecord>,
    /// The source hold-out as pre-training's stopping rule saw it (pre-training with a hold-out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holdout: Option<HoldoutRecord>,
}

/// The source hold-out at one pre-training iteration (evaluation mode, temperature 1): the
/// quantities of the stopping rule (docs/methods.md "Stopping rules").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HoldoutRecord {
    /// Mean NLL of the hold-out rows' labels.
    pub nll: f64,
    /// Its standard error sd/√n_hold.
    pub nll_se: f64,
    /// Share of hold-out rows whose largest logit is their label.
    pub accuracy: f64,
}

/// Progress callback payload.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub stage: Stage,
    pub loss: f64,
}

/// A trained model and what the loop recorded.
#[derive(Clone, Debug)]
pub struct Fitted {
    pub network: Network,
    /// Target class probabilities (eval mode), n_t × c.
    pub target_probs: Array2<f32>,
    /// Eval-mode representations Z = G(x) of every source row (input order) and every target
    /// row, for the analysis metrics and figures.
    pub source_z: Array2<f32>,
    pub target_z: Array2<f32>,
    /// Final label-shift estimate (MUL with importance weighting), None for `source`.
    pub shift: Option<ShiftEstimate>,
    /// Source prior pˢ over all source rows.
    pub source_prior: Vec<f64>,
    pub history: Vec<IterRecord>,
    /// Source rows used for training and held out for the confusion matrix.
    pub n_train: usize,
    pub n_holdout: usize,
    /// Classes whose hold-out had no row (their confusion column was filled; pitfall 1).
    pub confusion_filled_classes: Vec<usize>,
    /// Classes whose estimated target prior fell under the floor and was set to 0.
    pub floored_classes: Vec<usize>,
    /// Indices (into the source rows) of the stratified hold-out, in the row order of
    /// [`Fitted::holdout_probs`].
    pub holdout_rows: Vec<usize>,
    /// Class probabilities of the hold-out rows from the final network (eval mode, plain
    /// softmax without temperature), n_hold × c: rows it never trained on, for label-shift
    /// estimators (`glshift shift estimate --data`).
    pub holdout_probs: Array2<f32>,
    /// Pre-training was taken from the [`PretrainCache`] passed to [`fit_with_cache`].
    pub pretraining_reused: bool,
    /// What the prior guard found on the pre-trained network (MUL with the guard on).
    pub prior_guard: Option<crate::prior_policy::PriorGuard>,
    /// The adaptation check of a distrusted guard answered `adapt-checked` (`None` otherwise):
    /// whether the adaptation without correction was kept or redone as `source`.
    pub adaptation_check: Option<crate::prior_policy::AdaptationCheck>,
    /// Mini-batch fits: the source rows (input order) whose statistics every BatchNorm used in
    /// evaluation mode (a seeded sample of the training rows); `None`: all training rows.
    pub bn_stats_rows: Option<Vec<usize>>,
    /// Where the products ran (`device`): CPU, or which GPU; and why `auto` fell back.
    pub device: crate::device::DeviceUsed,
}

/// Data of a fit: preprocessed features, source labels (0-based), number of classes.
pub struct FitData<'a> {
    /// Source rows `n_s × d`, in memory or read from a file (mini-batch fits only).
    pub source_x: crate::data::Rows<'a>,
    pub source_y: &'a [usize],
    /// Target rows `n_t × d`, as the source's.
    pub target_x: crate::data::Rows<'a>,
    pub n_classes: usize,
    /// Source rows to hold out instead of the stratified split of `label_shift`
    /// (cross-fitting passes one fold); `None` = that split.
    pub holdout: Option<&'a [usize]>,
}

impl Fitted {
    /// The source labels of the hold-out rows, in `holdout_rows` order (`source_y`: every
    /// source row's label, input order).
    pub fn holdout_labels(&self, source_y: &[usize]) -> Vec<usize> {
        self.holdout_rows.iter().map(|&i| source_y[i]).collect()
    }
}

impl IterRecord {
    /// A pre-training iteration: cross-entropy, and the hold-out when there is one.
    pub(super) fn pretrain(iter: usize, ce: f64, holdout: Option<HoldoutRecord>) -> IterRecord {
        IterRecord {
            stage: Stage::Pretrain,
            iter,
            ce,
            j_tu: 0.0,
            j_du: 0.0,
            total: ce,
            lambda_du_applied: 0.0,
            n_confident: 0,
            du_pooled: false,
            temperature: 1.0,
            target_prior: None,
            transfer: None,
            holdout,
        }
    }
}
