//! `glshift extract` end to end: outputs and extract.json on two real images plus a non-image
//! file (needs `<repo>/../shared`; prints SKIPPED when absent), and bad input (empty folder,
//! damaged weights) as errors that name the problem and leave no output.

mod common;
#[path = "../../glshift-extract/tests/support/shared.rs"]
mod support;

use common::{run, stderr};
use ndarray::{Array1, Array2};
use support::shared;

#[test]
fn extracts_two_images_skips_a_text_file_and_reports_it() {
    let (Some(images), Some(weights)) = (
        shared("data/office_caltech10_images/dslr"),
        shared("models/efficientnet-lite2-9656183e.pth"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (src, out) = (dir.path().join("imgs"), dir.path().join("out"));
    for (cls, file) in [("mug", "frame_0001.jpg"), ("bike", "frame_0001.jpg")] {
        std::fs::create_dir_all(src.join("d").join(cls)).unwrap();
        std::fs::copy(images.join(cls).join(file), src.join("d").join(cls).join(file)).unwrap();
    }
    std::fs::write(src.join("d/mug/notes.txt"), "not an image").unwrap();
    let o = run(&[
        "extract",
        "--images",
        src.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning: skipped") && err.contains("notes.txt"), "{err}");
    assert!(err.contains("images/s"), "{err}");
    let x: Array2<f32> = ndarray_npy::read_npy(out.join("d_features.npy")).unwrap();
    let y: Array1<i64> = ndarray_npy::read_npy(out.join("d_labels.npy")).unwrap();
    assert_eq!(x.dim(), (2, 1280));
    assert_eq!(y.to_vec(), vec![0, 1]); // bike before mug
    assert_eq!(std::fs::read_to_string(out.join("classes.txt")).unwrap(), "bike\nmug\n");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("extract.json")).unwrap()).unwrap();
    let d = &report["domains"][0];
    assert_eq!((d["files"].as_u64(), d["extracted"].as_u64()), (Some(3), Some(2)));
    assert!(d["skipped"][0]["path"].as_str().unwrap().ends_with("notes.txt"));
    assert_eq!(
        report["weights_sha256"],
        "9656183eaeafe8cbf0cf560089305d34668787f6a26377ccbe5be192ed3f855d"
    );
    assert!(report["throughput"]["images_per_second"].as_f64().unwrap() > 0.0);
}

#[test]
fn empty_images_folder_is_an_error_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (src, out) = (dir.path().join("imgs"), dir.path().join("out"));
    std::fs::create_dir_all(&src).unwrap();
    let o = run(&[
        "extract",
        "--images",
        src.to_str().unwrap(),
        "--weights",
        "w.pth",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("no images found") && err.contains("imgs"), "{err}");
    assert!(!out.exists());
}

#[test]
fn damaged_weights_file_is_an_error_naming_it_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (src, out) = (dir.path().join("imgs"), dir.path().join("out"));
    std::fs::create_dir_all(src.join("d/c")).unwrap();
    image::RgbImage::new(8, 8).save(src.join("d/c/a.png")).unwrap();
    let weights = dir.path().join("damaged.pth");
    // The first bytes of a legacy torch.save file (magic-number pickle), cut short.
    std::fs::write(&weights, b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.\x80\x02M\xe9").unwrap();
    let o = run(&[
        "extract",
        "--images",
        src.to_str().unwrap(),
        "--weights",
        weights.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("damaged.pth") && err.contains("truncated"), "{err}");
    assert!(!out.exists());
}
