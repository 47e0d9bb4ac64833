//! Preprocessing with source statistics only.

use ndarray::{arr2, array, Axis};

use crate::data::{preprocess, preprocess_warning, Preprocess};

fn close(a: &ndarray::Array2<f32>, b: &ndarray::Array2<f32>) -> bool {
    a.shape() == b.shape() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5)
}

#[test]
fn zscore_uses_source_statistics_only() {
    let mut s = arr2(&[[1f32, 10.0], [3.0, 30.0]]);
    let mut t = arr2(&[[5f32, 20.0]]);
    preprocess(&mut s, &mut t, Preprocess::ZScore).unwrap();
    // Source mean (2, 20), population std (1, 10).
    assert!(close(&s, &arr2(&[[-1.0, -1.0], [1.0, 1.0]])), "{s}");
    assert!(close(&t, &arr2(&[[3.0, 0.0]])), "{t}");
}

#[test]
fn zscore_zero_variance_column_gives_zeros_not_nan() {
    let mut s = arr2(&[[0.1f32, 1.0], [0.1, 2.0], [0.1, 3.0]]);
    let mut t = arr2(&[[0.1f32, 2.0], [0.6, 2.0]]);
    preprocess(&mut s, &mut t, Preprocess::ZScore).unwrap();
    assert!(s.column(0).iter().all(|&v| v == 0.0), "{s}");
    assert_eq!(t[[0, 0]], 0.0);
    // Std treated as 1: the target keeps its offset from the source constant.
    assert!((t[[1, 0]] - 0.5).abs() < 1e-6, "{t}");
    assert!(s.iter().chain(t.iter()).all(|v| v.is_finite()));
}

#[test]
fn l2_normalises_rows_and_keeps_zero_rows() {
    let mut s = arr2(&[[3f32, 4.0], [0.0, 0.0]]);
    let mut t = arr2(&[[0f32, -2.0]]);
    preprocess(&mut s, &mut t, Preprocess::L2).unwrap();
    assert!(close(&s, &arr2(&[[0.6, 0.8], [0.0, 0.0]])), "{s}");
    assert!(close(&t, &arr2(&[[0.0, -1.0]])), "{t}");
}

#[test]
fn l1_zscore_normalises_counts_then_centres_the_source() {
    let mut s = arr2(&[[1f32, 3.0, 0.0], [2.0, 2.0, 4.0], [0.0, 0.0, 0.0]]);
    let mut t = arr2(&[[5f32, 5.0, 0.0]]);
    preprocess(&mut s, &mut t, Preprocess::L1ZScore).unwrap();
    assert!(s.iter().chain(t.iter()).all(|v| v.is_finite()));
    let m = s.mean_axis(Axis(0)).unwrap();
    assert!(m.iter().all(|v| v.abs() < 1e-6), "{m}");
    // Row sums 4, 8, 0 → [.25,.75,0], [.25,.25,.5], zero row; column 0 is constant .25
    // except the zero row, so it is not constant: check one value by hand.
    let col0 = [0.25f64, 0.25, 0.0];
    let mean = col0.iter().sum::<f64>() / 3.0;
    let std = (col0.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
    assert!((f64::from(s[[0, 0]]) - (0.25 - mean) / std).abs() < 1e-5);
    // Target row sum 10 → .5 in column 0.
    assert!((f64::from(t[[0, 0]]) - (0.5 - mean) / std).abs() < 1e-5);
}

#[test]
fn none_is_identity_and_dims_must_match() {
    let mut s = arr2(&[[1f32, 2.0]]);
    let mut t = arr2(&[[3f32, 4.0]]);
    preprocess(&mut s, &mut t, Preprocess::None).unwrap();
    assert_eq!((s[[0, 1]], t[[0, 0]]), (2.0, 3.0));
    let mut t3 = arr2(&[[1f32, 2.0, 3.0]]);
    assert!(preprocess(&mut s, &mut t3, Preprocess::ZScore).is_err());
}

#[test]
fn preprocess_names_parse_and_serialize() {
    assert_eq!(Preprocess::default(), Preprocess::ZScore);
    assert_eq!("l1-zscore".parse::<Preprocess>().unwrap(), Preprocess::L1ZScore);
    assert_eq!("zscore".parse::<Preprocess>().unwrap(), Preprocess::ZScore);
    assert!("z".parse::<Preprocess>().is_err());
    assert_eq!(serde_json::to_string(&Preprocess::L1ZScore).unwrap(), "\"l1-z-score\"");
    let p: Preprocess = serde_json::from_str("\"l1-zscore\"").unwrap();
    assert_eq!(p, Preprocess::L1ZScore);
    for p in [Preprocess::None, Preprocess::ZScore, Preprocess::L2, Preprocess::L1ZScore] {
        assert_eq!(p.to_string().parse::<Preprocess>().unwrap(), p);
    }
}

#[test]
fn zscore_warns_when_a_source_constant_column_varies_in_the_target() {
    // Column 1 is almost constant in the source (like MNIST's border pixels) but not in the
    // target (USPS): after z-score the target's values there are ~1000 source standard deviations.
    let mut src = array![[0.0f32, 0.0], [1.0, 0.001], [2.0, 0.0], [3.0, 0.001]];
    let mut tgt = array![[0.5f32, 0.9], [1.5, 0.0], [2.5, 0.7], [3.5, 0.2]];
    preprocess(&mut src, &mut tgt, Preprocess::ZScore).unwrap();
    let w = preprocess_warning(&tgt, Preprocess::ZScore).expect("a warning");
    assert!(w.contains("1 of 2 feature columns"), "{w}");
    assert!(w.contains("preprocess = \"none\""), "{w}");
}

#[test]
fn zscore_gives_no_warning_when_the_target_is_on_the_source_scale() {
    let mut src = array![[0.0f32, 1.0], [1.0, 2.0], [2.0, 0.0], [3.0, 1.5]];
    let mut tgt = array![[0.5f32, 1.2], [1.5, 0.3], [4.0, 2.5], [3.5, 0.9]];
    preprocess(&mut src, &mut tgt, Preprocess::ZScore).unwrap();
    assert_eq!(preprocess_warning(&tgt, Preprocess::ZScore), None);
    // Other preprocessings never warn, whatever the values.
    let wild = array![[1e6f32, -1e6]];
    assert_eq!(preprocess_warning(&wild, Preprocess::None), None);
    assert_eq!(preprocess_warning(&wild, Preprocess::L2), None);
    assert!(preprocess_warning(&wild, Preprocess::ZScore).is_some());
}

#[test]
fn zscore_does_not_warn_for_a_few_stray_columns_among_many() {
    // 500 columns on the source scale (RMS 1) and one at RMS 15: it holds 225 / 725 = 31% of
    // the squared norm, as the few stray columns of deep features do; no warning.
    let tgt = ndarray::Array2::from_shape_fn((4, 501), |(i, j)| {
        let sign = if i % 2 == 0 { 1.0f32 } else { -1.0 };
        if j == 500 {
            15.0 * sign
        } else {
            sign
        }
    });
    assert_eq!(preprocess_warning(&tgt, Preprocess::ZScore), None);
}

#[test]
fn l1_zscore_statistics_equal_those_of_the_scaled_copy_bit_for_bit() {
    use crate::data::{Preprocess, PreprocessStats};
    // Counts with a zero row and rows of very different totals.
    let x = ndarray::Array2::from_shape_fn((23, 7), |(i, j)| {
        if i == 4 {
            0.0
        } else {
            ((i * 31 + j * 17) % 13) as f32 * (1 + i % 5) as f32
        }
    });
    let l1 = PreprocessStats::fit(x.view(), Preprocess::L1ZScore).unwrap();
    // The reference: scale a copy row by row, then z-score statistics of the copy.
    let mut copy = x.clone();
    for mut row in copy.rows_mut() {
        let n: f64 = row.iter().map(|&v| f64::from(v).abs()).sum();
        if n > 0.0 {
            row.mapv_inplace(|v| (f64::from(v) / n) as f32);
        }
    }
    let z = PreprocessStats::fit(copy.view(), Preprocess::ZScore).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&l1.mean), bits(&z.mean));
    assert_eq!(bits(&l1.scale), bits(&z.scale));
}
