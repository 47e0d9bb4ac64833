//! `glshift shift test` (per-class MCMD² conditional two-sample test after a fit) and
//! `glshift shift test-calibration` (its level and power study). The statistic, the
//! permutations and Holm's correction live in `glshift::kernel::cond_shift`; docs/shift-test.md.
//! `shift test` gives no verdict without evidence: it refuses a target that repeats source rows
//! (before the fit) and inputs where no class reaches `MIN_ROWS_PER_CLASS` rows a side, and its
//! decision says how many classes were testable.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use glshift::data::{self, Domain, PreprocessStats};
use glshift::kernel::cond_shift::{ClassTest, CondTest, DEFAULT_PERMUTATIONS, MIN_ROWS_PER_CLASS};
use glshift::output::write_files_atomically;
use glshift::pipeline;
use glshift::records::{ClassTestRecord, ShiftTestFile, TestSeconds};
use glshift_experiments::cond_shift::{
    argmax_assign, calibrate, calibration_markdown, class_counts, shared_rows, test_domains,
    CalibrationConfig,
};
use ndarray::Axis;

use crate::fit::resolve_config;
use crate::pair::PairArgs;

#[derive(Args, Debug)]
pub struct TestArgs {
    #[command(flatten)]
    pub pair: PairArgs,
    /// Relabellings per class of the permutation test.
    #[arg(long, default_value_t = DEFAULT_PERMUTATIONS)]
    pub permutations: usize,
    /// Seed of the fit and of the permutations.
    #[command(flatten)]
    pub seed: crate::pair::SeedArg,
    /// Method of the assignment model (default: the configuration's, `mul`).
    #[arg(long)]
    pub method: Option<String>,
    /// TOML settings of the fit.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Family-wise level of the overall decision (Holm across classes).
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Output JSON report.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct CalibrationArgs {
    /// Data folder.
    #[arg(long)]
    pub data: PathBuf,
    /// Labelled domain split in two (no conditional shift by construction).
    #[arg(long)]
    pub domain: String,
    /// Another labelled domain of the folder for the power against a real shift.
    #[arg(long)]
    pub real_target: Option<String>,
    #[arg(long, default_value_t = 200)]
    pub draws: usize,
    #[arg(long, default_value_t = DEFAULT_PERMUTATIONS)]
    pub permutations: usize,
    /// Per-feature shifts (source standard deviations) of the synthetic per-class shift.
    #[arg(long, value_delimiter = ',', default_value = "0.05,0.1,0.2")]
    pub delta: Vec<f64>,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output folder: calibration.json and calibration.md.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn test_cmd(a: TestArgs) -> Result<()> {
    if a.out.is_dir() {
        bail!(
            "{}: --out must be a JSON file path, and a folder of that name exists",
            a.out.display()
        );
    }
    let cfg = resolve_config(a.config.as_ref(), a.method.as_deref(), a.seed.get())?;
    let (source, target) = a.pair.load()?;
    // Both refusals are checked before the fit: they need only the data, and cost nothing.
    refuse_shared_rows(&source, &target)?;
    if target.n() < MIN_ROWS_PER_CLASS {
        bail!(
            "target '{}' ({}) has {} row(s): a class needs at least {MIN_ROWS_PER_CLASS} rows on each side to be tested, so no class could be; nothing was tested",
            target.name,
            target.path.display(),
            target.n()
        );
    }
    let c = source.n_classes();
    let t_fit = Instant::now();
    let run = pipeline::run(&source, &target, &cfg, &mut |_| {})?;
    let fit_s = t_fit.elapsed().as_secs_f64();
    if run.holdout_rows.is_empty() {
        bail!("the fit kept no source hold-out rows (label_shift.holdout_fraction); the test needs rows the model did not train on");
    }
    let t_test = Instant::now();
    let stats = PreprocessStats::fit(source.features.view(), cfg.preprocess)?;
    let mut xs = source.features.select(Axis(0), &run.holdout_rows);
    stats.apply(&mut xs)?;
    let mut xt = target.features.clone();
    stats.apply(&mut xt)?;
    let (ys, yt) =
        (argmax_assign(run.holdout_probs.view()), argmax_assign(run.target_probs.view()));
    refuse_untestable(&ys, &yt, &source, &target)?;
    let eps = cfg.mul.mcmd_params(c).eps;
    let (res, h) =
        test_domains(xs.view(), &ys, xt.view(), &yt, c, a.permutations, cfg.seed, eps, a.alpha)?;
    let test_s = t_test.elapsed().as_secs_f64();
    let decision = decision_text(&res, &source.class_names, a.alpha);
    let per_class = res
        .per_class
        .iter()
        .map(|t| ClassTestRecord::new(t, &source.class_names, untestable_reason(t)))
        .collect();
    let report = ShiftTestFile {
        glshift_version: env!("CARGO_PKG_VERSION").to_string(),
        source: source.name.clone(),
        target: target.name.clone(),
        method: cfg.method.to_string(),
        seed: cfg.seed,
        statistic: "MCMD² per class (linear label kernel, one-hot assignments, eps of the fit), Gaussian feature kernel on the input features preprocessed with source statistics".into(),
        assignment: "argmax of the fitted model on the source hold-out rows (not trained on) and on the target rows".into(),
        p_value: "permutation of the pooled rows of the class; Holm across the testable classes".into(),
        bandwidth: h,
        eps,
        permutations: a.permutations,
        alpha: a.alpha,
        min_rows_per_class: res.min_rows_per_class,
        testable_classes: res.testable_classes,
        per_class,
        reject_any: res.reject_any,
        decision: decision.clone(),
        seconds: TestSeconds::new(fit_s, test_s),
    };
    write_files_atomically(&[(a.out.clone(), serde_json::to_vec_pretty(&report)?)])?;
    print_table(&res, &source.class_names);
    eprintln!("{decision}");
    eprintln!(
        "cost: fit {fit_s:.2} s, test {test_s:.2} s ({} permutations); total / fit = {:.3}",
        a.permutations,
        (fit_s + test_s) / fit_s
    );
    println!("wrote {}", a.out.display());
    Ok(())
}

/// Refuses a target that repeats source rows (bitwise-equal features): the same rows on both
/// sides make the samples alike, and the test would report "no shift" without evidence.
fn refuse_shared_rows(source: &Domain, target: &Domain) -> Result<()> {
    let shared = shared_rows(source.features.view(), target.features.view());
    if shared > 0 {
        bail!(
            "{shared} of the {} rows of target '{}' ({}) also occur in source '{}' ({}) (bitwise-equal feature rows); \
             the test compares two different samples and cannot give evidence where they share rows: use a target without the source's rows",
            target.n(),
            target.name,
            target.path.display(),
            source.name,
            source.path.display()
        );
    }
    Ok(())
}

/// Refuses when no class has [`MIN_ROWS_PER_CLASS`] rows on both sides after the assignment:
/// the decision would otherwise read "no shift detected" with nothing tested.
fn refuse_untestable(ys: &[usize], yt: &[usize], source: &Domain, target: &Domain) -> Result<()> {
    let c = source.n_classes();
    let (ns, nt) = (class_counts(ys, c), class_counts(yt, c));
    if (0..c).any(|k| ns[k] >= MIN_ROWS_PER_CLASS && nt[k] >= MIN_ROWS_PER_CLASS) {
        return Ok(());
    }
    let counts: Vec<String> =
        (0..c).map(|k| format!("{} {}/{}", source.class_names[k], ns[k], nt[k])).collect();
    bail!(
        "no class can be tested: a class needs at least {MIN_ROWS_PER_CLASS} rows assigned to it on each side, and none has \
         (rows per class, source hold-out of '{}' / target '{}' ({}): {}); give more target rows, or a larger hold-out \
         (label_shift.holdout_fraction in --config)",
        source.name,
        target.name,
        target.path.display(),
        counts.join(", ")
    )
}

/// Why class `t` was not tested, or `None` when it was.
fn untestable_reason(t: &ClassTest) -> Option<String> {
    let short: Vec<String> = [("source", t.n_source), ("target", t.n_target)]
        .iter()
        .filter(|(_, n)| *n < MIN_ROWS_PER_CLASS)
        .map(|(side, n)| format!("{n} {side} rows"))
        .collect();
    (!t.testable)
        .then(|| format!("{} (fewer than {MIN_ROWS_PER_CLASS} on a side)", short.join(", ")))
}

/// The summary line: what was found, and in how many testable classes of how many.
fn decision_text(res: &CondTest, names: &[String], alpha: f64) -> String {
    let (m, c) = (res.testable_classes, res.per_class.len());
    let note = (m < c).then(|| {
        format!("{} not testable: fewer than {} rows on a side", c - m, res.min_rows_per_class)
    });
    if res.reject_any {
        let shifted: Vec<&str> =
            res.per_class.iter().filter(|t| t.reject).map(|t| names[t.class].as_str()).collect();
        let note = note.map(|n| format!("; {n}")).unwrap_or_default();
        format!("conditional shift detected (Holm, family-wise α = {alpha}) in: {} ({m} of {c} classes testable{note})", shifted.join(", "))
    } else {
        let note = note.map(|n| format!(" ({n})")).unwrap_or_default();
        format!("no conditional shift detected in the {m} testable classes of {c} at family-wise α = {alpha}{note}")
    }
}

/// The per-class table on stderr; an untestable class says so instead of showing blanks.
fn print_table(res: &CondTest, names: &[String]) {
    let f = |o: Option<f64>| o.map_or("–".into(), |v| format!("{v:.4}"));
    for t in &res.per_class {
        let counts =
            format!("{:>14}  n_s {:>3}  n_t {:>3}", names[t.class], t.n_source, t.n_target);
        if t.testable {
            eprintln!(
                "{counts}  MCMD² {:>9}  p {:>7}  Holm {:>7}{}",
                f(t.mcmd2),
                f(t.p_value),
                f(t.p_adjusted),
                if t.reject { "  *" } else { "" }
            );
        } else {
            eprintln!("{counts}  not testable (fewer than {MIN_ROWS_PER_CLASS} rows on a side)");
        }
    }
}

pub fn calibration_cmd(a: CalibrationArgs) -> Result<()> {
    if a.out.exists() && !a.out.is_dir() {
        bail!("{}: --out must be a folder, and a file of that name exists", a.out.display());
    }
    let d = data::load_domain(&a.data, &a.domain)?;
    let real = a.real_target.as_ref().map(|t| data::load_domain(&a.data, t)).transpose()?;
    let fit = resolve_config(None, Some("source"), Some(a.seed))?;
    let eps = fit.mul.mcmd_params(d.n_classes()).eps;
    let cfg = CalibrationConfig {
        draws: a.draws,
        permutations: a.permutations,
        seed: a.seed,
        deltas: a.delta.clone(),
        eps,
    };
    let report = calibrate(&d, real.as_ref(), &fit, &cfg)?;
    let md = calibration_markdown(&report);
    write_files_atomically(&[
        (a.out.join("calibration.json"), serde_json::to_vec_pretty(&report)?),
        (a.out.join("calibration.md"), md.clone().into_bytes()),
    ])?;
    println!("{md}");
    Ok(())
}
