//! `glshift shift estimate`: label-shift estimators on saved class probabilities.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use glshift::data::{read_npy_labels, read_npy_matrix};
use glshift::label_shift::{
    bootstrap, class_prior, confusion_diagnostics, confusion_matrix, Bbse, BbseQp, Mlls, Rlls,
    ShiftEstimator, ShiftInputs,
};
use serde_json::{json, Value};

#[derive(Args, Debug)]
pub struct ShiftArgs {
    #[command(subcommand)]
    pub command: ShiftCommand,
}

#[derive(Subcommand, Debug)]
pub enum ShiftCommand {
    /// Estimate the target prior and importance weights from source hold-out and target probabilities.
    Estimate(EstimateArgs),
}

/// Estimator names accepted by `--estimator`.
const NAMES: [&str; 7] = [
    "bbse-hard", "bbse-soft", "bbse-qp-hard", "bbse-qp-soft", "rlls-hard", "rlls-soft", "mlls-bcts",
];

#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// Source hold-out class probabilities, n_s × c `.npy` (rows sum to 1).
    #[arg(long)]
    pub source_probs: PathBuf,
    /// Source hold-out labels, `.npy` of n_s integers in 0..c.
    #[arg(long)]
    pub source_labels: PathBuf,
    /// Target class probabilities, n_t × c `.npy`.
    #[arg(long)]
    pub target_probs: PathBuf,
    /// Estimators, comma-separated, or `all`: bbse-hard, bbse-soft, bbse-qp-hard,
    /// bbse-qp-soft, rlls-hard, rlls-soft, mlls-bcts.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub estimator: Vec<String>,
    /// Full-source prior (comma-separated, sums to 1); default: hold-out label frequencies.
    #[arg(long, value_delimiter = ',')]
    pub source_prior: Option<Vec<f64>>,
    /// Bootstrap resamples for percentile intervals (0 = none).
    #[arg(long, default_value_t = 0)]
    pub bootstrap: usize,
    /// Nominal coverage of the bootstrap intervals.
    #[arg(long, default_value_t = 0.9)]
    pub level: f64,
    /// Seed of the bootstrap resampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output JSON report.
    #[arg(long)]
    pub out: PathBuf,
}

fn make(name: &str) -> Option<Box<dyn ShiftEstimator>> {
    Some(match name {
        "bbse-hard" => Box::new(Bbse { soft: false }),
        "bbse-soft" => Box::new(Bbse { soft: true }),
        "bbse-qp-hard" => Box::new(BbseQp { soft: false }),
        "bbse-qp-soft" => Box::new(BbseQp { soft: true }),
        "rlls-hard" => Box::new(Rlls { soft: false }),
        "rlls-soft" => Box::new(Rlls { soft: true }),
        "mlls-bcts" => Box::new(Mlls::default()),
        _ => return None,
    })
}

pub fn run(args: ShiftArgs) -> Result<()> {
    match args.command {
        ShiftCommand::Estimate(a) => estimate(a),
    }
}

fn estimate(a: EstimateArgs) -> Result<()> {
    let names: Vec<String> = if a.estimator.iter().any(|n| n == "all") {
        NAMES.iter().map(|s| s.to_string()).collect()
    } else {
        a.estimator.clone()
    };
    let estimators: Vec<Box<dyn ShiftEstimator>> = names
        .iter()
        .map(|n| make(n).with_context(|| format!("unknown estimator '{n}' (known: {})", NAMES.join(", "))))
        .collect::<Result<_>>()?;
    let sp = read_npy_matrix(&a.source_probs)?;
    let tp = read_npy_matrix(&a.target_probs)?;
    let raw = read_npy_labels(&a.source_labels)?;
    let labels: Vec<usize> = raw
        .iter()
        .enumerate()
        .map(|(i, &y)| usize::try_from(y).with_context(|| format!("{}: label {y} at row {i} is negative", a.source_labels.display())))
        .collect::<Result<_>>()?;
    let inp = ShiftInputs {
        source_probs: sp.view(),
        source_labels: &labels,
        target_probs: tp.view(),
        source_prior: a.source_prior.as_deref(),
    };
    let c = sp.ncols();
    let mut diagnostics = serde_json::Map::new();
    let ps = match &a.source_prior {
        Some(p) => p.clone(),
        None => class_prior(&labels, c)?,
    };
    for soft in [false, true] {
        let key = if soft { "soft" } else { "hard" };
        let v = match confusion_matrix(sp.view(), &labels, &ps, soft) {
            Ok(conf) => serde_json::to_value(confusion_diagnostics(conf.matrix.view()))?,
            Err(e) => json!({ "error": e.to_string() }),
        };
        diagnostics.insert(key.into(), v);
    }
    let mut results = Vec::new();
    let mut ok = 0;
    for est in &estimators {
        let mut entry = json!({ "estimator": est.name() });
        match est.estimate(&inp) {
            Ok(out) => {
                ok += 1;
                for w in &out.warnings {
                    eprintln!("warning: {}: {w}", est.name());
                }
                entry["result"] = serde_json::to_value(&out)?;
                if a.bootstrap > 0 {
                    entry["interval"] = match bootstrap(est.as_ref(), &inp, a.bootstrap, a.seed, a.level) {
                        Ok(iv) => serde_json::to_value(iv)?,
                        Err(e) => json!({ "error": e.to_string() }),
                    };
                }
            }
            Err(e) => {
                eprintln!("error: {}: {e}", est.name());
                entry["error"] = Value::String(e.to_string());
            }
        }
        results.push(entry);
    }
    if ok == 0 {
        bail!("every estimator failed: {}", results.iter().map(|r| r["error"].to_string()).collect::<Vec<_>>().join("; "));
    }
    let report = json!({
        "source_probs": a.source_probs,
        "source_labels": a.source_labels,
        "target_probs": a.target_probs,
        "n_source": sp.nrows(),
        "n_target": tp.nrows(),
        "classes": c,
        "source_prior": ps,
        "bootstrap": { "resamples": a.bootstrap, "level": a.level, "seed": a.seed },
        "diagnostics": diagnostics,
        "estimates": results,
    });
    let bytes = serde_json::to_vec_pretty(&report)?;
    glshift::output::write_files_atomically(&[(a.out.clone(), bytes)])?;
    println!("wrote {}", a.out.display());
    Ok(())
}
