//! Checks of the c×c kernel code against the paper's dense formulas ([`super::reference`]),
//! finite differences and the basic metric properties of MCMD.

mod label;
mod mmd;

use super::reference as dense;
use super::*;
use crate::Error;
use ndarray::{concatenate, Array2, Axis};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

const GAUSS: LabelKernel = LabelKernel::Gaussian { sigma: 1.5 };
const KERNELS: [LabelKernel; 2] = [LabelKernel::Linear, GAUSS];

#[derive(Clone)]
pub(super) struct Data {
    pub(super) z: Array2<f64>,
    pub(super) y: Array2<f64>,
}

impl Data {
    pub(super) fn lab(&self) -> Labelled<'_, f64> {
        Labelled::new(self.z.view(), self.y.view())
    }
    fn to_f32(&self) -> (Array2<f32>, Array2<f32>) {
        (self.z.mapv(|v| v as f32), self.y.mapv(|v| v as f32))
    }
}

/// n rows of d-dim features around per-class means (fixed across domains, so that domains
/// differ only by `shift`), labels i % c (every class present), one-hot or soft.
pub(super) fn sample(seed: u64, n: usize, d: usize, c: usize, shift: f64, soft: bool) -> Data {
    let mut means_rng = ChaCha8Rng::seed_from_u64(7);
    let means = Array2::from_shape_fn((c, d), |_| 1.5 * means_rng.sample::<f64, _>(StandardNormal));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let z = Array2::from_shape_fn((n, d), |(i, j)| {
        means[[i % c, j]] + shift + 0.7 * rng.sample::<f64, _>(StandardNormal)
    });
    let mut y = Array2::from_shape_fn((n, c), |(i, k)| f64::from(u8::from(i % c == k)));
    if soft {
        for mut row in y.rows_mut() {
            row.mapv_inplace(|v| (2.5 * v + rng.sample::<f64, _>(StandardNormal)).exp());
            let total = row.sum();
            row /= total;
        }
    }
    Data { z, y }
}

pub(super) fn params(label_kernel: LabelKernel, eps: f64) -> McmdParams {
    McmdParams { eps, label_kernel }
}

pub(super) fn h_of(blocks: &[&Data]) -> f64 {
    let views: Vec<_> = blocks.iter().map(|b| b.z.view()).collect();
    bandwidth(&views, 1.0).unwrap()
}

/// max |a − b| / max |b|.
pub(super) fn rel_err(a: &Array2<f64>, b: &Array2<f64>) -> f64 {
    assert_eq!(a.dim(), b.dim());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(scale > 0.0, "reference is identically zero");
    a.iter().zip(b).fold(0.0f64, |m, (x, y)| m.max((x - y).abs())) / scale
}

pub(super) fn rel(a: f64, b: f64) -> f64 {
    assert!(b != 0.0);
    (a - b).abs() / b.abs()
}

/// Central finite differences of f at z.
pub(super) fn fd_grad(z: &Array2<f64>, f: impl Fn(&Array2<f64>) -> f64) -> Array2<f64> {
    let step = 1e-5;
    let mut zp = z.clone();
    Array2::from_shape_fn(z.dim(), |(i, j)| {
        zp[[i, j]] = z[[i, j]] + step;
        let up = f(&zp);
        zp[[i, j]] = z[[i, j]] - step;
        let down = f(&zp);
        zp[[i, j]] = z[[i, j]];
        (up - down) / (2.0 * step)
    })
}

#[test]
fn mcmd2_matrix_within_domain_matches_dense_reference() {
    for (kernel, soft, eps) in [
        (LabelKernel::Linear, false, 0.01),
        (GAUSS, false, 0.5),
        (LabelKernel::Linear, true, 0.1),
        (GAUSS, true, 0.01),
    ] {
        let a = sample(1, 30, 4, 3, 0.0, soft);
        let copy = a.clone(); // distinct memory: exercises the path without the same-block shortcut
        let (p, h) = (params(kernel, eps), h_of(&[&a]));
        let want = dense::mcmd2_matrix(&a.lab(), &a.lab(), &p, h).unwrap();
        for b in [&a, &copy] {
            let got = mcmd2_matrix(&a.lab(), &b.lab(), &p, h).unwrap();
            assert!(
                rel_err(&got, &want) <= 1e-9,
                "{kernel:?} soft={soft}: {}",
                rel_err(&got, &want)
            );
        }
    }
}

#[test]
fn mcmd2_matrix_across_domains_matches_dense_reference() {
    for kernel in KERNELS {
        for soft in [false, true] {
            let s = sample(2, 32, 3, 4, 0.0, false);
            let t = sample(3, 24, 3, 4, 0.6, soft);
            let (p, h) = (params(kernel, 0.05), h_of(&[&s, &t]));
            let got = mcmd2_matrix(&s.lab(), &t.lab(), &p, h).unwrap();
            let want = dense::mcmd2_matrix(&s.lab(), &t.lab(), &p, h).unwrap();
            assert!(
                rel_err(&got, &want) <= 1e-9,
                "{kernel:?} soft={soft}: {}",
                rel_err(&got, &want)
            );
        }
    }
}

#[test]
fn j_du_matches_dense_reference_with_and_without_mask() {
    let mask = [true, false, true, true];
    for kernel in KERNELS {
        for soft in [false, true] {
            let a = sample(4, 28, 4, 4, 0.0, soft);
            let (p, h) = (params(kernel, 0.05), h_of(&[&a]));
            for active in [None, Some(&mask[..])] {
                let got = j_du(&a.lab(), &p, h, active).unwrap().value;
                let want = dense::j_du(&a.lab(), &p, h, active).unwrap();
                assert!(
                    rel(got, want) <= 1e-9,
                    "{kernel:?} soft={soft} mask={active:?}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn j_tu_matches_dense_reference() {
    let prior = [0.1, 0.4, 0.2, 0.3];
    for kernel in KERNELS {
        for soft in [false, true] {
            let s = sample(5, 30, 3, 4, 0.0, false);
            let t = sample(6, 22, 3, 4, 0.8, soft);
            let (p, h) = (params(kernel, 0.05), h_of(&[&s, &t]));
            let got = j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap().value;
            let want = dense::j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap();
            assert!(rel(got, want) <= 1e-9, "{kernel:?} soft={soft}: {got} vs {want}");
        }
    }
}

#[test]
fn cme_coefficients_reproduce_dense_inverse() {
    for kernel in KERNELS {
        for soft in [false, true] {
            let a = sample(7, 25, 3, 3, 0.0, soft);
            let (b, eps) = (kernel.basis_gram(3).unwrap(), 0.03);
            let w = cme_coefficients(a.y.t().dot(&a.y).view(), b.view(), eps, 25).unwrap();
            let inv = dense::regularised_inverse(a.y.view(), b.view(), eps).unwrap();
            let want = inv.dot(&a.y).dot(&b); // (εnI + YBYᵀ)⁻¹ Y B
            assert!(rel_err(&a.y.dot(&w), &want) <= 1e-9, "{kernel:?} soft={soft}");
        }
    }
}

#[test]
fn kernel_sum_matches_dense_gram_across_row_tiles() {
    // More rows than one tile, so the tiled accumulation is exercised.
    let a = sample(8, tiled::TILE + 37, 3, 3, 0.0, true);
    let b = sample(9, 21, 3, 3, 0.4, false);
    let h = h_of(&[&a, &b]);
    let got = kernel_sum(a.z.view(), a.y.view(), b.z.view(), b.y.view(), h);
    let want = a.y.t().dot(&dense::gaussian_gram(a.z.view(), b.z.view(), h)).dot(&b.y);
    assert!(rel_err(&got, &want) <= 1e-12, "{}", rel_err(&got, &want));
}

#[test]
fn kernel_sum_backward_matches_finite_differences() {
    let a = sample(10, 20, 3, 3, 0.0, true);
    let b = sample(11, 16, 3, 3, 0.5, false);
    let h = h_of(&[&a, &b]);
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let gamma = Array2::from_shape_fn((3, 3), |_| rng.sample::<f64, _>(StandardNormal));
    let loss = |za: &Array2<f64>, zb: &Array2<f64>| {
        (kernel_sum(za.view(), a.y.view(), zb.view(), b.y.view(), h) * &gamma).sum()
    };
    let (ga, gb) =
        kernel_sum_backward(a.z.view(), a.y.view(), b.z.view(), b.y.view(), h, gamma.view());
    let fa = fd_grad(&a.z, |z| loss(z, &b.z));
    let fb = fd_grad(&b.z, |z| loss(&a.z, z));
    assert!(rel_err(&ga, &fa) <= 1e-6, "dZa: {}", rel_err(&ga, &fa));
    assert!(rel_err(&gb, &fb) <= 1e-6, "dZb: {}", rel_err(&gb, &fb));
}

#[test]
fn kernel_sum_backward_is_consistent_across_row_tiles() {
    // Dense H = (Y_a Γ Y_bᵀ) ∘ K with the formula of mcmd-math.md, on more rows than a tile.
    let a = sample(13, tiled::TILE + 9, 2, 2, 0.0, true);
    let b = sample(14, 15, 2, 2, 0.3, true);
    let h = h_of(&[&a, &b]);
    let gamma = ndarray::array![[0.7, -1.2], [0.4, 2.0]];
    let hm = a.y.dot(&gamma).dot(&b.y.t()) * dense::gaussian_gram(a.z.view(), b.z.view(), h);
    let want_a = (&a.z * &hm.sum_axis(Axis(1)).insert_axis(Axis(1)) - hm.dot(&b.z)) * (-2.0 / h);
    let want_b =
        (&b.z * &hm.sum_axis(Axis(0)).insert_axis(Axis(1)) - hm.t().dot(&a.z)) * (-2.0 / h);
    let (ga, gb) =
        kernel_sum_backward(a.z.view(), a.y.view(), b.z.view(), b.y.view(), h, gamma.view());
    assert!(rel_err(&ga, &want_a) <= 1e-12 && rel_err(&gb, &want_b) <= 1e-12);
}

#[test]
fn j_du_gradient_matches_finite_differences() {
    let mask = [true, true, false, true];
    for (kernel, soft, active) in
        [(GAUSS, true, None), (LabelKernel::Linear, false, Some(&mask[..]))]
    {
        let a = sample(15, 24, 3, 4, 0.0, soft);
        let (p, h) = (params(kernel, 0.05), h_of(&[&a]));
        let got = j_du(&a.lab(), &p, h, active).unwrap().grad;
        let want = fd_grad(&a.z, |z| {
            j_du(&Labelled::new(z.view(), a.y.view()), &p, h, active).unwrap().value
        });
        assert!(rel_err(&got, &want) <= 1e-6, "{kernel:?}: {}", rel_err(&got, &want));
    }
}

#[test]
fn j_tu_gradient_matches_finite_differences() {
    let prior = [0.5, 0.2, 0.0, 0.3];
    let s = sample(16, 24, 3, 4, 0.0, false);
    let t = sample(17, 20, 3, 4, 0.7, true);
    let (p, h) = (params(GAUSS, 0.05), h_of(&[&s, &t]));
    let got = j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap();
    let at = |zs: &Array2<f64>, zt: &Array2<f64>| {
        j_tu(
            &Labelled::new(zs.view(), s.y.view()),
            &Labelled::new(zt.view(), t.y.view()),
            &prior,
            &p,
            h,
        )
        .unwrap()
        .value
    };
    let fs = fd_grad(&s.z, |z| at(z, &t.z));
    let ft = fd_grad(&t.z, |z| at(&s.z, z));
    assert!(rel_err(&got.grad_s, &fs) <= 1e-6, "grad_s: {}", rel_err(&got.grad_s, &fs));
    assert!(rel_err(&got.grad_t, &ft) <= 1e-6, "grad_t: {}", rel_err(&got.grad_t, &ft));
}

#[test]
fn mcmd2_of_a_class_with_itself_is_zero() {
    let a = sample(18, 30, 4, 4, 0.0, true);
    let copy = a.clone();
    let (p, h) = (params(GAUSS, 0.05), h_of(&[&a]));
    for b in [&a, &copy] {
        let d = mcmd2_matrix(&a.lab(), &b.lab(), &p, h).unwrap();
        assert!(d.diag().iter().all(|v| v.abs() <= 1e-12), "{:?}", d.diag());
    }
}

#[test]
fn mcmd2_is_positive_between_distinct_classes() {
    for kernel in KERNELS {
        let a = sample(19, 30, 3, 3, 0.0, false);
        let d = mcmd2_matrix(&a.lab(), &a.lab(), &params(kernel, 0.05), h_of(&[&a])).unwrap();
        for ((k, l), &v) in d.indexed_iter().filter(|((k, l), _)| k != l) {
            assert!(v > 1e-3, "{kernel:?}: MCMD²({k},{l}) = {v}");
        }
    }
}

#[test]
fn mcmd2_matrix_is_symmetric_within_domain() {
    let a = sample(20, 30, 3, 4, 0.0, true);
    let d = mcmd2_matrix(&a.lab(), &a.lab(), &params(GAUSS, 0.05), h_of(&[&a])).unwrap();
    assert!(rel_err(&d.t().to_owned(), &d) <= 1e-12);
}

#[test]
fn within_domain_embedding_gram_is_positive_semidefinite() {
    for kernel in KERNELS {
        let a = sample(21, 30, 3, 4, 0.0, true);
        let g = embedding_gram(&a.lab(), &a.lab(), &params(kernel, 0.05), h_of(&[&a])).unwrap();
        assert!(rel_err(&g.t().to_owned(), &g) <= 1e-12, "G^aa not symmetric");
        let eig =
            super::cme::to_faer(g.view()).self_adjoint_eigenvalues(faer::Side::Lower).unwrap();
        let top = eig.iter().fold(0.0f64, |m, v| m.max(*v));
        assert!(top > 0.0 && eig.iter().all(|&v| v >= -1e-12 * top), "{kernel:?}: {eig:?}");
    }
}

#[test]
fn bandwidth_equals_brute_force_mean_pairwise_distance() {
    let (a, b) = (sample(22, 17, 5, 3, 0.0, false), sample(23, 11, 5, 3, 3.0, false));
    let pooled = concatenate![Axis(0), a.z, b.z];
    let n = pooled.nrows();
    let mut brute = 0.0;
    for i in 0..n {
        for j in 0..n {
            brute += (&pooled.row(i) - &pooled.row(j)).mapv(|v| v * v).sum();
        }
    }
    brute /= (n * n) as f64;
    assert!(rel(mean_pairwise_sq_dist(pooled.view()), brute) <= 1e-12);
    assert!(rel(bandwidth(&[a.z.view(), b.z.view()], 2.5).unwrap(), 2.5 * brute) <= 1e-12);
    let pooled32 = pooled.mapv(|v| v as f32);
    assert!(rel(mean_pairwise_sq_dist(pooled32.view()), brute) <= 1e-6);
    // Rows read scaled by s: the bandwidth of the scaled copy, bit for bit, and s² times h.
    let (a32, b32) = (a.z.mapv(|v| v as f32), b.z.mapv(|v| v as f32));
    let scaled = |z: &Array2<f32>| z.mapv(|v| f64::from(v) * 0.37);
    assert_eq!(
        crate::kernel::scaled_bandwidth(&[a32.view(), b32.view()], 0.37, 2.5).unwrap(),
        bandwidth(&[scaled(&a32).view(), scaled(&b32).view()], 2.5).unwrap()
    );
    let once = bandwidth(&[a32.view(), b32.view()], 2.5).unwrap();
    assert!(
        rel(
            crate::kernel::scaled_bandwidth(&[a32.view(), b32.view()], 0.37, 2.5).unwrap(),
            0.37 * 0.37 * once
        ) <= 1e-12
    );
}

#[test]
fn f32_results_match_f64() {
    let s = sample(24, 30, 4, 3, 0.0, false);
    let t = sample(25, 26, 4, 3, 0.5, true);
    let (p, h, prior) = (params(GAUSS, 0.05), h_of(&[&s, &t]), [0.3, 0.3, 0.4]);
    let ((zs, ys), (zt, yt)) = (s.to_f32(), t.to_f32());
    let (s32, t32) = (Labelled::new(zs.view(), ys.view()), Labelled::new(zt.view(), yt.view()));
    let up = |g: &Array2<f32>| g.mapv(f64::from);

    let d64 = mcmd2_matrix(&s.lab(), &t.lab(), &p, h).unwrap();
    let d32 = mcmd2_matrix(&s32, &t32, &p, h).unwrap();
    assert!(rel_err(&d32, &d64) <= 1e-4, "mcmd2: {}", rel_err(&d32, &d64));
    let (du64, du32) = (j_du(&s.lab(), &p, h, None).unwrap(), j_du(&s32, &p, h, None).unwrap());
    assert!(rel(du32.value, du64.value) <= 1e-4 && rel_err(&up(&du32.grad), &du64.grad) <= 1e-4);
    let tu64 = j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap();
    let tu32 = j_tu(&s32, &t32, &prior, &p, h).unwrap();
    assert!(rel(tu32.value, tu64.value) <= 1e-4, "j_tu: {} vs {}", tu32.value, tu64.value);
    assert!(
        rel_err(&up(&tu32.grad_s), &tu64.grad_s) <= 1e-4
            && rel_err(&up(&tu32.grad_t), &tu64.grad_t) <= 1e-4
    );
}

#[test]
fn j_du_ignores_classes_without_rows() {
    // Class 3 has no rows: its column of Y is zero.
    let mut a = sample(26, 27, 3, 4, 0.0, false);
    let keep: Vec<usize> = (0..27).filter(|&i| a.y[[i, 3]] == 0.0).collect();
    a = Data { z: a.z.select(Axis(0), &keep), y: a.y.select(Axis(0), &keep) };
    let (p, h, mask) = (params(GAUSS, 0.05), h_of(&[&a]), [true, true, true, false]);
    let auto = j_du(&a.lab(), &p, h, None).unwrap();
    let masked = j_du(&a.lab(), &p, h, Some(&mask)).unwrap();
    let want = dense::j_du(&a.lab(), &p, h, Some(&mask)).unwrap();
    assert!(rel(auto.value, want) <= 1e-9 && rel_err(&auto.grad, &masked.grad) <= 1e-12);
    // With a Gaussian label kernel the empty class would otherwise contribute.
    let with_empty = dense::j_du(&a.lab(), &p, h, None).unwrap();
    assert!(rel(with_empty, want) > 1e-3, "{with_empty} vs {want}");
}

#[test]
fn label_kernel_gram_and_serde_form() {
    let b = LabelKernel::Gaussian { sigma: 2.0 }.basis_gram(3).unwrap();
    assert_eq!((b[[0, 0]], b[[1, 2]]), (1.0, (-1.0f64).exp()));
    assert_eq!(LabelKernel::Linear.basis_gram(2).unwrap(), Array2::<f64>::eye(2));
    let json = serde_json::to_string(&LabelKernel::Gaussian { sigma: 2.0 }).unwrap();
    assert_eq!(json, r#"{"kind":"gaussian","sigma":2.0}"#);
    let back: LabelKernel = serde_json::from_str(r#"{"kind":"linear"}"#).unwrap();
    assert_eq!(back, LabelKernel::Linear);
}

#[test]
fn non_positive_eps_or_sigma_is_rejected() {
    let a = sample(27, 12, 3, 3, 0.0, false);
    let h = h_of(&[&a]);
    for eps in [0.0, -0.1, f64::NAN] {
        assert!(matches!(
            mcmd2_matrix(&a.lab(), &a.lab(), &params(GAUSS, eps), h),
            Err(Error::Param { .. })
        ));
        assert!(matches!(j_du(&a.lab(), &params(GAUSS, eps), h, None), Err(Error::Param { .. })));
        let n = a.y.t().dot(&a.y);
        assert!(cme_coefficients(n.view(), Array2::eye(3).view(), eps, 12).is_err());
    }
    let bad_sigma = params(LabelKernel::Gaussian { sigma: -1.0 }, 0.1);
    assert!(matches!(j_du(&a.lab(), &bad_sigma, h, None), Err(Error::Param { .. })));
}

#[test]
fn identical_rows_give_bandwidth_error() {
    let z = Array2::from_elem((10, 3), 1.25f64);
    let err = bandwidth(&[z.view()], 1.0).unwrap_err();
    assert!(
        matches!(err, Error::Numerical { .. }) && err.to_string().contains("identical"),
        "{err}"
    );
    assert!(bandwidth::<f64>(&[], 1.0).is_err());
    let ok = sample(28, 10, 3, 3, 0.0, false);
    assert!(matches!(bandwidth(&[ok.z.view()], 0.0), Err(Error::Param { .. })));
    assert!(matches!(
        bandwidth(&[ok.z.view(), z.slice(ndarray::s![.., ..2])], 1.0),
        Err(Error::Shape { .. })
    ));
}

#[test]
fn shape_mismatches_and_bad_prior_or_h_are_rejected() {
    let s = sample(29, 12, 3, 3, 0.0, false);
    let t4 = sample(30, 12, 3, 4, 0.0, false);
    let td = sample(31, 12, 2, 3, 0.0, false);
    let (p, h) = (params(GAUSS, 0.1), h_of(&[&s]));
    let short_y = s.y.slice(ndarray::s![..11, ..]);
    let bad_rows = Labelled::new(s.z.view(), short_y);
    let is_shape = |r: Result<Array2<f64>, Error>| matches!(r, Err(Error::Shape { .. }));
    assert!(is_shape(mcmd2_matrix(&bad_rows, &bad_rows, &p, h)));
    assert!(is_shape(mcmd2_matrix(&s.lab(), &t4.lab(), &p, h)));
    assert!(is_shape(mcmd2_matrix(&s.lab(), &td.lab(), &p, h)));
    assert!(matches!(j_tu(&s.lab(), &s.lab(), &[0.5, 0.5], &p, h), Err(Error::Shape { .. })));
    assert!(matches!(j_tu(&s.lab(), &s.lab(), &[0.5, -0.1, 0.6], &p, h), Err(Error::Param { .. })));
    assert!(matches!(j_du(&s.lab(), &p, h, Some(&[true, true])), Err(Error::Shape { .. })));
    assert!(matches!(j_du(&bad_rows, &p, h, None), Err(Error::Shape { .. })));
    assert!(cme_coefficients(Array2::eye(2).view(), Array2::eye(3).view(), 0.1, 5).is_err());
    for h in [0.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(j_du(&s.lab(), &p, h, None), Err(Error::Param { .. })));
    }
}

// ---- Fused tiled engine: against the dense oracle, across tiles and threads ----

/// `n` rows in `c` classes with class sizes i % c (one-hot) and a few rows with no label.
fn tiled_sample(seed: u64, n: usize, d: usize, c: usize, shift: f64, soft: bool) -> Data {
    let mut x = sample(seed, n, d, c, shift, soft);
    if !soft {
        for i in (0..n).step_by(97) {
            x.y.row_mut(i).fill(0.0);
        }
    }
    x
}

/// Dense S^{ab} = Y_aᵀ K Y_b in f64 from (possibly f32-rounded) inputs.
fn dense_s(
    za: &Array2<f64>,
    ya: &Array2<f64>,
    zb: &Array2<f64>,
    yb: &Array2<f64>,
    h: f64,
) -> Array2<f64> {
    ya.t().dot(&dense::gaussian_gram(za.view(), zb.view(), h)).dot(yb)
}

/// Dense gradients of ⟨Γ, Y_aᵀ K Y_b⟩ with a and b independent (mcmd-math.md).
fn dense_grads(a: &Data, b: &Data, gamma: &Array2<f64>, h: f64) -> (Array2<f64>, Array2<f64>) {
    let hm = a.y.dot(gamma).dot(&b.y.t()) * dense::gaussian_gram(a.z.view(), b.z.view(), h);
    let ga = (&a.z * &hm.sum_axis(Axis(1)).insert_axis(Axis(1)) - hm.dot(&b.z)) * (-2.0 / h);
    let gb = (&b.z * &hm.sum_axis(Axis(0)).insert_axis(Axis(1)) - hm.t().dot(&a.z)) * (-2.0 / h);
    (ga, gb)
}

fn round32(x: &Data) -> Data {
    Data { z: x.z.mapv(|v| v as f32 as f64), y: x.y.mapv(|v| v as f32 as f64) }
}

#[test]
fn tiled_kernel_sum_matches_dense_oracle_in_f64_and_f32_over_many_tiles() {
    // 700 rows in 2 classes: 2 tiles per class on the one-hot path, 3 tiles on the soft path.
    for soft in [false, true] {
        let a = tiled_sample(40, 700, 5, 2, 0.0, soft);
        let b = tiled_sample(41, 530, 5, 2, 0.4, !soft);
        let h = h_of(&[&a, &b]);
        for (x, y) in [(&a, &b), (&a, &a), (&b, &a)] {
            let want = dense_s(&x.z, &x.y, &y.z, &y.y, h);
            let got = kernel_sum(x.z.view(), x.y.view(), y.z.view(), y.y.view(), h);
            assert!(rel_err(&got, &want) <= 1e-10, "f64 soft={soft}: {}", rel_err(&got, &want));
            let (x32, y32) = (round32(x), round32(y));
            let want32 = dense_s(&x32.z, &x32.y, &y32.z, &y32.y, h);
            let ((zx, yx), (zy, yy)) = (x.to_f32(), y.to_f32());
            let got32 = kernel_sum(zx.view(), yx.view(), zy.view(), yy.view(), h);
            assert!(
                rel_err(&got32, &want32) <= 1e-5,
                "f32 soft={soft}: {}",
                rel_err(&got32, &want32)
            );
        }
    }
}

#[test]
fn tiled_backward_matches_dense_gradients_in_f64_and_f32_over_many_tiles() {
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    for soft in [false, true] {
        let a = tiled_sample(43, 640, 4, 3, 0.0, soft);
        let b = tiled_sample(44, 300, 4, 3, 0.5, false);
        let h = h_of(&[&a, &b]);
        let gamma = Array2::from_shape_fn((3, 3), |_| rng.sample::<f64, _>(StandardNormal));
        let (wa, wb) = dense_grads(&a, &b, &gamma, h);
        let (ga, gb) =
            kernel_sum_backward(a.z.view(), a.y.view(), b.z.view(), b.y.view(), h, gamma.view());
        assert!(rel_err(&ga, &wa) <= 1e-10 && rel_err(&gb, &wb) <= 1e-10, "f64 soft={soft}");
        let (a32, b32) = (round32(&a), round32(&b));
        let (wa, wb) = dense_grads(&a32, &b32, &gamma, h);
        let ((za, ya), (zb, yb)) = (a.to_f32(), b.to_f32());
        let (ga, gb) =
            kernel_sum_backward(za.view(), ya.view(), zb.view(), yb.view(), h, gamma.view());
        let up = |g: &Array2<f32>| g.mapv(f64::from);
        assert!(
            rel_err(&up(&ga), &wa) <= 1e-5 && rel_err(&up(&gb), &wb) <= 1e-5,
            "f32 soft={soft}: {} {}",
            rel_err(&up(&ga), &wa),
            rel_err(&up(&gb), &wb)
        );
    }
}

#[test]
fn tiled_j_du_and_j_tu_match_the_paper_formula_over_many_tiles() {
    let prior = [0.2, 0.5, 0.3];
    for kernel in KERNELS {
        let s = tiled_sample(45, 600, 3, 3, 0.0, false);
        let t = tiled_sample(46, 290, 3, 3, 0.6, false);
        let (p, h) = (params(kernel, 0.05), h_of(&[&s, &t]));
        let du = j_du(&s.lab(), &p, h, None).unwrap().value;
        let want_du = dense::j_du(&s.lab(), &p, h, None).unwrap();
        assert!(rel(du, want_du) <= 1e-10, "{kernel:?} J_DU {du} vs {want_du}");
        let tu = j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap().value;
        let want_tu = dense::j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap();
        assert!(rel(tu, want_tu) <= 1e-9, "{kernel:?} J_TU {tu} vs {want_tu}");
    }
}

#[test]
fn fused_j_tu_du_equals_j_tu_and_pooled_j_du_computed_apart() {
    let prior = [0.1, 0.6, 0.3];
    let mask = [true, true, false];
    for (soft, kernel) in [(false, LabelKernel::Linear), (false, GAUSS), (true, GAUSS)] {
        let s = tiled_sample(47, 420, 4, 3, 0.0, false);
        let t = tiled_sample(48, 330, 4, 3, 0.5, soft);
        let (p, h) = (params(kernel, 0.05), h_of(&[&s, &t]));
        for active in [None, Some(&mask[..])] {
            let spec = MulObjectives {
                prior: Some(&prior),
                du: Some(DuRows::Pooled),
                du_active: active,
                estimator: McmdEstimator::Exact,
            };
            let both = j_tu_du(&s.lab(), &t.lab(), &spec, &p, h).unwrap();
            let tu = j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap();
            let pooled =
                Data { z: concatenate![Axis(0), s.z, t.z], y: concatenate![Axis(0), s.y, t.y] };
            let du = j_du(&pooled.lab(), &p, h, active).unwrap();
            let (ftu, fdu) = (both.tu.unwrap(), both.du.unwrap());
            assert!(
                rel(ftu.value, tu.value) <= 1e-12 && rel(fdu.value, du.value) <= 1e-10,
                "soft={soft}"
            );
            assert!(
                rel_err(&ftu.grad_s, &tu.grad_s) <= 1e-12
                    && rel_err(&ftu.grad_t, &tu.grad_t) <= 1e-12
            );
            let du_grad = concatenate![Axis(0), fdu.grad_s, fdu.grad_t];
            assert!(
                rel_err(&du_grad, &du.grad) <= 1e-10,
                "soft={soft}: {}",
                rel_err(&du_grad, &du.grad)
            );
        }
        // J_DU on the source rows alone, with no target row at all.
        let empty = Data { z: Array2::zeros((0, 4)), y: Array2::zeros((0, 3)) };
        let spec = MulObjectives {
            prior: None,
            du: Some(DuRows::Source),
            du_active: None,
            estimator: McmdEstimator::Exact,
        };
        let only = j_tu_du(&s.lab(), &empty.lab(), &spec, &p, h).unwrap();
        let want = j_du(&s.lab(), &p, h, None).unwrap();
        let got = only.du.unwrap();
        assert!(
            only.tu.is_none() && rel(got.value, want.value) <= 1e-12 && got.grad_t.dim() == (0, 4)
        );
        assert!(rel_err(&got.grad_s, &want.grad) <= 1e-12);
    }
}

#[test]
fn tiled_results_are_bitwise_identical_for_one_two_and_three_threads() {
    let s = tiled_sample(49, 900, 6, 4, 0.0, false);
    let t = tiled_sample(50, 700, 6, 4, 0.5, false);
    let ((zs, ys), (zt, yt)) = (s.to_f32(), t.to_f32());
    let (sl, tl) = (Labelled::new(zs.view(), ys.view()), Labelled::new(zt.view(), yt.view()));
    let prior = [0.25; 4];
    let (p, h) = (params(GAUSS, 0.05), h_of(&[&s, &t]));
    let spec = MulObjectives {
        prior: Some(&prior),
        du: Some(DuRows::Pooled),
        du_active: None,
        estimator: McmdEstimator::Exact,
    };
    let rff_spec = MulObjectives { estimator: McmdEstimator::RandomFeatures(300), ..spec };
    let run = |threads: usize, spec: &MulObjectives| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let r = j_tu_du(&sl, &tl, spec, &p, h).unwrap();
            let (tu, du) = (r.tu.unwrap(), r.du.unwrap());
            let s_soft =
                kernel_sum(zs.view(), ys.mapv(|v| v * 0.5).view(), zt.view(), yt.view(), h);
            (tu.value, du.value, tu.grad_s, tu.grad_t, du.grad_s, du.grad_t, s_soft)
        })
    };
    for spec in [&spec, &rff_spec] {
        let one = run(1, spec);
        assert_eq!(one, run(2, spec));
        assert_eq!(one, run(3, spec));
    }
}

#[test]
fn grouped_schedule_with_many_tiles_matches_dense_oracle_for_any_thread_count() {
    // 40 classes × 2 domains of ~30 rows: 80 tiles, grouped in pairs by the schedule.
    let s = sample(61, 1200, 3, 40, 0.0, false);
    let t = sample(62, 1000, 3, 40, 0.4, false);
    let prior = vec![1.0 / 40.0; 40];
    let (p, h) = (params(GAUSS, 0.05), h_of(&[&s, &t]));
    let spec = MulObjectives {
        prior: Some(&prior),
        du: Some(DuRows::Pooled),
        du_active: None,
        estimator: McmdEstimator::Exact,
    };
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let r = j_tu_du(&s.lab(), &t.lab(), &spec, &p, h).unwrap();
            let (tu, du) = (r.tu.unwrap(), r.du.unwrap());
            (tu.value, du.value, tu.grad_s, du.grad_t)
        })
    };
    let one = run(1);
    assert_eq!(one, run(2));
    assert_eq!(one, run(3));
    let want_tu = dense::j_tu(&s.lab(), &t.lab(), &prior, &p, h).unwrap();
    let pooled = Data { z: concatenate![Axis(0), s.z, t.z], y: concatenate![Axis(0), s.y, t.y] };
    let want_du = dense::j_du(&pooled.lab(), &p, h, None).unwrap();
    assert!(
        rel(one.0, want_tu) <= 1e-9 && rel(one.1, want_du) <= 1e-10,
        "{} {want_tu} {} {want_du}",
        one.0,
        one.1
    );
}

#[test]
fn one_hot_j_tu_with_linear_label_kernel_visits_only_same_class_tile_pairs() {
    let s = tiled_sample(51, 300, 3, 5, 0.0, false);
    let t = tiled_sample(52, 200, 3, 5, 0.5, false);
    let prior = [0.2; 5];
    let h = h_of(&[&s, &t]);
    let flops = |kernel, du| {
        let spec = MulObjectives {
            prior: Some(&prior),
            du,
            du_active: None,
            estimator: McmdEstimator::Exact,
        };
        j_tu_du_flops(&s.lab(), &t.lab(), &spec, &params(kernel, 0.05), h).unwrap()
    };
    let linear_tu = flops(LabelKernel::Linear, None);
    let gauss_tu = flops(GAUSS, None);
    let with_du = flops(LabelKernel::Linear, Some(DuRows::Pooled));
    // 5 classes: same-class pairs are about 1/5 of all pairs.
    assert!(linear_tu < 0.3 * gauss_tu, "{linear_tu} vs {gauss_tu}");
    assert!((with_du - gauss_tu).abs() < 0.2 * gauss_tu);
}

#[test]
fn exact_flop_count_follows_the_documented_formula_for_small_tiles() {
    // One domain, d = 3, two classes of 5 rows (two tiles), J_DU only (one objective):
    // diagonal pairs 5×5: 2·25·3 (Z Zᵀ) + 7·25 + 2·25·3 (K Z) + 5·2·(3 + 1) = 515 each;
    // the pair of the two tiles: 150 + 175 + 2·150 (K Z and Kᵀ Z) + 10·2·4 = 705;
    // centring and assembly: 10 rows · 3d · (1 + 1 objective) = 180.
    let mut a = sample(53, 10, 3, 2, 0.0, false);
    for i in 0..10 {
        a.y[[i, 0]] = f64::from(u8::from(i < 5));
        a.y[[i, 1]] = f64::from(u8::from(i >= 5));
    }
    let h = h_of(&[&a]);
    let spec = MulObjectives {
        prior: None,
        du: Some(DuRows::Source),
        du_active: None,
        estimator: McmdEstimator::Exact,
    };
    let got = j_tu_du_flops(&a.lab(), &a.lab(), &spec, &params(GAUSS, 0.05), h).unwrap();
    assert_eq!(got, 2.0 * 515.0 + 705.0 + 180.0);
}

// ---- Random features ----

#[test]
fn random_feature_gradients_match_finite_differences_of_their_own_loss() {
    let prior = [0.3, 0.3, 0.4];
    let s = sample(54, 40, 3, 3, 0.0, false);
    let t = sample(55, 30, 3, 3, 0.5, true);
    let (p, h) = (params(GAUSS, 0.05), h_of(&[&s, &t]));
    let est = McmdEstimator::RandomFeatures(64);
    let spec = MulObjectives {
        prior: Some(&prior),
        du: Some(DuRows::Pooled),
        du_active: None,
        estimator: est,
    };
    let got = j_tu_du(&s.lab(), &t.lab(), &spec, &p, h).unwrap();
    for (which, g) in [(0, got.tu.unwrap()), (1, got.du.unwrap())] {
        let at = |zs: &Array2<f64>, zt: &Array2<f64>| {
            let r = j_tu_du(
                &Labelled::new(zs.view(), s.y.view()),
                &Labelled::new(zt.view(), t.y.view()),
                &spec,
                &p,
                h,
            )
            .unwrap();
            if which == 0 {
                r.tu.unwrap().value
            } else {
                r.du.unwrap().value
            }
        };
        let fs = fd_grad(&s.z, |z| at(z, &t.z));
        let ft = fd_grad(&t.z, |z| at(&s.z, z));
        assert!(rel_err(&g.grad_s, &fs) <= 1e-6, "{which}: {}", rel_err(&g.grad_s, &fs));
        assert!(rel_err(&g.grad_t, &ft) <= 1e-6, "{which}: {}", rel_err(&g.grad_t, &ft));
    }
}

#[test]
fn random_feature_error_shrinks_with_r_and_is_small_for_many_features() {
    let prior = [0.25; 4];
    let s = sample(56, 300, 8, 4, 0.0, false);
    let t = sample(57, 250, 8, 4, 0.8, false);
    let (p, h) = (params(LabelKernel::Linear, 0.01), h_of(&[&s, &t]));
    let eval = |est| {
        let spec = MulObjectives {
            prior: Some(&prior),
            du: Some(DuRows::Pooled),
            du_active: None,
            estimator: est,
        };
        let r = j_tu_du(&s.lab(), &t.lab(), &spec, &p, h).unwrap();
        (r.tu.unwrap().value, r.du.unwrap().value)
    };
    let (tu, du) = eval(McmdEstimator::Exact);
    let err = |r: usize| {
        let (a, b) = eval(McmdEstimator::RandomFeatures(r));
        rel(a, tu).max(rel(b, du))
    };
    let (coarse, fine) = (err(32), err(32_768));
    assert!(fine < 0.02, "r = 32768: relative error {fine}");
    assert!(fine < coarse, "error did not shrink: {coarse} -> {fine}");
}

#[test]
fn random_features_are_translation_invariant_like_the_kernel() {
    let prior = [0.5, 0.5];
    let s = sample(58, 50, 3, 2, 0.0, false);
    let t = sample(59, 40, 3, 2, 0.4, false);
    let moved = |x: &Data| Data { z: x.z.mapv(|v| v + 3.0), y: x.y.clone() };
    let (p, h) = (params(GAUSS, 0.05), h_of(&[&s, &t]));
    let spec = MulObjectives {
        prior: Some(&prior),
        du: Some(DuRows::Pooled),
        du_active: None,
        estimator: McmdEstimator::RandomFeatures(128),
    };
    let a = j_tu_du(&s.lab(), &t.lab(), &spec, &p, h).unwrap().tu.unwrap();
    let (s2, t2) = (moved(&s), moved(&t));
    let b = j_tu_du(&s2.lab(), &t2.lab(), &spec, &p, h).unwrap().tu.unwrap();
    assert!(rel(a.value, b.value) <= 1e-9 && rel_err(&a.grad_s, &b.grad_s) <= 1e-8);
}

#[test]
fn mcmd_estimator_parses_validates_and_reads_from_toml() {
    assert_eq!("exact".parse::<McmdEstimator>().unwrap(), McmdEstimator::Exact);
    assert_eq!(
        "random-features:2048".parse::<McmdEstimator>().unwrap(),
        McmdEstimator::RandomFeatures(2048)
    );
    for bad in ["random-features:0", "random-features:", "rff:10", "random-features:-3", ""] {
        assert!(matches!(bad.parse::<McmdEstimator>(), Err(Error::Param { .. })), "{bad}");
    }
    assert_eq!(McmdEstimator::RandomFeatures(7).to_string(), "random-features:7");
    #[derive(serde::Deserialize)]
    struct C {
        mcmd: McmdEstimator,
    }
    let c: C = toml::from_str("mcmd = { random_features = 512 }").unwrap();
    assert_eq!(c.mcmd, McmdEstimator::RandomFeatures(512));
    let c: C = toml::from_str("mcmd = \"exact\"").unwrap();
    assert_eq!(c.mcmd, McmdEstimator::Exact);
    let s = sample(60, 10, 2, 2, 0.0, false);
    assert!(matches!(
        j_du_with(&s.lab(), &params(GAUSS, 0.1), 1.0, None, McmdEstimator::RandomFeatures(0)),
        Err(Error::Param { .. })
    ));
}

#[test]
fn zero_feature_dimension_is_rejected_before_work() {
    let z = Array2::<f64>::zeros((5, 0));
    let y = Array2::<f64>::eye(5);
    let a = Labelled::new(z.view(), y.view());
    assert!(matches!(j_du(&a, &params(GAUSS, 0.1), 1.0, None), Err(Error::Shape { .. })));
}
