//! Batch normalisation whose statistics come from a leading block of rows.
//!
//! Full-batch training puts the source rows first and the target rows after them
//! (`../shared/docs/pitfalls-label-shift.md`, point 4): the mean and variance are computed over rows
//! `0..m` only (`m = stats_rows`), and ALL `n` rows are normalised with them, so the target is
//! never normalised with its own statistics. The backward pass is exact for this rule: every
//! row's output depends on the statistics, so gradients from all `n` rows flow into rows `0..m`.
//!
//! Forward, per feature column (biased variance, as in training-mode BatchNorm):
//! μ = (1/m)·Σ_{j<m} x_j,  σ² = (1/m)·Σ_{j<m} (x_j − μ)²,  r = (σ² + ε)^(−1/2),
//! x̂_i = (x_i − μ)·r,  y_i = γ·x̂_i + β  for i < n.
//!
//! Backward, with g_i = γ·∂ℓ/∂y_i:
//! ∂ℓ/∂x_j = r·g_j − [j < m]·(r/m)·(Σ_{i<n} g_i + x̂_j·Σ_{i<n} g_i·x̂_i).
//! (∂σ²/∂μ = 0, since Σ_{j<m}(x_j − μ) = 0.) With m = n this is the usual BatchNorm backward.

use ndarray::{s, Array1, Array2, ArrayView2, Axis, Zip};
use serde::{Deserialize, Serialize};

use crate::Real;

/// ε added to the variance (PyTorch's default).
pub const BN_EPS: f64 = 1e-5;

/// Learnable affine part of BatchNorm: `gamma` (scale, init 1) and `beta` (shift, init 0),
/// each of length `d` (the layer width). There are no running statistics: evaluation uses the
/// statistics of explicitly given rows (see [`crate::nn::Network::predict_proba`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchNorm<T> {
    /// Scale γ, length `d`.
    pub gamma: Array1<T>,
    /// Shift β, length `d`.
    pub beta: Array1<T>,
}

/// What the backward pass needs from a forward pass.
#[derive(Clone, Debug)]
pub struct BnCache<T> {
    /// Normalised input x̂, `n × d`.
    xhat: Array2<T>,
    /// r = (σ² + ε)^(−1/2), length `d`.
    rstd: Array1<T>,
    /// Number m of leading rows the statistics came from.
    stats_rows: usize,
}

/// Gradients of a [`BatchNorm`] layer.
#[derive(Clone, Debug, PartialEq)]
pub struct BnGrad<T> {
    /// ∂ℓ/∂γ, length `d`.
    pub dgamma: Array1<T>,
    /// ∂ℓ/∂β, length `d`.
    pub dbeta: Array1<T>,
}

/// Per-column mean and r = (σ² + ε)^(−1/2) of `x` (`m × d`, m ≥ 1), biased variance, two-pass.
pub fn column_stats<T: Real>(x: ArrayView2<T>) -> (Array1<T>, Array1<T>) {
    let m = x.nrows();
    assert!(m >= 1, "BatchNorm statistics need at least one row");
    let inv_m = T::from_f64_(1.0 / m as f64);
    let mean = x.sum_axis(Axis(0)) * inv_m;
    let mut var = Array1::<T>::zeros(x.ncols());
    for row in x.rows() {
        Zip::from(&mut var).and(&row).and(&mean).for_each(|v, &xv, &mu| {
            let d = xv - mu;
            *v = *v + d * d;
        });
    }
    let eps = T::from_f64_(BN_EPS);
    let rstd = var.mapv(|v| (v * inv_m + eps).sqrt().recip());
    (mean, rstd)
}

impl<T: Real> BatchNorm<T> {
    /// γ = 1, β = 0 for a layer of width `d`.
    pub fn new(d: usize) -> Self {
        BatchNorm { gamma: Array1::ones(d), beta: Array1::zeros(d) }
    }

    /// Normalises `x` in place with given statistics and applies γ, β: `x ↦ γ·(x − mean)·rstd + β`.
    pub fn apply_inplace(&self, x: &mut Array2<T>, mean: &Array1<T>, rstd: &Array1<T>) {
        for mut row in x.rows_mut() {
            Zip::from(&mut row)
                .and(mean)
                .and(rstd)
                .and(&self.gamma)
                .and(&self.beta)
                .for_each(|v, &mu, &r, &g, &b| *v = g * ((*v - mu) * r) + b);
        }
    }

    /// Training-style forward on `x` (`n × d`, consumed): statistics from rows `0..stats_rows`,
    /// applied to all rows. Returns `y` (`n × d`) and the cache for [`BatchNorm::backward`].
    ///
    /// # Panics
    /// If `stats_rows` is 0 or exceeds `n`.
    pub fn forward(&self, mut x: Array2<T>, stats_rows: usize) -> (Array2<T>, BnCache<T>) {
        assert!(
            stats_rows >= 1 && stats_rows <= x.nrows(),
            "BatchNorm: stats_rows = {stats_rows} must be in 1..={}",
            x.nrows()
        );
        let (mean, rstd) = column_stats(x.slice(s![..stats_rows, ..]));
        for mut row in x.rows_mut() {
            Zip::from(&mut row).and(&mean).and(&rstd).for_each(|v, &mu, &r| *v = (*v - mu) * r);
        }
        let mut y = x.clone();
        for mut row in y.rows_mut() {
            Zip::from(&mut row)
                .and(&self.gamma)
                .and(&self.beta)
                .for_each(|v, &g, &b| *v = g * *v + b);
        }
        (y, BnCache { xhat: x, rstd, stats_rows })
    }

    /// Exact backward of [`BatchNorm::forward`] (see the module docs): `dy = ∂ℓ/∂y` (`r × d`,
    /// consumed and reused as the output buffer) ↦ (∂ℓ/∂γ, ∂ℓ/∂β, ∂ℓ/∂x `r × d`). `dy` may
    /// hold only the leading r rows (m ≤ r ≤ n): the rows after them count as ∂ℓ/∂y = 0.
    ///
    /// # Panics
    /// If r < m (a statistics row would lose its gradient) or r > n.
    pub fn backward(&self, cache: &BnCache<T>, mut dy: Array2<T>) -> (BnGrad<T>, Array2<T>) {
        assert!(
            dy.nrows() >= cache.stats_rows && dy.nrows() <= cache.xhat.nrows(),
            "BatchNorm::backward: dy has {} rows, needs {}..={}",
            dy.nrows(),
            cache.stats_rows,
            cache.xhat.nrows()
        );
        let dbeta = dy.sum_axis(Axis(0));
        let mut dgamma = Array1::<T>::zeros(dy.ncols());
        for (drow, xrow) in dy.rows().into_iter().zip(cache.xhat.rows()) {
            Zip::from(&mut dgamma).and(&drow).and(&xrow).for_each(|a, &d, &x| *a = *a + d * x);
        }
        // Σ_i g_i = γ·∂ℓ/∂β and Σ_i g_i·x̂_i = γ·∂ℓ/∂γ (g = γ·dy).
        let m = cache.stats_rows;
        let inv_m = T::from_f64_(1.0 / m as f64);
        let sum_g = &self.gamma * &dbeta;
        let sum_gx = &self.gamma * &dgamma;
        // dx_i = r·γ·dy_i for every row ...
        let scale = &self.gamma * &cache.rstd;
        for mut row in dy.rows_mut() {
            Zip::from(&mut row).and(&scale).for_each(|d, &s| *d = *d * s);
        }
        // ... minus (r/m)·(Σg + x̂_j·Σg x̂) on the statistics rows.
        let coef = &cache.rstd * inv_m;
        for (mut drow, xrow) in dy.rows_mut().into_iter().zip(cache.xhat.rows()).take(m) {
            Zip::from(&mut drow)
                .and(&xrow)
                .and(&coef)
                .and(&sum_g)
                .and(&sum_gx)
                .for_each(|d, &xh, &c, &sg, &sgx| *d = *d - c * (sg + xh * sgx));
        }
        (BnGrad { dgamma, dbeta }, dy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::test_support::{assert_grad_close, fd_grad, random_matrix};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn check_bn_grad(n: usize, m: usize, seed: u64) {
        let d = 3;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Shifted and scaled columns, non-trivial γ and β.
        let x = random_matrix(n, d, &mut rng).mapv(|v| 2.0 * v + 0.5);
        let mut bn = BatchNorm::<f64>::new(d);
        bn.gamma = Array1::from(vec![1.3, -0.7, 0.4]);
        bn.beta = Array1::from(vec![0.2, 0.0, -0.5]);
        // Non-linear loss so the γ/β/x interactions are exercised: Σ R∘y + ½Σ y².
        let r = random_matrix(n, d, &mut rng);
        let loss = |bn: &BatchNorm<f64>, x: &Array2<f64>| {
            let (y, _) = bn.forward(x.clone(), m);
            (&y * &r).sum() + 0.5 * y.mapv(|v| v * v).sum()
        };
        let (y, cache) = bn.forward(x.clone(), m);
        let dy = &r + &y;
        let (g, dx) = bn.backward(&cache, dy);

        let num_x = fd_grad(x.as_slice().unwrap(), |v| {
            loss(&bn, &Array2::from_shape_vec((n, d), v.to_vec()).unwrap())
        });
        assert_grad_close(dx.as_slice().unwrap(), &num_x, "BN dx");
        let num_g = fd_grad(bn.gamma.as_slice().unwrap(), |v| {
            let mut b = bn.clone();
            b.gamma.as_slice_mut().unwrap().copy_from_slice(v);
            loss(&b, &x)
        });
        assert_grad_close(g.dgamma.as_slice().unwrap(), &num_g, "BN dgamma");
        let num_b = fd_grad(bn.beta.as_slice().unwrap(), |v| {
            let mut b = bn.clone();
            b.beta.as_slice_mut().unwrap().copy_from_slice(v);
            loss(&b, &x)
        });
        assert_grad_close(g.dbeta.as_slice().unwrap(), &num_b, "BN dbeta");
    }

    #[test]
    fn batchnorm_gradient_with_stats_from_leading_rows_matches_finite_differences() {
        check_bn_grad(8, 5, 4);
    }

    #[test]
    fn batchnorm_gradient_with_stats_from_all_rows_matches_finite_differences() {
        check_bn_grad(7, 7, 5);
    }

    #[test]
    fn batchnorm_normalises_stats_rows_to_zero_mean_unit_variance_only() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let mut x = random_matrix(10, 2, &mut rng);
        // Rows 6.. are shifted: they must keep their shift after normalisation.
        x.slice_mut(s![6.., ..]).mapv_inplace(|v| v + 5.0);
        let bn = BatchNorm::<f64>::new(2);
        let (y, _) = bn.forward(x, 6);
        let head = y.slice(s![..6, ..]);
        for c in 0..2 {
            let col = head.column(c);
            let mean = col.mean().unwrap();
            let var = col.mapv(|v| (v - mean).powi(2)).mean().unwrap();
            assert!(mean.abs() < 1e-12, "mean {mean}");
            assert!((var - 1.0).abs() < 1e-4, "var {var}");
            assert!(y.slice(s![6.., c]).mean().unwrap() > 2.0);
        }
    }

    #[test]
    #[should_panic(expected = "stats_rows")]
    fn batchnorm_rejects_zero_stats_rows() {
        let bn = BatchNorm::<f64>::new(2);
        let _ = bn.forward(Array2::zeros((3, 2)), 0);
    }
}
