//! Checks of the MMD-type terms of the baselines and the ablation: class-wise MMD and the
//! multi-kernel / joint MMD, against brute-force sums, finite differences and MMD(P, P) = 0.

use super::super::tests::{fd_grad, h_of, params, rel, rel_err, sample, Data};
use super::super::*;
use ndarray::{s, Array2, ArrayView2};

/// Brute force mean_{i∈a, j∈b} Π_v Σ_u β_v exp(−‖aᵥᵢ − bᵥⱼ‖²/h_{v,u}).
fn mean_kernel(a: &[&Array2<f64>], b: &[&Array2<f64>], fams: &[GaussianFamily]) -> f64 {
    let (na, nb) = (a[0].nrows(), b[0].nrows());
    let mut total = 0.0;
    for i in 0..na {
        for j in 0..nb {
            let mut k = 1.0;
            for (v, f) in fams.iter().enumerate() {
                let d2: f64 =
                    a[v].row(i).iter().zip(b[v].row(j)).map(|(x, y)| (x - y).powi(2)).sum();
                k *= f.bandwidths().iter().map(|h| f.weight * (-d2 / h).exp()).sum::<f64>();
            }
            total += k;
        }
    }
    total / (na * nb) as f64
}

fn views<'a>(x: &[&'a Array2<f64>]) -> Vec<ArrayView2<'a, f64>> {
    x.iter().map(|a| a.view()).collect()
}

fn fam(base: f64, count: usize, weight: f64) -> GaussianFamily {
    GaussianFamily { base, count, weight }
}

#[test]
fn gaussian_family_is_geometric_around_the_base() {
    assert_eq!(fam(4.0, 5, 1.0).bandwidths(), vec![16.0, 8.0, 4.0, 2.0, 1.0]);
    assert_eq!(fam(1.68, 1, 1.0).bandwidths(), vec![1.68]);
}

#[test]
fn joint_mmd_matches_brute_force_for_one_and_two_views() {
    let (s, t) = (sample(1, 23, 3, 4, 0.0, true), sample(2, 17, 3, 4, 0.8, true));
    let h = h_of(&[&s, &t]);
    for fams in [vec![fam(h, 5, 0.2)], vec![fam(h, 5, 1.0), fam(1.68, 1, 1.0)]] {
        let (sv, tv): (Vec<&Array2<f64>>, Vec<&Array2<f64>>) = if fams.len() == 1 {
            (vec![&s.z], vec![&t.z])
        } else {
            (vec![&s.z, &s.y], vec![&t.z, &t.y])
        };
        let got = joint_mmd2(&views(&sv), &views(&tv), &fams).unwrap();
        let want = mean_kernel(&sv, &sv, &fams) + mean_kernel(&tv, &tv, &fams)
            - 2.0 * mean_kernel(&sv, &tv, &fams);
        assert!(rel(got.value, want) < 1e-12, "{} vs {want}", got.value);
        assert!(got.value > 0.0);
    }
}

#[test]
fn single_kernel_mmd_is_the_kernel_sum_with_one_label_column() {
    let (s, t) = (sample(3, 20, 4, 3, 0.0, false), sample(4, 15, 4, 3, 0.5, false));
    let h = h_of(&[&s, &t]);
    let (ones_s, ones_t) = (Array2::<f64>::ones((20, 1)), Array2::<f64>::ones((15, 1)));
    let k = |a: &Data, ya: &Array2<f64>, b: &Data, yb: &Array2<f64>| {
        kernel_sum(a.z.view(), ya.view(), b.z.view(), yb.view(), h)[[0, 0]]
    };
    let want = k(&s, &ones_s, &s, &ones_s) / 400.0 + k(&t, &ones_t, &t, &ones_t) / 225.0
        - 2.0 * k(&s, &ones_s, &t, &ones_t) / 300.0;
    let got = joint_mmd2(&[s.z.view()], &[t.z.view()], &[fam(h, 1, 1.0)]).unwrap();
    assert!(rel(got.value, want) < 1e-12);
}

#[test]
fn joint_mmd_gradients_match_finite_differences_in_every_view() {
    let (s, t) = (sample(5, 14, 3, 3, 0.0, true), sample(6, 11, 3, 3, 0.6, true));
    let fams = [fam(h_of(&[&s, &t]), 3, 1.0), fam(1.68, 1, 1.0)];
    let value = |sz: &Array2<f64>, sy: &Array2<f64>, tz: &Array2<f64>, ty: &Array2<f64>| {
        joint_mmd2(&views(&[sz, sy]), &views(&[tz, ty]), &fams).unwrap().value
    };
    let got = joint_mmd2(&views(&[&s.z, &s.y]), &views(&[&t.z, &t.y]), &fams).unwrap();
    let checks = [
        (&got.grad_s[0], fd_grad(&s.z, |x| value(x, &s.y, &t.z, &t.y)), "source Z"),
        (&got.grad_s[1], fd_grad(&s.y, |x| value(&s.z, x, &t.z, &t.y)), "source predictions"),
        (&got.grad_t[0], fd_grad(&t.z, |x| value(&s.z, &s.y, x, &t.y)), "target Z"),
        (&got.grad_t[1], fd_grad(&t.y, |x| value(&s.z, &s.y, &t.z, x)), "target predictions"),
    ];
    for (g, fd, what) in checks {
        assert!(rel_err(g, &fd) <= 1e-6, "{what}: {}", rel_err(g, &fd));
    }
}

#[test]
fn mmd_of_a_sample_with_itself_is_zero_with_zero_gradient() {
    let s = sample(7, 30, 4, 3, 0.0, true);
    let fams = [fam(h_of(&[&s]), 5, 1.0), fam(1.68, 1, 1.0)];
    let r = joint_mmd2(&views(&[&s.z, &s.y]), &views(&[&s.z, &s.y]), &fams).unwrap();
    assert!(r.value.abs() < 1e-12, "{}", r.value);
    // Moving both copies together leaves the MMD at 0: the gradients cancel.
    for v in 0..2 {
        let sum = &r.grad_s[v] + &r.grad_t[v];
        assert!(sum.iter().all(|g| g.abs() < 1e-12));
    }
}

#[test]
fn joint_mmd_is_the_same_across_row_tiles() {
    // More rows than one tile (gram::ROW_TILE = 512) against the same rows split in two calls'
    // worth of tiles: the value must match the brute force.
    let (s, t) = (sample(8, 530, 2, 2, 0.0, false), sample(9, 40, 2, 2, 0.3, false));
    let f = [fam(h_of(&[&s, &t]), 2, 0.5)];
    let got = joint_mmd2(&[s.z.view()], &[t.z.view()], &f).unwrap();
    let want = mean_kernel(&[&s.z], &[&s.z], &f) + mean_kernel(&[&t.z], &[&t.z], &f)
        - 2.0 * mean_kernel(&[&s.z], &[&t.z], &f);
    assert!(rel(got.value, want) < 1e-10);
    let head = s.z.slice(s![..5, ..]).to_owned();
    assert!(joint_mmd2(&[head.view()], &[t.z.view()], &f).is_ok());
}

#[test]
fn joint_mmd_rejects_bad_views_and_families() {
    let (s, t) = (sample(10, 10, 3, 2, 0.0, false), sample(11, 8, 4, 2, 0.0, false));
    assert!(matches!(
        joint_mmd2(&[s.z.view()], &[t.z.view()], &[fam(1.0, 1, 1.0)]),
        Err(Error::Shape { .. })
    ));
    assert!(matches!(
        joint_mmd2(&[s.z.view()], &[s.z.view()], &[fam(0.0, 1, 1.0)]),
        Err(Error::Param { .. })
    ));
    assert!(matches!(
        joint_mmd2(&[s.z.view()], &[s.z.view()], &[fam(1.0, 0, 1.0)]),
        Err(Error::Param { .. })
    ));
    assert!(joint_mmd2::<f64>(&[], &[], &[]).is_err());
    let mut bad = s.z.clone();
    bad[[0, 0]] = f64::NAN;
    assert!(matches!(
        joint_mmd2(&[bad.view()], &[s.z.view()], &[fam(1.0, 1, 1.0)]),
        Err(Error::BadData { .. })
    ));
}

/// Brute-force class-wise MMD² between class k of a and class l of b (one-hot labels).
fn class_mmd2(a: &Data, k: usize, b: &Data, l: usize, h: f64) -> f64 {
    let rows = |d: &Data, c: usize| -> Array2<f64> {
        let idx: Vec<usize> = (0..d.z.nrows()).filter(|&i| d.y[[i, c]] == 1.0).collect();
        d.z.select(ndarray::Axis(0), &idx)
    };
    let (x, y) = (rows(a, k), rows(b, l));
    let f = [fam(h, 1, 1.0)];
    mean_kernel(&[&x], &[&x], &f) + mean_kernel(&[&y], &[&y], &f)
        - 2.0 * mean_kernel(&[&x], &[&y], &f)
}

#[test]
fn classwise_terms_match_brute_force_class_splits() {
    let (s, t) = (sample(12, 24, 3, 3, 0.0, false), sample(13, 18, 3, 3, 0.5, false));
    let h = h_of(&[&s, &t]);
    let prior = [0.5, 0.3, 0.2];
    let tu = classwise_j_tu(&s.lab(), &t.lab(), &prior, h).unwrap();
    let want: f64 = (0..3).map(|k| prior[k] * class_mmd2(&s, k, &t, k, h)).sum();
    assert!(rel(tu.value, want) < 1e-12, "{} vs {want}", tu.value);
    let du = classwise_j_du(&s.lab(), h, None).unwrap();
    let want: f64 = (0..3)
        .flat_map(|k| (0..3).map(move |l| (k, l)))
        .filter(|(k, l)| k != l)
        .map(|(k, l)| class_mmd2(&s, k, &s, l, h))
        .sum();
    assert!(rel(du.value, want) < 1e-12, "{} vs {want}", du.value);
}

#[test]
fn classwise_gradients_match_finite_differences() {
    let (s, t) = (sample(14, 18, 3, 3, 0.0, true), sample(15, 15, 3, 3, 0.4, false));
    let h = h_of(&[&s, &t]);
    let prior = [0.2, 0.0, 0.8];
    let tu = classwise_j_tu(&s.lab(), &t.lab(), &prior, h).unwrap();
    let at = |zs: &Array2<f64>, zt: &Array2<f64>| {
        classwise_j_tu(
            &Labelled::new(zs.view(), s.y.view()),
            &Labelled::new(zt.view(), t.y.view()),
            &prior,
            h,
        )
        .unwrap()
        .value
    };
    let (fs, ft) = (fd_grad(&s.z, |z| at(z, &t.z)), fd_grad(&t.z, |z| at(&s.z, z)));
    assert!(rel_err(&tu.grad_s, &fs) <= 1e-6 && rel_err(&tu.grad_t, &ft) <= 1e-6);
    let mask = [true, false, true];
    let du = classwise_j_du(&s.lab(), h, Some(&mask)).unwrap();
    let fd = fd_grad(&s.z, |z| {
        classwise_j_du(&Labelled::new(z.view(), s.y.view()), h, Some(&mask)).unwrap().value
    });
    assert!(rel_err(&du.grad, &fd) <= 1e-6, "{}", rel_err(&du.grad, &fd));
}

#[test]
fn classwise_mmd_of_a_domain_with_itself_is_zero() {
    let s = sample(16, 30, 3, 3, 0.0, false);
    let tu = classwise_j_tu(&s.lab(), &s.lab(), &[0.3, 0.3, 0.4], h_of(&[&s])).unwrap();
    assert!(tu.value.abs() < 1e-12);
}

#[test]
fn mcmd_with_linear_label_kernel_tends_to_classwise_mmd_as_eps_vanishes() {
    // W = (εnI + N)⁻¹ → diag(1/n_k): MCMD differs from class-wise MMD only by the εn shrinkage.
    let (s, t) = (sample(17, 24, 3, 3, 0.0, false), sample(18, 18, 3, 3, 0.5, false));
    let h = h_of(&[&s, &t]);
    let prior = [0.4, 0.4, 0.2];
    let mmd = classwise_j_tu(&s.lab(), &t.lab(), &prior, h).unwrap().value;
    let mcmd =
        j_tu(&s.lab(), &t.lab(), &prior, &params(LabelKernel::Linear, 1e-9), h).unwrap().value;
    assert!(rel(mcmd, mmd) < 1e-6, "{mcmd} vs {mmd}");
}
