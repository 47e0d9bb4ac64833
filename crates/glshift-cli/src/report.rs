//! `glshift report DIR`: the analysis figures and a self-contained report.html for a run folder
//! (written by `glshift fit`) or a bench folder (written by `glshift bench`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use glshift_report::bench::write_bench_report;
use glshift_report::run::{write_run_report, FigureOptions};
use glshift_report::tsne::TsneParams;
use glshift_report::{folder_kind, FolderKind};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// A `glshift fit --out` folder (holds report.json) or a `glshift bench --out` folder (holds results.json).
    pub dir: PathBuf,
    /// Another run folder of the same task (e.g. `--method source`) to compare the metrics with.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// t-SNE learning rate (set explicitly; the t-SNE crate's automatic rate collapsed clusters).
    #[arg(long, default_value_t = 200.0)]
    pub tsne_learning_rate: f32,
    /// t-SNE perplexity (clamped to (n − 1)/3 for small domains).
    #[arg(long, default_value_t = 30.0)]
    pub tsne_perplexity: f32,
    /// At most this many rows enter a t-SNE (subsampled with the run's seed).
    #[arg(long, default_value_t = 2500)]
    pub max_tsne_points: usize,
}

pub fn run(args: ReportArgs) -> Result<()> {
    let opts = FigureOptions {
        tsne: TsneParams {
            learning_rate: args.tsne_learning_rate,
            perplexity: args.tsne_perplexity,
            ..TsneParams::default()
        },
        max_tsne_points: args.max_tsne_points,
    };
    let written = match folder_kind(&args.dir)? {
        FolderKind::Run => write_run_report(&args.dir, args.baseline.as_deref(), &opts),
        FolderKind::Bench => {
            if args.baseline.is_some() {
                anyhow::bail!(
                    "--baseline compares two run folders; {} is a bench folder",
                    args.dir.display()
                );
            }
            write_bench_report(&args.dir)
        }
    }
    .with_context(|| format!("report of {}", args.dir.display()))?;
    if let FolderKind::Run = folder_kind(&args.dir)? {
        let summary = glshift_report::run::read_summary(&args.dir.join("report.json"))?;
        if let Some(d) = &summary.diagnostics {
            d.summary_lines().iter().for_each(|l| eprintln!("{l}"));
        }
    }
    for n in &written.notes {
        eprintln!("note: {n}");
    }
    eprintln!("wrote {} and {} figure files", written.html.display(), written.figures.len());
    Ok(())
}
