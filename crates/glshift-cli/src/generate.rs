//! `glshift generate`: a synthetic generalized-label-shift data folder of any size, in the npy
//! layout `glshift fit` reads (domains `source` and `target`), written in chunks
//! (`glshift_experiments::synthetic_files`). The task is the one of `glshift demo`: Gaussian
//! classes, a target rotated and shifted per class (conditional shift) with a Dirichlet(α) prior
//! (label shift).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use glshift_experiments::synthetic::SyntheticConfig;
use glshift_experiments::synthetic_files::write_synthetic_folder;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// Rows of the labelled source domain (uniform class prior).
    #[arg(long, default_value_t = SyntheticConfig::default().n_source)]
    pub source_rows: usize,
    /// Rows of the target domain (its labels are written too, for scoring only).
    #[arg(long, default_value_t = SyntheticConfig::default().n_target)]
    pub target_rows: usize,
    /// Feature dimension.
    #[arg(long, default_value_t = SyntheticConfig::default().dim)]
    pub dims: usize,
    #[arg(long, default_value_t = SyntheticConfig::default().n_classes)]
    pub classes: usize,
    /// Distance scale between class means (units of the within-class σ = 1).
    #[arg(long, default_value_t = SyntheticConfig::default().separation)]
    pub separation: f64,
    /// Rotation angle (radians) of the target in each rotated coordinate plane.
    #[arg(long, default_value_t = SyntheticConfig::default().rotation)]
    pub rotation: f64,
    /// Number of random coordinate planes the target is rotated in.
    #[arg(long, default_value_t = SyntheticConfig::default().rotated_planes)]
    pub rotated_planes: usize,
    /// Size of the class-specific target offsets (per coordinate standard deviation).
    #[arg(long, default_value_t = SyntheticConfig::default().class_offset)]
    pub class_offset: f64,
    /// Dirichlet concentration of the target prior (small = strong label shift).
    #[arg(long, default_value_t = SyntheticConfig::default().dirichlet_alpha)]
    pub alpha: f64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output folder: source_/target_features.npy, source_/target_labels.npy, classes.txt, generate.json.
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(a: GenerateArgs) -> Result<()> {
    if a.out.exists() && !a.out.is_dir() {
        bail!("{}: --out must be a folder, and a file of that name exists", a.out.display());
    }
    let cfg = SyntheticConfig {
        n_classes: a.classes,
        dim: a.dims,
        n_source: a.source_rows,
        n_target: a.target_rows,
        separation: a.separation,
        rotation: a.rotation,
        rotated_planes: a.rotated_planes,
        class_offset: a.class_offset,
        dirichlet_alpha: a.alpha,
        seed: a.seed,
    };
    let start = Instant::now();
    let report = write_synthetic_folder(&cfg, &a.out, &mut |rows| {
        eprintln!("generated {rows} rows ({:.1} s)", start.elapsed().as_secs_f64())
    })?;
    let prior: Vec<String> = report.target_prior.iter().map(|p| format!("{p:.3}")).collect();
    eprintln!("target prior: [{}]", prior.join(", "));
    println!("wrote {} (domains `source` and `target`)", a.out.display());
    Ok(())
}
