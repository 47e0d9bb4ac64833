//! `glshift shift estimate`: every requested estimator on saved probabilities, or on those of a
//! source classifier trained here (once, or cross-fitted); one [`ShiftEstimateFile`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use glshift::config::FitConfig;
use glshift::data::Domain;
use glshift::data::{self, read_npy_labels, read_npy_matrix};
use glshift::label_shift::l1_distance;
use glshift::label_shift::suite::{
    resolve_names, run_suite, suite_outcomes, BootstrapSpec, EstimatorOutcome,
};
use glshift::label_shift::{class_prior, ShiftInputs};
use glshift::output::{npy_bytes, write_files_atomically};
use glshift::pipeline;
use glshift::records::{
    ClassifierRecord, EstimateInput, ShiftEstimateFile, TrainRows, TrainedInput,
};
use glshift_experiments::crossfit::cross_fit;
use ndarray::{Array1, Array2};

use super::estimate_checks::{conditioning, verdict};
use crate::fit::{fmt_vec, resolve_config};
use glshift::label_shift::IntervalMethod;

#[derive(Args, Debug)]
pub struct EstimateArgs {
    /// Source hold-out class probabilities, n_s × c `.npy` (rows sum to 1).
    #[arg(long)]
    pub source_probs: Option<PathBuf>,
    /// Source hold-out labels, `.npy` of n_s whole numbers in 0..c (any integer or float dtype).
    #[arg(long)]
    pub source_labels: Option<PathBuf>,
    /// Target class probabilities, n_t × c `.npy`.
    #[arg(long)]
    pub target_probs: Option<PathBuf>,
    /// Target labels `.npy` (probabilities form; evaluation only: gives prior_l1_error).
    #[arg(long)]
    pub target_labels: Option<PathBuf>,
    /// Full-source prior (probabilities form; comma-separated, sums to 1); default: hold-out
    /// label frequencies.
    #[arg(long, value_delimiter = ',')]
    pub source_prior: Option<Vec<f64>>,
    /// Data folder (npy layout, MATLAB v5 or CSV): train the source classifier (method
    /// `source`, stratified hold-out) and estimate on its probabilities.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Labelled source domain (with --data).
    #[arg(long)]
    pub source: Option<String>,
    /// Target domain (with --data); its labels, if any, are read only for prior_l1_error.
    #[arg(long)]
    pub target: Option<String>,
    /// TOML settings of the classifier (with --data; `method` is forced to `source`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// With --data: folds of a cross-fitted source classifier (every source row's
    /// out-of-fold probabilities reach the estimators; target rows are dealt to the fold
    /// models); 1 = one classifier whose stratified hold-out alone reaches them.
    #[arg(long, default_value_t = 1)]
    pub cross_fit: usize,
    /// Also write holdout_probs.npy, holdout_labels.npy and target_probs.npy to this folder
    /// (with --data), for re-running the probabilities form or other tools.
    #[arg(long)]
    pub save_probs: Option<PathBuf>,
    /// Estimators, comma-separated, or `all` (= bbse, bbse-qp, rlls, mlls); variants:
    /// bbse-hard, bbse-soft, bbse-qp-hard, bbse-qp-soft, rlls-hard, rlls-soft, mlls-bcts.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    pub estimator: Vec<String>,
    /// Bootstrap resamples for the intervals (0 = none).
    #[arg(long, default_value_t = 0)]
    pub bootstrap: usize,
    /// Nominal coverage of the bootstrap intervals.
    #[arg(long, default_value_t = 0.9)]
    pub level: f64,
    /// Interval from the bootstrap replicates: basic ([2θ̂ − q_hi, 2θ̂ − q_lo] ∩ [0, 1]) or
    /// percentile ([q_lo, q_hi]).
    #[arg(long, value_parser = crate::core_values::parser::<IntervalMethod>(), default_value = IntervalMethod::Basic.name())]
    pub interval: IntervalMethod,
    /// Seed of the bootstrap (and, with --data, of the network and the hold-out split).
    #[command(flatten)]
    pub seed: crate::pair::SeedArg,
    /// Output JSON report.
    #[arg(long)]
    pub out: PathBuf,
}

fn to_indices(raw: &[i64], path: &Path) -> Result<Vec<usize>> {
    raw.iter()
        .enumerate()
        .map(|(i, &y)| {
            usize::try_from(y)
                .with_context(|| format!("{}: label {y} at row {i} is negative", path.display()))
        })
        .collect()
}

/// The bootstrap of `--bootstrap`/`--level`/`--interval`, seeded by `seed`: `--seed` (else 0)
/// for saved probabilities, the classifier's seed for `--data`.
fn boot_spec(a: &EstimateArgs, seed: u64) -> Result<Option<BootstrapSpec>> {
    let method = a.interval;
    match a.bootstrap {
        0 => Ok(None),
        1 => bail!("--bootstrap 1: need at least 2 resamples (or 0 for no intervals)"),
        b => {
            if !(a.level > 0.0 && a.level < 1.0) {
                bail!("--level {}: must lie in (0, 1)", a.level);
            }
            Ok(Some(BootstrapSpec { resamples: b, level: a.level, seed, method }))
        }
    }
}

fn print_estimates(results: &BTreeMap<String, EstimatorOutcome>) {
    for (name, outcome) in results {
        match outcome {
            EstimatorOutcome::Failed { error, .. } => eprintln!("error: {name}: {error}"),
            EstimatorOutcome::Estimated(e) => {
                for w in &e.warnings {
                    eprintln!("warning: {name}: {w}");
                }
                eprintln!("{name:>8}: prior {}", fmt_vec(&e.prior));
            }
        }
    }
}

pub(super) fn estimate(a: EstimateArgs) -> Result<()> {
    let names = resolve_names(&a.estimator)?;
    let probs_form = [&a.source_probs, &a.source_labels, &a.target_probs];
    if a.data.is_some() {
        let given: Vec<&str> = [
            ("--source-probs", a.source_probs.is_some()),
            ("--source-labels", a.source_labels.is_some()),
            ("--target-probs", a.target_probs.is_some()),
            ("--target-labels", a.target_labels.is_some()),
            ("--source-prior", a.source_prior.is_some()),
        ]
        .iter()
        .filter(|(_, g)| *g)
        .map(|(n, _)| *n)
        .collect();
        if !given.is_empty() {
            bail!(
                "--data trains the classifier itself and cannot be combined with {}",
                given.join(", ")
            );
        }
        if a.source.is_none() || a.target.is_none() {
            bail!("--data needs --source and --target (domain names in the folder)");
        }
        return estimate_data(&a, &names);
    }
    if probs_form.iter().any(|p| p.is_none()) {
        bail!(
            "give either --source-probs, --source-labels and --target-probs (saved probabilities) \
             or --data, --source and --target (train the source classifier)"
        );
    }
    for (flag, set) in [
        ("--source", a.source.is_some()),
        ("--target", a.target.is_some()),
        ("--config", a.config.is_some()),
        ("--save-probs", a.save_probs.is_some()),
        ("--cross-fit", a.cross_fit != 1),
    ] {
        if set {
            bail!("{flag} belongs to the --data form; with saved probabilities it is not used");
        }
    }
    estimate_probs(&a, &names)
}

fn estimate_probs(a: &EstimateArgs, names: &[String]) -> Result<()> {
    let boot = boot_spec(a, a.seed.get().unwrap_or(0))?;
    let boot = boot.as_ref();
    let (sp_path, sl_path, tp_path) = (
        a.source_probs.as_ref().expect("checked"),
        a.source_labels.as_ref().expect("checked"),
        a.target_probs.as_ref().expect("checked"),
    );
    let sp = read_npy_matrix(sp_path)?;
    let tp = read_npy_matrix(tp_path)?;
    let labels = to_indices(&read_npy_labels(sl_path)?, sl_path)?;
    let c = sp.ncols();
    let truth = match &a.target_labels {
        Some(p) => {
            let tl = to_indices(&read_npy_labels(p)?, p)?;
            if tl.len() != tp.nrows() {
                bail!(
                    "{}: {} labels for {} target probability rows",
                    p.display(),
                    tl.len(),
                    tp.nrows()
                );
            }
            Some(class_prior(&tl, c).with_context(|| format!("{}: target labels", p.display()))?)
        }
        None => None,
    };
    let inp = ShiftInputs {
        source_probs: sp.view(),
        source_labels: &labels,
        target_probs: tp.view(),
        source_prior: a.source_prior.as_deref(),
    };
    let ps = match &a.source_prior {
        Some(p) => p.clone(),
        None => class_prior(&labels, c)
            .with_context(|| format!("{}: source hold-out labels", sl_path.display()))?,
    };
    let results = run_suite(names, &inp, boot, truth.as_deref())?;
    let estimators = suite_outcomes(&results);
    print_estimates(&estimators);
    let guard = verdict(&sp, &labels, &tp, &ps, a.seed.get().unwrap_or(0));
    let report = ShiftEstimateFile {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        input: EstimateInput::Saved {
            source_probs: sp_path.clone(),
            source_labels: sl_path.clone(),
            target_probs: tp_path.clone(),
        },
        n_source: sp.nrows(),
        n_target: tp.nrows(),
        n_classes: c,
        diagnostics: conditioning(&sp, &labels, &ps),
        source_target_prior_l1: truth.as_ref().map(|t| l1_distance(&ps, t)),
        source_prior: ps,
        bootstrap: boot.copied(),
        estimators,
        true_target_prior: truth,
        prior_guard: guard,
    };
    write_files_atomically(&[(a.out.clone(), serde_json::to_vec_pretty(&report)?)])?;
    println!("wrote {}", a.out.display());
    Ok(())
}

/// Source probabilities and labels, target probabilities, rows each model trained on.
type SourceClassifier = (Array2<f32>, Vec<usize>, Array2<f32>, Vec<usize>);

/// The source classifier of `--data`, one with a hold-out or `--cross-fit k` fold models:
/// (probabilities and labels the estimators see, target probabilities, rows each model
/// trained on).
fn source_classifier(
    a: &EstimateArgs,
    source: &Domain,
    target: &Domain,
    cfg: &FitConfig,
) -> Result<SourceClassifier> {
    let src = a.source.as_deref().unwrap_or_default();
    Ok(match a.cross_fit {
        0 => bail!("--cross-fit 0: must be ≥ 1 (1 = one classifier with a hold-out)"),
        1 => {
            let run = pipeline::run(source, target, cfg, &mut |_| {})
                .with_context(|| format!("training the source classifier on '{src}' failed"))?;
            if run.holdout_labels.is_empty() {
                bail!("the config trains on every source row (label_shift.confusion = \"all-source\"); the estimators need the stratified hold-out");
            }
            (
                run.holdout_probs,
                run.holdout_labels,
                run.target_probs,
                vec![run.report.n_source_train],
            )
        }
        k => {
            let cf = cross_fit(source, target, cfg, k).with_context(|| {
                format!("cross-fitting the source classifier on '{src}' failed")
            })?;
            (cf.source_probs, cf.source_labels, cf.target_probs, cf.n_train)
        }
    })
}

fn estimate_data(a: &EstimateArgs, names: &[String]) -> Result<()> {
    let dir = a.data.as_ref().expect("checked");
    let (src, tgt) = (a.source.as_deref().expect("checked"), a.target.as_deref().expect("checked"));
    let cfg = resolve_config(a.config.as_ref(), Some("source"), a.seed.get())?;
    // The bootstrap's seed is the classifier's: the config file's unless --seed overrides it.
    let boot = boot_spec(a, cfg.seed)?;
    let boot = boot.as_ref();
    let (source, target) = data::load_pair(dir, src, tgt)?;
    let c = source.n_classes();
    let source_y = source.labels.clone().unwrap_or_default();
    let (hp, hl, tp, n_train) = source_classifier(a, &source, &target, &cfg)?;
    let ps = class_prior(&source_y, c)?;
    // Evaluation only: the target labels give the true prior after the estimates are fixed.
    let truth = match &target.labels {
        Some(y) => Some(class_prior(y, c)?),
        None => None,
    };
    let inp = ShiftInputs {
        source_probs: hp.view(),
        source_labels: &hl,
        target_probs: tp.view(),
        source_prior: Some(&ps),
    };
    let results = run_suite(names, &inp, boot, truth.as_deref())?;
    let estimators = suite_outcomes(&results);
    print_estimates(&estimators);
    let guard = verdict(&hp, &hl, &tp, &ps, cfg.seed);
    let hold_acc = top1_accuracy(&hp, &hl);
    let target_accuracy = target.labels.as_ref().map(|y| top1_accuracy(&tp, y));
    let classifier = ClassifierRecord {
        method: "source".into(),
        seed: cfg.seed,
        holdout_accuracy: hold_acc,
        config: cfg,
        target_accuracy,
    };
    let trained = TrainedInput {
        data: dir.clone(),
        source: src.to_string(),
        target: tgt.to_string(),
        source_path: source.path.display().to_string(),
        target_path: target.path.display().to_string(),
        n_source_train: TrainRows::new(n_train),
        n_source_holdout: hl.len(),
        cross_fit: a.cross_fit,
        classes: source.class_names.clone(),
        classifier,
    };
    let report = ShiftEstimateFile {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        input: EstimateInput::Trained(Box::new(trained)),
        n_source: source.n(),
        n_target: target.n(),
        n_classes: c,
        diagnostics: conditioning(&hp, &hl, &ps),
        source_target_prior_l1: truth.as_ref().map(|t| l1_distance(&ps, t)),
        source_prior: ps,
        bootstrap: boot.copied(),
        estimators,
        true_target_prior: truth,
        prior_guard: guard,
    };
    let mut files = vec![(a.out.clone(), serde_json::to_vec_pretty(&report)?)];
    if let Some(dir) = &a.save_probs {
        files.extend(probability_files(dir, &hp, &hl, &tp)?);
    }
    write_files_atomically(&files)?;
    println!("wrote {}", a.out.display());
    Ok(())
}

/// Share of rows of `probs` (n × c) whose most probable class is their label in `labels` (n).
fn top1_accuracy(probs: &Array2<f32>, labels: &[usize]) -> f64 {
    let ok = probs
        .rows()
        .into_iter()
        .zip(labels)
        .filter(|(r, t)| glshift::nn::argmax_row(*r).0 == **t)
        .count();
    ok as f64 / labels.len() as f64
}

/// The `--save-probs` files in `dir`, in write order: hold-out probabilities (n_h × c),
/// hold-out labels (n_h, as i64) and target probabilities (n_t × c), each as `.npy` bytes.
fn probability_files(
    dir: &Path,
    holdout_probs: &Array2<f32>,
    holdout_labels: &[usize],
    target_probs: &Array2<f32>,
) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let hl: Array1<i64> = holdout_labels.iter().map(|&y| y as i64).collect();
    let (hp_path, hl_path, tp_path) = (
        dir.join("holdout_probs.npy"),
        dir.join("holdout_labels.npy"),
        dir.join("target_probs.npy"),
    );
    Ok(vec![
        (hp_path.clone(), npy_bytes(holdout_probs, &hp_path)?),
        (hl_path.clone(), npy_bytes(&hl, &hl_path)?),
        (tp_path.clone(), npy_bytes(target_probs, &tp_path)?),
    ])
}
