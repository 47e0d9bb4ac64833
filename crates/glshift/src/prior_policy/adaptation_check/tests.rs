use super::*;
use crate::label_shift::test_support::{draw, rows};
use crate::prior_policy::{prior_guard, DiagnosticsParams, GuardParams};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const PS: [f64; 3] = [1.0 / 3.0; 3];

fn guard_params() -> GuardParams {
    GuardParams {
        bootstrap: DiagnosticsParams { tau: 0.9, soft: true, resamples: 99, seed: 2 },
        alpha: 0.05,
        level: 0.9,
        min_confident_share: 0.5,
        resolution: 0.0,
    }
}

fn check_params() -> CheckParams {
    CheckParams { tau: 0.9, soft: true, calibrate: true, min_share: 0.5 }
}

/// A network's hold-out (150 rows a class) and target (400/100/300 rows) probabilities:
/// `hold` and `target` are the per-class strengths of the true class's logit, equal under
/// label shift, different under a conditional shift.
fn network(hold: [f32; 3], target: [f32; 3], seed: u64) -> (Array2<f32>, Vec<usize>, Array2<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let yh = draw([150, 150, 150]);
    let h = rows(&yh, hold, &mut rng);
    let t = rows(&draw([400, 100, 300]), target, &mut rng);
    (h, yh, t)
}

use ndarray::Array2;

fn check_of(
    before: &PriorGuard,
    after: &(Array2<f32>, Vec<usize>, Array2<f32>),
) -> AdaptationCheck {
    let (h, yh, t) = after;
    adaptation_check(before, h.view(), yh, t.view(), &PS, &check_params()).unwrap()
}

/// The guard on `net`'s probabilities temperature-scaled on its hold-out, as the training loop
/// hands them to it.
fn guard_of(net: &(Array2<f32>, Vec<usize>, Array2<f32>)) -> PriorGuard {
    let (h, yh, t) = net;
    let (hs, ts) =
        super::super::diagnostics::recalibrate_on_holdout(h.view(), yh, t.view()).unwrap();
    prior_guard(hs.view(), yh, ts.view(), &PS, &guard_params()).unwrap()
}

#[test]
fn an_adaptation_that_restores_label_shift_is_kept_and_one_that_breaks_it_is_not() {
    // Before: the target's classes are recognised unevenly (a conditional shift) and weakly.
    let shifted = network([4.0; 3], [0.5, 3.5, 1.0], 11);
    // After: the target is recognised as the hold-out is (label shift), strongly.
    let aligned = network([4.0; 3], [4.0; 3], 12);
    let before = guard_of(&shifted);
    let kept = check_of(&before, &aligned);
    assert!(kept.kept, "{kept:?}");
    // The other way round: from an aligned network to a shifted one.
    let broke = check_of(&guard_of(&aligned), &shifted);
    assert!(!broke.kept, "{broke:?}");
    for c in [&kept, &broke] {
        let (d, m) = (c.qp_mlls_l1_after.unwrap(), c.confident_share_after.unwrap());
        let rule = d <= c.qp_mlls_l1_before && m >= c.confident_share_before && m >= 0.5;
        assert_eq!(c.kept, rule, "{c:?}");
        for p in [&c.qp_prior_after, &c.mlls_prior_after] {
            assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-6 && p.iter().all(|&v| v >= 0.0));
        }
    }
}

#[test]
fn the_check_reads_the_guard_values_and_measures_the_same_quantities_on_the_same_network() {
    // The unchanged network: D and the confident share after are the guard's own (the guard
    // reads temperature-scaled probabilities, the check scales the plain ones itself).
    let net = network([3.0; 3], [1.0, 2.5, 1.5], 4);
    let before = guard_of(&net);
    let same = check_of(&before, &net);
    assert_eq!(same.qp_mlls_l1_before, before.qp_mlls_l1);
    assert_eq!(same.confident_share_before, before.confident_share);
    assert!((same.qp_mlls_l1_after.unwrap() - before.qp_mlls_l1).abs() < 1e-4, "{same:?}");
    assert!((same.confident_share_after.unwrap() - before.confident_share).abs() < 1e-9);
}

#[test]
fn an_adapted_network_confident_on_under_half_the_target_is_not_kept() {
    // Uncalibrated, so that the strengths set the shares. Before: a shifted target recognised
    // on one class; after: label shift (D small) but few confident rows.
    let (h, yh, t) = network([3.0; 3], [0.2, 4.0, 0.2], 21);
    let before = prior_guard(h.view(), &yh, t.view(), &PS, &guard_params()).unwrap();
    let (h2, yh2, t2) = network([1.8; 3], [1.8; 3], 22);
    let p = CheckParams { calibrate: false, ..check_params() };
    let c = adaptation_check(&before, h2.view(), &yh2, t2.view(), &PS, &p).unwrap();
    let m = c.confident_share_after.unwrap();
    assert!(m < 0.5 && m >= c.confident_share_before, "{c:?}");
    assert!(c.qp_mlls_l1_after.unwrap() <= c.qp_mlls_l1_before, "only the floor fails: {c:?}");
    assert!(!c.kept, "{c:?}");
}

#[test]
fn a_check_that_could_not_be_made_is_not_passed_and_says_so() {
    let before = guard_of(&network([4.0; 3], [0.5, 3.5, 1.0], 1));
    let c = AdaptationCheck::not_made(&before);
    assert!(!c.kept && c.qp_mlls_l1_after.is_none());
    assert!(c.summary().contains("no hold-out") && c.summary().contains("redone as `source`"));
}
