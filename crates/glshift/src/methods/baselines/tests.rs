//! Every baseline's gradient (with respect to Z and the logits of both domains) against central
//! finite differences of its objective, in f64 on a small input, plus the invariants of the
//! pieces (gradient reversal, schedule, PADA's weights, entropy, the discriminator learning).

use ndarray::{Array2, ArrayView2};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::cdan::{entropy_and_grad, Cdan};
use super::coral::Coral;
use super::dann::{pada_class_weights, Dann};
use super::mcc::Mcc;
use super::mmd::{Dan, Jan};
use super::*;
use crate::config::FitConfig;
use crate::label_shift::ShiftEstimate;
use crate::methods::MethodKind;
use crate::nn::softmax;
use crate::nn::test_support::random_matrix;

const NS: usize = 7;
const NT: usize = 5;
const D: usize = 3;
const C: usize = 3;

#[derive(Clone)]
enum Any {
    Dan(Dan),
    Jan(Jan),
    Dann(Dann<f64>),
    Cdan(Cdan<f64>),
    Coral(Coral),
    Mcc(Mcc),
}

impl Any {
    fn compute(&mut self, inp: &AdaptInputs<f64>) -> AdaptOutput<f64> {
        match self {
            Any::Dan(b) => b.compute(inp),
            Any::Jan(b) => b.compute(inp),
            Any::Dann(b) => b.compute(inp),
            Any::Cdan(b) => b.compute(inp),
            Any::Coral(b) => b.compute(inp),
            Any::Mcc(b) => b.compute(inp),
        }
        .unwrap()
    }
}

fn small_config(method: MethodKind) -> FitConfig {
    let baselines = BaselineConfig {
        adversarial: AdversarialConfig {
            discriminator_hidden: vec![6],
            discriminator_dropout: 0.0,
            ..Default::default()
        },
        trade_off: 0.7,
        ..Default::default()
    };
    FitConfig { method, seed: 3, baselines, ..Default::default() }
}

fn build_f64(method: MethodKind, cfg: &FitConfig) -> Any {
    let h = 2.5; // a fixed bandwidth: the rule's h is a constant in backprop
    match method {
        MethodKind::Dan => Any::Dan(Dan::new(&cfg.baselines).with_fixed_bandwidth(h)),
        MethodKind::Jan => Any::Jan(Jan::new(&cfg.baselines).with_fixed_bandwidth(h)),
        MethodKind::Dann | MethodKind::IwDann | MethodKind::Pada => Any::Dann(Dann::new(&cfg.build_context(D, C)).unwrap()),
        MethodKind::Cdan | MethodKind::CdanE | MethodKind::IwCdan => Any::Cdan(Cdan::new(&cfg.build_context(D, C), method == MethodKind::CdanE).unwrap()),
        MethodKind::Coral => Any::Coral(Coral::new(&cfg.baselines)),
        MethodKind::Mcc => Any::Mcc(Mcc::new(&cfg.baselines)),
        // A new baseline must be added above (its gradient checked here), never run as another.
        other => panic!("{other} has no f64 gradient check: add it to `build_f64` in methods/baselines/tests.rs"),
    }
}

struct Data {
    zs: Array2<f64>,
    zt: Array2<f64>,
    ls: Array2<f64>,
    lt: Array2<f64>,
    probs_t: Array2<f64>,
    ys: Vec<usize>,
    estimate: ShiftEstimate,
}

fn data() -> Data {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let zs = random_matrix(NS, D, &mut rng);
    let zt = random_matrix(NT, D, &mut rng) + 0.4;
    let ls = random_matrix(NS, C, &mut rng);
    let lt = random_matrix(NT, C, &mut rng);
    let probs_t = softmax(lt.view());
    let estimate = ShiftEstimate {
        weights: vec![1.6, 0.2, 1.0],
        target_prior: vec![0.5, 0.1, 0.4],
        ..ShiftEstimate::default()
    };
    Data { zs, zt, ls, lt, probs_t, ys: vec![0, 1, 2, 0, 1, 2, 1], estimate }
}

fn inputs<'a>(
    d: &'a Data,
    zs: ArrayView2<'a, f64>,
    zt: ArrayView2<'a, f64>,
    ls: ArrayView2<'a, f64>,
    lt: ArrayView2<'a, f64>,
) -> AdaptInputs<'a, f64> {
    AdaptInputs {
        zs,
        logits_s: ls,
        ys: &d.ys,
        zt,
        logits_t: lt,
        target_probs: d.probs_t.view(),
        progress: 0.6,
        estimate: Some(&d.estimate),
        confident: &[],
        pseudo_labels: &[],
        prior: &d.estimate.target_prior,
    }
}

/// Central differences of `f` over every entry of `x` (also used by the baselines' own tests).
pub(super) fn fd(x: &Array2<f64>, f: impl Fn(&Array2<f64>) -> f64) -> Array2<f64> {
    let step = 1e-6;
    let mut xp = x.clone();
    Array2::from_shape_fn(x.dim(), |(i, j)| {
        xp[[i, j]] = x[[i, j]] + step;
        let up = f(&xp);
        xp[[i, j]] = x[[i, j]] - step;
        let down = f(&xp);
        xp[[i, j]] = x[[i, j]];
        (up - down) / (2.0 * step)
    })
}

fn assert_close(got: &Array2<f64>, want: &Array2<f64>, what: &str) {
    let scale = want.iter().fold(1e-8f64, |m, v| m.max(v.abs()));
    let err = got.iter().zip(want).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(
        err <= 1e-5 * scale + 1e-9,
        "{what}: max error {err:e} (scale {scale:e})\ngot {got}\nwant {want}"
    );
}

/// The objective as the backward pass sees it: CDAN's map takes the probabilities of the
/// unperturbed logits `g0` as a constant (the stop-gradient of the authors' code), every other
/// input moves.
fn objective_with(b: &Any, g0: &Array2<f64>, inp: &AdaptInputs<f64>) -> f64 {
    match b.clone() {
        Any::Cdan(mut c) => c.compute_conditioned(inp, g0.view()).unwrap().objective,
        // MCC's entropy weights are constants of the backward pass (detached in the reference
        // code): held at those of the unperturbed target logits.
        Any::Mcc(mut m) => {
            let lt0 = g0.slice(ndarray::s![NS.., ..]).mapv(f64::ln);
            let p0 = softmax((lt0 / super::mcc::TEMPERATURE).view());
            m.compute_with_weights(inp, super::mcc::entropy_weights(p0.view()).view())
                .unwrap()
                .objective
        }
        mut other => other.compute(inp).objective,
    }
}

fn check_gradients(method: MethodKind, cfg: &FitConfig) {
    let d = data();
    let fresh = build_f64(method, cfg);
    let g0 = softmax(ndarray::concatenate![ndarray::Axis(0), d.ls, d.lt].view());
    let objective = |zs: &Array2<f64>, zt: &Array2<f64>, ls: &Array2<f64>, lt: &Array2<f64>| {
        objective_with(&fresh, &g0, &inputs(&d, zs.view(), zt.view(), ls.view(), lt.view()))
    };
    let out =
        fresh.clone().compute(&inputs(&d, d.zs.view(), d.zt.view(), d.ls.view(), d.lt.view()));
    assert!(out.value.is_finite() && out.objective != 0.0, "{method}: {}", out.objective);
    let zero = |n| Array2::<f64>::zeros((n, C));
    let checks = [
        (out.grad_zs.clone(), fd(&d.zs, |x| objective(x, &d.zt, &d.ls, &d.lt)), "Z source"),
        (out.grad_zt.clone(), fd(&d.zt, |x| objective(&d.zs, x, &d.ls, &d.lt)), "Z target"),
        (
            out.grad_logits_s.clone().unwrap_or_else(|| zero(NS)),
            fd(&d.ls, |x| objective(&d.zs, &d.zt, x, &d.lt)),
            "logits source",
        ),
        (
            out.grad_logits_t.clone().unwrap_or_else(|| zero(NT)),
            fd(&d.lt, |x| objective(&d.zs, &d.zt, &d.ls, x)),
            "logits target",
        ),
    ];
    for (got, want, what) in checks {
        assert_close(&got, &want, &format!("{method} {what}"));
    }
}

#[test]
fn cdan_map_sends_no_gradient_to_the_logits() {
    // thuml/CDAN and the IWCDAN code detach g before the map: the objective depends on the
    // logits through g (its finite differences are not zero), yet the gradient returned for
    // the logits is zero for CDAN and IW-CDAN, and for CDAN-E only the entropy weights' part.
    let d = data();
    for m in [MethodKind::Cdan, MethodKind::IwCdan, MethodKind::CdanE] {
        let fresh = build_f64(m, &small_config(m));
        let full = |lt: &Array2<f64>| {
            fresh
                .clone()
                .compute(&inputs(&d, d.zs.view(), d.zt.view(), d.ls.view(), lt.view()))
                .objective
        };
        let through_g = fd(&d.lt, full);
        let out =
            fresh.clone().compute(&inputs(&d, d.zs.view(), d.zt.view(), d.ls.view(), d.lt.view()));
        let got = out.grad_logits_t.clone().unwrap_or_else(|| Array2::zeros((NT, C)));
        if m == MethodKind::CdanE {
            let g0 = softmax(ndarray::concatenate![ndarray::Axis(0), d.ls, d.lt].view());
            let held = |lt: &Array2<f64>| {
                objective_with(
                    &fresh,
                    &g0,
                    &inputs(&d, d.zs.view(), d.zt.view(), d.ls.view(), lt.view()),
                )
            };
            let want = fd(&d.lt, held);
            assert_close(&got, &want, "cdan-e entropy part");
            let gap = (&through_g - &want).iter().fold(0.0f64, |a, v| a.max(v.abs()));
            assert!(gap > 1e-6, "cdan-e: the map's dependence on g should be visible in the full differences ({gap:e})");
        } else {
            assert!(
                out.grad_logits_s.is_none() && out.grad_logits_t.is_none(),
                "{m}: gradient reached the logits"
            );
            assert!(
                through_g.iter().any(|v| v.abs() > 1e-6),
                "{m}: the objective should depend on the logits through g"
            );
        }
    }
}

#[test]
fn every_baseline_gradient_matches_finite_differences() {
    // KMM adds no term to the network's objective (only per-row CE weights, `kmm::tests`).
    for m in MethodKind::ALL.into_iter().filter(|m| m.is_baseline() && *m != MethodKind::Kmm) {
        check_gradients(m, &small_config(m));
    }
}

#[test]
fn randomized_multilinear_map_gradient_matches_finite_differences() {
    for m in [MethodKind::Cdan, MethodKind::CdanE] {
        let mut cfg = small_config(m);
        cfg.baselines.cdan.max_multilinear_dim = D * C - 1;
        cfg.baselines.cdan.random_dim = 8;
        check_gradients(m, &cfg);
    }
}

#[test]
fn adversarial_objective_is_minus_lambda_times_the_domain_loss() {
    // The gradient reversal layer: the feature side gets −λ_p·∂L_D, the discriminator +∂L_D.
    let d = data();
    let cfg = small_config(MethodKind::Dann);
    let Any::Dann(mut b) = build_f64(MethodKind::Dann, &cfg) else { unreachable!() };
    let out = b.compute(&inputs(&d, d.zs.view(), d.zt.view(), d.ls.view(), d.lt.view())).unwrap();
    let lambda = grl_coefficient(0.6, 0.7, 10.0);
    assert!(
        (out.lambda - lambda).abs() < 1e-15 && (out.objective + lambda * out.value).abs() < 1e-12
    );
    let g = Array2::from_shape_fn((2, 2), |(i, j)| (i as f64) - 2.0 * j as f64 + 0.5);
    assert_eq!(reverse_gradient(&g, 0.5), g.mapv(|v| -0.5 * v));
}

#[test]
fn grl_schedule_rises_from_zero_to_the_trade_off() {
    assert_eq!(grl_coefficient(0.0, 1.0, 10.0), 0.0);
    let end = grl_coefficient(1.0, 1.0, 10.0);
    assert!((end - (2.0 / (1.0 + (-10f64).exp()) - 1.0)).abs() < 1e-15 && end > 0.999);
    let mut prev = -1.0;
    for k in 0..=10 {
        let v = grl_coefficient(k as f64 / 10.0, 2.0, 10.0);
        assert!(v > prev && v <= 2.0);
        prev = v;
    }
}

#[test]
fn discriminator_learns_to_separate_distinct_domains() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let zs = random_matrix(40, 4, &mut rng);
    let zt = random_matrix(40, 4, &mut rng) + 1.5;
    let h = ndarray::concatenate![ndarray::Axis(0), zs, zt];
    let cfg = BaselineConfig {
        adversarial: AdversarialConfig {
            discriminator_hidden: vec![16],
            discriminator_dropout: 0.0,
            ..Default::default()
        },
        ..Default::default()
    };
    let opt = crate::nn::AdamConfig { lr: 1e-2, ..Default::default() };
    let mut disc = Discriminator::<f64>::new(4, &cfg.adversarial, &opt, 0).unwrap();
    let ones = vec![1.0; 40];
    let first = disc.loss(h.view(), &ones, &ones);
    disc.update(&first, 0.0);
    let mut last = first.value;
    for _ in 0..100 {
        let l = disc.loss(h.view(), &ones, &ones);
        disc.update(&l, 0.0);
        last = l.value;
    }
    // Chance level is 2·log 2 ≈ 1.386 (the sum of the two domain means).
    assert!(first.value > 1.0 && last < 0.3, "L_D {} → {last}", first.value);
}

#[test]
fn discriminator_with_annealed_sgd_learns_too_and_differs_from_adamw() {
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let zs = random_matrix(40, 4, &mut rng);
    let zt = random_matrix(40, 4, &mut rng) + 1.5;
    let h = ndarray::concatenate![ndarray::Axis(0), zs, zt];
    let cfg = BaselineConfig {
        adversarial: AdversarialConfig {
            discriminator_hidden: vec![16],
            discriminator_dropout: 0.0,
            ..Default::default()
        },
        lr: 0.1,
        ..Default::default()
    };
    let opt = crate::nn::AdamConfig::default();
    let mut sgd = Discriminator::<f64>::new(4, &cfg.adversarial, &opt, 0).unwrap().with_sgd(&cfg);
    let mut adam = Discriminator::<f64>::new(4, &cfg.adversarial, &opt, 0).unwrap();
    let ones = vec![1.0; 40];
    let first = sgd.loss(h.view(), &ones, &ones).value;
    let mut last = first;
    for k in 0..400 {
        let p = k as f64 / 400.0;
        let l = sgd.loss(h.view(), &ones, &ones);
        sgd.update(&l, p);
        let la = adam.loss(h.view(), &ones, &ones);
        adam.update(&la, p);
        last = l.value;
    }
    assert!(first > 1.0 && last < 0.3, "SGD: L_D {first} → {last}");
    assert_ne!(sgd.loss(h.view(), &ones, &ones).value, adam.loss(h.view(), &ones, &ones).value);
}

#[test]
fn pada_weights_are_the_average_target_prediction_over_its_maximum() {
    let p = ndarray::array![[0.7, 0.2, 0.1], [0.5, 0.4, 0.1], [0.9, 0.05, 0.05]];
    let w = pada_class_weights(p.view());
    let mean = [0.7, 0.65 / 3.0, 0.25 / 3.0];
    for (a, b) in w.iter().zip(mean) {
        assert!((a - b / 0.7).abs() < 1e-12);
    }
    assert_eq!(w[0], 1.0);
}

#[test]
fn entropy_gradient_matches_finite_differences_and_survives_saturation() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let l = random_matrix(4, 5, &mut rng) * 2.0;
    let (h, g) = entropy_and_grad(l.view());
    let want = fd(&l, |x| entropy_and_grad(x.view()).0.iter().sum());
    assert_close(&g, &want, "dH/dl");
    assert!(h.iter().all(|&v| v > 0.0 && v < (5f64).ln() + 1e-12));
    let saturated = ndarray::array![[1000.0f32, -1000.0, 0.0]];
    let (h, g) = entropy_and_grad(saturated.view());
    assert!(h[0].abs() < 1e-6 && g.iter().all(|v| v.is_finite()));
}

#[test]
fn importance_weighted_baselines_refuse_a_missing_estimate() {
    let d = data();
    let cfg = small_config(MethodKind::IwDann);
    let mut b = Dann::<f64>::new(&cfg.build_context(D, C)).unwrap();
    let mut inp = inputs(&d, d.zs.view(), d.zt.view(), d.ls.view(), d.lt.view());
    inp.estimate = None;
    assert!(b.compute(&inp).is_err());
}

/// D starts as the reference code's `AdversarialNetwork`: hidden weights N(0, 0.01²), zero
/// biases, and a logit (the difference of the two head columns) N(0, 0.3²) per unit of its input;
/// the draw is seeded.
#[test]
fn discriminator_starts_with_the_reference_initialisation() {
    let cfg = BaselineConfig::default();
    let opt = crate::nn::AdamConfig::default();
    let disc = Discriminator::<f64>::new(256, &cfg.adversarial, &opt, 3).unwrap();
    let std = |v: Vec<f64>| (v.iter().map(|x| x * x).sum::<f64>() / v.len() as f64).sqrt();
    let net = disc.network();
    assert_eq!(
        net.g.blocks.iter().map(|b| b.linear.w.ncols()).collect::<Vec<_>>(),
        cfg.adversarial.discriminator_hidden
    );
    for b in &net.g.blocks {
        let s = std(b.linear.w.iter().copied().collect());
        assert!(
            (s - adversary::HIDDEN_INIT_STD).abs() < 0.02 * adversary::HIDDEN_INIT_STD,
            "hidden std {s}"
        );
        assert!(b.linear.b.iter().all(|&v| v == 0.0));
    }
    let logit: Vec<f64> = net.f.w.rows().into_iter().map(|r| r[1] - r[0]).collect();
    let s = std(logit);
    assert!(
        (s - adversary::HEAD_INIT_STD).abs() < 0.1 * adversary::HEAD_INIT_STD,
        "logit weight std {s}"
    );
    assert!(net.f.b.iter().all(|&v| v == 0.0));
    let again = Discriminator::<f64>::new(256, &cfg.adversarial, &opt, 3).unwrap();
    assert_eq!(again.network(), net, "same seed, same D");
    assert_ne!(Discriminator::<f64>::new(256, &cfg.adversarial, &opt, 4).unwrap().network(), net);
}
