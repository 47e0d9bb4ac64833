//! Finite-difference helpers shared by the `nn` tests (f64 throughout).

use ndarray::Array2;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};

/// Central-difference step: truncation error O(h²) ≈ 1e-10, round-off ≈ 1e-16·|ℓ|/h.
pub const FD_STEP: f64 = 1e-5;

/// Numerical gradient of `f` at `x` by central differences, one coordinate at a time.
pub fn fd_grad(x: &[f64], mut f: impl FnMut(&[f64]) -> f64) -> Vec<f64> {
    let mut xs = x.to_vec();
    (0..x.len())
        .map(|i| {
            let orig = xs[i];
            xs[i] = orig + FD_STEP;
            let up = f(&xs);
            xs[i] = orig - FD_STEP;
            let down = f(&xs);
            xs[i] = orig;
            (up - down) / (2.0 * FD_STEP)
        })
        .collect()
}

/// Element-wise `|a − n| ≤ 1e-6 + 1e-5·|n|`; also refuses an all-zero numerical gradient so a
/// check cannot pass vacuously.
pub fn assert_grad_close(analytic: &[f64], numeric: &[f64], what: &str) {
    assert!(
        numeric.iter().any(|v| v.abs() > 1e-8),
        "{what}: numerical gradient is identically zero"
    );
    assert_grad_close_maybe_zero(analytic, numeric, what);
}

/// [`assert_grad_close`] without the non-zero guard, for tensors whose true gradient is zero.
pub fn assert_grad_close_maybe_zero(analytic: &[f64], numeric: &[f64], what: &str) {
    assert_eq!(analytic.len(), numeric.len(), "{what}: length");
    for (i, (a, n)) in analytic.iter().zip(numeric).enumerate() {
        assert!(
            (a - n).abs() <= 1e-6 + 1e-5 * n.abs(),
            "{what}[{i}]: analytic {a:e} vs numerical {n:e}"
        );
    }
}

/// `n × m` matrix of standard normal draws.
pub fn random_matrix<R: Rng + ?Sized>(n: usize, m: usize, rng: &mut R) -> Array2<f64> {
    Array2::from_shape_simple_fn((n, m), || StandardNormal.sample(rng))
}
