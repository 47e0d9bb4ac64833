//! Checks extraction against the reference features of `<repo>/../shared`: a few dslr images
//! must reproduce their rows of `office_caltech10_effnetlite2` (cosine ≥ 0.999), and damaged
//! copies of the real weights must be errors. When the shared folder is absent each test prints
//! `SKIPPED: <reason>` and returns without checking anything.

#[path = "support/shared.rs"]
mod support;

use glshift_extract::{extract, preprocess, walk, EffNetLite2, Error};
use ndarray::Array2;
use support::shared;

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * *y as f64).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
fn four_dslr_images_reproduce_their_reference_rows() {
    let (Some(images), Some(weights), Some(reference)) = (
        shared("data/office_caltech10_images"),
        shared("models/efficientnet-lite2-9656183e.pth"),
        shared("data/office_caltech10_effnetlite2/dslr_features.npy"),
    ) else {
        return;
    };
    let reference: Array2<f32> = ndarray_npy::read_npy(reference).unwrap();
    let layout = walk::walk(&images).unwrap();
    let dslr = layout.domains.iter().find(|d| d.name == "dslr").unwrap();
    assert_eq!(dslr.files.len(), reference.nrows());
    let net = EffNetLite2::load(&weights).unwrap();
    for row in [0, 50, 100, 156] {
        let (path, _) = &dslr.files[row];
        let x = preprocess::load_input(path).unwrap();
        let f = extract::image_features(&net, x).unwrap();
        let c = cosine(&f, reference.row(row).as_slice().unwrap());
        eprintln!("row {row} ({}): cosine {c:.6}", path.display());
        assert!(c >= 0.999, "row {row}: cosine {c}");
    }
}

#[test]
fn truncated_or_corrupted_real_weights_are_errors_naming_the_file() {
    let Some(weights) = shared("models/efficientnet-lite2-9656183e.pth") else { return };
    let bytes = std::fs::read(&weights).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, data) in [
        ("cut_in_pickle.pth", bytes[..30_000].to_vec()),
        ("cut_in_storages.pth", bytes[..bytes.len() / 2].to_vec()),
        ("cut_last_byte.pth", bytes[..bytes.len() - 1].to_vec()),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, data).unwrap();
        let e = EffNetLite2::load(&p).err().unwrap();
        assert!(matches!(e, Error::WeightsFormat { .. }), "{name}: {e}");
        assert!(e.to_string().contains(name), "{e}");
        eprintln!("{e}");
    }
}
