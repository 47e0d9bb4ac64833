//! `glshift predict`: apply a saved model (`model.glshift` of `glshift fit`) to new rows and
//! write predictions.csv (the columns of fit's) and report.json, atomically.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use glshift::data;
use glshift::eval;
use glshift::model::FittedModel;
use glshift::output::write_files_atomically;
use glshift::pipeline::predictions_csv;
use ndarray::Array2;
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
}

pub fn run(args: PredictArgs) -> Result<()> {
    let model = FittedModel::load(&args.model)?;
    let (input, x, labels) = read_rows(&args, &model)?;
    let created = check_out_dir(&args.out)?;
    let result = write_outputs(&args, &model, &input, &x, labels.as_deref());
    if result.is_err() && created {
        let _ = std::fs::remove_dir(&args.out);
    }
    result
}

/// The rows to predict, a description of where they came from, and their labels if any.
fn read_rows(args: &PredictArgs, model: &FittedModel) -> Result<(String, Array2<f32>, Option<Vec<usize>>)> {
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
        return Ok((input, d.features, d.labels));
    }
    let path = args.features.as_ref().expect("clap requires --features or --domain");
    let x = data::read_npy_matrix(path)?;
    let labels = match &args.labels {
        Some(p) => Some(read_labels(p, x.nrows(), model.n_classes())?),
        None => None,
    };
    Ok((path.display().to_string(), x, labels))
}

fn read_labels(path: &Path, n: usize, c: usize) -> Result<Vec<usize>> {
    let raw = data::read_npy_labels(path)?;
    if raw.len() != n {
        bail!("{}: {} labels for {n} feature rows", path.display(), raw.len());
    }
    raw.iter()
        .enumerate()
        .map(|(i, &v)| match usize::try_from(v) {
            Ok(k) if k < c => Ok(k),
            _ => bail!("{}: label {v} at row {i} is outside the model's classes 0..{c}", path.display()),
        })
        .collect()
}

fn write_outputs(args: &PredictArgs, model: &FittedModel, input: &str, x: &Array2<f32>, labels: Option<&[usize]>) -> Result<()> {
    let probs = model.predict_proba(x.view()).with_context(|| format!("predicting {input}"))?;
    let predicted: Vec<usize> = probs.rows().into_iter().map(|r| glshift::nn::argmax_row(r).0).collect();
    let mut counts = vec![0usize; model.n_classes()];
    predicted.iter().for_each(|&k| counts[k] += 1);
    // Evaluation only: labels are read after the predictions are final.
    let scores = labels.map(|t| eval::score(&predicted, t, model.n_classes())).transpose()?;
    let report = PredictReport {
        glshift_version: env!("CARGO_PKG_VERSION"),
        model: args.model.display().to_string(),
        model_glshift_version: model.info().glshift_version.clone(),
        method: model.config().method.to_string(),
        input: input.to_string(),
        n_rows: x.nrows(),
        classes: model.class_names().to_vec(),
        model_target_prior: model.target_prior().map(<[f64]>::to_vec),
        model_importance_weights: model.importance_weights().map(<[f64]>::to_vec),
        predicted_class_counts: counts,
        accuracy: scores.as_ref().map(|s| s.accuracy),
        per_class_accuracy: scores.as_ref().map(|s| s.per_class_accuracy.clone()),
    };
    write_files_atomically(&[
        (args.out.join("predictions.csv"), predictions_csv(&probs, model.class_names()).into_bytes()),
        (args.out.join("report.json"), serde_json::to_vec_pretty(&report)?),
    ])?;
    if !args.quiet {
        eprintln!("{} model: {} rows of {input} predicted", report.method, report.n_rows);
        if let Some(p) = &report.model_target_prior {
            eprintln!("model's estimated target prior: {}", fmt_vec(p));
        }
        if let Some(acc) = report.accuracy {
            eprintln!("accuracy (evaluation only): {:.2}%", 100.0 * acc);
        }
        eprintln!("wrote {}", args.out.display());
    }
    Ok(())
}
