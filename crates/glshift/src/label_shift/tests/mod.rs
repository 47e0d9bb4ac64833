//! Tests of the BBSE QP and of the whole pipeline on synthetic label shift.

mod estimators;

use ndarray::{Array2, ArrayView2};
use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

/// Random distribution of length c with entries ≥ `min`.
fn simplex(rng: &mut ChaCha8Rng, c: usize, min: f64) -> Vec<f64> {
    let v: Vec<f64> = (0..c).map(|_| min + rng.random::<f64>()).collect();
    let s: f64 = v.iter().sum();
    v.iter().map(|x| x / s).collect()
}

/// `C = cond · diag(pˢ)` with a random column-stochastic `cond` whose diagonal is boosted by `diag`.
fn random_confusion(rng: &mut ChaCha8Rng, ps: &[f64], diag: f64) -> Array2<f64> {
    let c = ps.len();
    let mut m = Array2::from_shape_fn((c, c), |_| rng.random::<f64>());
    for k in 0..c {
        m[[k, k]] += diag;
        let s = m.column(k).sum();
        m.column_mut(k).mapv_inplace(|v| v / s * ps[k]);
    }
    m
}

fn gradient(cm: ArrayView2<f64>, q: &[f64], w: &[f64]) -> Vec<f64> {
    let c = q.len();
    let r: Vec<f64> =
        (0..c).map(|j| (0..c).map(|k| cm[[j, k]] * w[k]).sum::<f64>() - q[j]).collect();
    (0..c).map(|k| 2.0 * (0..c).map(|j| cm[[j, k]] * r[j]).sum::<f64>()).collect()
}

#[test]
fn qp_solution_satisfies_kkt_conditions() {
    let mut active_seen = 0;
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let c = 3 + (seed as usize % 8);
        let ps = simplex(&mut rng, c, 0.1);
        let cm = random_confusion(&mut rng, &ps, 2.0);
        let q = simplex(&mut rng, c, 0.0);
        let est = bbse_qp(cm.view(), &q, &ps).unwrap();
        let w = &est.weights;
        let g = gradient(cm.view(), &q, w);
        let scale = g.iter().fold(1e-3f64, |a, v| a.max(v.abs()));
        // λ from the free components (w_k > 0 ⇒ ν_k = 0 ⇒ g_k = λ pˢ_k).
        let free: Vec<usize> = (0..c).filter(|&k| w[k] > 1e-6).collect();
        assert!(!free.is_empty());
        let lambda = free.iter().map(|&k| g[k] * ps[k]).sum::<f64>()
            / free.iter().map(|&k| ps[k] * ps[k]).sum::<f64>();
        for k in 0..c {
            let nu = g[k] - lambda * ps[k]; // stationarity: g − λpˢ − ν = 0
            assert!(nu > -1e-8 * scale, "seed {seed} k {k}: ν = {nu}");
            assert!((nu * w[k]).abs() < 1e-8 * scale, "seed {seed} k {k}: ν w = {}", nu * w[k]);
            assert!(w[k] >= 0.0);
            if w[k] <= 1e-6 {
                active_seen += 1;
            }
        }
        let wp: f64 = w.iter().zip(&ps).map(|(a, b)| a * b).sum();
        assert!((wp - 1.0).abs() < 1e-10);
    }
    assert!(active_seen > 0, "no active bound: complementary slackness untested");
}

#[test]
fn qp_weights_feasible_and_zero_weights_are_tiny() {
    let mut zeros = 0;
    for seed in 0..20 {
        let mut rng = ChaCha8Rng::seed_from_u64(100 + seed);
        let c = 4 + (seed as usize % 6);
        let ps = simplex(&mut rng, c, 0.1);
        let cm = random_confusion(&mut rng, &ps, 3.0);
        // target with two absent classes, predicted through C, plus noise
        let mut pt = simplex(&mut rng, c, 0.1);
        pt[0] = 0.0;
        pt[c - 1] = 0.0;
        let s: f64 = pt.iter().sum();
        let wt: Vec<f64> = pt.iter().zip(&ps).map(|(p, s0)| p / s / s0).collect();
        let mut q: Vec<f64> = (0..c).map(|j| (0..c).map(|k| cm[[j, k]] * wt[k]).sum()).collect();
        // fewer predictions of the absent classes than C explains: the bound is strictly active
        q.iter_mut().for_each(|v| *v += 0.005 * (rng.random::<f64>() - 0.5));
        q[0] *= 0.5;
        q[c - 1] *= 0.5;
        let est = bbse_qp(cm.view(), &q, &ps).unwrap();
        let wp: f64 = est.weights.iter().zip(&ps).map(|(a, b)| a * b).sum();
        assert!((wp - 1.0).abs() < 1e-10, "wᵀpˢ = {wp}");
        assert!(est.weights.iter().all(|&w| w >= 0.0 && w.is_finite()));
        assert!((est.target_prior.iter().sum::<f64>() - 1.0).abs() < 1e-10);
        let objective = est.objective.expect("bbse_qp reports its objective");
        assert!(objective.is_finite() && objective >= 0.0);
        // a weight is either clearly positive or essentially exactly 0
        for &w in &est.weights {
            assert!(!(1e-9..=1e-4).contains(&w), "seed {seed}: ambiguous weight {w}");
            zeros += (w < 1e-9) as usize;
        }
    }
    assert!(zeros > 0, "no zero weight produced: the tolerance check is vacuous");
}

#[test]
fn qp_recovers_exact_weights_when_q_is_in_range() {
    for seed in 0..10 {
        let mut rng = ChaCha8Rng::seed_from_u64(200 + seed);
        let c = 3 + seed as usize;
        let ps = simplex(&mut rng, c, 0.2);
        let cm = random_confusion(&mut rng, &ps, 4.0);
        let mut pt = simplex(&mut rng, c, 0.1);
        if seed % 2 == 0 {
            pt[1] = 0.0; // an absent class (degenerate bound)
            let s: f64 = pt.iter().sum();
            pt.iter_mut().for_each(|v| *v /= s);
        }
        let w_star: Vec<f64> = pt.iter().zip(&ps).map(|(a, b)| a / b).collect();
        let q: Vec<f64> = (0..c).map(|j| (0..c).map(|k| cm[[j, k]] * w_star[k]).sum()).collect();
        let est = bbse_qp(cm.view(), &q, &ps).unwrap();
        for (k, (w, ws)) in est.weights.iter().zip(&w_star).enumerate() {
            assert!((w - ws).abs() < 1e-8, "seed {seed} k {k}: {w} vs {ws}");
        }
        assert!(est.objective.unwrap() < 1e-14);
    }
}

#[test]
fn qp_gives_zero_weight_to_class_absent_from_source() {
    let ps = [0.5, 0.0, 0.5];
    let cm = ndarray::array![[0.4, 0.0, 0.1], [0.05, 0.0, 0.05], [0.05, 0.0, 0.35]];
    let est = bbse_qp(cm.view(), &[0.3, 0.1, 0.6], &ps).unwrap();
    assert_eq!(est.weights[1], 0.0);
    assert!(est.weights.iter().all(|w| w.is_finite()));
}

#[test]
fn qp_rejects_bad_inputs() {
    let ps = [0.5, 0.5];
    let cm = ndarray::array![[0.4, 0.1], [0.1, 0.4]];
    assert!(bbse_qp(cm.view(), &[0.5, 0.5, 0.0], &ps).is_err());
    assert!(bbse_qp(cm.view(), &[0.5, 0.5], &[0.3, 0.3, 0.4]).is_err());
    assert!(bbse_qp(cm.view(), &[0.5, f64::NAN], &ps).is_err());
    assert!(bbse_qp(cm.view(), &[0.5, 0.5], &[0.5, 0.6]).is_err());
    assert!(bbse_qp(cm.view(), &[0.5, 0.5], &[]).is_err());
    let mut bad = cm.clone();
    bad[[0, 1]] = f64::INFINITY;
    assert!(bbse_qp(bad.view(), &[0.5, 0.5], &ps).is_err());
    let rect = Array2::<f64>::zeros((2, 3));
    assert!(bbse_qp(rect.view(), &[0.5, 0.5], &ps).is_err());
}

/// Labels from `prior` and one-hot predictions through a classifier with accuracy `acc`.
fn simulate(rng: &mut ChaCha8Rng, prior: &[f64], acc: f64, n: usize) -> (Vec<usize>, Array2<f32>) {
    let c = prior.len();
    let ydist = WeightedIndex::new(prior).unwrap();
    let labels: Vec<usize> = (0..n).map(|_| ydist.sample(rng)).collect();
    let mut probs = Array2::<f32>::zeros((n, c));
    for (i, &y) in labels.iter().enumerate() {
        let pred =
            if rng.random::<f64>() < acc { y } else { (y + 1 + rng.random_range(0..c - 1)) % c };
        probs[[i, pred]] = 1.0;
    }
    (labels, probs)
}

#[test]
fn pipeline_recovers_known_target_prior_on_synthetic_shift() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let ps_true = [0.3, 0.25, 0.2, 0.15, 0.1];
    let pt_true = [0.4, 0.0, 0.3, 0.2, 0.1];
    // Sampling noise alone: over 40 seeds, ℓ1 had median 0.016 and max 0.036 at n = 20 000
    // per domain, median 0.008 and max 0.015 at n = 100 000; hence n = 100 000 for 0.02.
    let n = 100_000;
    let (ys, probs_s) = simulate(&mut rng, &ps_true, 0.8, n);
    let (_, probs_t) = simulate(&mut rng, &pt_true, 0.8, n);
    let ps = class_prior(&ys, 5).unwrap();
    let conf = confusion_matrix(probs_s.view(), &ys, &ps, false).unwrap();
    assert!(conf.filled_classes.is_empty());
    let q = predicted_distribution(probs_t.view(), false).unwrap();
    let est = bbse_qp(conf.matrix.view(), &q, &ps).unwrap();
    let l1: f64 = est.target_prior.iter().zip(pt_true).map(|(a, b)| (a - b).abs()).sum();
    assert!(l1 < 0.02, "ℓ1 = {l1}, estimate {:?}", est.target_prior);
    let floored = apply_prior_floor(&est, &ps, 0.03);
    assert_eq!(floored.target_prior[1], 0.0);
    let l1f: f64 = floored.target_prior.iter().zip(pt_true).map(|(a, b)| (a - b).abs()).sum();
    assert!(l1f < 0.02, "floored ℓ1 = {l1f}");
}

#[test]
fn filled_class_is_not_erased_by_the_qp() {
    // Class 2 has no hold-out row but 80% of the target. With a zero column nothing in C can
    // explain q_2 (objective ≈ 0.5, p̂ᵗ_2 left to the solver's centring); the filled column
    // pˢ_2 e_2 explains it (biased low only by the 90% accuracy it assumes to be 100%).
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let ps = [0.4, 0.4, 0.2];
    let (ys, probs_s) = simulate(&mut rng, &[0.5, 0.5, 0.0], 0.9, 5_000);
    let (_, probs_t) = simulate(&mut rng, &[0.1, 0.1, 0.8], 0.9, 5_000);
    let conf = confusion_matrix(probs_s.view(), &ys, &ps, false).unwrap();
    assert_eq!(conf.filled_classes, vec![2]);
    let q = predicted_distribution(probs_t.view(), false).unwrap();
    let est = bbse_qp(conf.matrix.view(), &q, &ps).unwrap();
    assert!(est.objective.unwrap() < 1e-6, "q not explained: {:?}", est.objective);
    assert!((est.target_prior[2] - 0.8).abs() < 0.1, "{:?}", est.target_prior);
}

#[test]
fn qp_reports_numerical_failure_instead_of_nan() {
    // Finite entries whose products overflow: the solver cannot succeed; no NaN may leak.
    let cm = ndarray::array![[1e200, 1e199], [1e199, 1e200]];
    match bbse_qp(cm.view(), &[0.5, 0.5], &[0.5, 0.5]) {
        Err(e) => {
            assert!(matches!(e, crate::Error::Numerical { .. }), "{e}");
            assert!(e.to_string().contains("status"), "{e}");
        }
        Ok(est) => panic!("expected an error, got {est:?}"),
    }
}

#[test]
fn shift_estimates_of_the_qp_and_of_an_estimator_read_back_as_written() {
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let ps = simplex(&mut rng, 4, 0.2);
    let cm = random_confusion(&mut rng, &ps, 4.0);
    let q: Vec<f64> = (0..4).map(|j| (0..4).map(|k| cm[[j, k]]).sum()).collect();
    let qp = bbse_qp(cm.view(), &q, &ps).unwrap();
    assert!(qp.objective.is_some() && qp.iterations.is_none());
    let (ys, probs_s) = simulate(&mut rng, &[0.4, 0.6], 0.8, 400);
    let (_, probs_t) = simulate(&mut rng, &[0.7, 0.3], 0.8, 400);
    // Soften the one-hot rows (two classes: rows still sum to 1) so that calibration has a finite optimum.
    let (probs_s, probs_t) = (probs_s.mapv(|v| 0.9 * v + 0.05), probs_t.mapv(|v| 0.9 * v + 0.05));
    let inp = ShiftInputs {
        source_probs: probs_s.view(),
        source_labels: &ys,
        target_probs: probs_t.view(),
        source_prior: None,
    };
    let em = Mlls::default().estimate(&inp).unwrap();
    assert!(em.objective.is_none() && em.iterations.is_some());
    for est in [qp, em] {
        let json = serde_json::to_string(&est).unwrap();
        let back: ShiftEstimate = serde_json::from_str(&json).unwrap();
        assert_eq!(back, est, "{json}");
    }
    // The optional parts may be absent from a record.
    let bare: ShiftEstimate =
        serde_json::from_str(r#"{"weights":[2.0,0.0],"target_prior":[1.0,0.0]}"#).unwrap();
    assert_eq!((bare.objective, bare.iterations, bare.warnings.len()), (None, None, 0));
}
