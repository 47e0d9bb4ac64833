//! From two loaded domains to a report: preprocessing, the fit, predictions and (when the
//! target has labels) the final score. The CLI, the demo and the tests all go through here.

use std::time::Instant;

use ndarray::Array2;
use serde::{Deserialize, Serialize};

use crate::data::{Domain, LabelRule};
use crate::data::{FilePair, Rows};
use crate::model::dataset::check_domain_rows;
use crate::eval::EmbeddingMetrics;
use crate::label_shift;
use crate::nn::argmax_row;
use crate::methods::{FitConfig, IterRecord, PretrainCache, Progress};
use crate::model::{CheckedParams, FitFeatures, FitInput, FitOptions, FitOutcome, FitParams, FittedModel};
use crate::records::Protocol;
use crate::{Error, Result};

mod evaluate;
mod label_free;
mod output_files;
use output_files::{labels_array, npy_bytes};
pub use output_files::{predictions_csv, predictions_csv_header, push_predictions_csv_rows};
pub use label_free::{DIAGNOSTICS_RESAMPLES, PRIOR_CI_LEVEL, PRIOR_CI_RESAMPLES};
use label_free::{diagnose, prior_estimate};

/// Scores computed from the target labels after training (evaluation only).
#[derive(Clone, Debug, Serialize)]
pub struct Evaluation {
    pub target_accuracy: f64,
    pub per_class_accuracy: Vec<Option<f64>>,
    pub true_target_prior: Vec<f64>,
    /// ‖p̂ᵗ − pᵗ‖₁ of the estimated prior (None when the method estimates none).
    pub prior_l1_error: Option<f64>,
    /// ‖pˢ − pᵗ‖₁: how much label shift the task has.
    pub source_target_prior_l1: f64,
}

/// Everything `report.json` holds: written by `glshift fit`, read back by `glshift report`.
/// Reading is lenient where older versions wrote less.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FitReport {
    pub glshift_version: String,
    pub method: String,
    pub seed: u64,
    pub source: String,
    pub target: String,
    /// How the task was built from the two domains (`Uda` = unchanged; set by the caller that
    /// applied a protocol, e.g. `glshift fit --setting pda`).
    #[serde(default)]
    pub protocol: Protocol,
    pub source_path: String,
    pub target_path: String,
    pub n_source: usize,
    pub n_target: usize,
    pub n_features: usize,
    pub classes: Vec<String>,
    pub label_rule: LabelRule,
    pub config: FitConfig,
    /// Source rows trained on and held out for the BBSE confusion matrix.
    pub n_source_train: usize,
    pub n_source_holdout: usize,
    pub source_prior: Vec<f64>,
    /// The target prior estimated by `label_shift.prior_estimator` (after training, on the
    /// final network's outputs; `tracker`: the training loop's last estimate).
    pub estimated_target_prior: Option<Vec<f64>>,
    /// 90% bootstrap interval of `estimated_target_prior`, per class
    /// ([`label_shift::fit_prior_interval`]); absent without an estimate.
    #[serde(default)]
    pub estimated_target_prior_ci_low: Option<Vec<f64>>,
    #[serde(default)]
    pub estimated_target_prior_ci_high: Option<Vec<f64>>,
    /// The importance weights training used (the tracker's last estimate, whatever
    /// `label_shift.prior_estimator` reports).
    pub importance_weights: Option<Vec<f64>>,
    pub confusion_filled_classes: Vec<usize>,
    #[serde(default)]
    pub floored_classes: Vec<usize>,
    /// Class counts of the target predictions.
    #[serde(default)]
    pub predicted_class_counts: Vec<usize>,
    #[serde(default)]
    pub history: Vec<IterRecord>,
    /// The only timing field (kept apart so reports can be compared byte for byte without it).
    #[serde(default)]
    pub elapsed_seconds: f64,
    /// Pre-training came from an earlier run of the same grid (`pipeline::run_cached`), so
    /// `elapsed_seconds` covers adaptation and scoring only. Absent when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pretraining_reused: bool,
    /// `training` resolved to mini-batch (large data, or forced): the iteration counts of
    /// `history` are mini-batch steps. Absent when false (full-batch).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub minibatch_training: bool,
    /// Where the fit's products ran (`device`): `{"kind": "cpu"}` or `{"kind": "cuda",
    /// "name": ...}`, with `fallback` saying why `auto` used the CPU.
    #[serde(default)]
    pub device: crate::device::DeviceUsed,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_accuracy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_class_accuracy: Option<Vec<Option<f64>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub true_target_prior: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_l1_error: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_target_prior_l1: Option<f64>,
    /// J_b, J_w, prototype distances and per-class MCMD of Z (evaluation only: uses the target
    /// labels, after training).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding_metrics: Option<EmbeddingMetrics>,
    /// Problems found without labels that did not stop the run (e.g. badly scaled target
    /// features after z-score); the CLI prints them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Label-free diagnostics of the final network ([`label_shift::fit_diagnostics`]): absent
    /// without a source hold-out, or when they could not be computed (a warning says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<label_shift::FitDiagnostics>,
    /// The prior guard's test and box on the pre-trained network (MUL with the guard on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior_guard: Option<label_shift::PriorGuard>,
}

/// A finished run: report plus per-row target probabilities and the representations Z.
pub struct RunOutput {
    pub report: FitReport,
    pub target_probs: Array2<f32>,
    /// Probabilities of the stratified source hold-out from the final network (rows it never
    /// trained on; empty when the config trains on every source row), n_hold × c.
    pub holdout_probs: Array2<f32>,
    /// Labels of those hold-out rows.
    pub holdout_labels: Vec<usize>,
    /// Source row (index into `source`) of each hold-out row, increasing.
    pub holdout_rows: Vec<usize>,
    /// Eval-mode Z of every source row and every target row (input order).
    pub source_z: Array2<f32>,
    pub target_z: Array2<f32>,
    pub source_labels: Vec<usize>,
    /// The trained network (G and F), e.g. to draw F's decision regions on a 2-D Z.
    pub network: crate::nn::Network,
    /// True target labels when the target file has them (for evaluation and figures only).
    pub target_labels: Option<Vec<usize>>,
    /// The model to keep: predicts new rows, saved by `glshift fit` as `model.glshift`.
    pub model: FittedModel,
}

/// File names of the representations a run saves beside `report.json`.
pub const Z_SOURCE_FILE: &str = "z_source.npy";
pub const Z_TARGET_FILE: &str = "z_target.npy";
pub const LABELS_SOURCE_FILE: &str = "labels_source.npy";
pub const LABELS_TARGET_FILE: &str = "labels_target.npy";

impl RunOutput {
    /// Predicted class per target row.
    pub fn predictions(&self) -> Vec<usize> {
        argmax_rows(&self.target_probs)
    }

    /// `predictions.csv` of the target rows ([`predictions_csv`]).
    pub fn predictions_csv(&self) -> String {
        predictions_csv(&self.target_probs, &self.report.classes)
    }

    /// `(file name, .npy bytes)` of Z (f32, n × d) for both domains and of the labels (i64):
    /// what `glshift report` needs for the t-SNE figures. The target labels are included only
    /// when the target has them.
    pub fn embedding_files(&self) -> Result<Vec<(&'static str, Vec<u8>)>> {
        let mut files = vec![(Z_SOURCE_FILE, npy_bytes(&self.source_z)?), (Z_TARGET_FILE, npy_bytes(&self.target_z)?)];
        files.push((LABELS_SOURCE_FILE, npy_bytes(&labels_array(&self.source_labels))?));
        if let Some(t) = &self.target_labels {
            files.push((LABELS_TARGET_FILE, npy_bytes(&labels_array(t))?));
        }
        Ok(files)
    }
}

fn argmax_rows(p: &Array2<f32>) -> Vec<usize> {
    p.rows().into_iter().map(|r| argmax_row(r).0).collect()
}

/// Checks that a source/target pair can be trained on (independent of how it was loaded):
/// the array checks of [`crate::model::Dataset`], naming the domains' files, and target classes
/// ⊆ source classes.
pub fn check_pair(source: &Domain, target: &Domain) -> Result<()> {
    check_pair_rows((source, Rows::Memory(source.features.view())), (target, Rows::Memory(target.features.view())))
}

/// [`check_pair`] with each domain's rows given apart (in memory or in its file).
fn check_pair_rows<'r>(source: (&Domain, Rows<'r>), target: (&Domain, Rows<'r>)) -> Result<()> {
    let labels = check_domain_rows(source, target)?;
    let ((source, _), (target, _)) = (source, target);
    let c = source.n_classes();
    // Partial DA assumes target classes ⊆ source classes; a target class without source rows
    // can never be predicted. Target labels are read here only to refuse such a task.
    if let Some(tl) = &target.labels {
        let mut in_source = vec![false; c];
        labels.iter().for_each(|&y| in_source[y] = true);
        if let Some((i, &l)) = tl.iter().enumerate().find(|(_, &l)| !in_source.get(l).copied().unwrap_or(false)) {
            let name = source.class_names.get(l).map_or_else(|| l.to_string(), String::clone);
            return Err(Error::bad_data(
                format!("target '{}' ({})", target.name, target.path.display()),
                format!(
                    "row {i} (0-based) has class '{name}', which no row of the source '{}' has; \
                     target classes must be a subset of the source classes (drop those target rows \
                     or add source data for the class)",
                    source.name
                ),
            ));
        }
    }
    Ok(())
}

/// Preprocesses, trains and scores. `target` labels, if any, are read only after training.
pub fn run(source: &Domain, target: &Domain, cfg: &FitConfig, progress: &mut dyn FnMut(Progress)) -> Result<RunOutput> {
    run_inner(source, target, cfg, None, None, progress)
}

/// [`run`] sharing pre-training through `cache` with earlier runs on the same source rows and
/// pre-training settings (a grid's methods on one task and seed). Same results as [`run`];
/// `elapsed_seconds` then excludes the shared pre-training, and `pretraining_reused` says so.
pub fn run_cached(
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
    cache: &mut PretrainCache,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    run_inner(source, target, cfg, None, Some(cache), progress)
}

/// [`run`] with the source hold-out given as row indices (one fold of a cross-fit) instead of
/// the stratified split of `cfg.label_shift`; `None` is [`run`].
pub fn run_with_holdout(
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
    holdout: Option<&[usize]>,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    run_inner(source, target, cfg, holdout, None, progress)
}

fn run_inner(
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
    holdout: Option<&[usize]>,
    cache: Option<&mut PretrainCache>,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    let params = check_run(source, target, cfg)?;
    let features = FitFeatures::Memory(source.features.view().into(), target.features.view().into());
    run_checked(&params, source, target, features, cfg, FitOptions { holdout, cache, progress: Some(progress) })
}

/// [`run`] taking the domains by value: their features are preprocessed in place and freed
/// when training ends, so the run holds one copy of them instead of two (`glshift fit`). Same
/// results, bit for bit.
pub fn run_owned(mut source: Domain, mut target: Domain, cfg: &FitConfig, progress: &mut dyn FnMut(Progress)) -> Result<RunOutput> {
    let params = check_run(&source, &target, cfg)?;
    // From here on `source` and `target` give names, paths, labels and classes, not rows.
    let features = FitFeatures::Memory(std::mem::take(&mut source.features).into(), std::mem::take(&mut target.features).into());
    run_checked(&params, &source, &target, features, cfg, FitOptions { holdout: None, cache: None, progress: Some(progress) })
}

/// Whether a fit of `cfg` on `n_rows` (source + target) × `d` reads its feature rows from
/// their `.npy` files rather than loading them ([`run_files`]): when it trains by mini-batch,
/// the one training mode that reads rows a batch and a chunk at a time.
pub fn reads_from_files(cfg: &FitConfig, n_rows: usize, d: usize) -> bool {
    cfg.uses_minibatch(n_rows, d)
}

/// [`run_owned`] on a pair whose feature rows stay in their files ([`crate::data::open_pair_files`]):
/// every pass and every batch reads them a block at a time, so memory is set by the model, the
/// batches and `O(n × z_dim)`, not by `n × d`. For mini-batch fits ([`reads_from_files`]);
/// the same results, bit for bit, as [`run_owned`] on the loaded pair with the same settings.
/// Errors: those of [`run_owned`], a full-batch configuration, a file that changes under the fit.
pub fn run_files(pair: &FilePair, cfg: &FitConfig, progress: &mut dyn FnMut(Progress)) -> Result<RunOutput> {
    let params = FitParams::from_config(cfg.clone()).check()?;
    let (source, target) = (&pair.source, &pair.target);
    check_pair_rows((source, Rows::File(&pair.source_rows, None)), (target, Rows::File(&pair.target_rows, None)))?;
    let (n, d) = (pair.source_rows.nrows() + pair.target_rows.nrows(), pair.source_rows.ncols());
    crate::methods::train::check_memory_of(n, d, source.n_classes(), cfg, false)?;
    let features = FitFeatures::Files(&pair.source_rows, &pair.target_rows);
    run_checked(&params, source, target, features, cfg, FitOptions { holdout: None, cache: None, progress: Some(progress) })
}

/// The checks every run makes before it allocates anything: the settings, the pair, memory.
fn check_run(source: &Domain, target: &Domain, cfg: &FitConfig) -> Result<CheckedParams> {
    let params = FitParams::from_config(cfg.clone()).check()?;
    check_pair(source, target)?;
    // Before the fit's allocations: refuse early what would not fit in memory.
    crate::methods::train::check_memory(source.n() + target.n(), source.dim(), source.n_classes(), cfg)?;
    Ok(params)
}

/// Trains on `features` (`n_s × d` source and `n_t × d` target rows, borrowed from the domains
/// or taken from them) and scores; `source` and `target` (checked by [`check_run`]) give the
/// labels, classes and names, not the rows.
fn run_checked(
    params: &CheckedParams,
    source: &Domain,
    target: &Domain,
    features: FitFeatures<'_>,
    cfg: &FitConfig,
    opts: FitOptions,
) -> Result<RunOutput> {
    let (n_source, n_features, n_target) = features.shape_parts();
    let source_y = source.labels.as_deref().expect("check_pair: the source has labels");
    let started = Instant::now();
    let c = source.n_classes();
    let input = FitInput { features, source_y, class_names: &source.class_names };
    let FitOutcome { model, fitted, mut warnings } = params.fit_input(input, opts)?;
    let elapsed_seconds = started.elapsed().as_secs_f64();
    let predictions = argmax_rows(&fitted.target_probs);
    let mut predicted_class_counts = vec![0usize; c];
    predictions.iter().for_each(|&k| predicted_class_counts[k] += 1);
    let holdout_labels: Vec<usize> = fitted.holdout_rows.iter().map(|&i| source_y[i]).collect();
    let diagnostics = diagnose(&fitted, &holdout_labels, cfg, &mut warnings);
    let prior_ci = prior_estimate(&fitted, &holdout_labels, cfg)?;
    // The reported prior: `label_shift.prior_estimator` on the final network, or the tracker's
    // last estimate where no interval could be built (no hold-out).
    let estimated = match &prior_ci {
        Some(iv) => Some(iv.estimate.target_prior.clone()),
        None => fitted.shift.as_ref().map(|s| s.target_prior.clone()),
    };
    if let Some(g) = fitted.prior_guard.as_ref().filter(|g| !g.trusted) {
        warnings.push(g.summary());
    }

    let report = FitReport {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        method: cfg.method.to_string(),
        seed: cfg.seed,
        source: source.name.clone(),
        target: target.name.clone(),
        protocol: Protocol::Uda,
        source_path: source.path.display().to_string(),
        target_path: target.path.display().to_string(),
        n_source,
        n_target,
        n_features,
        classes: source.class_names.clone(),
        label_rule: source.label_rule,
        config: cfg.clone(),
        n_source_train: fitted.n_train,
        n_source_holdout: fitted.n_holdout,
        source_prior: fitted.source_prior.clone(),
        importance_weights: fitted.shift.as_ref().map(|s| s.weights.clone()),
        estimated_target_prior: estimated,
        estimated_target_prior_ci_low: prior_ci.as_ref().map(|i| i.low.clone()),
        estimated_target_prior_ci_high: prior_ci.map(|i| i.high),
        confusion_filled_classes: fitted.confusion_filled_classes.clone(),
        floored_classes: fitted.floored_classes.clone(),
        predicted_class_counts,
        history: fitted.history.clone(),
        elapsed_seconds,
        pretraining_reused: fitted.pretraining_reused,
        minibatch_training: fitted.bn_stats_rows.is_some(),
        device: fitted.device.clone(),
        target_accuracy: None,
        per_class_accuracy: None,
        true_target_prior: None,
        prior_l1_error: None,
        source_target_prior_l1: None,
        embedding_metrics: None,
        warnings,
        diagnostics,
        prior_guard: fitted.prior_guard.clone(),
    };
    let mut out = RunOutput {
        report,
        target_probs: fitted.target_probs,
        holdout_probs: fitted.holdout_probs,
        holdout_labels,
        holdout_rows: fitted.holdout_rows.clone(),
        source_z: fitted.source_z,
        target_z: fitted.target_z,
        source_labels: source_y.to_vec(),
        network: fitted.network,
        target_labels: None,
        model,
    };
    // Evaluation only: the target labels enter here, after the model is final.
    if let Some(truth) = &target.labels {
        out.evaluate(truth)?;
    }
    Ok(out)
}
