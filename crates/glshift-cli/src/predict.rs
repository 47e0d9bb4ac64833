//! `glshift predict`: apply a saved model (`model.glshift` of `glshift fit`) to new rows and
//! write predictions.csv (the columns of fit's) and report.json, atomically. A `.npy` file is
//! read and predicted a block of rows at a time, so 1M rows × 2048 need no more memory than one
//! block (64 MiB) plus the model.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use glshift::data;
use glshift::eval;
use glshift::model::FittedModel;
use glshift::output::{write_files_atomically_with, StagedFile};
use glshift::pipeline::{argmax_rows, predictions_csv_header, push_predictions_csv_rows};
use ndarray::{Array2, ArrayView2, Axis};
use serde::Serialize;

use crate::fit::{check_out_dir, fmt_vec};

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("rows").required(true).args(["domain", "features"])))]
pub struct PredictArgs {
    /// Model file written by `glshift fit` (OUT/model.glshift).
    #[arg(long)]
    pub model: PathBuf,
    /// Folder holding the domain (npy layout, MATLAB v5 .mat files or CSV files); with --domain.
    #[arg(long, requires = "domain")]
    pub data: Option<PathBuf>,
    /// Domain to predict, in --data; its labels, if present, are used only to score.
    #[arg(long, requires = "data")]
    pub domain: Option<String>,
    /// A features matrix (.npy, n × d: float32, float64 or any integer width, converted to f32) to predict instead of a domain.
    #[arg(long, conflicts_with_all = ["data", "domain"])]
    pub features: Option<PathBuf>,
    /// Labels (.npy of whole numbers in 0..c, any integer or float dtype) of --features rows, used only to score.
    #[arg(long, requires = "features")]
    pub labels: Option<PathBuf>,
    /// Output folder for predictions.csv and report.json.
    #[arg(long)]
    pub out: PathBuf,
    /// Print nothing but errors.
    #[arg(long)]
    pub quiet: bool,
    /// Where the network runs: `cpu`, `cuda` or `auto` (CUDA where found, else the CPU).
    #[arg(long, value_parser = crate::core_values::parser::<glshift::device::Device>(), default_value = glshift::device::Device::Auto.name())]
    pub device: glshift::device::Device,
    /// Estimate these rows' class proportions (with an interval, the move from the model's
    /// target prior, the label-shift residual test and the target test: are these rows a label
    /// shift of the target the model was fitted on?) and re-weight the posteriors to them
    /// (docs/model.md, "A new batch"). Needs a model file of format version 2 or later (the
    /// target test, version 3).
    #[arg(long)]
    pub adapt_prior: bool,
    /// Bootstrap resamples of --adapt-prior's interval and tests.
    #[arg(long, default_value_t = 200, requires = "adapt_prior")]
    pub bootstrap: usize,
    /// Coverage of --adapt-prior's per-class interval.
    #[arg(long, default_value_t = 0.9, requires = "adapt_prior")]
    pub level: f64,
    /// Seed of --adapt-prior's resampling.
    #[arg(long, default_value_t = 0, requires = "adapt_prior")]
    pub seed: u64,
}

/// `report.json` of a prediction: what the model is and estimated, and — only when the rows
/// have labels — the score.
#[derive(Serialize)]
struct PredictReport {
    glshift_version: &'static str,
    model: String,
    model_glshift_version: String,
    method: String,
    input: String,
    n_rows: usize,
    classes: Vec<String>,
    /// The model's estimate of its training target's prior (not re-estimated on these rows).
    model_target_prior: Option<Vec<f64>>,
    model_importance_weights: Option<Vec<f64>>,
    predicted_class_counts: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    accuracy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    per_class_accuracy: Option<Vec<Option<f64>>>,
    /// Where the network ran.
    device: glshift::device::DeviceUsed,
    /// `--adapt-prior`: the batch's estimated proportions, interval, move and residual test.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    batch: Option<glshift::model::BatchPrior>,
    /// `--adapt-prior` with labels (evaluation only): the accuracy of the model's plain
    /// posteriors, and the ℓ1 error of the batch prior against the labels' proportions.
    #[serde(skip_serializing_if = "Option::is_none")]
    unadapted_accuracy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_prior_l1_error: Option<f64>,
}

pub fn run(args: PredictArgs) -> Result<()> {
    let model = FittedModel::load(&args.model)?;
    let (input, rows, labels) = open_rows(&args, &model)?;
    let created = check_out_dir(&args.out)?;
    let result = write_outputs(&args, &model, &input, rows, labels.as_deref());
    if result.is_err() && created {
        let _ = std::fs::remove_dir(&args.out);
    }
    result
}

/// Where the rows to predict come from: a domain loaded whole (any format), or a `.npy` file
/// read [`data::CHUNK_ROWS`] rows at a time (memory set by the model and a block, not by n).
enum Rows {
    Loaded(Array2<f32>),
    File(data::NpyRows),
}

impl Rows {
    fn nrows(&self) -> usize {
        match self {
            Rows::Loaded(x) => x.nrows(),
            Rows::File(f) => f.nrows(),
        }
    }

    /// Calls `f(block, first_row)` on consecutive blocks of at most [`data::CHUNK_ROWS`] rows;
    /// an empty matrix gives one empty block (so that its error is the model's).
    fn for_each_block(self, mut f: impl FnMut(ArrayView2<f32>, usize) -> Result<()>) -> Result<()> {
        match self {
            Rows::Loaded(x) if x.nrows() == 0 => f(x.view(), 0),
            Rows::Loaded(x) => x
                .axis_chunks_iter(Axis(0), data::CHUNK_ROWS)
                .enumerate()
                .try_for_each(|(b, block)| f(block, b * data::CHUNK_ROWS)),
            Rows::File(mut file) => {
                if file.nrows() == 0 {
                    return f(Array2::zeros((0, file.ncols())).view(), 0);
                }
                let mut first = 0;
                while let Some(block) = file.next_chunk(data::CHUNK_ROWS)? {
                    f(block.view(), first)?;
                    first += block.nrows();
                }
                Ok(())
            }
        }
    }
}

/// The rows to predict, a description of where they came from, and their labels if any. A
/// `--features` file is only opened here (header and length checked); its rows are read later.
fn open_rows(
    args: &PredictArgs,
    model: &FittedModel,
) -> Result<(String, Rows, Option<Vec<usize>>)> {
    if let (Some(dir), Some(name)) = (&args.data, &args.domain) {
        let d = data::load_domain(dir, name)?;
        let input = format!("domain '{}' ({})", d.name, d.path.display());
        if d.labels.is_some() && d.class_names != model.class_names() {
            bail!(
                "{input}: its classes {:?} differ from the model's {:?}; the labels cannot be scored",
                d.class_names,
                model.class_names()
            );
        }
        return Ok((input, Rows::Loaded(d.features), d.labels));
    }
    let path = args.features.as_ref().expect("clap requires --features or --domain");
    let x = data::NpyRows::open(path)?;
    let labels = match &args.labels {
        Some(p) => Some(read_labels(p, x.nrows(), model.n_classes())?),
        None => None,
    };
    Ok((path.display().to_string(), Rows::File(x), labels))
}

/// `n` labels in `0..c` from an `.npy` file; errors name the file (also `monitor`'s reader).
pub(crate) fn read_labels(path: &Path, n: usize, c: usize) -> Result<Vec<usize>> {
    let raw = data::read_npy_labels(path)?;
    if raw.len() != n {
        bail!("{}: {} labels for {n} feature rows", path.display(), raw.len());
    }
    raw.iter()
        .enumerate()
        .map(|(i, &v)| match usize::try_from(v) {
            Ok(k) if k < c => Ok(k),
            _ => bail!(
                "{}: label {v} at row {i} is outside the model's classes 0..{c}",
                path.display()
            ),
        })
        .collect()
}

/// What a prediction produced: each row's predicted class, where the network ran, and with
/// `--adapt-prior` the batch estimate and the plain (unadapted) predictions.
struct Predicted {
    classes: Vec<usize>,
    device: glshift::device::DeviceUsed,
    batch: Option<(glshift::model::BatchPrior, Vec<usize>)>,
}

/// Predicts block by block, appending each block's lines to predictions.csv as they are made
/// (with `--adapt-prior`: every row's probabilities first, then the re-weighted ones), then
/// writes report.json; both files appear together at the end, or neither.
fn write_outputs(
    args: &PredictArgs,
    model: &FittedModel,
    input: &str,
    rows: Rows,
    labels: Option<&[usize]>,
) -> Result<()> {
    let n_rows = rows.nrows();
    let classes = model.class_names();
    let mut csv = StagedFile::new(args.out.join("predictions.csv"))?;
    csv.write(predictions_csv_header(classes).as_bytes())?;
    let predicted = if args.adapt_prior {
        predict_adapted(args, model, input, rows, &mut csv)?
    } else {
        predict_blocks(args, model, input, rows, &mut csv)?
    };
    let mut counts = vec![0usize; model.n_classes()];
    predicted.classes.iter().for_each(|&k| counts[k] += 1);
    // Evaluation only: labels are read after the predictions are final.
    let c = model.n_classes();
    let scores = labels.map(|t| eval::score(&predicted.classes, t, c)).transpose()?;
    let (batch, plain) = predicted.batch.unzip();
    let unadapted_accuracy = match (labels, &plain) {
        (Some(t), Some(p)) => Some(eval::score(p, t, c)?.accuracy),
        _ => None,
    };
    let batch_prior_l1_error = match (labels, &batch) {
        (Some(t), Some(b)) => Some(glshift::label_shift::l1_distance(
            &b.batch_prior,
            &glshift::label_shift::class_prior(t, c)?,
        )),
        _ => None,
    };
    let report = PredictReport {
        glshift_version: env!("CARGO_PKG_VERSION"),
        model: args.model.display().to_string(),
        model_glshift_version: model.info().glshift_version.clone(),
        method: model.config().method.to_string(),
        input: input.to_string(),
        n_rows,
        classes: classes.to_vec(),
        model_target_prior: model.target_prior().map(<[f64]>::to_vec),
        model_importance_weights: model.importance_weights().map(<[f64]>::to_vec),
        predicted_class_counts: counts,
        accuracy: scores.as_ref().map(|s| s.accuracy),
        per_class_accuracy: scores.as_ref().map(|s| s.per_class_accuracy.clone()),
        device: predicted.device,
        batch,
        unadapted_accuracy,
        batch_prior_l1_error,
    };
    write_files_atomically_with(
        vec![csv],
        &[(args.out.join("report.json"), serde_json::to_vec_pretty(&report)?)],
    )?;
    if !args.quiet {
        print_summary(args, &report);
    }
    Ok(())
}

/// The plain path: each block's probabilities written as they are made (bit for bit what
/// `predict` wrote before `--adapt-prior` existed).
fn predict_blocks(
    args: &PredictArgs,
    model: &FittedModel,
    input: &str,
    rows: Rows,
    csv: &mut StagedFile,
) -> Result<Predicted> {
    let classes = model.class_names();
    let mut predicted: Vec<usize> = Vec::with_capacity(rows.nrows());
    let mut lines = String::new();
    let (blocks, device) = glshift::device::scoped(args.device, || {
        Ok(rows.for_each_block(|x, first| {
            let probs = model
                .predict_proba_block(x, first)
                .with_context(|| format!("predicting {input}"))?;
            predicted.extend(probs.rows().into_iter().map(|r| glshift::nn::argmax_row(r).0));
            lines.clear();
            push_predictions_csv_rows(&mut lines, probs.view(), classes, first);
            csv.write(lines.as_bytes())?;
            Ok(())
        }))
    })?;
    blocks?;
    Ok(Predicted { classes: predicted, device, batch: None })
}

/// `--adapt-prior`: every row's probabilities (n × c, block by block), the batch estimate,
/// and the re-weighted probabilities written.
fn predict_adapted(
    args: &PredictArgs,
    model: &FittedModel,
    input: &str,
    rows: Rows,
    csv: &mut StagedFile,
) -> Result<Predicted> {
    if !model.can_adapt_batches() {
        bail!(
            "{}: --adapt-prior needs the source hold-out a model file keeps from format version 2 on (a version-1 file, or a fit without a hold-out, has none); refit with this glshift",
            args.model.display()
        );
    }
    // Every row's probabilities; the raw rows the target test reads (at most 1 000).
    let test_rows = glshift::model::batch_test_rows(rows.nrows(), args.seed);
    let (mut parts, mut kept_rows): (Vec<Array2<f32>>, Vec<Array2<f32>>) = (Vec::new(), Vec::new());
    let (blocks, device) = glshift::device::scoped(args.device, || {
        Ok(rows.for_each_block(|x, first| {
            parts.push(
                model
                    .predict_proba_block(x, first)
                    .with_context(|| format!("predicting {input}"))?,
            );
            let kept: Vec<usize> = test_rows
                .iter()
                .filter(|&&i| i >= first && i < first + x.nrows())
                .map(|&i| i - first)
                .collect();
            kept_rows.push(x.select(Axis(0), &kept));
            Ok(())
        }))
    })?;
    blocks?;
    let join = |parts: &[Array2<f32>]| {
        ndarray::concatenate(
            Axis(0),
            &parts.iter().map(|p| p.view()).collect::<Vec<ArrayView2<f32>>>(),
        )
    };
    let (plain, test_x) = (join(&parts)?, join(&kept_rows)?);
    drop((parts, kept_rows));
    let params = glshift::model::BatchParams {
        resamples: args.bootstrap,
        level: args.level,
        seed: args.seed,
    };
    let adapted = model
        .adapt_batch(plain.view(), Some(test_x.view()), &params)
        .with_context(|| format!("adapting the model to {input}"))?;
    let mut lines = String::new();
    push_predictions_csv_rows(&mut lines, adapted.probs.view(), model.class_names(), 0);
    csv.write(lines.as_bytes())?;
    Ok(Predicted {
        classes: argmax_rows(&adapted.probs),
        device,
        batch: Some((adapted.prior, argmax_rows(&plain))),
    })
}

fn print_summary(args: &PredictArgs, report: &PredictReport) {
    eprintln!("{} model: {} rows of {} predicted", report.method, report.n_rows, report.input);
    if let Some(p) = &report.model_target_prior {
        eprintln!("model's estimated target prior: {}", fmt_vec(p));
    }
    if let Some(b) = &report.batch {
        match &b.untrusted {
            None => eprintln!(
                "batch prior ({}, {:.0}% interval per class): {}",
                b.estimator,
                100.0 * b.level,
                fmt_vec(&b.batch_prior)
            ),
            Some(why) => eprintln!("batch prior: {}, {why}", fmt_vec(&b.batch_prior)),
        }
        eprintln!(
            "moved from the model's prior: ℓ1 = {:.3} (p = {:.3} for no move)",
            b.batch_prior_move_l1, b.batch_prior_move_p_value
        );
        eprintln!(
            "label-shift residual test against the source hold-out: p = {:.3}",
            b.label_shift_p_value
        );
        if let Some(t) = &b.target_shift {
            eprintln!(
                "target test (a label shift of the fitted target?): MMD² = {:.4}, p = {:.3}",
                t.mmd2, t.p_value
            );
        }
        for w in &b.warnings {
            eprintln!("warning: {w}");
        }
    }
    if let Some(acc) = report.accuracy {
        eprintln!("accuracy (evaluation only): {:.2}%", 100.0 * acc);
    }
    if let Some(acc) = report.unadapted_accuracy {
        eprintln!("accuracy without the batch re-weighting (evaluation only): {:.2}%", 100.0 * acc);
    }
    eprintln!("wrote {}", args.out.display());
}
