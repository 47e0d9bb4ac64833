//! Writes extracted features in the layout `glshift fit` reads — `<domain>_features.npy`
//! (f32, `(n, 1280)`), `<domain>_labels.npy` (i64, `(n,)`, labelled domains only),
//! `classes.txt` — plus `extract.json` (counts, skipped files, weights hash, preprocessing,
//! throughput), all in one atomic step: either every file appears complete or none does.

use std::io::Read;
use std::path::{Path, PathBuf};

use glshift::output::npy_bytes;
use ndarray::Array1;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::arch::{FEATURE_DIM, IMAGE_SIZE};
use crate::extract::{DomainFeatures, Skipped};
use crate::preprocess::RESIZE_SHORT;
use crate::walk::Layout;
use crate::{Error, Result};

/// Per-domain counts of `extract.json`.
#[derive(Debug, Serialize)]
pub struct DomainReport {
    pub name: String,
    pub labelled: bool,
    pub files: usize,
    pub extracted: usize,
    pub skipped: Vec<Skipped>,
}

/// Throughput of the run (wall clock of decoding + inference, not of loading the weights).
#[derive(Debug, Serialize)]
pub struct Throughput {
    pub images: usize,
    pub seconds: f64,
    pub images_per_second: f64,
    pub threads: usize,
}

/// The contents of `extract.json`.
#[derive(Debug, Serialize)]
pub struct ExtractReport {
    pub glshift_version: String,
    pub model: String,
    pub weights_file: String,
    pub weights_sha256: String,
    pub image_size: usize,
    pub preprocessing: String,
    pub feature: String,
    pub classes: Vec<String>,
    /// Class folders that held no file (warned about).
    pub empty_class_folders: Vec<String>,
    /// Classes whose folders were empty in every domain, left out of `classes`.
    pub classes_left_out: Vec<String>,
    pub domains: Vec<DomainReport>,
    pub throughput: Throughput,
}

impl ExtractReport {
    /// The report of a run over `domains` with the given weights and timing.
    pub fn new(
        weights: &Path,
        sha256: String,
        layout: &Layout,
        domains: &[DomainFeatures],
        throughput: Throughput,
    ) -> ExtractReport {
        ExtractReport {
            glshift_version: env!("CARGO_PKG_VERSION").to_string(),
            model: "EfficientNet-Lite2 (efficientnet-lite-pytorch 0.1.0 architecture), eval mode, f32, CPU".into(),
            weights_file: weights.display().to_string(),
            weights_sha256: sha256,
            image_size: IMAGE_SIZE,
            preprocessing: format!(
                "RGB 8-bit; resize shorter side to {RESIZE_SHORT} (PIL bicubic, antialiased); centre crop \
                 {IMAGE_SIZE}x{IMAGE_SIZE}; x/255; normalise mean 127/255 std 128/255 per channel"
            ),
            feature: format!("global average pool of ReLU6(BN(head 1x1 conv)), {FEATURE_DIM}-d"),
            classes: layout.classes.clone(),
            empty_class_folders: layout.empty_class_folders.iter().map(|p| p.display().to_string()).collect(),
            classes_left_out: layout.classes_left_out.clone(),
            domains: domains
                .iter()
                .map(|d| DomainReport {
                    name: d.name.clone(),
                    labelled: d.labels.is_some(),
                    files: d.files,
                    extracted: d.features.nrows(),
                    skipped: d.skipped.clone(),
                })
                .collect(),
            throughput,
        }
    }
}

/// Hex sha256 of a file's contents.
pub fn sha256_file(path: &Path) -> Result<String> {
    let err =
        |e: std::io::Error| Error::WeightsIo { path: path.to_path_buf(), reason: e.to_string() };
    let mut f = std::fs::File::open(path).map_err(err)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(err)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes every output file into `out` atomically (see the module docs).
pub fn write_outputs(
    out: &Path,
    classes: &[String],
    domains: &[DomainFeatures],
    report: &ExtractReport,
) -> Result<()> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for d in domains {
        let p = out.join(format!("{}_features.npy", d.name));
        files.push((p.clone(), npy_bytes(&d.features, &p)?));
        if let Some(labels) = &d.labels {
            let p = out.join(format!("{}_labels.npy", d.name));
            files.push((p.clone(), npy_bytes(&Array1::from(labels.clone()), &p)?));
        }
    }
    let classes_txt: String = classes.iter().map(|c| format!("{c}\n")).collect();
    files.push((out.join("classes.txt"), classes_txt.into_bytes()));
    let json = serde_json::to_vec_pretty(report).expect("report serialises");
    files.push((out.join("extract.json"), json));
    glshift::output::write_files_atomically(&files)?;
    Ok(())
}
