//! Writes the synthetic GLS tasks of `glshift demo` (conditional shift: rotated, offset class
//! conditionals, plus a Dirichlet(2) target prior; `glshift_experiments::synthetic`) as a data
//! folder in the npy layout, so that `glshift fit` / `glshift select` can read them:
//! `DIR/source{k}_features.npy`, `DIR/source{k}_labels.npy`, `DIR/target{k}_*.npy` for each
//! generator seed k, and `DIR/classes.txt`. The scorer study (bench/scorer_study.sh) uses it.
//!
//! usage: cargo run -p glshift-experiments --example write_synthetic -- DIR [SEEDS, default 0,1,2]

// Product code: no function over clippy.toml's 80 lines (test code may be longer).
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use ndarray::Array1;
use ndarray_npy::WriteNpyExt;

use glshift::data::Domain;
use glshift_experiments::synthetic::{generate, SyntheticConfig};

fn write_domain(dir: &Path, name: &str, d: &Domain) -> Result<(), Box<dyn std::error::Error>> {
    d.features
        .write_npy(BufWriter::new(File::create(dir.join(format!("{name}_features.npy")))?))?;
    let labels = d.labels.as_ref().ok_or("generated domain without labels")?;
    let labels: Array1<i64> = labels.iter().map(|&k| k as i64).collect();
    labels.write_npy(BufWriter::new(File::create(dir.join(format!("{name}_labels.npy")))?))?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args.next().ok_or("usage: write_synthetic DIR [SEEDS]")?;
    let seeds: Vec<u64> = args
        .next()
        .unwrap_or_else(|| "0,1,2".into())
        .split(',')
        .map(|s| s.trim().parse())
        .collect::<Result<_, _>>()?;
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    let mut classes = None;
    for k in seeds {
        let task = generate(&SyntheticConfig { seed: k, ..Default::default() })?;
        write_domain(dir, &format!("source{k}"), &task.source)?;
        write_domain(dir, &format!("target{k}"), &task.target)?;
        classes = Some(task.source.class_names.clone());
        println!(
            "seed {k}: target prior {:?}",
            task.target_prior.iter().map(|p| format!("{p:.3}")).collect::<Vec<_>>()
        );
    }
    if let Some(c) = classes {
        let names: Vec<String> = if c.is_empty() {
            (0..SyntheticConfig::default().n_classes).map(|i| i.to_string()).collect()
        } else {
            c
        };
        std::fs::write(dir.join("classes.txt"), names.join("\n") + "\n")?;
    }
    Ok(())
}
