//! Tests of MLLS's EM: SQUAREM against plain EM, the one-logarithm likelihood, counted rows.

use ndarray::Array2;
use rand::{Rng, SeedableRng};

/// The trace changes nothing but the trace: same prior (bit for bit), iterations and
/// convergence with and without it.
#[test]
fn em_without_the_trace_gives_the_same_prior_bit_for_bit() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let post = Array2::from_shape_fn((500, 4), |_| rng.random::<f64>() + 0.01);
    let post = &post / &post.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1));
    let pi = [0.1, 0.2, 0.3, 0.4];
    let traced = super::em_prior(post.view(), &pi, 1e-10, 500).unwrap();
    let bare = super::em(post.view(), super::RowCounts::ONCE, &pi, 1e-10, 500, false).unwrap();
    assert!(traced.iterations > 3 && traced.log_likelihood.len() >= 2);
    assert!(
        traced.log_likelihood.windows(2).all(|w| w[1] >= w[0] - 1e-12),
        "{:?}",
        traced.log_likelihood
    );
    assert!(bare.log_likelihood.is_empty());
    assert_eq!((bare.iterations, bare.converged), (traced.iterations, traced.converged));
    let bits = |p: &[f64]| p.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&bare.prior), bits(&traced.prior));
}

/// The one-logarithm sum equals the sum of logarithms to rounding, over several splits,
/// with terms from the smallest normal number to large ones; a term that is not a positive
/// normal number makes it NaN.
#[test]
fn log_sum_matches_the_sum_of_logarithms() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let xs: Vec<f64> = (0..5000)
        .map(|i| match i % 97 {
            0 => f64::MIN_POSITIVE,
            1 => 1e300,
            _ => (rng.random::<f64>() * 40.0 - 30.0).exp(),
        })
        .collect();
    let mut sum = super::LogSum::new();
    xs.iter().for_each(|&x| sum.add_times(x, 1));
    let want: f64 = xs.iter().map(|x| x.ln()).sum();
    let got = sum.ln();
    assert!((got - want).abs() <= 1e-14 * want.abs(), "{got} vs {want}");
    assert_eq!(super::LogSum::new().ln(), 0.0);
    for bad in [0.0, -1.0, f64::INFINITY, f64::NAN, f64::MIN_POSITIVE / 2.0] {
        let mut s = super::LogSum::new();
        s.add_times(2.0, 1);
        s.add_times(bad, 3);
        assert!(s.ln().is_nan(), "{bad}");
    }
}

/// A term added k times at once is the term added k times: counts from 1 to 1500 (past a
/// block of 512), terms from the smallest normal number to 1e300.
#[test]
fn log_sum_of_counted_terms_matches_the_repeated_terms() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(6);
    let terms: Vec<(f64, u32)> = (0..3000)
        .map(|i| {
            let x = match i % 89 {
                0 => f64::MIN_POSITIVE,
                1 => 1e300,
                _ => (rng.random::<f64>() * 40.0 - 30.0).exp(),
            };
            (x, if i % 500 == 7 { 1500 } else { rng.random_range(1..9) })
        })
        .collect();
    let (mut counted, mut repeated) = (super::LogSum::new(), super::LogSum::new());
    for &(x, k) in &terms {
        counted.add_times(x, k);
        (0..k).for_each(|_| repeated.add_times(x, 1));
    }
    let want: f64 = terms.iter().map(|&(x, k)| f64::from(k) * x.ln()).sum();
    for got in [counted.ln(), repeated.ln()] {
        assert!((got - want).abs() <= 1e-13 * want.abs(), "{got} vs {want}");
    }
    let mut zero = super::LogSum::new();
    zero.add_times(3.0, 0);
    assert_eq!(zero.ln(), 0.0, "a term counted 0 times adds nothing");
}

/// Posteriors of a weak classifier (n × c) whose target lacks the last two classes: the
/// maximum lies on the simplex's boundary, where plain EM creeps.
fn weak_posteriors(n: usize) -> (Array2<f64>, Vec<f64>) {
    let c = 5;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    // Rows of classes 0, 1, 2 in the proportions 5 : 3 : 2.
    let post = Array2::from_shape_fn((n, c), |(i, k)| {
        let y = [0, 0, 0, 0, 0, 1, 1, 1, 2, 2][i % 10];
        (f64::from(u8::from(k == y)) + rng.random::<f64>() * 0.6).exp()
    });
    let post = &post / &post.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1));
    (post, vec![0.2; c])
}

/// ∂L/∂p_k = (1/n) Σ_i (f_ik/π_k) / Σ_j (p_j/π_j) f_ij: at the maximum over the simplex it is
/// 1 where p_k > 0 and at most 1 where p_k = 0 (KKT).
fn likelihood_gradient(post: &Array2<f64>, pi: &[f64], p: &[f64]) -> Vec<f64> {
    let n = post.nrows() as f64;
    let mut g = vec![0.0; pi.len()];
    for row in post.rows() {
        let s: f64 = row.iter().zip(p.iter().zip(pi)).map(|(f, (a, b))| f * a / b).sum();
        g.iter_mut().zip(row.iter().zip(pi)).for_each(|(gk, (f, b))| *gk += f / b / s / n);
    }
    g
}

/// Where plain EM stops at its cap short of the tolerance, the accelerated iteration
/// converges in fewer evaluations of F, to a higher likelihood, at a point that meets the
/// maximum's KKT conditions.
#[test]
fn squarem_converges_where_plain_em_stops_at_its_cap() {
    let (post, pi) = weak_posteriors(2000);
    let problem = super::EmProblem {
        rows: post.as_slice().unwrap().into(),
        counts: super::RowCounts::ONCE,
        c: pi.len(),
        train_prior: &pi,
    };
    let mut plain = pi.clone();
    for _ in 0..1000 {
        plain = problem.step(&plain);
    }
    let plain_change: f64 =
        problem.step(&plain).iter().zip(&plain).map(|(a, b)| (a - b).abs()).sum();
    assert!(
        plain_change > 1e-8,
        "plain EM converged within 1000 steps ({plain_change:e}): not a slow case"
    );
    let fit = super::em_prior(post.view(), &pi, 1e-8, 1000).unwrap();
    eprintln!(
        "plain EM's last change {plain_change:e}; SQUAREM: {} evaluations, prior {:?}",
        fit.iterations, fit.prior
    );
    assert!(fit.converged && fit.iterations < 500, "{} evaluations", fit.iterations);
    let l = |p: &[f64]| problem.log_likelihood(p);
    assert!(l(&fit.prior) > l(&plain), "{} vs plain {}", l(&fit.prior), l(&plain));
    assert!(
        (fit.prior.iter().sum::<f64>() - 1.0).abs() < 1e-12 && fit.prior.iter().all(|&v| v >= 0.0)
    );
    let g = likelihood_gradient(&post, &pi, &fit.prior);
    for (k, (&gk, &pk)) in g.iter().zip(&fit.prior).enumerate() {
        assert!(gk <= 1.0 + 1e-4, "class {k}: gradient {gk} > 1 (p = {:?})", fit.prior);
        if pk > 1e-3 {
            assert!((gk - 1.0).abs() < 1e-4, "class {k}: p = {pk}, gradient {gk}");
        }
    }
}

/// A run that converges within two steps is plain EM's, bit for bit; a longer one reaches
/// plain EM's fixed point.
#[test]
fn squarem_agrees_with_plain_em() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
    let post = Array2::from_shape_fn((800, 3), |_| rng.random::<f64>() + 0.01);
    let post = &post / &post.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1));
    let pi = [0.5, 0.3, 0.2];
    let problem = super::EmProblem {
        rows: post.as_slice().unwrap().into(),
        counts: super::RowCounts::ONCE,
        c: 3,
        train_prior: &pi,
    };
    let two = problem.step(&problem.step(&pi));
    let fit = super::em_prior(post.view(), &pi, 1.0, 10).unwrap();
    assert_eq!((fit.iterations, fit.converged), (1, true));
    assert_eq!(fit.prior, problem.step(&pi));
    // A tolerance just above the second step's move stops the run after it.
    let second_move: f64 = two.iter().zip(&problem.step(&pi)).map(|(a, b)| (a - b).abs()).sum();
    let fit = super::em_prior(post.view(), &pi, second_move * (1.0 + 1e-12), 10).unwrap();
    assert_eq!((fit.iterations, fit.prior.clone()), (2, two));
    let mut plain = pi.to_vec();
    for _ in 0..20_000 {
        plain = problem.step(&plain);
    }
    let fit = super::em_prior(post.view(), &pi, 1e-13, 20_000).unwrap();
    assert!(fit.converged);
    let d: f64 = fit.prior.iter().zip(&plain).map(|(a, b)| (a - b).abs()).sum();
    assert!(d < 1e-8, "ℓ1 {d:e}: {:?} vs plain {plain:?}", fit.prior);
}

/// Rows counted k times give the estimate (and the BCTS fit) of the rows repeated k times, up to
/// summation order; counted once each, `estimate`'s bits.
#[test]
fn counted_rows_give_the_estimate_of_the_repeated_rows() {
    use super::super::bcts::{fit_bcts, fit_bcts_counted};
    use super::super::estimators::{ShiftEstimator, ShiftInputs};
    use super::super::prior::RowCounts;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
    let c = 4;
    // A weak, miscalibrated classifier: probabilities leaning to the label, then normalised.
    let mut probs = |n: usize, lean: &[usize]| {
        let p = Array2::from_shape_fn((n, c), |(i, k)| {
            (f64::from(u8::from(k == lean[i % lean.len()])) * 0.6 + rng.random::<f64>()).exp()
        });
        (&p / &p.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1))).mapv(|v| v as f32)
    };
    let labels: Vec<usize> = (0..300).map(|i| i % c).collect();
    let hold = probs(300, &labels);
    let target = probs(200, &[0, 0, 1, 2]);
    let hold_times: Vec<u32> = (0..300).map(|i| [1, 2, 3, 1, 1][i % 5]).collect();
    let target_times: Vec<u32> = (0..200).map(|i| [2, 1, 4][i % 3]).collect();
    let repeat = |x: &Array2<f32>, times: &[u32]| {
        let rows: Vec<usize> = times
            .iter()
            .enumerate()
            .flat_map(|(i, &k)| std::iter::repeat_n(i, k as usize))
            .collect();
        (x.select(ndarray::Axis(0), &rows), rows)
    };
    let (hold_rep, hold_rows) = repeat(&hold, &hold_times);
    let labels_rep: Vec<usize> = hold_rows.iter().map(|&i| labels[i]).collect();
    let (target_rep, _) = repeat(&target, &target_times);
    let ps = [0.25; 4];
    let inputs = ShiftInputs {
        source_probs: hold.view(),
        source_labels: &labels,
        target_probs: target.view(),
        source_prior: Some(&ps),
    };
    let repeated = ShiftInputs {
        source_probs: hold_rep.view(),
        source_labels: &labels_rep,
        target_probs: target_rep.view(),
        source_prior: Some(&ps),
    };
    let mlls = super::Mlls::default();
    let want = mlls.estimate(&repeated).unwrap();
    let got = mlls
        .estimate_counted(&inputs, (RowCounts(Some(&hold_times)), RowCounts(Some(&target_times))))
        .unwrap();
    let gap: f64 =
        want.target_prior.iter().zip(&got.target_prior).map(|(a, b)| (a - b).abs()).sum();
    assert!(gap < 1e-9, "ℓ1 {gap:e}: {:?} vs {:?}", got.target_prior, want.target_prior);
    assert!(
        super::super::l1_distance(&got.target_prior, &ps) > 0.05,
        "a trivial case: {:?}",
        got.target_prior
    );
    let (a, b) = (
        fit_bcts(hold_rep.view(), &labels_rep).unwrap(),
        fit_bcts_counted(hold.view(), &labels, RowCounts(Some(&hold_times))).unwrap(),
    );
    assert!(
        (a.inv_temperature - b.inv_temperature).abs() < 1e-9 && (a.nll - b.nll).abs() < 1e-12,
        "{a:?} vs {b:?}"
    );
    assert!(
        (a.inv_temperature - 1.0).abs() > 0.05,
        "BCTS left the probabilities as they were: {a:?}"
    );
    let once = mlls.estimate_counted(&inputs, (RowCounts::ONCE, RowCounts::ONCE)).unwrap();
    assert_eq!(once.target_prior, mlls.estimate(&inputs).unwrap().target_prior);
    // A count per row or an error.
    assert!(mlls
        .estimate_counted(&inputs, (RowCounts(Some(&hold_times[1..])), RowCounts::ONCE))
        .is_err());
}
