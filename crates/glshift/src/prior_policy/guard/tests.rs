use super::*;
use crate::label_shift::test_support::{self, draw};
use ndarray::Array2;

/// Strength s for every class: label shift holds between two draws of the same strength.
fn rows(labels: &[usize], strength: f32, rng: &mut ChaCha8Rng) -> Array2<f32> {
    test_support::rows(labels, [strength; 3], rng)
}

fn params() -> GuardParams {
    GuardParams {
        bootstrap: DiagnosticsParams { tau: 0.9, soft: true, resamples: 199, seed: 5 },
        alpha: 0.05,
        level: 0.9,
        min_confident_share: 0.0,
        resolution: 0.0,
    }
}

fn with_resamples(resamples: usize) -> GuardParams {
    let p = params();
    GuardParams { bootstrap: DiagnosticsParams { resamples, ..p.bootstrap }, ..p }
}

const PS: [f64; 3] = [1.0 / 3.0; 3];

#[test]
fn exact_label_shift_is_trusted_and_its_box_holds_the_truth() {
    let truth = [0.5, 0.125, 0.375];
    let (mut trusted, mut covered) = (0, 0);
    for seed in 0..4 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let yh = draw([150, 150, 150]);
        let hold = rows(&yh, 2.5, &mut rng);
        let target = rows(&draw([400, 100, 300]), 2.5, &mut rng);
        let g = prior_guard(hold.view(), &yh, target.view(), &PS, &params()).unwrap();
        trusted += usize::from(g.trusted);
        covered += (0..3).filter(|&k| g.low[k] <= truth[k] && truth[k] <= g.high[k]).count();
        for k in 0..3 {
            assert!(g.low[k] <= g.qp_prior[k] && g.qp_prior[k] <= g.high[k], "{g:?}");
        }
        assert!(g.null_median <= g.null_critical, "{g:?}");
    }
    assert!(trusted >= 3, "a 5% test distrusts at most one of four exact label shifts: {trusted}");
    assert!(covered >= 10, "90% boxes cover the truth in {covered} of 12 classes");
}

#[test]
fn a_conditional_shift_that_splits_the_estimators_is_not_trusted() {
    // The target's rows are far more confident than the source's: C (from the source) says the
    // classifier confuses classes, so BBSE-QP exaggerates the shift, while EM on the target's
    // sharp posteriors does not. Both cannot be right; the guard must say so.
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let yh = draw([300, 300, 300]);
    let hold = rows(&yh, 1.0, &mut rng);
    let target = rows(&draw([600, 300, 300]), 6.0, &mut rng);
    let g = prior_guard(hold.view(), &yh, target.view(), &PS, &params()).unwrap();
    assert!(g.p_value < 0.05 && g.qp_mlls_l1 > g.null_critical, "{g:?}");
    assert!(g.qp_mlls_l1 > g.box_half_width, "material: {g:?}");
    assert!(!g.trusted && g.disagrees, "{g:?}");
}

#[test]
fn a_disagreement_under_the_fits_resolution_on_every_class_does_not_count() {
    // The split case's disagreement is significant and beyond the box; its largest class gap
    // decides against a resolution just under and just over it, and nothing else changes.
    let (yh, hold, target) = split_case();
    let g = prior_guard(hold.view(), &yh, target.view(), &PS, &params()).unwrap();
    let gap = (0..3).map(|k| (g.qp_prior[k] - g.mlls_prior[k]).abs()).fold(0.0, f64::max);
    assert_eq!(g.max_class_gap, gap);
    assert!(!g.trusted && gap > 0.0, "{g:?}");
    let under = prior_guard(
        hold.view(),
        &yh,
        target.view(),
        &PS,
        &GuardParams { resolution: 0.999 * gap, ..params() },
    )
    .unwrap();
    assert!(!under.trusted && under.disagrees, "a gap over the resolution counts: {under:?}");
    let over = prior_guard(
        hold.view(),
        &yh,
        target.view(),
        &PS,
        &GuardParams { resolution: gap, ..params() },
    )
    .unwrap();
    assert!(over.trusted && !over.disagrees, "a gap not over the resolution does not: {over:?}");
    assert_eq!(
        (over.p_value, over.qp_mlls_l1, over.box_half_width),
        (g.p_value, g.qp_mlls_l1, g.box_half_width),
        "only the verdict moves"
    );
}

#[test]
fn a_target_the_network_is_unsure_about_is_not_trusted() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let yh = draw([150, 150, 150]);
    let hold = rows(&yh, 1.0, &mut rng);
    let target = rows(&draw([200, 100, 100]), 1.0, &mut rng);
    let loose = prior_guard(hold.view(), &yh, target.view(), &PS, &params()).unwrap();
    assert!(loose.confident_share < 0.5, "{loose:?}");
    let floor = GuardParams { min_confident_share: 0.5, ..params() };
    let strict = prior_guard(hold.view(), &yh, target.view(), &PS, &floor).unwrap();
    assert!(!strict.trusted, "confident share {} under the floor 0.5", strict.confident_share);
    assert_eq!(strict.disagrees, loose.disagrees, "the floor is not a disagreement");
    assert!(strict.low_confidence() && !loose.low_confidence());
    assert_eq!(
        (strict.p_value, strict.qp_mlls_l1),
        (loose.p_value, loose.qp_mlls_l1),
        "the floor changes only the verdict"
    );
}

#[test]
fn guard_is_deterministic_whatever_the_thread_count() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let yh = draw([60, 60, 60]);
    let hold = rows(&yh, 2.0, &mut rng);
    let target = rows(&draw([100, 50, 50]), 2.0, &mut rng);
    let run = |threads| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            prior_guard(hold.view(), &yh, target.view(), &PS, &with_resamples(60)).unwrap()
        })
    };
    assert_eq!(run(1), run(3));
}

#[test]
fn projection_lands_in_the_box_on_the_simplex_and_keeps_inside_points() {
    let (low, high) = ([0.1, 0.0, 0.2, 0.05], [0.4, 0.1, 0.6, 0.3]);
    let inside = [0.3, 0.05, 0.5, 0.15];
    let p = project_to_box(&inside, &low, &high);
    for k in 0..4 {
        assert!((p[k] - inside[k]).abs() < 1e-9, "{p:?}");
    }
    // A drift far into class 2 is pulled back to the box, mass goes to the others.
    let drifted = [0.02, 0.01, 0.95, 0.02];
    let p = project_to_box(&drifted, &low, &high);
    assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{p:?}");
    for k in 0..4 {
        assert!(p[k] >= low[k] - 1e-9 && p[k] <= high[k] + 1e-9, "{p:?}");
    }
    assert!((p[2] - 0.6).abs() < 1e-9, "{p:?}");
    // An empty set (Σlow > 1) leaves the input as it is.
    assert_eq!(project_to_box(&drifted, &[0.5; 4], &[1.0; 4]), drifted.to_vec());
}

#[test]
fn bad_inputs_are_errors() {
    let hold = Array2::<f32>::from_elem((4, 3), 1.0 / 3.0);
    assert!(prior_guard(hold.view(), &[0, 1, 2], hold.view(), &PS, &params()).is_err());
    assert!(prior_guard(hold.view(), &[0, 1, 2, 0], hold.view(), &PS, &with_resamples(1)).is_err());
}

/// A confident target whose conditionals moved (the agreement test fires, rule 2 does not).
fn split_case() -> (Vec<usize>, Array2<f32>, Array2<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let yh = draw([300, 300, 300]);
    let hold = rows(&yh, 1.0, &mut rng);
    let target = rows(&draw([600, 300, 300]), 6.0, &mut rng);
    (yh, hold, target)
}

#[test]
fn a_disagreement_alone_drops_the_correction_and_low_confidence_falls_back() {
    use DisagreementResponse as On;
    let (yh, hold, target) = split_case();
    let floor = GuardParams { min_confident_share: 0.5, ..params() };
    let g = prior_guard(hold.view(), &yh, target.view(), &PS, &floor).unwrap();
    assert!(!g.trusted && !g.low_confidence(), "only the agreement test fires: {g:?}");
    assert_eq!(g.response(GuardFallback::Source, On::NoCorrection), GuardResponse::NoCorrection);
    assert_eq!(
        g.response(GuardFallback::Source, On::Fallback),
        GuardResponse::Source,
        "the rule before"
    );
    assert_eq!(
        g.response(GuardFallback::Source, On::Shrink),
        GuardResponse::Shrink(g.kept_correction)
    );
    // The same rows under a floor above their confident share: rule 2 fires and the response
    // flips to the fallback, whatever `on_disagreement` says.
    let strict = GuardParams { min_confident_share: g.confident_share + 0.01, ..params() };
    let s = prior_guard(hold.view(), &yh, target.view(), &PS, &strict).unwrap();
    assert!(s.low_confidence(), "{s:?}");
    for on in [On::Fallback, On::NoCorrection, On::Shrink] {
        assert_eq!(s.response(GuardFallback::Source, on), GuardResponse::Source);
        assert_eq!(s.response(GuardFallback::NoCorrection, on), GuardResponse::NoCorrection);
    }
    // Exact label shift, confident enough: trusted, the correction is used.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let yh = draw([150, 150, 150]);
    let hold = rows(&yh, 4.0, &mut rng);
    let target = rows(&draw([400, 100, 300]), 4.0, &mut rng);
    let t = prior_guard(hold.view(), &yh, target.view(), &PS, &floor).unwrap();
    assert!(t.trusted, "{t:?}");
    for on in [On::Fallback, On::NoCorrection, On::Shrink] {
        assert_eq!(t.response(GuardFallback::Source, on), GuardResponse::Use);
    }
}

#[test]
fn kept_correction_is_the_share_of_the_correction_the_disagreement_leaves() {
    let (yh, hold, target) = split_case();
    let g = prior_guard(hold.view(), &yh, target.view(), &PS, &params()).unwrap();
    let correction: f64 = g.qp_prior.iter().zip(&PS).map(|(a, b)| (a - b).abs()).sum();
    assert!(correction > 0.0, "{g:?}");
    let expected = (1.0 - g.qp_mlls_l1 / correction).clamp(0.0, 1.0);
    assert!((g.kept_correction - expected).abs() < 1e-12, "{g:?}");
    assert!((0.0..=1.0).contains(&g.kept_correction));
    // Shrinking by λ keeps a prior and moves it λ of the way from pˢ to the estimate.
    let p = [0.6, 0.3, 0.1];
    assert_eq!(shrink_towards(&p, &PS, 1.0), p.to_vec());
    let half = shrink_towards(&p, &PS, 0.5);
    assert!((half.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{half:?}");
    for k in 0..3 {
        assert!((half[k] - 0.5 * (p[k] + PS[k])).abs() < 1e-12, "{half:?}");
        assert!((shrink_towards(&p, &PS, 0.0)[k] - PS[k]).abs() < 1e-15);
    }
}

/// A guard written by a build before `max_class_gap`, `resolution` and `disagrees` still loads
/// (they read 0 and false); a new one round-trips.
#[test]
fn reports_of_earlier_builds_load() {
    let (yh, hold, target) = split_case();
    let g = prior_guard(hold.view(), &yh, target.view(), &PS, &with_resamples(20)).unwrap();
    let mut value = serde_json::to_value(&g).unwrap();
    assert_eq!(serde_json::from_value::<PriorGuard>(value.clone()).unwrap(), g);
    for key in ["max_class_gap", "resolution", "disagrees"] {
        value.as_object_mut().unwrap().remove(key);
    }
    let old: PriorGuard = serde_json::from_value(value).unwrap();
    assert_eq!(
        (old.max_class_gap, old.resolution, old.disagrees, old.trusted),
        (0.0, 0.0, false, g.trusted)
    );
}
