//! `glshift monitor`: a kept model on a folder of batches (`NAME_features.npy`, optional
//! `NAME_labels.npy`, in name order). Each batch gets `predict --adapt-prior`'s estimate (its
//! class proportions with an interval, the move from the model's target prior, the residual
//! test); `OUT/batches.csv` has one row per batch and class, `OUT/monitor.html` the figure and
//! a table. A batch that cannot be read or estimated is reported by its file and the rest go on.
//! Each batch is estimated alone (no pooling of recent batches: a pooled estimate trades the
//! detection of a change for variance, and which window is right depends on how fast the
//! proportions move, which a user knows and this command does not).

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use glshift::data;
use glshift::eval;
use glshift::label_shift::class_prior;
use glshift::model::{BatchParams, BatchPrior, FittedModel};
use glshift::output::write_files_atomically;
use glshift::pipeline::argmax_rows;
use glshift_report::monitor::{monitor_page, MonitorBatch};
use ndarray::Array2;

use crate::fit::check_out_dir;
use crate::predict::read_labels;

#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// Model file written by `glshift fit` (format version 2).
    #[arg(long)]
    pub model: PathBuf,
    /// Folder of batches: NAME_features.npy (n × d) and optionally NAME_labels.npy (evaluation only).
    #[arg(long)]
    pub batches: PathBuf,
    /// Output folder for batches.csv, monitor.html and figures/.
    #[arg(long)]
    pub out: PathBuf,
    /// Bootstrap resamples of each batch's interval and tests.
    #[arg(long, default_value_t = 200)]
    pub bootstrap: usize,
    /// Coverage of each batch's per-class interval.
    #[arg(long, default_value_t = 0.9)]
    pub level: f64,
    /// Seed of the resampling (batch i uses seed + i).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print nothing but errors.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: MonitorArgs) -> Result<()> {
    let model = FittedModel::load(&args.model)?;
    if !model.can_adapt_batches() {
        bail!("{}: monitoring needs the source hold-out a model file keeps from format version 2 on; refit with this glshift", args.model.display());
    }
    let names = batch_names(&args.batches)?;
    let created = check_out_dir(&args.out)?;
    let result = monitor(&args, &model, &names);
    if result.is_err() && created {
        let _ = std::fs::remove_dir(&args.out);
    }
    result
}

/// Batch names (the `NAME` of each `NAME_features.npy`), sorted; an error when there is none.
fn batch_names(dir: &Path) -> Result<Vec<String>> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name().to_str().and_then(|n| n.strip_suffix("_features.npy")).map(String::from)
        })
        .collect();
    names.sort();
    if names.is_empty() {
        bail!("{}: no batch (NAME_features.npy) in the folder", dir.display());
    }
    Ok(names)
}

fn monitor(args: &MonitorArgs, model: &FittedModel, names: &[String]) -> Result<()> {
    let mut batches = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        let params = BatchParams {
            resamples: args.bootstrap,
            level: args.level,
            seed: args.seed.wrapping_add(i as u64),
        };
        let b = one_batch(&args.batches, name, model, &params);
        if !args.quiet {
            match &b.outcome {
                Ok(p) => eprintln!(
                    "{name}: {} rows, move ℓ1 {:.3} (p {:.3}), residual p {:.3}, target test p {}",
                    b.n_rows,
                    p.batch_prior_move_l1,
                    p.batch_prior_move_p_value,
                    p.label_shift_p_value,
                    p.target_shift.as_ref().map_or("–".into(), |t| format!("{:.3}", t.p_value))
                ),
                Err(e) => eprintln!("{name}: skipped: {e}"),
            }
        }
        batches.push(b);
    }
    let (html, figures) =
        monitor_page(&args.model.display().to_string(), model.class_names(), &batches)?;
    let mut files = vec![
        (args.out.join("batches.csv"), batches_csv(model.class_names(), &batches).into_bytes()),
        (args.out.join("monitor.html"), html.into_bytes()),
    ];
    files.extend(glshift_report::run::figure_files(&args.out, &figures));
    write_files_atomically(&files)?;
    if !args.quiet {
        eprintln!("wrote {}", args.out.display());
    }
    Ok(())
}

/// One batch read, predicted and estimated; any failure becomes the batch's error message.
fn one_batch(dir: &Path, name: &str, model: &FittedModel, params: &BatchParams) -> MonitorBatch {
    let mut b = MonitorBatch {
        name: name.to_string(),
        n_rows: 0,
        outcome: Err(String::new()),
        truth: None,
        accuracy: None,
        unadapted_accuracy: None,
    };
    b.outcome = estimate(dir, name, model, params, &mut b);
    b
}

/// The estimate of batch `name`; fills `b`'s row count and, with labels, its scores.
fn estimate(
    dir: &Path,
    name: &str,
    model: &FittedModel,
    params: &BatchParams,
    b: &mut MonitorBatch,
) -> std::result::Result<BatchPrior, String> {
    let features = dir.join(format!("{name}_features.npy"));
    let x = data::read_npy_matrix(&features).map_err(|e| e.to_string())?;
    b.n_rows = x.nrows();
    let labels_path = dir.join(format!("{name}_labels.npy"));
    let labels = match labels_path.exists() {
        true => Some(
            read_labels(&labels_path, x.nrows(), model.n_classes())
                .map_err(|e| format!("{e:#}"))?,
        ),
        false => None,
    };
    let in_file = |e: glshift::Error| format!("{}: {e}", features.display());
    let plain = model.predict_proba(x.view()).map_err(in_file)?;
    let test_x =
        x.select(ndarray::Axis(0), &glshift::model::batch_test_rows(x.nrows(), params.seed));
    let adapted = model.adapt_batch(plain.view(), Some(test_x.view()), params).map_err(in_file)?;
    // Evaluation only: the labels score the batch after its estimate is made.
    if let Some(y) = &labels {
        let accuracy = |p: &Array2<f32>| {
            eval::score(&argmax_rows(p), y, model.n_classes()).map(|s| s.accuracy).ok()
        };
        b.accuracy = accuracy(&adapted.probs);
        b.unadapted_accuracy = accuracy(&plain);
        b.truth = class_prior(y, model.n_classes()).ok();
    }
    Ok(adapted.prior)
}

/// One line per batch and class: the estimate, its interval, the truth (labels) and the batch's
/// tests; a failed batch has one line with its error.
fn batches_csv(classes: &[String], batches: &[MonitorBatch]) -> String {
    let mut out = String::from("batch,rows,class,estimate,ci_low,ci_high,true_proportion,move_l1,move_p,residual_p,target_p,accuracy,unadapted_accuracy,error\n");
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:?}"));
    for b in batches {
        match &b.outcome {
            Ok(p) => {
                for (k, class) in classes.iter().enumerate() {
                    out.push_str(&format!(
                        "{},{},{},{:?},{:?},{:?},{},{:?},{:?},{:?},{},{},{},\n",
                        csv_field(&b.name),
                        b.n_rows,
                        csv_field(class),
                        p.batch_prior[k],
                        p.batch_prior_ci_low[k],
                        p.batch_prior_ci_high[k],
                        opt(b.truth.as_ref().map(|t| t[k])),
                        p.batch_prior_move_l1,
                        p.batch_prior_move_p_value,
                        p.label_shift_p_value,
                        opt(p.target_shift.as_ref().map(|t| t.p_value)),
                        opt(b.accuracy),
                        opt(b.unadapted_accuracy),
                    ));
                }
            }
            Err(e) => out.push_str(&format!(
                "{},{},,,,,,,,,,,,{}\n",
                csv_field(&b.name),
                b.n_rows,
                csv_field(e)
            )),
        }
    }
    out
}

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
