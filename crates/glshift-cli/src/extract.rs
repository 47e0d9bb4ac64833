//! `glshift extract`: image folders `DIR/<domain>/<class>/*` → EfficientNet-Lite2 features in
//! the npy layout `glshift fit` reads, plus `extract.json` (counts, skipped files, weights
//! sha256, preprocessing, throughput). Everything is written atomically at the end.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use glshift_extract::extract::{extract_domain, DomainFeatures};
use glshift_extract::walk::walk;
use glshift_extract::write::{sha256_file, write_outputs, ExtractReport, Throughput};
use glshift_extract::EffNetLite2;
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Args, Debug)]
pub struct ExtractArgs {
    /// Folder of images: DIR/<domain>/<class>/*.{jpg,png}; a domain without class folders is unlabelled.
    #[arg(long)]
    pub images: PathBuf,
    /// EfficientNet-Lite2 ImageNet weights (PyTorch state_dict, e.g. efficientnet-lite2-9656183e.pth).
    #[arg(long)]
    pub weights: PathBuf,
    /// Output folder for <domain>_features.npy, <domain>_labels.npy, classes.txt and extract.json.
    #[arg(long)]
    pub out: PathBuf,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

fn progress_bar(total: usize, quiet: bool) -> ProgressBar {
    let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(total as u64) };
    bar.set_style(
        ProgressStyle::with_template(
            "extract [{bar:30}] {pos}/{len} {msg} {per_sec} ({elapsed}, eta {eta})",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    bar
}

pub fn run(args: ExtractArgs) -> Result<()> {
    let layout = walk(&args.images)?;
    for folder in &layout.empty_class_folders {
        eprintln!("warning: class folder {} holds no file", folder.display());
    }
    if !layout.classes_left_out.is_empty() {
        eprintln!(
            "warning: classes left out of classes.txt (their folders are empty in every domain): {}",
            layout.classes_left_out.join(", ")
        );
    }
    let sha = sha256_file(&args.weights)?;
    let net = EffNetLite2::load(&args.weights)?;
    let total: usize = layout.domains.iter().map(|d| d.files.len()).sum();
    let bar = progress_bar(total, args.quiet);
    let start = Instant::now();
    let mut domains: Vec<DomainFeatures> = Vec::with_capacity(layout.domains.len());
    for d in &layout.domains {
        bar.set_message(d.name.clone());
        let feats = extract_domain(&net, d, &mut |k| bar.inc(k as u64))
            .with_context(|| format!("extracting domain {}", d.name))?;
        for s in &feats.skipped {
            bar.suspend(|| eprintln!("warning: skipped {}: {}", s.path, s.reason));
        }
        domains.push(feats);
    }
    bar.finish_and_clear();
    let seconds = start.elapsed().as_secs_f64();
    let images: usize = domains.iter().map(|d| d.features.nrows()).sum();
    let throughput = Throughput {
        images,
        seconds,
        images_per_second: images as f64 / seconds,
        threads: rayon::current_num_threads(),
    };
    let report = ExtractReport::new(&args.weights, sha, &layout, &domains, throughput);
    write_outputs(&args.out, &layout.classes, &domains, &report)?;
    let skipped: usize = domains.iter().map(|d| d.skipped.len()).sum();
    for d in &domains {
        eprintln!(
            "{}: {} images -> {} x {}",
            d.name,
            d.files,
            d.features.nrows(),
            d.features.ncols()
        );
    }
    eprintln!(
        "extracted {images} images in {seconds:.1} s: {:.2} images/s on {} threads ({skipped} skipped); wrote {}",
        report.throughput.images_per_second,
        report.throughput.threads,
        args.out.display()
    );
    Ok(())
}
