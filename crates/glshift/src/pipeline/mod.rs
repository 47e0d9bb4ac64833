//! From two loaded domains to a report: preprocessing, the fit, predictions and (when the
//! target has labels) the final score. The CLI, the demo and the tests all go through here.

use std::path::Path;
use std::time::Instant;

use ndarray::Array2;
use serde::Serialize;

use crate::config::FitConfig;
use crate::data::Domain;
use crate::data::{FilePair, Rows};
use crate::model::dataset::check_domain_rows;
use crate::model::{
    CheckedParams, FitFeatures, FitInput, FitOptions, FitOutcome, FitParams, FittedModel,
};
use crate::nn::argmax_row;
use crate::output::StagedFile;
use crate::train::{PretrainCache, Progress};
use crate::{Error, Result};

mod evaluate;
mod label_free;
mod output_files;
mod report;
mod sources;
use label_free::label_free;
pub use label_free::{DIAGNOSTICS_RESAMPLES, PRIOR_CI_LEVEL, PRIOR_CI_RESAMPLES};
use output_files::labels_array;
pub use output_files::{predictions_csv, predictions_csv_header, push_predictions_csv_rows};
use report::fit_report;
pub use report::FitReport;
pub use sources::{run_pooled, run_sources_cached, SourceDomainReport, Sources};

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
    /// True target labels when the target file has them (for evaluation and figures only).
    pub target_labels: Option<Vec<usize>>,
    /// The model to keep: predicts new rows, saved by `glshift fit` as `model.glshift`; its
    /// network (G and F, [`FittedModel::network`]) is the run's only copy.
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

    /// Z (f32, n × d) of both domains and the labels (i64) as `.npy` files in `dir`, staged
    /// (they appear through [`crate::output::write_files_atomically_with`], with the run's
    /// other files): what `glshift report` needs for the t-SNE figures. The target labels are
    /// included only when the target has them.
    pub fn stage_embedding_files(&self, dir: &Path) -> Result<Vec<StagedFile>> {
        let mut files = vec![
            StagedFile::npy(&self.source_z, dir.join(Z_SOURCE_FILE))?,
            StagedFile::npy(&self.target_z, dir.join(Z_TARGET_FILE))?,
            StagedFile::npy(&labels_array(&self.source_labels), dir.join(LABELS_SOURCE_FILE))?,
        ];
        if let Some(t) = &self.target_labels {
            files.push(StagedFile::npy(&labels_array(t), dir.join(LABELS_TARGET_FILE))?);
        }
        Ok(files)
    }
}

/// Predicted class (argmax) of every row of `p` (`n × c`).
pub fn argmax_rows(p: &Array2<f32>) -> Vec<usize> {
    p.rows().into_iter().map(|r| argmax_row(r).0).collect()
}

/// Checks that a source/target pair can be trained on (independent of how it was loaded):
/// the array checks of [`crate::model::Dataset`], naming the domains' files, and target classes
/// ⊆ source classes.
pub fn check_pair(source: &Domain, target: &Domain) -> Result<()> {
    check_pair_rows(
        (source, Rows::Memory(source.features.view())),
        (target, Rows::Memory(target.features.view())),
    )
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
        if let Some((i, &l)) =
            tl.iter().enumerate().find(|(_, &l)| !in_source.get(l).copied().unwrap_or(false))
        {
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
pub fn run(
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
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
    let features =
        FitFeatures::Memory(source.features.view().into(), target.features.view().into());
    run_checked(
        &params,
        source,
        target,
        features,
        cfg,
        FitOptions { holdout, cache, progress: Some(progress) },
    )
}

/// [`run`] taking the domains by value: their features are preprocessed in place and freed
/// when training ends, so the run holds one copy of them instead of two (`glshift fit`). Same
/// results, bit for bit.
pub fn run_owned(
    mut source: Domain,
    mut target: Domain,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    let params = check_run(&source, &target, cfg)?;
    // From here on `source` and `target` give names, paths, labels and classes, not rows.
    let features = FitFeatures::Memory(
        std::mem::take(&mut source.features).into(),
        std::mem::take(&mut target.features).into(),
    );
    run_checked(
        &params,
        &source,
        &target,
        features,
        cfg,
        FitOptions { holdout: None, cache: None, progress: Some(progress) },
    )
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
pub fn run_files(
    pair: &FilePair,
    cfg: &FitConfig,
    progress: &mut dyn FnMut(Progress),
) -> Result<RunOutput> {
    let params = FitParams::from_config(cfg.clone()).check()?;
    let (source, target) = (&pair.source, &pair.target);
    check_pair_rows(
        (source, Rows::File(&pair.source_rows, None)),
        (target, Rows::File(&pair.target_rows, None)),
    )?;
    let features = FitFeatures::Files(&pair.source_rows, &pair.target_rows);
    run_checked(
        &params,
        source,
        target,
        features,
        cfg,
        FitOptions { holdout: None, cache: None, progress: Some(progress) },
    )
}

/// The checks every run makes before it allocates anything: the settings and the pair (the
/// memory estimate follows in [`CheckedParams`]'s fit, before preprocessing).
fn check_run(source: &Domain, target: &Domain, cfg: &FitConfig) -> Result<CheckedParams> {
    let params = FitParams::from_config(cfg.clone()).check()?;
    check_pair(source, target)?;
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
    let FitOutcome { model, fitted, prior, mut warnings } = params.fit_input(input, opts)?;
    let elapsed_seconds = started.elapsed().as_secs_f64();
    let predictions = argmax_rows(&fitted.target_probs);
    let mut predicted_class_counts = vec![0usize; c];
    predictions.iter().for_each(|&k| predicted_class_counts[k] += 1);
    let holdout_labels = fitted.holdout_labels(source_y);
    let label_free = label_free(&fitted, prior.as_ref(), &holdout_labels, cfg, &mut warnings)?;
    let shape = (n_source, n_features, n_target);
    let report = fit_report(
        source,
        target,
        cfg,
        &fitted,
        shape,
        label_free,
        predicted_class_counts,
        elapsed_seconds,
        warnings,
    );
    let mut out = RunOutput {
        report,
        target_probs: fitted.target_probs,
        holdout_probs: fitted.holdout_probs,
        holdout_labels,
        holdout_rows: fitted.holdout_rows.clone(),
        source_z: fitted.source_z,
        target_z: fitted.target_z,
        source_labels: source_y.to_vec(),
        target_labels: None,
        model,
    };
    // Evaluation only: the target labels enter here, after the model is final.
    if let Some(truth) = &target.labels {
        out.evaluate(truth)?;
    }
    Ok(out)
}
