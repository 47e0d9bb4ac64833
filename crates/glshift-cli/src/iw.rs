//! `glshift iw-ablation`: the paper's decision-boundary figure of the importance-weighting
//! ablation (first 4 classes, 2 shared, a 2-D Z, MUL with and without IW).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use glshift::data;
use glshift_experiments::iw::{iw_ablation, IwOptions};
use glshift_experiments::synthetic::{generate, SyntheticConfig};

use crate::fit::resolve_config;

#[derive(Args, Debug)]
pub struct IwArgs {
    /// Folder holding the domains; without it, the built-in synthetic GLS task (4 classes) is used.
    #[arg(long, requires_all = ["source", "target"])]
    pub data: Option<PathBuf>,
    #[arg(long)]
    pub source: Option<String>,
    #[arg(long)]
    pub target: Option<String>,
    /// Seed of training and of the synthetic task.
    #[command(flatten)]
    pub seed: crate::pair::SeedArg,
    /// TOML settings over the defaults (the network's widths are replaced by --hidden).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// G's widths; the last must be 2 so that F's regions can be drawn exactly on Z.
    #[arg(long, value_delimiter = ',', default_value = "256,2")]
    pub hidden: Vec<usize>,
    /// Output folder: figures/iw_boundary.{png,svg}, iw_ablation.json, report.html.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: IwArgs) -> Result<()> {
    let cfg = resolve_config(args.config.as_ref(), Some("mul"), args.seed.get())?;
    let (source, target) = match (&args.data, &args.source, &args.target) {
        (Some(dir), Some(s), Some(t)) => data::load_pair(dir, s, t)?,
        _ => {
            let task =
                generate(&SyntheticConfig { n_classes: 4, seed: cfg.seed, ..Default::default() })?;
            (task.source, task.target)
        }
    };
    let opts = IwOptions { hidden: args.hidden.clone(), ..IwOptions::default() };
    let ablation =
        iw_ablation(&source, &target, &cfg, &opts).context("importance-weighting ablation")?;
    let written = glshift_report::iw::write(&ablation, &args.out)?;
    for r in &ablation.runs {
        eprintln!(
            "IW {}: target accuracy {:.1}%, target rows predicted as outlier classes {:.1}%, outlier area {:.1}%",
            if r.importance_weighting { "on " } else { "off" },
            100.0 * r.target_accuracy.unwrap_or(f64::NAN),
            100.0 * r.outlier_prediction_share,
            100.0 * r.outlier_area_share
        );
    }
    eprintln!("wrote {}", written.html.display());
    Ok(())
}
