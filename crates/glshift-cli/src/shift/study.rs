//! `glshift shift simulate` (a labelled domain resampled to a known target prior) and
//! `glshift shift study` (every estimator on simulated targets of every prior family).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use glshift::data;
use glshift::output::write_files_atomically;
use glshift_experiments::simulate::{
    simulate, simulate_cross, simulation_files, PriorSpec, SimulateConfig,
};
use glshift_experiments::study::{
    default_domains, default_families, run_study, study_markdown, StudyConfig,
};

use crate::fit::{check_out_dir, fmt_vec, resolve_config};
use glshift::label_shift::IntervalMethod;

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
    #[arg(long, value_parser = crate::core_values::parser::<IntervalMethod>(), default_value = IntervalMethod::Basic.name())]
    pub interval: IntervalMethod,
    /// Seed of the splits, the classifiers and the draws.
    #[command(flatten)]
    pub seed: crate::pair::SeedArg,
    /// TOML settings of the source classifier (`method` is forced to `source`).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Output folder for study.json and study.md.
    #[arg(long)]
    pub out: PathBuf,
}

pub(super) fn simulate_cmd(a: SimulateArgs) -> Result<()> {
    let prior = PriorSpec::parse(&a.prior)?;
    if a.out.exists() && !a.out.is_dir() {
        bail!("{}: --out must be a folder, and a file of that name exists", a.out.display());
    }
    let d = data::load_domain(&a.data, &a.domain)?;
    let cfg = SimulateConfig {
        prior,
        seed: a.seed,
        split_seed: a.split_seed,
        source_fraction: a.source_fraction,
        n_target: a.n,
    };
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

pub(super) fn study_cmd(a: StudyArgs) -> Result<()> {
    let families = if a.prior.is_empty() {
        default_families()
    } else {
        a.prior
            .iter()
            .map(|p| PriorSpec::parse(p))
            .collect::<glshift_experiments::Result<Vec<_>>>()?
    };
    let fit = resolve_config(a.config.as_ref(), Some("source"), a.seed.get())?;
    let cfg = StudyConfig {
        families,
        draws: a.draws,
        n_target: a.n_target,
        source_fraction: a.source_fraction,
        bootstrap: a.bootstrap,
        level: a.level,
        interval: a.interval,
        cross_fit: a.cross_fit,
        seed: fit.seed,
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
        bail!(
            "no labelled domain with at least --n-target = {} rows in the --data folder(s)",
            a.n_target
        );
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
