use super::*;
use ndarray::array;

/// Uncalibrated outputs (`calibrate = false`): the target rows as given.
fn outputs(target: ndarray::Array2<f32>) -> FinalOutputs {
    let hold = array![[0.9f32, 0.1], [0.2, 0.8]];
    FinalOutputs::new(hold.view(), &[0, 1], target.view(), &[0.25, 0.75], false).unwrap()
}

#[test]
fn a_kept_adaptation_is_read_on_its_confident_rows_and_the_rest_get_the_source_proportions() {
    // Rows 0–2 confident (top > 0.9), row 3 not: 3/4 read, 1/4 at pˢ.
    let o = outputs(array![[0.95f32, 0.05], [0.95, 0.05], [0.05, 0.95], [0.6, 0.4]]);
    let (est, read) = untrusted_estimate(&o, true, 0.9, 0.5).unwrap();
    assert!(read);
    let expected_0 = (0.95 + 0.95 + 0.05) / 4.0 + 0.25 / 4.0;
    assert!((est.target_prior[0] - expected_0).abs() < 1e-6, "{est:?}");
    assert!((est.target_prior.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    assert!((est.weights[0] - est.target_prior[0] / 0.25).abs() < 1e-12);
    assert!(untrusted_note(read).contains("confident target rows"));
}

#[test]
fn a_source_fit_or_an_adapted_network_confident_on_under_half_the_rows_reports_the_source_proportions(
) {
    let confident = outputs(array![[0.95f32, 0.05], [0.95, 0.05]]);
    let (est, read) = untrusted_estimate(&confident, false, 0.9, 0.5).unwrap();
    assert!(!read);
    assert_eq!(est.target_prior, vec![0.25, 0.75]);
    let unsure = outputs(array![[0.95f32, 0.05], [0.6, 0.4], [0.5, 0.5]]);
    let (est, read) = untrusted_estimate(&unsure, true, 0.9, 0.5).unwrap();
    assert!(!read);
    assert_eq!(est.target_prior, vec![0.25, 0.75]);
    assert!(untrusted_note(read).contains("reported as the source proportions"));
}

#[test]
fn the_range_holds_the_interval_the_source_and_uniform_proportions_and_every_estimate() {
    let g = PriorGuard {
        qp_prior: vec![0.6, 0.4],
        mlls_prior: vec![0.1, 0.9],
        qp_mlls_l1: 1.0,
        null_median: 0.1,
        null_critical: 0.2,
        p_value: 0.01,
        alpha: 0.05,
        box_half_width: 0.1,
        max_class_gap: 0.5,
        resolution: 0.125,
        confident_share: 0.3,
        min_confident_share: 0.5,
        disagrees: true,
        trusted: false,
        low: vec![0.5, 0.3],
        high: vec![0.7, 0.5],
        level: 0.9,
        resamples: 200,
        kept_correction: 0.0,
    };
    let (lo, hi) = untrusted_range(&[0.3, 0.5], &[0.4, 0.6], &[0.25, 0.75], &g, None);
    assert_eq!(lo, vec![0.1, 0.4]);
    assert_eq!(hi, vec![0.6, 0.9]);
    // Every estimate and pˢ above the uniform 1/2 on class 0: the range still reaches it.
    let g = PriorGuard { qp_prior: vec![0.7, 0.3], mlls_prior: vec![0.8, 0.2], ..g };
    let (lo, hi) = untrusted_range(&[0.6, 0.2], &[0.75, 0.35], &[0.65, 0.35], &g, None);
    assert_eq!((lo[0], hi[0]), (0.5, 0.8));
    assert_eq!((lo[1], hi[1]), (0.2, 0.5));
}
