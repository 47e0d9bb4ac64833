//! Runs the network over one domain's files: images are decoded and preprocessed in parallel
//! in batches, each image's forward runs on its own (so a row never depends on the batch it
//! was in or the thread count), and unreadable files are skipped with their reason.
//! Output: the `(n, 1280)` feature matrix in row order and the labels of the kept rows.

use ndarray::Array2;
use rayon::prelude::*;
use serde::Serialize;

use crate::arch::{FEATURE_DIM, IMAGE_SIZE};
use crate::walk::DomainFiles;
use crate::{preprocess, EffNetLite2, Error, Result};

/// Images decoded and run per batch (bounds the memory of decoded inputs: 0.8 MB each).
pub const BATCH: usize = 16;

/// A file left out of the features, with the reason.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub path: String,
    pub reason: String,
}

/// The features of one domain.
#[derive(Debug, Clone)]
pub struct DomainFeatures {
    pub name: String,
    /// `(n, 1280)`: one row per decoded file, in the walk's row order.
    pub features: Array2<f32>,
    /// Class index per row; `None` for an unlabelled domain.
    pub labels: Option<Vec<i64>>,
    /// Files found (including skipped ones).
    pub files: usize,
    pub skipped: Vec<Skipped>,
}

/// Features of every file of `domain`; `progress(k)` is called after each batch of `k` files.
/// Undecodable files are skipped (listed in `skipped`); a domain with no decodable file is an
/// error naming it.
pub fn extract_domain(
    net: &EffNetLite2,
    domain: &DomainFiles,
    progress: &mut dyn FnMut(usize),
) -> Result<DomainFeatures> {
    let mut rows: Vec<f32> = Vec::with_capacity(domain.files.len() * FEATURE_DIM);
    let mut labels = Vec::with_capacity(domain.files.len());
    let mut skipped: Vec<Skipped> = domain
        .loose
        .iter()
        .map(|p| Skipped {
            path: p.display().to_string(),
            reason: "file beside the class folders".into(),
        })
        .collect();
    for batch in domain.files.chunks(BATCH) {
        let outputs: Vec<Result<Vec<f32>>> = batch
            .par_iter()
            .map(|(path, _)| {
                let x = preprocess::load_input(path)?;
                image_features(net, x)
            })
            .collect();
        for ((path, label), out) in batch.iter().zip(outputs) {
            match out {
                Ok(f) => {
                    rows.extend(f);
                    labels.push(label.map_or(-1, |l| l as i64));
                }
                Err(Error::Image { reason, .. }) => {
                    skipped.push(Skipped { path: path.display().to_string(), reason })
                }
                Err(e) => return Err(e),
            }
        }
        progress(batch.len());
    }
    if labels.is_empty() {
        let first = skipped.first().map_or(String::new(), |s| format!("{}: {}", s.path, s.reason));
        return Err(Error::NothingDecoded {
            domain: domain.name.clone(),
            files: domain.files.len(),
            first,
        });
    }
    let features = Array2::from_shape_vec((labels.len(), FEATURE_DIM), rows)
        .map_err(|e| Error::Inference(format!("feature matrix: {e}")))?;
    Ok(DomainFeatures {
        name: domain.name.clone(),
        features,
        labels: domain.labelled().then_some(labels),
        files: domain.files.len(),
        skipped,
    })
}

/// One preprocessed `(3, 260, 260)` image → its 1280 features.
pub fn image_features(net: &EffNetLite2, x: Vec<f32>) -> Result<Vec<f32>> {
    let t = candle_core::Tensor::from_vec(
        x,
        (1, 3, IMAGE_SIZE, IMAGE_SIZE),
        &candle_core::Device::Cpu,
    )?;
    let f = net.features(&t)?;
    Ok(f.flatten_all()?.to_vec1::<f32>()?)
}
