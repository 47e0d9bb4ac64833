//! KMM: the QP's solution against its KKT conditions, box and sum band; β ≈ 1 when the two
//! samples are the same; the weighted source mean moving to the target's under a covariate
//! shift; errors for bad settings and inputs; the per-row cross-entropy; a whole fit,
//! reproducible with the seed.

use ndarray::{Array1, Array2, ArrayView2, Axis};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::{gaussian_gram, kmm_weights, qp, Kmm, KmmConfig};
use crate::config::FitConfig;
use crate::data::Rows;
use crate::methods::method::{AdaptInputs, CeWeights, Method};
use crate::methods::MethodKind;
use crate::nn::NetworkConfig;
use crate::train::{fit, source_cross_entropy, FitData, Stage};
use crate::Error;

/// n rows of N(mean, 1) in d dimensions, f32.
fn normal(n: usize, d: usize, mean: f32, rng: &mut ChaCha8Rng) -> Array2<f32> {
    Array2::from_shape_fn((n, d), |_| {
        let v: f64 = StandardNormal.sample(rng);
        mean + v as f32
    })
}

/// Checks box, sum band and the KKT conditions of the QP at `beta`: with g = Kβ − κ and ν the
/// sum constraint's multiplier, gᵢ + ν = 0 inside the box, ≥ 0 at βᵢ = 0, ≤ 0 at βᵢ = B; ν = 0
/// unless Σβ is at an end of its band (≥ 0 at the top, ≤ 0 at the bottom). An interior point
/// stops near, not on, the bounds: a row whose gᵢ + ν is clearly nonzero must lie within
/// 1e-3 of the bound its sign names (relative to B at the top).
fn check_kkt(k: ArrayView2<f64>, kappa: &[f64], beta: &[f64], bound: f64, eps: f64) {
    let n = beta.len() as f64;
    let scale = kappa.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let tol = 1e-5 * scale;
    assert!(beta.iter().all(|&b| (0.0..=bound).contains(&b)), "box");
    let sum: f64 = beta.iter().sum();
    assert!(sum <= n * (1.0 + eps) + 1e-6 * n && sum >= n * (1.0 - eps) - 1e-6 * n, "sum {sum}");
    let g = k.dot(&Array1::from(beta.to_vec())) - Array1::from(kappa.to_vec());
    let inside: Vec<usize> =
        (0..beta.len()).filter(|&i| beta[i] > 1e-2 && beta[i] < bound * (1.0 - 1e-2)).collect();
    assert!(!inside.is_empty(), "no weight inside the box");
    let nu = -inside.iter().map(|&i| g[i]).sum::<f64>() / inside.len() as f64;
    for (i, (&b, &gi)) in beta.iter().zip(&g).enumerate() {
        let r = gi + nu;
        if r > tol {
            assert!(b <= 1e-3, "row {i}: g + ν = {r} > 0 but β = {b} is off its lower bound");
        } else if r < -tol {
            assert!(b >= bound * (1.0 - 1e-3), "row {i}: g + ν = {r} < 0 but β = {b} is under B");
        }
    }
    let (top, bottom) = (n * (1.0 + eps), n * (1.0 - eps));
    if sum < top - 1e-4 * n && sum > bottom + 1e-4 * n {
        assert!(nu.abs() <= tol, "sum inside its band but ν = {nu}");
    } else if sum >= top - 1e-4 * n {
        assert!(nu >= -tol, "sum at the top, ν = {nu}");
    } else {
        assert!(nu <= tol, "sum at the bottom, ν = {nu}");
    }
}

fn problem(xs: &Array2<f32>, xt: &Array2<f32>, gamma: f64) -> (Array2<f64>, Vec<f64>) {
    let (xs, xt) = (xs.mapv(f64::from), xt.mapv(f64::from));
    let k = gaussian_gram(xs.view(), xs.view(), gamma);
    let r = xs.nrows() as f64 / xt.nrows() as f64;
    let kappa = gaussian_gram(xs.view(), xt.view(), gamma).sum_axis(Axis(1)).mapv(|v| r * v);
    (k, kappa.to_vec())
}

#[test]
fn the_qp_solution_meets_its_kkt_conditions_box_and_sum() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let (xs, xt) = (normal(90, 4, 0.0, &mut rng), normal(70, 4, 0.8, &mut rng));
    let (k, kappa) = problem(&xs, &xt, 0.25);
    // The defaults, a tight box (rows at B) and a narrow sum band (the band's end active).
    for (bound, eps) in [(1000.0, (90f64.sqrt() - 1.0) / 90f64.sqrt()), (3.0, 0.3), (50.0, 0.01)] {
        let beta = qp::solve(k.view(), &kappa, bound, eps).unwrap();
        check_kkt(k.view(), &kappa, &beta, bound, eps);
    }
}

#[test]
fn identical_samples_give_weights_near_one() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let x = normal(60, 5, 0.0, &mut rng);
    let w = kmm_weights(x.view(), x.view(), &KmmConfig::default()).unwrap();
    let worst = w.beta.iter().map(|b| (b - 1.0).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-2, "max |β − 1| = {worst}");
    assert!(w.mmd2 < 1e-8, "MMD² {}", w.mmd2);
}

#[test]
fn under_covariate_shift_the_weighted_source_mean_moves_to_the_target() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let d = 3;
    let (xs, xt) = (normal(300, d, 0.0, &mut rng), normal(300, d, 1.0, &mut rng));
    let w = kmm_weights(xs.view(), xt.view(), &KmmConfig::default()).unwrap();
    let beta = Array1::from(w.beta.clone());
    let xs64 = xs.mapv(f64::from);
    let weighted = xs64.t().dot(&beta) / beta.sum();
    let plain = xs64.mean_axis(Axis(0)).unwrap();
    let target = xt.mapv(f64::from).mean_axis(Axis(0)).unwrap();
    let dist = |a: &Array1<f64>| (a - &target).mapv(|v| v * v).sum().sqrt();
    assert!(
        dist(&weighted) < 0.5 * dist(&plain),
        "weighted mean {weighted} vs plain {plain}, target {target}"
    );
    let (k, kappa) = problem(&xs, &xt, 1.0 / d as f64);
    let eps = KmmConfig::default().eps(300);
    check_kkt(k.view(), &kappa, &w.beta, 1000.0, eps);
}

#[test]
fn bad_settings_and_inputs_are_errors() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let (xs, xt) = (normal(20, 3, 0.0, &mut rng), normal(15, 3, 0.5, &mut rng));
    // Every βᵢ ≤ 0.5 cannot sum to n_s·(1 − 0.1).
    let infeasible = KmmConfig { weight_bound: 0.5, sum_tolerance: Some(0.1), gamma: None };
    let err = kmm_weights(xs.view(), xt.view(), &infeasible).unwrap_err();
    assert!(matches!(err, Error::Param { name: "baselines.kmm.weight_bound", .. }), "{err}");
    assert!(err.to_string().contains("infeasible"), "{err}");
    let mut cfg = FitConfig::default();
    cfg.baselines.kmm = infeasible;
    assert!(cfg.validate().is_err());
    let bad_gamma = KmmConfig { gamma: Some(0.0), ..Default::default() };
    assert!(matches!(bad_gamma.validate(), Err(Error::Param { name: "baselines.kmm.gamma", .. })));
    let ok = KmmConfig::default();
    let mut nan = xs.clone();
    nan[[3, 1]] = f32::NAN;
    assert!(kmm_weights(nan.view(), xt.view(), &ok).is_err());
    assert!(kmm_weights(xs.view(), xt.slice(ndarray::s![.., ..2]), &ok).is_err());
    assert!(kmm_weights(xs.view(), xt.slice(ndarray::s![..0, ..]), &ok).is_err());
    let k = Array2::<f64>::eye(3);
    assert!(qp::solve(k.view(), &[1.0, 2.0], 10.0, 0.1).is_err(), "κ shorter than K");
}

#[test]
fn a_step_without_weights_or_with_other_rows_is_an_error() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let (xs, xt) = (normal(12, 3, 0.0, &mut rng), normal(10, 3, 0.5, &mut rng));
    let (logits, none) = (Array2::<f32>::zeros((12, 2)), Array2::<f32>::zeros((0, 0)));
    let ys = vec![0; 12];
    let inp = |ys: &'static [usize]| AdaptInputs {
        zs: none.view(),
        logits_s: logits.view(),
        ys,
        zt: none.view(),
        logits_t: none.view(),
        target_probs: none.view(),
        progress: 0.0,
        estimate: None,
        confident: &[],
        pseudo_labels: &[],
        prior: &[0.5, 0.5],
    };
    let ys: &'static [usize] = Box::leak(ys.into_boxed_slice());
    let mut m = Kmm::new(&KmmConfig::default());
    assert!(m.reads_features());
    assert!(m.step(&inp(ys)).is_err(), "no weights yet");
    m.set_features(xs.view(), xt.view()).unwrap();
    let out = m.step(&inp(ys)).unwrap();
    let CeWeights::PerRow(beta) = &out.ce_weights else { panic!("{:?}", out.ce_weights) };
    assert_eq!(beta, &m.weights().unwrap().beta);
    assert!(out.terms.is_empty() && out.transfer.is_some_and(|t| t.lambda == 0.0));
    assert!(m.step(&inp(&ys[..11])).is_err(), "11 rows for 12 weights");
}

#[test]
fn per_row_weights_equal_to_class_weights_give_the_weighted_mean() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let logits = normal(9, 3, 0.0, &mut rng);
    let y: Vec<usize> = (0..9).map(|i| i % 3).collect();
    let w = vec![0.5, 2.0, 1.25];
    let rows: Vec<f64> = y.iter().map(|&k| w[k]).collect();
    let a = source_cross_entropy(logits.view(), &y, &CeWeights::WeightedMean(w));
    let b = source_cross_entropy(logits.view(), &y, &CeWeights::PerRow(rows));
    assert_eq!(a.0.to_bits(), b.0.to_bits());
    assert_eq!(a.1, b.1);
}

#[test]
fn a_kmm_fit_runs_and_is_reproducible_with_the_seed() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let n = 160;
    let ys: Vec<usize> = (0..n).map(|i| i % 3).collect();
    let yt: Vec<usize> = (0..120).map(|i| i % 3).collect();
    let mut xs = normal(n, 5, 0.0, &mut rng);
    let mut xt = normal(120, 5, 0.6, &mut rng);
    for (x, y) in [(&mut xs, &ys), (&mut xt, &yt)] {
        for (mut row, &k) in x.rows_mut().into_iter().zip(y.iter()) {
            row[k] += 3.0;
        }
    }
    let data = FitData {
        source_x: Rows::Memory(xs.view()),
        source_y: &ys,
        target_x: Rows::Memory(xt.view()),
        n_classes: 3,
        holdout: None,
    };
    let cfg = FitConfig {
        method: MethodKind::Kmm,
        pretrain_iters: 20,
        adapt_iters: 10,
        network: NetworkConfig { hidden: vec![16, 8], ..Default::default() },
        ..Default::default()
    };
    let a = fit(&data, &cfg, &mut |_| {}).unwrap();
    let b = fit(&data, &cfg, &mut |_| {}).unwrap();
    assert_eq!(a.target_probs, b.target_probs, "same seed, different predictions");
    let adapt: Vec<_> = a.history.iter().filter(|r| r.stage == Stage::Adapt).collect();
    assert_eq!(adapt.len(), 10);
    for r in &adapt {
        let t = r.transfer.expect("KMM records its MMD²");
        assert!(t.value.is_finite() && t.value >= 0.0 && t.lambda == 0.0, "{t:?}");
        assert!(r.ce.is_finite() && r.total == r.ce, "{r:?}");
    }
    let source =
        fit(&data, &FitConfig { method: MethodKind::Source, ..cfg.clone() }, &mut |_| {}).unwrap();
    assert_ne!(a.target_probs, source.target_probs, "the weights changed nothing");
}
