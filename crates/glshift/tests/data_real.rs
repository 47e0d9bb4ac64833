//! Loads the real data folders of `<repo>/../shared/data` and checks them against their
//! READMEs. When the folder is absent (e.g. a bare clone) each test prints
//! `SKIPPED: <reason>` and returns without checking anything.

use std::path::{Path, PathBuf};

use glshift::data::{
    list_domains, load_domain, load_pair, preprocess, FileFormat, LabelRule, Preprocess,
};

fn data_root() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if root.is_dir() {
        Some(root)
    } else {
        eprintln!("SKIPPED: real data folder {} not found (test skipped)", root.display());
        None
    }
}

/// The sub-folder, or `None` (after printing SKIPPED) when it is absent.
fn folder(name: &str) -> Option<PathBuf> {
    let dir = data_root()?.join(name);
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: {} not found (test skipped)", dir.display());
        None
    }
}

fn class_counts(labels: &[usize], c: usize) -> Vec<usize> {
    let mut k = vec![0; c];
    for &l in labels {
        k[l] += 1;
    }
    k
}

/// Leave-one-out 1-nearest-neighbour accuracy: high only if rows really are samples (a wrong
/// column-/row-major reading scrambles values across samples and drops this to chance).
fn loo_1nn_accuracy(x: &ndarray::Array2<f32>, y: &[usize]) -> f64 {
    let mut correct = 0;
    for i in 0..x.nrows() {
        let mut best = (f32::INFINITY, 0);
        for j in (0..x.nrows()).filter(|&j| j != i) {
            let d: f32 = x.row(i).iter().zip(x.row(j)).map(|(a, b)| (a - b) * (a - b)).sum();
            if d < best.0 {
                best = (d, j);
            }
        }
        correct += usize::from(y[best.1] == y[i]);
    }
    correct as f64 / x.nrows() as f64
}

#[test]
fn effnet_office_caltech_shapes_and_classes() {
    let Some(dir) = folder("office_caltech10_effnetlite2") else {
        return;
    };
    assert_eq!(list_domains(&dir).unwrap(), ["amazon", "caltech", "dslr", "webcam"]);
    for (name, n) in [("amazon", 958), ("caltech", 1123), ("dslr", 157), ("webcam", 295)] {
        let d = load_domain(&dir, name).unwrap();
        assert_eq!((d.n(), d.dim(), d.n_classes()), (n, 1280, 10), "{name}");
        assert_eq!(d.format, FileFormat::Npy);
        assert_eq!(d.label_rule, LabelRule::ZeroBased);
        assert_eq!(d.class_names[0], "backpack");
        assert_eq!(d.labels.as_ref().unwrap().len(), n);
    }
    let (s, t) = load_pair(&dir, "amazon", "webcam").unwrap();
    let k = class_counts(s.labels.as_ref().unwrap(), 10);
    // README: amazon per-class min/max 82/100.
    assert_eq!((*k.iter().min().unwrap(), *k.iter().max().unwrap()), (82, 100));
    assert_eq!(t.n(), 295);
}

#[test]
fn mnist_usps_class_counts() {
    let Some(dir) = folder("mnist_usps") else {
        return;
    };
    let (m, u) = load_pair(&dir, "mnist", "usps").unwrap();
    assert_eq!((m.n(), m.dim(), u.n(), u.dim()), (2000, 256, 1800, 256));
    assert_eq!(
        class_counts(m.labels.as_ref().unwrap(), 10),
        [196, 227, 207, 202, 196, 179, 191, 206, 195, 201]
    );
    assert_eq!(
        class_counts(u.labels.as_ref().unwrap(), 10),
        [352, 241, 165, 166, 166, 126, 139, 172, 129, 144]
    );
    assert!(m.features.iter().all(|&v| (0.0..=1.0).contains(&v)));
}

#[test]
fn surf_mat_one_based_shift_and_counts() {
    let Some(dir) = folder("office_caltech10_surf") else {
        return;
    };
    assert_eq!(list_domains(&dir).unwrap(), ["amazon", "caltech", "dslr", "webcam"]);
    let (s, t) = load_pair(&dir, "dslr", "webcam").unwrap();
    for d in [&s, &t] {
        assert_eq!(d.format, FileFormat::Mat);
        assert_eq!(d.label_rule, LabelRule::OneBasedShifted);
        assert_eq!((d.dim(), d.n_classes()), (800, 10));
        // Orientation: every row is a SURF histogram of non-negative counts with a positive sum.
        for row in d.features.rows() {
            assert!(row.iter().all(|&v| v >= 0.0 && v.fract() == 0.0));
            assert!(row.sum() > 0.0);
        }
    }
    assert_eq!(s.n(), 157);
    assert_eq!(
        class_counts(s.labels.as_ref().unwrap(), 10),
        [12, 21, 12, 13, 10, 24, 22, 12, 8, 23]
    );
    let acc = loo_1nn_accuracy(&s.features, s.labels.as_ref().unwrap());
    eprintln!("SURF dslr LOO 1-NN accuracy {acc:.3}");
    assert!(acc > 0.3, "SURF dslr LOO 1-NN accuracy {acc} (chance 0.15): orientation wrong?");
    assert_eq!(
        class_counts(t.labels.as_ref().unwrap(), 10),
        [29, 21, 31, 27, 27, 30, 43, 30, 27, 30]
    );
    // load_domain applies the same folder-wide rule.
    let a = load_domain(&dir, "amazon").unwrap();
    assert_eq!(a.label_rule, LabelRule::OneBasedShifted);
    assert_eq!(
        class_counts(a.labels.as_ref().unwrap(), 10),
        [92, 82, 94, 99, 100, 100, 99, 100, 94, 98]
    );
    assert!(a.path.ends_with("amazon_SURF_L10.mat"));
}

#[test]
fn surf_l1_zscore_is_finite_and_centred() {
    let Some(dir) = folder("office_caltech10_surf") else {
        return;
    };
    let (mut s, mut t) = load_pair(&dir, "amazon", "caltech").unwrap();
    preprocess(&mut s.features, &mut t.features, Preprocess::L1ZScore).unwrap();
    assert!(s.features.iter().chain(t.features.iter()).all(|v| v.is_finite()));
    let means = s.features.mean_axis(ndarray::Axis(0)).unwrap();
    let worst = means.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(worst < 1e-4, "largest |source column mean| = {worst}");
    // Not a no-op: some source column has unit variance.
    let var = s.features.var_axis(ndarray::Axis(0), 0.0);
    assert!(var.iter().any(|v| (v - 1.0).abs() < 1e-3));
}

#[test]
fn office31_resnet_mat_squeezed() {
    let Some(dir) = folder("office31_resnet50_dslr_only") else {
        return;
    };
    let names = list_domains(&dir).unwrap();
    assert_eq!(names, ["office-D-resnet50-noft"]);
    let d = load_domain(&dir, &names[0]).unwrap();
    assert_eq!((d.n(), d.dim(), d.n_classes()), (498, 2048, 31));
    assert_eq!(d.label_rule, LabelRule::ZeroBased);
    let k = class_counts(d.labels.as_ref().unwrap(), 31);
    assert_eq!(k[..5], [12, 21, 24, 12, 16]);
    assert_eq!(k[30], 15);
    // README statistics: min 0, max 8.55, mean 0.42.
    let min = d.features.iter().fold(f32::INFINITY, |m, &v| m.min(v));
    let max = d.features.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v));
    let mean = d.features.mean().unwrap();
    assert_eq!(min, 0.0);
    assert!((max - 8.55).abs() < 0.01, "max {max}");
    assert!((mean - 0.42).abs() < 0.01, "mean {mean}");
    let acc = loo_1nn_accuracy(&d.features, d.labels.as_ref().unwrap());
    eprintln!("resnet dslr LOO 1-NN accuracy {acc:.3}");
    assert!(acc > 0.7, "ResNet dslr LOO 1-NN accuracy {acc}: orientation wrong?");
}
