//! `glshift shift test` (per-class MCMD² conditional two-sample test after a fit) and
//! `glshift shift test-calibration` (its level and power study). The statistic, the
//! permutations and Holm's correction live in `glshift::kernel::cond_test`; docs/shift-test.md.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use glshift::data::{self, PreprocessStats};
use glshift::kernel::cond_test::DEFAULT_PERMUTATIONS;
use glshift::output::write_files_atomically;
use glshift::pipeline;
use glshift_experiments::cond_test::{argmax_assign, calibrate, calibration_markdown, test_domains, CalibrationConfig};
use ndarray::Axis;
use serde_json::json;

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
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
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
        bail!("{}: --out must be a JSON file path, and a folder of that name exists", a.out.display());
    }
    let cfg = resolve_config(a.config.as_ref(), a.method.as_deref(), Some(a.seed))?;
    let (source, target) = a.pair.load()?;
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
    let (ys, yt) = (argmax_assign(run.holdout_probs.view()), argmax_assign(run.target_probs.view()));
    let eps = cfg.mul.mcmd_params(c).eps;
    let (res, h) = test_domains(xs.view(), &ys, xt.view(), &yt, c, a.permutations, a.seed, eps, a.alpha)?;
    let test_s = t_test.elapsed().as_secs_f64();
    let shifted: Vec<&str> = res.per_class.iter().filter(|t| t.reject).map(|t| source.class_names[t.class].as_str()).collect();
    let decision = if res.reject_any {
        format!("conditional shift detected (Holm, family-wise α = {}) in: {}", a.alpha, shifted.join(", "))
    } else {
        format!("no class's conditional shift detected at family-wise α = {}", a.alpha)
    };
    let per_class: Vec<_> = res
        .per_class
        .iter()
        .map(|t| {
            json!({ "class": source.class_names[t.class], "class_index": t.class, "n_source": t.n_source, "n_target": t.n_target,
                    "mcmd2": t.mcmd2, "p_value": t.p_value, "p_adjusted": t.p_adjusted, "reject": t.reject })
        })
        .collect();
    let report = json!({
        "glshift_version": env!("CARGO_PKG_VERSION"),
        "source": source.name, "target": target.name, "method": cfg.method.to_string(), "seed": a.seed,
        "statistic": "MCMD² per class (linear label kernel, one-hot assignments, eps of the fit), Gaussian feature kernel on the input features preprocessed with source statistics",
        "assignment": "argmax of the fitted model on the source hold-out rows (not trained on) and on the target rows",
        "p_value": "permutation of the pooled rows of the class; Holm across the tested classes",
        "bandwidth": h, "eps": eps, "permutations": a.permutations, "alpha": a.alpha,
        "per_class": per_class, "reject_any": res.reject_any, "decision": decision,
        "seconds": { "fit": fit_s, "test": test_s, "total_over_fit": (fit_s + test_s) / fit_s },
    });
    write_files_atomically(&[(a.out.clone(), serde_json::to_vec_pretty(&report)?)])?;
    for t in &res.per_class {
        let f = |o: Option<f64>| o.map_or("–".into(), |v| format!("{v:.4}"));
        eprintln!(
            "{:>14}  n_s {:>3}  n_t {:>3}  MCMD² {:>9}  p {:>7}  Holm {:>7}{}",
            source.class_names[t.class], t.n_source, t.n_target, f(t.mcmd2), f(t.p_value), f(t.p_adjusted), if t.reject { "  *" } else { "" }
        );
    }
    eprintln!("{decision}");
    eprintln!("cost: fit {fit_s:.2} s, test {test_s:.2} s ({} permutations); total / fit = {:.3}", a.permutations, (fit_s + test_s) / fit_s);
    println!("wrote {}", a.out.display());
    Ok(())
}

pub fn calibration_cmd(a: CalibrationArgs) -> Result<()> {
    if a.out.exists() && !a.out.is_dir() {
        bail!("{}: --out must be a folder, and a file of that name exists", a.out.display());
    }
    let d = data::load_domain(&a.data, &a.domain)?;
    let real = a.real_target.as_ref().map(|t| data::load_domain(&a.data, t)).transpose()?;
    let fit = resolve_config(None, Some("source"), Some(a.seed))?;
    let eps = fit.mul.mcmd_params(d.n_classes()).eps;
    let cfg = CalibrationConfig { draws: a.draws, permutations: a.permutations, seed: a.seed, deltas: a.delta.clone(), eps };
    let report = calibrate(&d, real.as_ref(), &fit, &cfg)?;
    let md = calibration_markdown(&report);
    write_files_atomically(&[
        (a.out.join("calibration.json"), serde_json::to_vec_pretty(&report)?),
        (a.out.join("calibration.md"), md.clone().into_bytes()),
    ])?;
    println!("{md}");
    Ok(())
}
