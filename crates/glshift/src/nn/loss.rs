//! Softmax and weighted softmax cross-entropy.

use ndarray::{Array2, ArrayView2};

use crate::Real;

/// Row-wise softmax of `logits` (`n × c`) → probabilities (`n × c`), each row summing to 1.
/// Numerically stable: the row maximum is subtracted before exponentiating, so logits of any
/// finite magnitude (e.g. ±1000) give finite probabilities.
pub fn softmax<T: Real>(logits: ArrayView2<T>) -> Array2<T> {
    let mut p = logits.to_owned();
    super::rows::for_each_row(&mut p, |_, row| softmax_in_place(row));
    p
}

/// One row of [`softmax`], in place.
pub(crate) fn softmax_in_place<T: Real>(row: &mut [T]) {
    let max = row.iter().fold(T::neg_infinity(), |m, &v| if v > m { v } else { m });
    let mut sum = T::zero();
    for v in row.iter_mut() {
        *v = (*v - max).exp();
        sum = sum + *v;
    }
    let inv = sum.recip();
    for v in row.iter_mut() {
        *v = *v * inv;
    }
}

/// One-hot rows of `labels`: an `n × c` matrix Y with Y[i, yᵢ] = 1 and 0 elsewhere.
/// Labels must be `< c` (callers validate labels when loading; out of range panics as indexing).
pub fn one_hot<T: Real>(labels: &[usize], c: usize) -> Array2<T> {
    let mut y = Array2::<T>::zeros((labels.len(), c));
    for (i, &k) in labels.iter().enumerate() {
        y[[i, k]] = T::one();
    }
    y
}

/// Weighted softmax cross-entropy over the rows given.
///
/// `logits`: `n × c`; `labels`: length `n`, each `< c`; `weights`: length `n`, each ≥ 0 (e.g.
/// BBSE importance weights w_{y_i}).
///
/// Loss (weighted MEAN): ℓ = Σ_i w_i·(−log softmax(logits_i)(y_i)) / Σ_i w_i, accumulated in
/// f64. Returns `(ℓ, ∂ℓ/∂logits (n × c))` with ∂ℓ/∂logits_i = w_i·(p_i − e_{y_i}) / Σ_j w_j,
/// p_i = [`softmax`] of row i. One pass over the rows, split over threads where there are many
/// (`nn::rows`: the same bits whatever the thread count).
///
/// When `n = 0` or Σ_i w_i = 0 (no labelled mass) the loss is 0 and the gradient is zero.
///
/// # Panics
/// If the lengths disagree, a label is `≥ c`, or a weight is negative or not finite.
pub fn weighted_cross_entropy<T: Real>(
    logits: ArrayView2<T>,
    labels: &[usize],
    weights: &[T],
) -> (f64, Array2<T>) {
    let (n, c) = logits.dim();
    assert_eq!(labels.len(), n, "weighted_cross_entropy: {} labels for {n} rows", labels.len());
    assert_eq!(weights.len(), n, "weighted_cross_entropy: {} weights for {n} rows", weights.len());
    assert!(
        weights.iter().all(|w| w.is_finite() && *w >= T::zero()),
        "weighted_cross_entropy: weights must be finite and non-negative"
    );
    if let Some(bad) = labels.iter().find(|&&y| y >= c) {
        panic!("weighted_cross_entropy: label {bad} out of range for {c} classes");
    }
    let total: f64 = weights.iter().map(|w| w.to_f64_()).sum();
    if n == 0 || total <= 0.0 {
        return (0.0, Array2::zeros((n, c)));
    }
    let inv_total = T::from_f64_(1.0 / total);
    // Each row, on any thread: its loss term from its logits, then its gradient in their place.
    let mut grad = logits.to_owned();
    let terms = super::rows::map_rows_in_place(&mut grad, |i, row| {
        let (y, w) = (labels[i], weights[i]);
        // −log softmax = log Σ exp(l − max) − (l_y − max), in f64.
        let term = (w.to_f64_() != 0.0).then(|| {
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v.to_f64_()));
            let lse: f64 = row.iter().map(|&v| (v.to_f64_() - max).exp()).sum::<f64>().ln();
            w.to_f64_() * (lse - (row[y].to_f64_() - max))
        });
        softmax_in_place(row);
        row[y] = row[y] - T::one();
        let s = w * inv_total;
        row.iter_mut().for_each(|v| *v = *v * s);
        term
    });
    // Their sum on this thread, in row order.
    let mut loss = 0.0f64;
    for term in terms.into_iter().flatten() {
        loss += term;
    }
    (loss / total, grad)
}

/// Index and value of the largest entry of a row of class scores (ties: lowest index);
/// the predicted class and its confidence.
pub fn argmax_row(row: ndarray::ArrayView1<f32>) -> (usize, f32) {
    row.iter()
        .enumerate()
        .fold((0, f32::NEG_INFINITY), |best, (k, &p)| if p > best.1 { (k, p) } else { best })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nn::test_support::{assert_grad_close, fd_grad, random_matrix};
    use ndarray::array;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn softmax_rows_sum_to_one_and_are_stable_for_huge_logits() {
        let logits =
            array![[1000.0f32, -1000.0, 999.0], [-1000.0, -1000.0, -1000.0], [0.5, 0.1, -0.3]];
        let p = softmax(logits.view());
        assert!(p.iter().all(|v| v.is_finite()));
        for row in p.rows() {
            assert!((row.sum() - 1.0).abs() < 1e-6, "row sum {}", row.sum());
        }
        let e = (-1.0f32).exp();
        assert!((p[[0, 0]] - 1.0 / (1.0 + e)).abs() < 1e-6);
        assert!((p[[0, 2]] - e / (1.0 + e)).abs() < 1e-6);
        assert_eq!(p[[0, 1]], 0.0);
        assert!((p[[1, 0]] - 1.0 / 3.0).abs() < 1e-6);
    }

    #[test]
    fn cross_entropy_is_finite_for_huge_logits() {
        let logits = array![[1000.0f32, -1000.0], [-1000.0, 1000.0]];
        let (loss, grad) = weighted_cross_entropy(logits.view(), &[1, 1], &[1.0, 1.0]);
        // Row 0: −log p = 2000, row 1: ≈ 0 → mean 1000.
        assert!((loss - 1000.0).abs() < 1e-3, "loss {loss}");
        assert!(grad.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn weighted_cross_entropy_value_is_the_weighted_mean() {
        let logits = array![[0.0f64, 0.0], [2.0, 0.0], [0.0, 1.0]];
        let (loss, _) = weighted_cross_entropy(logits.view(), &[0, 0, 1], &[1.0, 3.0, 0.0]);
        let l0 = 2f64.ln();
        let l1 = (1.0 + (-2f64).exp()).ln();
        assert!((loss - (l0 + 3.0 * l1) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn weighted_cross_entropy_gradient_matches_finite_differences() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let logits = random_matrix(6, 4, &mut rng) * 2.0;
        let labels = [0, 3, 1, 1, 2, 0];
        let weights = [0.5, 2.0, 1.0, 0.0, 3.5, 1.2];
        let (_, grad) = weighted_cross_entropy(logits.view(), &labels, &weights);
        let num = fd_grad(logits.as_slice().unwrap(), |v| {
            let l = Array2::from_shape_vec((6, 4), v.to_vec()).unwrap();
            weighted_cross_entropy(l.view(), &labels, &weights).0
        });
        assert_grad_close(grad.as_slice().unwrap(), &num, "CE dlogits");
        // The zero-weight row has zero gradient.
        assert!(grad.row(3).iter().all(|&v| v == 0.0));
    }

    #[test]
    fn cross_entropy_with_zero_total_weight_is_zero() {
        let logits = array![[1.0f32, 2.0]];
        let (loss, grad) = weighted_cross_entropy(logits.view(), &[0], &[0.0]);
        assert_eq!(loss, 0.0);
        assert!(grad.iter().all(|&v| v == 0.0));
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn cross_entropy_rejects_label_out_of_range() {
        let logits = array![[1.0f32, 2.0]];
        let _ = weighted_cross_entropy(logits.view(), &[2], &[1.0]);
    }
}
