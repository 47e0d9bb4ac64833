use super::*;
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

pub(crate) const C: usize = 10;
/// Two small classes (below the default floor 0.25/c = 0.025) and eight others.
pub(crate) const TRUTH: [f64; C] = [0.01, 0.02, 0.05, 0.07, 0.08, 0.1, 0.12, 0.15, 0.17, 0.23];

/// Exact label shift: a classifier with logits `3 · onehot(y) + N(0, 1)` on a uniform
/// hold-out of 200 rows and a target of 600 rows at [`TRUTH`] (exact counts).
pub(crate) fn case(seed: u64) -> (Array2<f32>, Vec<usize>, Array2<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let hy: Vec<usize> = (0..200).map(|i| i % C).collect();
    let ty: Vec<usize> =
        (0..C).flat_map(|k| std::iter::repeat_n(k, (TRUTH[k] * 600.0).round() as usize)).collect();
    let mut probs = |y: &[usize]| {
        let mut z = Array2::from_shape_fn((y.len(), C), |_| rng.sample::<f32, _>(StandardNormal));
        y.iter().enumerate().for_each(|(i, &k)| z[[i, k]] += 3.0);
        softmax_with_temperature(z.view(), 1.0)
    };
    let (hp, tp) = (probs(&hy), probs(&ty));
    (hp, hy, tp)
}

/// What `fit` reports: the estimate restricted to the classes at or above the floor.
fn reported(
    hp: &Array2<f32>,
    hy: &[usize],
    tp: &Array2<f32>,
    ps: &[f64],
) -> (ShiftEstimate, FitPrior) {
    let inp = ShiftInputs {
        source_probs: hp.view(),
        source_labels: hy,
        target_probs: tp.view(),
        source_prior: Some(ps),
    };
    let floor = 0.25 / C as f64;
    let raw = FitPrior { soft: true, floor: 0.0, support: None }.estimate(&inp).unwrap();
    let floored = FitPrior {
        soft: true,
        floor,
        support: Some(raw.target_prior.iter().map(|&p| p >= floor).collect()),
    };
    (floored.estimate(&inp).unwrap(), floored)
}

#[test]
fn intervals_cover_exact_label_shift_and_keep_width_for_floored_classes() {
    let ps = [1.0 / C as f64; C];
    let (mut covered, mut floored_classes) = (0, 0);
    for seed in 0..6 {
        let (hp, hy, tp) = case(seed);
        let (rep, floored) = reported(&hp, &hy, &tp, &ps);
        let iv = fit_prior_interval(
            PriorEstimator::Tracker,
            true,
            hp.view(),
            &hy,
            tp.view(),
            &ps,
            &rep,
            false,
            100,
            0.9,
            seed,
        )
        .unwrap();
        let inp = ShiftInputs {
            source_probs: hp.view(),
            source_labels: &hy,
            target_probs: tp.view(),
            source_prior: Some(&ps),
        };
        let old = bootstrap(&floored, &inp, 100, seed, 0.9, IntervalMethod::Basic).unwrap();
        for (k, &truth) in TRUTH.iter().enumerate() {
            assert!(
                iv.low[k] <= rep.target_prior[k] && rep.target_prior[k] <= iv.high[k],
                "holds the report: {iv:?}"
            );
            covered += usize::from(iv.low[k] <= truth && truth <= iv.high[k]);
            if rep.target_prior[k] == 0.0 {
                // Flooring every replicate gave [0, 0] (the old interval); the unfloored
                // replicates keep a positive width.
                floored_classes += 1;
                assert_eq!((old.q_low[k], old.q_high[k]), (0.0, 0.0));
                assert!(iv.high[k] > 0.0, "seed {seed} class {k}: {iv:?}");
            }
        }
    }
    assert!(
        floored_classes >= 3,
        "the cases must exercise the floor ({floored_classes} floored classes)"
    );
    let coverage = covered as f64 / (6 * C) as f64;
    assert!(coverage >= 0.85, "coverage {coverage} of nominal 0.9");
}

#[test]
fn interval_is_deterministic_whatever_the_thread_count() {
    let ps = [1.0 / C as f64; C];
    let (hp, hy, tp) = case(7);
    let (rep, _) = reported(&hp, &hy, &tp, &ps);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            fit_prior_interval(
                PriorEstimator::Tracker,
                true,
                hp.view(),
                &hy,
                tp.view(),
                &ps,
                &rep,
                true,
                50,
                0.9,
                3,
            )
            .unwrap()
        })
    };
    let (a, b) = (run(1), run(3));
    assert_eq!(
        (a.low.clone(), a.high.clone(), a.final_point.clone()),
        (b.low, b.high, b.final_point)
    );
    let other = fit_prior_interval(
        PriorEstimator::Tracker,
        true,
        hp.view(),
        &hy,
        tp.view(),
        &ps,
        &rep,
        true,
        50,
        0.9,
        4,
    )
    .unwrap();
    assert_ne!(a.high, other.high, "another seed draws other resamples");
}

#[test]
fn hull_widens_the_replicate_interval_to_the_report_only() {
    let (lo, hi) = hull_with_report(&[0.1, 0.0, 0.3], &[0.2, 0.02, 0.4], &[0.15, 0.0, 0.45]);
    assert_eq!(lo, vec![0.1, 0.0, 0.3]);
    assert_eq!(hi, vec![0.2, 0.02, 0.45]);
    let (lo, _) = hull_with_report(&[0.05], &[0.08], &[0.025]);
    assert_eq!(lo, vec![0.025], "a class pinned at the floor below its replicates");
}
