//! A small ridge-penalised softmax regression, the auxiliary classifier of two scorers (the
//! domain classifier of DEV and the reverse classifier of circular validation).
//!
//! Features are standardised with the training rows' mean and standard deviation; with
//! `X` (n × d, standardised, a column of ones appended for the bias), one-hot targets `Y`
//! (n × k) and `P = softmax(XW)`:
//!
//! ```text
//! L(W) = −(1/n) Σ_i log P_{i,y_i} + (λ/2)‖W_{:d}‖²      ∇L = Xᵀ(P − Y)/n + λ·W_{:d}
//! ```
//!
//! The softmax's Hessian wrt the logits is at most ½·I, so ∇L is Lipschitz with
//! `L ≤ ½·λ_max(XᵀX/n) + λ`; λ_max comes from a fixed number of power iterations. Training is
//! Nesterov-accelerated gradient descent with step 1/L for a fixed number of iterations: no
//! randomness, no thread-dependent sums (ndarray's products are deterministic), so the same
//! inputs give the same bits.

use ndarray::{s, Array1, Array2, ArrayView2, Axis};

/// Ridge strength λ, iterations of accelerated descent, power iterations for L.
const RIDGE: f64 = 1e-2;
const ITERS: usize = 100;
const POWER_ITERS: usize = 20;

/// A fitted classifier: the standardisation and the weights ((d + 1) × k, last row = bias).
pub(super) struct Linear {
    mean: Array1<f64>,
    scale: Array1<f64>,
    w: Array2<f64>,
}

impl Linear {
    /// Fits on `x` (n × d, n ≥ 1) with labels `y` (< k).
    pub fn fit(x: ArrayView2<f32>, y: &[usize], k: usize) -> Linear {
        let xf = x.mapv(f64::from);
        let mean = xf.mean_axis(Axis(0)).unwrap_or_else(|| Array1::zeros(x.ncols()));
        let sd = xf.std_axis(Axis(0), 0.0);
        // Constant columns carry no information; a unit scale keeps them at 0.
        let scale = sd.mapv(|v| if v > 1e-12 { v } else { 1.0 });
        let mut model = Linear { mean, scale, w: Array2::zeros((x.ncols() + 1, k)) };
        let xs = model.design(x);
        let n = xs.nrows() as f64;
        let mut onehot = Array2::<f64>::zeros((xs.nrows(), k));
        y.iter().enumerate().for_each(|(i, &c)| onehot[[i, c]] = 1.0);
        let lip = 0.5 * top_eigenvalue(&xs) / n + RIDGE;
        let step = 1.0 / lip;
        let d = x.ncols();
        let (mut w, mut w_prev) = (model.w.clone(), model.w.clone());
        for t in 0..ITERS {
            // Nesterov: look ahead along the last move, take the gradient step there.
            let beta = t as f64 / (t as f64 + 3.0);
            let v = &w + &((&w - &w_prev) * beta);
            let mut g = xs.t().dot(&(softmax_rows(xs.dot(&v)) - &onehot)) / n;
            g.slice_mut(s![..d, ..]).scaled_add(RIDGE, &v.slice(s![..d, ..]));
            w_prev = w;
            w = v - g * step;
        }
        model.w = w;
        model
    }

    /// Class probabilities of `x` (n × d) → n × k.
    pub fn predict_proba(&self, x: ArrayView2<f32>) -> Array2<f64> {
        softmax_rows(self.design(x).dot(&self.w))
    }

    /// Standardised features with a column of ones appended.
    fn design(&self, x: ArrayView2<f32>) -> Array2<f64> {
        let (n, d) = x.dim();
        let mut out = Array2::<f64>::ones((n, d + 1));
        out.slice_mut(s![.., ..d]).assign(&((x.mapv(f64::from) - &self.mean) / &self.scale));
        out
    }
}

fn softmax_rows(mut a: Array2<f64>) -> Array2<f64> {
    for mut row in a.rows_mut() {
        let max = row.fold(f64::NEG_INFINITY, |m, &v| m.max(v));
        row.mapv_inplace(|v| (v - max).exp());
        let z = row.sum();
        row.mapv_inplace(|v| v / z);
    }
    a
}

/// Largest eigenvalue of XᵀX by power iteration from the all-ones vector (an upper estimate
/// is what matters: it is padded by 10%).
fn top_eigenvalue(x: &Array2<f64>) -> f64 {
    let mut v = Array1::<f64>::ones(x.ncols());
    let mut lambda = 1.0;
    for _ in 0..POWER_ITERS {
        let u = x.t().dot(&x.dot(&v));
        lambda = u.dot(&u).sqrt() / v.dot(&v).sqrt().max(1e-300);
        if lambda <= 0.0 || !lambda.is_finite() {
            return 1.0;
        }
        v = &u / u.dot(&u).sqrt();
    }
    1.1 * lambda.max(1e-12)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::Array2;

    #[test]
    fn separates_separable_classes_and_is_reproducible() {
        // Three clusters along the axes of a 4-d space.
        let x = Array2::<f32>::from_shape_fn((60, 4), |(i, j)| {
            if j == i % 3 {
                2.0 + (i % 7) as f32 * 0.1
            } else {
                (i % 5) as f32 * 0.05
            }
        });
        let y: Vec<usize> = (0..60).map(|i| i % 3).collect();
        let m = Linear::fit(x.view(), &y, 3);
        let p = m.predict_proba(x.view());
        for (row, &c) in p.rows().into_iter().zip(&y) {
            assert!((row.sum() - 1.0).abs() < 1e-9);
            assert!(row[c] > 0.5, "{row:?} for class {c}");
        }
        let again = Linear::fit(x.view(), &y, 3).predict_proba(x.view());
        assert_eq!(p, again);
    }

    #[test]
    fn a_class_without_rows_gets_low_probability_and_constant_columns_are_harmless() {
        let x = Array2::<f32>::from_shape_fn(
            (20, 3),
            |(i, j)| if j == 2 || j == i % 2 { 1.0 } else { 0.0 },
        );
        let y: Vec<usize> = (0..20).map(|i| i % 2).collect();
        let p = Linear::fit(x.view(), &y, 3).predict_proba(x.view());
        assert!(p.iter().all(|v| v.is_finite()));
        assert!(p.column(2).iter().all(|&v| v < 0.2));
    }
}
