//! Checks of the data-dependent Gaussian label kernel (`LabelKernel::GaussianAuto`, the vertex
//! map of [`super::super::label_map`]) against dense n×n formulas, finite differences and the metric
//! properties of MCMD; and a bit-level pin of the linear kernel's results.

use super::super::reference as dense;
use super::super::tests::{fd_grad, h_of, params, rel, rel_err, sample, Data};
use super::super::*;
use faer::linalg::solvers::DenseSolveCore;
use ndarray::{concatenate, Array2, Axis};

const AUTO: LabelKernel = LabelKernel::GaussianAuto;
const EPS: f64 = 0.01;

/// Dense class coefficients α = (εnI + L)⁻¹ F (n×c) of one domain, L the n×n label Gram:
/// the exact Gaussian Gram exp(−‖y_i − y_j‖²/σ) (`exact`) or its Nyström form F B⁻¹ Fᵀ.
fn dense_alpha(y: &Array2<f64>, sigma: f64, exact: bool) -> Array2<f64> {
    let n = y.nrows();
    let f = vertex_features(y.view(), sigma);
    let mut l = if exact {
        dense::gaussian_gram(y.view(), y.view(), sigma)
    } else {
        let b_inv = super::super::cme::from_faer(
            &super::super::cme::to_faer(gaussian_basis(sigma, y.ncols()).view())
                .partial_piv_lu()
                .inverse(),
        );
        f.dot(&b_inv).dot(&f.t())
    };
    l.diag_mut().mapv_inplace(|v| v + EPS * n as f64);
    let inv = super::super::cme::from_faer(
        &super::super::cme::to_faer(l.view()).partial_piv_lu().inverse(),
    );
    inv.dot(&f)
}

/// Dense D_kl = G^{aa}_kk + G^{bb}_ll − 2G^{ab}_kl with G^{ab} = α_aᵀ K^{ab} α_b.
fn dense_mcmd2(a: &Data, b: &Data, sigma: f64, h: f64, exact: bool) -> Array2<f64> {
    let (aa, ab) = (dense_alpha(&a.y, sigma, exact), dense_alpha(&b.y, sigma, exact));
    let g = |x: &Array2<f64>, za: &Array2<f64>, y: &Array2<f64>, zb: &Array2<f64>| {
        x.t().dot(&dense::gaussian_gram(za.view(), zb.view(), h)).dot(y)
    };
    let (gaa, gbb, gab) =
        (g(&aa, &a.z, &aa, &a.z), g(&ab, &b.z, &ab, &b.z), g(&aa, &a.z, &ab, &b.z));
    let c = a.y.ncols();
    Array2::from_shape_fn((c, c), |(k, l)| gaa[[k, k]] + gbb[[l, l]] - 2.0 * gab[[k, l]])
}

fn sigma_of(blocks: &[&Data]) -> f64 {
    let views: Vec<_> = blocks.iter().map(|b| b.y.view()).collect();
    ckb_sigma(&views)
}

#[test]
fn ckb_sigma_is_the_mean_squared_label_distance_over_all_pairs() {
    let (s, t) = (sample(1, 17, 3, 4, 0.0, false), sample(2, 13, 3, 4, 0.0, true));
    let y = concatenate![Axis(0), s.y, t.y];
    let m = y.nrows() as f64;
    let brute: f64 = y
        .rows()
        .into_iter()
        .flat_map(|a| y.rows().into_iter().map(move |b| (&a - &b).mapv(|v| v * v).sum()))
        .sum::<f64>()
        / (m * m);
    assert!(rel(sigma_of(&[&s, &t]), brute) < 1e-12);
    let same = Array2::from_shape_fn((5, 3), |(_, k)| f64::from(u8::from(k == 1)));
    assert_eq!(ckb_sigma(&[same.view()]), SIGMA_FALLBACK);
}

#[test]
fn on_one_hot_labels_auto_is_the_fixed_gaussian_kernel_at_the_ckb_sigma() {
    let (s, t) = (sample(3, 30, 4, 3, 0.0, false), sample(4, 24, 4, 3, 0.5, false));
    let h = h_of(&[&s, &t]);
    let fixed = params(LabelKernel::Gaussian { sigma: sigma_of(&[&s, &t]) }, EPS);
    let auto = mcmd2_matrix(&s.lab(), &t.lab(), &params(AUTO, EPS), h).unwrap();
    assert!(rel_err(&auto, &mcmd2_matrix(&s.lab(), &t.lab(), &fixed, h).unwrap()) < 1e-10);
    assert!(rel_err(&auto, &dense::mcmd2_matrix(&s.lab(), &t.lab(), &fixed, h).unwrap()) < 1e-8);
    assert!(rel_err(&auto, &dense_mcmd2(&s, &t, sigma_of(&[&s, &t]), h, true)) < 1e-8);
}

#[test]
fn low_rank_form_matches_the_dense_nystrom_formula_on_soft_labels() {
    let (s, t) = (sample(5, 28, 4, 3, 0.0, false), sample(6, 22, 4, 3, 0.4, true));
    let (h, sigma) = (h_of(&[&s, &t]), sigma_of(&[&s, &t]));
    let fast = mcmd2_matrix(&s.lab(), &t.lab(), &params(AUTO, EPS), h).unwrap();
    assert!(rel_err(&fast, &dense_mcmd2(&s, &t, sigma, h, false)) < 1e-8);
    // J_TU is the prior-weighted diagonal of the same matrix.
    let prior = [0.5, 0.2, 0.3];
    let tu = j_tu(&s.lab(), &t.lab(), &prior, &params(AUTO, EPS), h).unwrap().value;
    let want: f64 = (0..3).map(|k| prior[k] * fast[[k, k]]).sum();
    assert!(rel(tu, want) < 1e-9, "{tu} vs {want}");
    // J_DU on pooled rows = Σ_{k≠l} D_kl of the pooled domain with itself.
    let pooled = Data { z: concatenate![Axis(0), s.z, t.z], y: concatenate![Axis(0), s.y, t.y] };
    let du = j_du(&pooled.lab(), &params(AUTO, EPS), h, None).unwrap().value;
    let d = dense_mcmd2(&pooled, &pooled, sigma, h, false);
    assert!(rel(du, d.sum() - d.diag().sum()) < 1e-8);
}

#[test]
fn gap_to_the_exact_soft_label_gram_shrinks_as_the_labels_sharpen() {
    // Only the Gram inside the inverse is projected on the class vertices; the kernel columns
    // are exact. The gap to the full-rank n×n formula is 0 on one-hot labels (test above) and
    // grows with the labels' softness: the soft labels of `sample` (softmax of
    // 2.5·one-hot + N(0, 1)) are sharpened to p^β / Σ p^β.
    let (s, t0) = (sample(7, 36, 4, 3, 0.0, false), sample(8, 30, 4, 3, 0.3, true));
    let mut gaps = Vec::new();
    for beta in [1.0, 3.0, 9.0, 27.0] {
        let mut t = t0.clone();
        for mut row in t.y.rows_mut() {
            row.mapv_inplace(|v| v.powf(beta));
            let total = row.sum();
            row /= total;
        }
        let (h, sigma) = (h_of(&[&s, &t]), sigma_of(&[&s, &t]));
        let fast = mcmd2_matrix(&s.lab(), &t.lab(), &params(AUTO, EPS), h).unwrap();
        let exact = dense_mcmd2(&s, &t, sigma, h, true);
        gaps.push((0..3).map(|k| rel(fast[[k, k]], exact[[k, k]])).fold(0.0, f64::max));
    }
    println!("rank-c vs exact soft-label Gram, largest relative gap of MCMD²(k, k) at β = 1, 3, 9, 27: {gaps:.4?}");
    assert!(gaps.windows(2).all(|w| w[0] > w[1]) && gaps[3] < 0.1 * gaps[0], "{gaps:?}");
}

#[test]
fn mcmd_of_identical_inputs_is_zero_and_the_matrix_is_symmetric_and_non_negative() {
    let a = sample(9, 25, 3, 4, 0.0, true);
    let copy = a.clone();
    let h = h_of(&[&a]);
    let p = params(AUTO, EPS);
    let d = mcmd2_matrix(&a.lab(), &copy.lab(), &p, h).unwrap();
    let scale = d.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(d.diag().iter().all(|v| v.abs() < 1e-12 * scale), "diag {:?}", d.diag());
    let within = mcmd2_matrix(&a.lab(), &a.lab(), &p, h).unwrap();
    assert!(rel_err(&within, &within.t().to_owned()) < 1e-12);
    let b = sample(10, 19, 3, 4, 0.7, true);
    let (ab, ba) = (
        mcmd2_matrix(&a.lab(), &b.lab(), &p, h).unwrap(),
        mcmd2_matrix(&b.lab(), &a.lab(), &p, h).unwrap(),
    );
    assert!(rel_err(&ab, &ba.t().to_owned()) < 1e-10);
    assert!(ab.iter().all(|&v| v >= -1e-12 * scale) && ab.diag().iter().all(|&v| v > 0.0));
}

#[test]
fn gradients_match_finite_differences_with_soft_target_labels() {
    let (s, t) = (sample(11, 14, 3, 3, 0.0, false), sample(12, 11, 3, 3, 0.5, true));
    let (h, p, prior) = (h_of(&[&s, &t]), params(AUTO, EPS), [0.3, 0.3, 0.4]);
    let spec = MulObjectives {
        prior: Some(&prior),
        du: Some(DuRows::Pooled),
        du_active: None,
        estimator: McmdEstimator::Exact,
    };
    let out = j_tu_du(&s.lab(), &t.lab(), &spec, &p, h).unwrap();
    let value = |zs: &Array2<f64>, zt: &Array2<f64>, du: bool| {
        let o = j_tu_du(
            &Labelled::new(zs.view(), s.y.view()),
            &Labelled::new(zt.view(), t.y.view()),
            &spec,
            &p,
            h,
        )
        .unwrap();
        if du {
            o.du.unwrap().value
        } else {
            o.tu.unwrap().value
        }
    };
    for (du, g) in [(false, out.tu.unwrap()), (true, out.du.unwrap())] {
        let fs = fd_grad(&s.z, |z| value(z, &t.z, du));
        let ft = fd_grad(&t.z, |z| value(&s.z, z, du));
        assert!(rel_err(&g.grad_s, &fs) < 1e-5 && rel_err(&g.grad_t, &ft) < 1e-5, "du = {du}");
    }
}

#[test]
fn label_kernel_reads_short_names_and_tagged_tables() {
    let read = |s: &str| serde_json::from_str::<LabelKernel>(s);
    assert_eq!(read(r#""gaussian""#).unwrap(), AUTO);
    assert_eq!(read(r#""linear""#).unwrap(), LabelKernel::Linear);
    assert_eq!(
        read(r#"{"kind":"gaussian","sigma":1.5}"#).unwrap(),
        LabelKernel::Gaussian { sigma: 1.5 }
    );
    let written = serde_json::to_string(&AUTO).unwrap();
    assert_eq!(read(&written).unwrap(), AUTO);
    let err = read(r#""cubic""#).unwrap_err().to_string();
    assert!(err.contains("cubic"), "{err}");
    assert!(AUTO.basis_gram(3).is_err());
}

/// The linear kernel's results, pinned to the bits the dense linear-kernel path printed: f32 training inputs, J_TU + pooled J_DU from one fused pass, and the f64
/// MCMD² matrix. Any change of arithmetic order in the linear path fails here.
#[test]
fn linear_kernel_results_are_bit_for_bit_unchanged() {
    let (s, t) = (sample(11, 40, 5, 4, 0.0, false), sample(12, 33, 5, 4, 0.4, true));
    let h = h_of(&[&s, &t]);
    let p = params(LabelKernel::Linear, 0.01 / 4.0);
    let (zs, ys) = (s.z.mapv(|v| v as f32), s.y.mapv(|v| v as f32));
    let (zt, yt) = (t.z.mapv(|v| v as f32), t.y.mapv(|v| v as f32));
    let (ls, lt) = (Labelled::new(zs.view(), ys.view()), Labelled::new(zt.view(), yt.view()));
    let spec = MulObjectives {
        prior: Some(&[0.1, 0.2, 0.3, 0.4]),
        du: Some(DuRows::Pooled),
        du_active: None,
        estimator: McmdEstimator::Exact,
    };
    let out = j_tu_du(&ls, &lt, &spec, &p, h).unwrap();
    let (tu, du) = (out.tu.unwrap(), out.du.unwrap());
    let hash = |a: &Array2<f32>| {
        a.iter().fold(0u64, |acc, v| acc.wrapping_mul(1_000_003).wrapping_add(v.to_bits() as u64))
    };
    let got = [
        tu.value.to_bits(),
        du.value.to_bits(),
        hash(&tu.grad_s),
        hash(&tu.grad_t),
        hash(&du.grad_s),
        hash(&du.grad_t),
    ];
    let m = mcmd2_matrix(&s.lab(), &t.lab(), &p, h).unwrap();
    let m_hash =
        m.iter().fold(0u64, |acc, v| acc.wrapping_mul(1_000_003).wrapping_add(v.to_bits()));
    assert_eq!((got, m_hash), (GOLD, GOLD_M));
}

/// Printed by the same computation on that path: J_TU, J_DU bits and the four gradient hashes.
const GOLD: [u64; 6] = [
    0x3fc4d467053f5ca8,
    0x402135e09e370976,
    0x86d21f1087333927,
    0xc4a4a32b2f0d1b7e,
    0x717355e8bbdd2f2d,
    0x36168603ae1fd930,
];
const GOLD_M: u64 = 0xd59c00e90970021b;
