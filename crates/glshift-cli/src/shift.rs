//! `glshift shift`: label-shift estimation (`estimate`, on saved probabilities or by training
//! the source classifier itself), known-truth simulation (`simulate`) and the estimation study
//! (`study`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use glshift::data::{self, read_npy_labels, read_npy_matrix};
use glshift::label_shift::l1_distance;
use glshift::label_shift::suite::{resolve_names, run_suite, suite_json, BootstrapSpec};
use glshift::label_shift::{class_prior, confusion_diagnostics, confusion_matrix, IntervalMethod, ShiftInputs};
use glshift::output::write_files_atomically;
use glshift::pipeline;
use glshift_experiments::crossfit::cross_fit;
use glshift_experiments::simulate::{simulate, simulate_cross, simulation_files, PriorSpec, SimulateConfig};
use glshift_experiments::study::{default_domains, default_families, run_study, study_markdown, StudyConfig};
use ndarray::{Array1, Array2};
use ndarray_npy::WriteNpyExt;
use serde_json::{json, Value};

use crate::fit::{check_out_dir, fmt_vec, resolve_config};

#[derive(Args, Debug)]
pub struct ShiftArgs {
    #[command(subcommand)]
    pub command: ShiftCommand,
}

#[derive(Subcommand, Debug)]
pub enum ShiftCommand {
    /// Estimate the target prior and importance weights, from saved probabilities
    /// (--source-probs/--source-labels/--target-probs) or by training the source classifier
    /// on a data folder (--data/--source/--target).
    Estimate(EstimateArgs),
    /// Resample a labelled domain to a requested class prior (known truth): writes a source
    /// part and a disjoint simulated target in the npy layout, plus simulation.json.
    Simulate(SimulateArgs),
    /// The label-shift estimation study: every estimator on simulated targets of every prior
    /// family; writes study.json and study.md.
    Study(StudyArgs),
    /// Per-class conditional two-sample test after a fit: MCMD² between the source hold-out
    /// rows and the target rows the model assigns to each class, permutation p-values, Holm.
    Test(crate::shift_test::TestArgs),
    /// Level and power of `shift test` on one domain split in two (and against a real domain).
    TestCalibration(crate::shift_test::CalibrationArgs),
}

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
    #[arg(long, default_value = "basic")]
    pub interval: String,
    /// Seed of the bootstrap (and, with --data, of the network and the hold-out split).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output JSON report.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// Data folder holding the domain.
    #[arg(long)]
    pub data: PathBuf,
    /// Labelled domain to resample (with --target-domain: the whole source).
    #[arg(long)]
    pub domain: String,
    /// Cross-domain protocol: draw the target from this labelled domain of the same folder
    /// (all its rows form the pool) and keep every row of --domain as the source.
    #[arg(long)]
    pub target_domain: Option<String>,
    /// Target prior: dirichlet:ALPHA (one seeded draw), pda (first half of the classes
    /// uniform, the rest 0) or p1,p2,... (one per class, summing to 1).
    #[arg(long)]
    pub prior: String,
    /// Seed of the prior draw and of the target rows.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Seed of the split into source part and target pool (keep it fixed across draws).
    #[arg(long, default_value_t = 0)]
    pub split_seed: u64,
    /// Share of each class that goes to the source part (the rest is the target pool).
    #[arg(long, default_value_t = 0.5)]
    pub source_fraction: f64,
    /// Target rows (default: the pool size).
    #[arg(long)]
    pub n: Option<usize>,
    /// Output folder: source_*.npy, target_*.npy, classes.txt, simulation.json.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct StudyArgs {
    /// Data folder(s); repeat the flag for several.
    #[arg(long, required = true)]
    pub data: Vec<PathBuf>,
    /// Domains (comma-separated), each taken from every --data folder that has it; default:
    /// every labelled domain with at least --n-target rows.
    #[arg(long, value_delimiter = ',')]
    pub domains: Option<Vec<String>>,
    /// Prior family; repeat the flag (default: dirichlet:0.1, dirichlet:1, dirichlet:10, pda).
    #[arg(long)]
    pub prior: Vec<String>,
    /// Simulated targets per prior family.
    #[arg(long, default_value_t = 20)]
    pub draws: usize,
    /// Rows of each simulated target.
    #[arg(long, default_value_t = 500)]
    pub n_target: usize,
    /// Share of each class in the source part.
    #[arg(long, default_value_t = 0.5)]
    pub source_fraction: f64,
    /// Bootstrap resamples per estimate.
    #[arg(long, default_value_t = 200)]
    pub bootstrap: usize,
    /// Nominal coverage of the intervals.
    #[arg(long, default_value_t = 0.9)]
    pub level: f64,
    /// Folds of the cross-fitted source classifier (every source row's out-of-fold
    /// probabilities reach the estimators); 1 = one classifier whose stratified hold-out
    /// (`label_shift.holdout_fraction`) alone reaches them.
    #[arg(long, default_value_t = 5)]
    pub cross_fit: usize,
    /// Interval whose coverage the tables report first: basic or percentile (both are
    /// computed from the same replicates and both are in study.json and study.md).
    #[arg(long, default_value = "basic")]
    pub interval: String,
    /// Seed of the splits, the classifiers and the draws.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// TOML settings of the source classifier (`method` is forced to `source`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Output folder for study.json and study.md.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: ShiftArgs) -> Result<()> {
    match args.command {
        ShiftCommand::Estimate(a) => estimate(a),
        ShiftCommand::Simulate(a) => simulate_cmd(a),
        ShiftCommand::Study(a) => study_cmd(a),
        ShiftCommand::Test(a) => crate::shift_test::test_cmd(a),
        ShiftCommand::TestCalibration(a) => crate::shift_test::calibration_cmd(a),
    }
}

/// Conditioning of the hard and soft hold-out confusion matrices.
fn diagnostics(sp: &Array2<f32>, labels: &[usize], ps: &[f64]) -> Result<Value> {
    let mut d = serde_json::Map::new();
    for soft in [false, true] {
        let key = if soft { "soft" } else { "hard" };
        let v = match confusion_matrix(sp.view(), labels, ps, soft) {
            Ok(conf) => serde_json::to_value(confusion_diagnostics(conf.matrix.view()))?,
            Err(e) => json!({ "error": e.to_string() }),
        };
        d.insert(key.into(), v);
    }
    Ok(Value::Object(d))
}

fn to_indices(raw: &[i64], path: &Path) -> Result<Vec<usize>> {
    raw.iter()
        .enumerate()
        .map(|(i, &y)| usize::try_from(y).with_context(|| format!("{}: label {y} at row {i} is negative", path.display())))
        .collect()
}

fn boot_spec(a: &EstimateArgs) -> Result<Option<BootstrapSpec>> {
    let method = IntervalMethod::parse(&a.interval)?;
    match a.bootstrap {
        0 => Ok(None),
        1 => bail!("--bootstrap 1: need at least 2 resamples (or 0 for no intervals)"),
        b => {
            if !(a.level > 0.0 && a.level < 1.0) {
                bail!("--level {}: must lie in (0, 1)", a.level);
            }
            Ok(Some(BootstrapSpec { resamples: b, level: a.level, seed: a.seed, method }))
        }
    }
}

fn print_estimates(results: &Value) {
    if let Some(m) = results.as_object() {
        for (name, e) in m {
            if let Some(err) = e.get("error") {
                eprintln!("error: {name}: {err}");
                continue;
            }
            for w in e["warnings"].as_array().into_iter().flatten() {
                eprintln!("warning: {name}: {}", w.as_str().unwrap_or_default());
            }
            if let Ok(p) = serde_json::from_value::<Vec<f64>>(e["prior"].clone()) {
                eprintln!("{name:>8}: prior {}", fmt_vec(&p));
            }
        }
    }
}

fn estimate(a: EstimateArgs) -> Result<()> {
    let names = resolve_names(&a.estimator)?;
    let boot = boot_spec(&a)?;
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
            bail!("--data trains the classifier itself and cannot be combined with {}", given.join(", "));
        }
        if a.source.is_none() || a.target.is_none() {
            bail!("--data needs --source and --target (domain names in the folder)");
        }
        return estimate_data(&a, &names, boot.as_ref());
    }
    if probs_form.iter().any(|p| p.is_none()) {
        bail!(
            "give either --source-probs, --source-labels and --target-probs (saved probabilities) \
             or --data, --source and --target (train the source classifier)"
        );
    }
    for (flag, set) in [("--source", a.source.is_some()), ("--target", a.target.is_some()), ("--config", a.config.is_some()), ("--save-probs", a.save_probs.is_some()), ("--cross-fit", a.cross_fit != 1)] {
        if set {
            bail!("{flag} belongs to the --data form; with saved probabilities it is not used");
        }
    }
    estimate_probs(&a, &names, boot.as_ref())
}

fn estimate_probs(a: &EstimateArgs, names: &[String], boot: Option<&BootstrapSpec>) -> Result<()> {
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
                bail!("{}: {} labels for {} target probability rows", p.display(), tl.len(), tp.nrows());
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
        None => class_prior(&labels, c).with_context(|| format!("{}: source hold-out labels", sl_path.display()))?,
    };
    let results = run_suite(names, &inp, boot, truth.as_deref())?;
    let estimators = suite_json(&results);
    print_estimates(&estimators);
    let mut report = json!({
        "glshift_version": env!("CARGO_PKG_VERSION"),
        "source_probs": sp_path,
        "source_labels": sl_path,
        "target_probs": tp_path,
        "n_source": sp.nrows(),
        "n_target": tp.nrows(),
        "n_classes": c,
        "source_prior": ps,
        "bootstrap": boot,
        "diagnostics": diagnostics(&sp, &labels, &ps)?,
        "estimators": estimators,
    });
    if let Some(t) = &truth {
        report["true_target_prior"] = json!(t);
        report["source_target_prior_l1"] = json!(l1_distance(&ps, t));
    }
    write_files_atomically(&[(a.out.clone(), serde_json::to_vec_pretty(&report)?)])?;
    println!("wrote {}", a.out.display());
    Ok(())
}

fn npy<T: WriteNpyExt>(x: &T) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    x.write_npy(&mut buf)?;
    Ok(buf)
}

fn estimate_data(a: &EstimateArgs, names: &[String], boot: Option<&BootstrapSpec>) -> Result<()> {
    let dir = a.data.as_ref().expect("checked");
    let (src, tgt) = (a.source.as_deref().expect("checked"), a.target.as_deref().expect("checked"));
    let cfg = resolve_config(a.config.as_ref(), Some("source"), Some(a.seed))?;
    let (source, target) = data::load_pair(dir, src, tgt)?;
    let c = source.n_classes();
    let source_y = source.labels.clone().unwrap_or_default();
    // (probabilities + labels the estimators see, target probabilities, rows each model trained on)
    let (hp, hl, tp, n_train) = match a.cross_fit {
        0 => bail!("--cross-fit 0: must be ≥ 1 (1 = one classifier with a hold-out)"),
        1 => {
            let run = pipeline::run(&source, &target, &cfg, &mut |_| {})
                .with_context(|| format!("training the source classifier on '{src}' failed"))?;
            if run.holdout_labels.is_empty() {
                bail!("the config trains on every source row (label_shift.confusion = \"all-source\"); the estimators need the stratified hold-out");
            }
            (run.holdout_probs, run.holdout_labels, run.target_probs, vec![run.report.n_source_train])
        }
        k => {
            let cf = cross_fit(&source, &target, &cfg, k)
                .with_context(|| format!("cross-fitting the source classifier on '{src}' failed"))?;
            (cf.source_probs, cf.source_labels, cf.target_probs, cf.n_train)
        }
    };
    let ps = class_prior(&source_y, c)?;
    // Evaluation only: the target labels give the true prior after the estimates are fixed.
    let truth = match &target.labels {
        Some(y) => Some(class_prior(y, c)?),
        None => None,
    };
    let inp = ShiftInputs { source_probs: hp.view(), source_labels: &hl, target_probs: tp.view(), source_prior: Some(&ps) };
    let results = run_suite(names, &inp, boot, truth.as_deref())?;
    let estimators = suite_json(&results);
    print_estimates(&estimators);
    let accuracy = |p: &Array2<f32>, y: &[usize]| {
        let ok = p.rows().into_iter().zip(y).filter(|(r, t)| glshift::nn::argmax_row(*r).0 == **t).count();
        ok as f64 / y.len() as f64
    };
    let hold_acc = accuracy(&hp, &hl);
    let n_source_train = if n_train.len() == 1 { json!(n_train[0]) } else { json!(n_train) };
    let mut report = json!({
        "glshift_version": env!("CARGO_PKG_VERSION"),
        "data": dir,
        "source": src,
        "target": tgt,
        "source_path": source.path.display().to_string(),
        "target_path": target.path.display().to_string(),
        "n_source": source.n(),
        "n_source_train": n_source_train,
        "n_source_holdout": hl.len(),
        "cross_fit": a.cross_fit,
        "n_target": target.n(),
        "n_classes": c,
        "classes": source.class_names,
        "source_prior": ps,
        "classifier": { "method": "source", "seed": cfg.seed, "holdout_accuracy": hold_acc, "config": cfg },
        "bootstrap": boot,
        "diagnostics": diagnostics(&hp, &hl, &ps)?,
        "estimators": estimators,
    });
    if let (Some(t), Some(y)) = (&truth, &target.labels) {
        report["true_target_prior"] = json!(t);
        report["source_target_prior_l1"] = json!(l1_distance(&ps, t));
        report["classifier"]["target_accuracy"] = json!(accuracy(&tp, y));
    }
    let mut files = vec![(a.out.clone(), serde_json::to_vec_pretty(&report)?)];
    if let Some(dir) = &a.save_probs {
        let hl: Array1<i64> = hl.iter().map(|&y| y as i64).collect();
        files.push((dir.join("holdout_probs.npy"), npy(&hp)?));
        files.push((dir.join("holdout_labels.npy"), npy(&hl)?));
        files.push((dir.join("target_probs.npy"), npy(&tp)?));
    }
    write_files_atomically(&files)?;
    println!("wrote {}", a.out.display());
    Ok(())
}

fn simulate_cmd(a: SimulateArgs) -> Result<()> {
    let prior = PriorSpec::parse(&a.prior)?;
    if a.out.exists() && !a.out.is_dir() {
        bail!("{}: --out must be a folder, and a file of that name exists", a.out.display());
    }
    let d = data::load_domain(&a.data, &a.domain)?;
    let cfg = SimulateConfig { prior, seed: a.seed, split_seed: a.split_seed, source_fraction: a.source_fraction, n_target: a.n };
    let (source, target, report) = match &a.target_domain {
        Some(t) => simulate_cross(&d, &data::load_domain(&a.data, t)?, &cfg)?,
        None => simulate(&d, &cfg)?,
    };
    let files = simulation_files(&a.out, &source, &target, &report)?;
    write_files_atomically(&files)?;
    eprintln!(
        "{}{}: source part {} rows, target {} rows ({} distinct) with prior {}",
        a.domain,
        a.target_domain.as_ref().map_or(String::new(), |t| format!(" → {t}")),
        report.n_source,
        report.n_target,
        report.target.distinct_rows,
        fmt_vec(&report.target.true_prior)
    );
    println!("wrote {}", a.out.display());
    Ok(())
}

fn study_cmd(a: StudyArgs) -> Result<()> {
    let families = if a.prior.is_empty() {
        default_families()
    } else {
        a.prior.iter().map(|p| PriorSpec::parse(p)).collect::<glshift_experiments::Result<Vec<_>>>()?
    };
    let fit = resolve_config(a.config.as_ref(), Some("source"), Some(a.seed))?;
    let cfg = StudyConfig {
        families,
        draws: a.draws,
        n_target: a.n_target,
        source_fraction: a.source_fraction,
        bootstrap: a.bootstrap,
        level: a.level,
        interval: IntervalMethod::parse(&a.interval)?,
        cross_fit: a.cross_fit,
        seed: a.seed,
        fit,
    };
    let mut domains = Vec::new();
    for dir in &a.data {
        match &a.domains {
            None => domains.extend(default_domains(dir, a.n_target)?),
            Some(names) => {
                let have = data::list_domains(dir)?;
                for n in names.iter().filter(|n| have.contains(n)) {
                    domains.push(data::load_domain(dir, n)?);
                }
            }
        }
    }
    if let Some(names) = &a.domains {
        for n in names {
            if !domains.iter().any(|d| &d.name == n) {
                bail!("--domains: no --data folder has a domain '{n}'");
            }
        }
    }
    if domains.is_empty() {
        bail!("no labelled domain with at least --n-target = {} rows in the --data folder(s)", a.n_target);
    }
    let created = check_out_dir(&a.out)?;
    let result = (|| -> Result<()> {
        let report = run_study(&domains, &cfg, &mut |line| eprintln!("{line}"))?;
        write_files_atomically(&[
            (a.out.join("study.json"), serde_json::to_vec_pretty(&report)?),
            (a.out.join("study.md"), study_markdown(&report).into_bytes()),
        ])?;
        eprintln!("study finished in {:.0} s", report.elapsed_seconds);
        Ok(())
    })();
    if result.is_err() && created {
        let _ = std::fs::remove_dir(&a.out);
    }
    result?;
    println!("wrote {}", a.out.display());
    Ok(())
}
