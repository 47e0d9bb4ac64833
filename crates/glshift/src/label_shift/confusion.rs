//! The BBSE confusion matrix `C_jk = P̂_hold(ŷ = j | y = k) · pˢ_k`.

use ndarray::{Array2, ArrayView2};

use super::prior::{add_prediction, check_labels, check_len, check_prior, check_probs, RowCounts};
use crate::Result;

/// Confusion matrix of [`confusion_matrix`].
#[derive(Clone, Debug)]
pub struct Confusion {
    /// `C` (c × c): row j = predicted class, column k = true class. Column k sums to `pˢ_k`,
    /// so the whole matrix sums to 1.
    pub matrix: Array2<f64>,
    /// Classes without any row in the given labels; their column was set to `pˢ_k · e_k`.
    pub filled_classes: Vec<usize>,
}

/// `C_jk = P̂_hold(ŷ = j | y = k) · pˢ_k` (c × c).
///
/// - `probs`: n × c class probabilities of the rows used for the estimate (a source hold-out
///   that the network did not train on; rows seen in training give `C ≈ diag(pˢ)` and BBSE
///   degenerates to `w = q / pˢ`);
/// - `labels`: their true labels (length n, each `< c`);
/// - `source_prior`: `pˢ` (length c) of the FULL source. The conditional is column-normalised
///   on the given rows and multiplied by this prior, so that `C` is consistent with the
///   constraint `wᵀpˢ = 1` and with `p̂ᵗ = w ⊙ pˢ` (pitfall 2). Joint frequencies of the
///   hold-out would use the hold-out prior instead and distort `p̂ᵗ`.
/// - `soft`: count the argmax (false) or average the probabilities (true).
///
/// A class k with no row gets the column `pˢ_k · e_k` ("assume it is recognised"): a zero
/// column would let the QP set `w_k = 0` and erase the class from the weighted loss
/// (pitfall 1). Such classes are listed in [`Confusion::filled_classes`].
pub fn confusion_matrix(
    probs: ArrayView2<f32>,
    labels: &[usize],
    source_prior: &[f64],
    soft: bool,
) -> Result<Confusion> {
    counted_confusion_matrix(probs, labels, RowCounts::ONCE, source_prior, soft)
}

/// [`confusion_matrix`] with each row counted as `counts` says (one count per row; a class
/// whose rows all count 0 is filled as one without rows).
pub(crate) fn counted_confusion_matrix(
    probs: ArrayView2<f32>,
    labels: &[usize],
    counts: RowCounts,
    source_prior: &[f64],
    soft: bool,
) -> Result<Confusion> {
    check_probs(probs, "hold-out probabilities")?;
    let (n, c) = probs.dim();
    check_len(labels.len(), n, "hold-out labels (one per probability row)")?;
    check_labels(labels, c, "hold-out labels")?;
    check_prior(source_prior, c, "source prior")?;
    counts.check(n, "hold-out row counts")?;

    let mut matrix = Array2::<f64>::zeros((c, c));
    let mut per_class = vec![0.0; c];
    for (i, (row, &y)) in probs.rows().into_iter().zip(labels).enumerate() {
        let times = counts.at(i);
        per_class[y] += times;
        add_prediction(row, soft, |j, v| matrix[[j, y]] += v * times);
    }
    let mut filled_classes = Vec::new();
    for (k, &n_k) in per_class.iter().enumerate() {
        if n_k == 0.0 {
            filled_classes.push(k);
            matrix[[k, k]] = source_prior[k];
        } else {
            let scale = source_prior[k] / n_k;
            matrix.column_mut(k).mapv_inplace(|v| v * scale);
        }
    }
    Ok(Confusion { matrix, filled_classes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn probs() -> Array2<f32> {
        array![[0.7f32, 0.2, 0.1], [0.1, 0.5, 0.4], [0.3, 0.6, 0.1], [0.6, 0.3, 0.1]]
    }

    #[test]
    fn confusion_sums_to_one_with_columns_equal_to_source_prior() {
        let ps = [0.5, 0.3, 0.2];
        for soft in [false, true] {
            let conf = confusion_matrix(probs().view(), &[0, 1, 1, 2], &ps, soft).unwrap();
            let m = &conf.matrix;
            assert!((m.sum() - 1.0).abs() < 1e-12);
            for (k, p) in ps.iter().enumerate() {
                assert!((m.column(k).sum() - p).abs() < 1e-12, "soft={soft} {m}");
            }
            assert!(conf.filled_classes.is_empty());
        }
        // hard: class 1 rows predicted 1 and 1 -> column (0, 0.3, 0); class 2 row predicted 0.
        let hard = confusion_matrix(probs().view(), &[0, 1, 1, 2], &ps, false).unwrap();
        assert_eq!(hard.matrix, array![[0.5, 0.0, 0.2], [0.0, 0.3, 0.0], [0.0, 0.0, 0.0]]);
    }

    #[test]
    fn confusion_uses_full_source_prior_not_holdout_frequencies() {
        // Hold-out has 3 rows of class 0 and 1 of class 1, but pˢ = (0.2, 0.8).
        let p = array![[1.0f32, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]];
        let conf = confusion_matrix(p.view(), &[0, 0, 0, 1], &[0.2, 0.8], false).unwrap();
        assert!((conf.matrix[[0, 0]] - 0.2 * 2.0 / 3.0).abs() < 1e-12);
        assert!((conf.matrix[[1, 0]] - 0.2 / 3.0).abs() < 1e-12);
        assert!((conf.matrix[[1, 1]] - 0.8).abs() < 1e-12);
    }

    #[test]
    fn class_without_holdout_rows_gets_filled_diagonal_column() {
        let ps = [0.5, 0.3, 0.2];
        let conf = confusion_matrix(probs().view(), &[0, 0, 2, 2], &ps, true).unwrap();
        assert_eq!(conf.filled_classes, vec![1]);
        assert_eq!(conf.matrix.column(1).to_vec(), vec![0.0, 0.3, 0.0]);
        assert!((conf.matrix.sum() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn confusion_rejects_bad_inputs() {
        let ps = [0.5, 0.3, 0.2];
        let p = probs();
        assert!(confusion_matrix(p.view(), &[0, 1, 2], &ps, false).is_err()); // length
        assert!(confusion_matrix(p.view(), &[0, 1, 2, 3], &ps, false).is_err()); // label >= c
        assert!(confusion_matrix(p.view(), &[0, 1, 2, 0], &[0.5, 0.5], false).is_err());
        assert!(confusion_matrix(p.view(), &[0, 1, 2, 0], &[0.5, 0.3, 0.3], false).is_err());
        assert!(confusion_matrix(p.view(), &[0, 1, 2, 0], &[0.5, f64::NAN, 0.5], false).is_err());
        let mut bad = p.clone();
        bad[[2, 1]] = f32::NAN;
        assert!(confusion_matrix(bad.view(), &[0, 1, 2, 0], &ps, true).is_err());
        bad[[2, 1]] = 0.9; // row sums to 1.3
        assert!(confusion_matrix(bad.view(), &[0, 1, 2, 0], &ps, true).is_err());
    }
}
