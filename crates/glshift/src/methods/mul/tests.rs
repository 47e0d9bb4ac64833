//! Checks of MUL's terms: gradient composition, the balance rule, class presence, random
//! features, soft target labels and separate J_DU rows.

use super::*;
use crate::kernel::{self, Labelled};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn blobs(n: usize, c: usize, shift: f32, seed: u64) -> (Array2<f32>, Array2<f32>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut z = Array2::<f32>::zeros((n, 3));
    let mut y = Array2::<f32>::zeros((n, c));
    for i in 0..n {
        let k = i % c;
        y[[i, k]] = 1.0;
        for j in 0..3 {
            z[[i, j]] = (k * (j + 1)) as f32 + shift + rng.random_range(-0.5..0.5);
        }
    }
    (z, y)
}

fn inputs<'a>(
    s: &'a (Array2<f32>, Array2<f32>),
    t: &'a (Array2<f32>, Array2<f32>),
    prior: &'a [f64],
    balance: bool,
) -> MulInputs<'a> {
    MulInputs {
        zs: s.0.view(),
        ys: s.1.view(),
        zt: t.0.view(),
        yt: t.1.view(),
        du_target: None,
        prior,
        params: McmdParams { eps: 1e-3, label_kernel: LabelKernel::Linear },
        mcmd: McmdEstimator::Exact,
        settings: TermSettings {
            bandwidth_multiplier: 1.0,
            lambda_tu: 1.0,
            lambda_du: 0.1,
            use_tu: true,
            use_du: true,
            du_balance: balance,
            du_pooled: false,
        },
        discrepancy: Discrepancy::Mcmd,
    }
}

fn norm(a: &Array2<f32>) -> f64 {
    a.iter().map(|&v| (v as f64).powi(2)).sum::<f64>().sqrt()
}

#[test]
fn gradient_is_the_weighted_sum_of_the_kernel_terms() {
    let (s, t) = (blobs(24, 3, 0.0, 1), blobs(18, 3, 0.4, 2));
    let prior = [0.5, 0.3, 0.2];
    let out = mul_terms(&inputs(&s, &t, &prior, false)).unwrap();
    let h = out.bandwidth;
    let p = McmdParams { eps: 1e-3, label_kernel: LabelKernel::Linear };
    let tu = kernel::j_tu(
        &Labelled { z: s.0.view(), y: s.1.view() },
        &Labelled { z: t.0.view(), y: t.1.view() },
        &prior,
        &p,
        h,
    )
    .unwrap();
    let du = kernel::j_du(&Labelled { z: s.0.view(), y: s.1.view() }, &p, h, None).unwrap();
    let expect_s = &tu.grad_s - &(du.grad.mapv(|g| g * (0.1 / 6.0) as f32));
    let diff = norm(&(&out.grad_zs - &expect_s)) / norm(&expect_s);
    assert!(diff < 1e-5, "relative difference {diff}");
    assert!((out.j_tu - tu.value).abs() < 1e-9 && (out.j_du - du.value / 6.0).abs() < 1e-9);
    assert_eq!(out.lambda_du_effective, 0.1);
}

#[test]
fn balance_rule_makes_du_pull_a_fixed_fraction_of_tu_pull() {
    let (s, t) = (blobs(24, 3, 0.0, 3), blobs(18, 3, 0.7, 4));
    let prior = [0.4, 0.4, 0.2];
    let mut only_tu = inputs(&s, &t, &prior, true);
    only_tu.settings.use_du = false;
    let tu = mul_terms(&only_tu).unwrap();
    let mut only_du = inputs(&s, &t, &prior, true);
    only_du.settings.use_tu = false;
    only_du.settings.du_balance = false;
    only_du.settings.lambda_du = 1.0;
    let du = mul_terms(&only_du).unwrap();
    let both = mul_terms(&inputs(&s, &t, &prior, true)).unwrap();
    let tu_pull = (norm(&tu.grad_zs).powi(2) + norm(&tu.grad_zt).powi(2)).sqrt();
    let du_pull = norm(&du.grad_zs) * both.lambda_du_effective;
    assert!((du_pull / tu_pull - 0.1).abs() < 1e-4, "ratio {}", du_pull / tu_pull);
}

#[test]
fn classes_without_target_rows_do_not_enter_j_tu() {
    let s = blobs(24, 3, 0.0, 5);
    let mut t = blobs(18, 3, 0.3, 6);
    // Drop class 2 from the target pseudo-labels: J_TU must equal the J_TU over classes 0, 1
    // with their prior renormalised.
    let keep: Vec<usize> = (0..18).filter(|i| i % 3 != 2).collect();
    t = (t.0.select(Axis(0), &keep), t.1.select(Axis(0), &keep));
    let mut inp = inputs(&s, &t, &[0.25, 0.25, 0.5], false);
    inp.settings.use_du = false;
    let out = mul_terms(&inp).unwrap();
    let p = McmdParams { eps: 1e-3, label_kernel: LabelKernel::Linear };
    let direct = kernel::j_tu(
        &Labelled { z: s.0.view(), y: s.1.view() },
        &Labelled { z: t.0.view(), y: t.1.view() },
        &[0.5, 0.5, 0.0],
        &p,
        out.bandwidth,
    )
    .unwrap();
    assert!((out.j_tu - direct.value).abs() < 1e-9, "{} vs {}", out.j_tu, direct.value);
    assert!(out.j_tu > 0.0);
}

#[test]
fn random_feature_terms_follow_the_exact_ones() {
    let (s, t) = (blobs(60, 3, 0.0, 7), blobs(45, 3, 0.6, 8));
    let prior = [0.3, 0.3, 0.4];
    let exact = mul_terms(&inputs(&s, &t, &prior, false)).unwrap();
    let mut rf = inputs(&s, &t, &prior, false);
    rf.mcmd = McmdEstimator::RandomFeatures(16_384);
    let approx = mul_terms(&rf).unwrap();
    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
    assert!(
        rel(approx.j_tu, exact.j_tu) < 0.1 && rel(approx.j_du, exact.j_du) < 0.1,
        "{} {} vs {} {}",
        approx.j_tu,
        approx.j_du,
        exact.j_tu,
        exact.j_du
    );
    let cos = (&approx.grad_zs * &exact.grad_zs).sum() as f64
        / (norm(&approx.grad_zs) * norm(&exact.grad_zs));
    assert!(cos > 0.9, "gradient direction: cosine {cos}");
}

#[test]
fn soft_labels_drop_absent_classes_and_renormalise() {
    let p = ndarray::array![[0.6f32, 0.3, 0.1], [0.0, 0.0, 1.0]];
    let y = soft_labels(p.view(), &[0.5, 0.5, 0.0]);
    assert!(
        (y[[0, 0]] - 2.0 / 3.0).abs() < 1e-6
            && (y[[0, 1]] - 1.0 / 3.0).abs() < 1e-6
            && y[[0, 2]] == 0.0
    );
    assert_eq!(y.row(1).sum(), 0.0);
}

#[test]
fn separate_du_rows_add_up_to_the_shared_rows_gradient() {
    let (s, t) = (blobs(24, 3, 0.0, 9), blobs(18, 3, 0.5, 10));
    let prior = [0.3, 0.3, 0.4];
    let mut shared = inputs(&s, &t, &prior, false);
    shared.settings.du_pooled = true;
    let a = mul_terms(&shared).unwrap();
    let mut split = inputs(&s, &t, &prior, false);
    split.settings.du_pooled = true;
    split.du_target = Some((t.0.view(), t.1.view()));
    let b = mul_terms(&split).unwrap();
    let sum = &b.grad_zt + b.grad_zt_du.as_ref().unwrap();
    assert!(norm(&(&sum - &a.grad_zt)) <= 1e-6 * norm(&a.grad_zt));
    assert_eq!((a.grad_zs, a.j_du), (b.grad_zs, b.j_du));
}

#[test]
fn no_term_gives_zero_gradients() {
    let z = MulTerms::none(4, 2, 3);
    assert_eq!((z.j_tu, z.j_du, z.grad_zs.dim(), z.grad_zt.dim()), (0.0, 0.0, (4, 3), (2, 3)));
    assert!(z.grad_zs.iter().all(|&v| v == 0.0));
}
