use super::*;
use crate::kernel::{mcmd2_matrix, LabelKernel, Labelled, McmdParams};
use ndarray::Array2;
use rand::Rng;
use rand_distr::StandardNormal;

/// `n` rows of `c` Gaussian classes in d = 4 (class means fixed by a seed, unit noise), class
/// `shifted` (if any) moved by `delta` along the first axis. Rows cycle through the classes.
fn sample(
    n: usize,
    c: usize,
    shifted: Option<usize>,
    delta: f64,
    rng: &mut ChaCha8Rng,
) -> (Array2<f64>, Vec<usize>) {
    let mut mrng = ChaCha8Rng::seed_from_u64(99);
    let means = Array2::from_shape_fn((c, 4), |_| 3.0 * mrng.sample::<f64, _>(StandardNormal));
    let y: Vec<usize> = (0..n).map(|i| i % c).collect();
    let z = Array2::from_shape_fn((n, 4), |(i, j)| {
        let s = if Some(y[i]) == shifted && j == 0 { delta } else { 0.0 };
        means[[y[i], j]] + s + rng.sample::<f64, _>(StandardNormal)
    });
    (z, y)
}

fn params(permutations: usize, seed: u64) -> CondTestParams {
    CondTestParams { permutations, seed, eps: 0.01, h: 8.0, alpha: 0.05 }
}

fn one_hot(y: &[usize], c: usize) -> Array2<f64> {
    Array2::from_shape_fn((y.len(), c), |(i, k)| if y[i] == k { 1.0 } else { 0.0 })
}

#[test]
fn statistic_is_the_diagonal_of_mcmd2_matrix_with_the_linear_label_kernel() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (za, ya) = sample(37, 3, None, 0.0, &mut rng);
    let (zb, yb) = sample(52, 3, Some(2), 1.0, &mut rng);
    let p = params(9, 0);
    let t = conditional_shift_test(za.view(), &ya, zb.view(), &yb, 3, &p).unwrap();
    let (oa, ob) = (one_hot(&ya, 3), one_hot(&yb, 3));
    let mp = McmdParams { eps: p.eps, label_kernel: LabelKernel::Linear };
    let d = mcmd2_matrix(
        &Labelled::new(za.view(), oa.view()),
        &Labelled::new(zb.view(), ob.view()),
        &mp,
        p.h,
    )
    .unwrap();
    for k in 0..3 {
        let s = t.per_class[k].mcmd2.unwrap();
        assert!(
            (s - d[[k, k]]).abs() < 1e-9 * d[[k, k]].abs().max(1e-6),
            "class {k}: {s} vs {}",
            d[[k, k]]
        );
    }
}

#[test]
fn p_values_are_calibrated_under_the_null_and_small_under_a_shift() {
    // 300 null draws × 3 classes: the share of p < 0.05 must be near 0.05.
    let (mut below, mut total) = (0usize, 0usize);
    for r in 0..300u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(1000 + r);
        let (za, ya) = sample(45, 3, None, 0.0, &mut rng);
        let (zb, yb) = sample(30, 3, None, 0.0, &mut rng);
        let t = conditional_shift_test(za.view(), &ya, zb.view(), &yb, 3, &params(99, r)).unwrap();
        for c in &t.per_class {
            total += 1;
            below += usize::from(c.p_value.unwrap() < 0.05);
        }
    }
    let share = below as f64 / total as f64;
    assert!((0.02..=0.08).contains(&share), "null share of p < 0.05: {share}");
    // A one-σ shift of class 1 only: class 1 rejected, the others not.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (za, ya) = sample(150, 3, None, 0.0, &mut rng);
    let (zb, yb) = sample(150, 3, Some(1), 1.0, &mut rng);
    let t = conditional_shift_test(za.view(), &ya, zb.view(), &yb, 3, &params(999, 3)).unwrap();
    assert!(t.per_class[1].p_value.unwrap() <= 0.002 && t.per_class[1].reject, "{t:?}");
    assert!(t.reject_any);
    assert!(!t.per_class[0].reject && !t.per_class[2].reject, "{t:?}");
}

#[test]
fn deterministic_per_seed_whatever_the_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (za, ya) = sample(60, 4, None, 0.0, &mut rng);
    let (zb, yb) = sample(60, 4, Some(0), 0.5, &mut rng);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            conditional_shift_test(za.view(), &ya, zb.view(), &yb, 4, &params(199, 11)).unwrap()
        })
    };
    assert_eq!(run(1), run(3));
    let other =
        conditional_shift_test(za.view(), &ya, zb.view(), &yb, 4, &params(199, 12)).unwrap();
    assert_ne!(
        run(1).per_class.iter().map(|c| c.p_value).collect::<Vec<_>>(),
        other.per_class.iter().map(|c| c.p_value).collect::<Vec<_>>()
    );
}

#[test]
fn holm_matches_a_hand_computed_example_and_skips_untested_classes() {
    let adj = holm(&[Some(0.01), None, Some(0.04), Some(0.03)]);
    // Sorted 0.01, 0.03, 0.04 (m = 3): 0.03, max(0.03, 0.06) = 0.06, max(0.06, 0.04) = 0.06.
    let want = [Some(0.03), None, Some(0.06), Some(0.06)];
    for (a, w) in adj.iter().zip(want) {
        assert_eq!(a.is_some(), w.is_some());
        if let (Some(a), Some(w)) = (a, w) {
            assert!((a - w).abs() < 1e-12, "{adj:?}");
        }
    }
}

#[test]
fn empty_classes_are_untested_and_bad_inputs_are_errors() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let (za, ya) = sample(20, 2, None, 0.0, &mut rng);
    let (zb, _) = sample(20, 2, None, 0.0, &mut rng);
    let yb = vec![0usize; 20];
    let t = conditional_shift_test(za.view(), &ya, zb.view(), &yb, 3, &params(19, 0)).unwrap();
    assert_eq!(
        (
            t.per_class[1].n_target,
            t.per_class[1].testable,
            t.per_class[1].p_value,
            t.per_class[1].reject
        ),
        (0, false, None, false)
    );
    assert_eq!((t.per_class[2].testable, t.per_class[2].mcmd2), (false, None));
    assert!(t.per_class[0].testable && t.per_class[0].p_value.is_some());
    assert_eq!((t.testable_classes, t.min_rows_per_class), (1, MIN_ROWS_PER_CLASS));
    let e =
        conditional_shift_test(za.view(), &ya[..5], zb.view(), &yb, 2, &params(19, 0)).unwrap_err();
    assert!(e.to_string().contains("source assignments"), "{e}");
    let e =
        conditional_shift_test(za.view(), &ya, zb.view(), &[5; 20], 2, &params(19, 0)).unwrap_err();
    assert!(e.to_string().contains("target assignment") && e.to_string().contains("row 0"), "{e}");
    let e = conditional_shift_test(za.view(), &ya, zb.view(), &yb, 2, &params(0, 0)).unwrap_err();
    assert!(e.to_string().contains("permutation"), "{e}");
    let mut p = params(9, 0);
    p.h = 0.0;
    assert!(conditional_shift_test(za.view(), &ya, zb.view(), &yb, 2, &p)
        .unwrap_err()
        .to_string()
        .contains("bandwidth"));
}

#[test]
fn a_class_below_the_minimum_is_not_testable_and_left_out_of_holm() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (za, ya) = sample(60, 3, None, 0.0, &mut rng);
    // Target: class 0 keeps exactly the minimum, class 1 all its rows, class 2 one row fewer
    // than the minimum, moved far away (a shift the test must not claim, nor call "no shift").
    let (zb_all, yb_all) = sample(60, 3, Some(2), 50.0, &mut rng);
    let mut kept = [0usize; 3];
    let quota = [MIN_ROWS_PER_CLASS, usize::MAX, MIN_ROWS_PER_CLASS - 1];
    let rows: Vec<usize> = (0..yb_all.len())
        .filter(|&i| {
            let k = yb_all[i];
            kept[k] += 1;
            kept[k] <= quota[k]
        })
        .collect();
    let (zb, yb) =
        (zb_all.select(Axis(0), &rows), rows.iter().map(|&i| yb_all[i]).collect::<Vec<_>>());
    let t = conditional_shift_test(za.view(), &ya, zb.view(), &yb, 3, &params(99, 1)).unwrap();
    let c2 = &t.per_class[2];
    assert_eq!(
        (c2.n_target, c2.testable, c2.mcmd2, c2.p_value, c2.p_adjusted, c2.reject),
        (MIN_ROWS_PER_CLASS - 1, false, None, None, None, false)
    );
    assert_eq!(t.per_class[0].n_target, MIN_ROWS_PER_CLASS);
    assert!(
        t.per_class[0].testable && t.per_class[1].testable,
        "exactly the minimum is testable: {t:?}"
    );
    assert_eq!(t.testable_classes, 2);
    // Holm over the two testable classes only (m = 2, not 3).
    let want = holm(&[t.per_class[0].p_value, t.per_class[1].p_value]);
    assert_eq!([t.per_class[0].p_adjusted, t.per_class[1].p_adjusted], [want[0], want[1]]);
    assert!(!t.reject_any, "the untestable shifted class must not make a rejection: {t:?}");
}
