//! Class priors, predicted distributions and the input checks shared by the module.

use ndarray::{ArrayView1, ArrayView2};

use crate::{Error, Result};

/// Tolerance on `|Σ_j probs_ij − 1|` for a row of class probabilities.
pub(crate) const ROW_SUM_TOL: f64 = 1e-3;
/// Tolerance on `|Σ_k pˢ_k − 1|` for a class prior.
pub(crate) const PRIOR_SUM_TOL: f64 = 1e-6;

/// Class prior from labels: `p_k = #{y = k} / n` (length c).
///
/// Errors if `c == 0`, `labels` is empty or any label is `>= c`.
pub fn class_prior(labels: &[usize], c: usize) -> Result<Vec<f64>> {
    counted_class_prior(labels, RowCounts::ONCE, c)
}

/// How many times each row counts: once each (`ONCE`), or the given multiplicities — a
/// bootstrap resample as its distinct rows, each with the number of times it was drawn. Sums
/// over rows multiply each row's term by its count; a count of 1 multiplies by 1.0, exactly,
/// so `ONCE` gives the plain sums bit for bit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RowCounts<'a>(pub(crate) Option<&'a [u32]>);

impl RowCounts<'_> {
    /// Every row once.
    pub(crate) const ONCE: RowCounts<'static> = RowCounts(None);

    /// Row `i`'s count.
    pub(crate) fn times(&self, i: usize) -> u32 {
        self.0.map_or(1, |w| w[i])
    }

    /// Row `i`'s count, as the factor of its terms.
    pub(crate) fn at(&self, i: usize) -> f64 {
        f64::from(self.times(i))
    }

    /// The rows' total count, for `n` rows.
    pub(crate) fn total(&self, n: usize) -> f64 {
        self.0.map_or(n as f64, |w| w.iter().map(|&k| f64::from(k)).sum())
    }

    /// Errors unless there is one count per row of `n`.
    pub(crate) fn check(&self, n: usize, what: &str) -> Result<()> {
        self.0.map_or(Ok(()), |w| check_len(w.len(), n, what))
    }
}

/// [`class_prior`] of rows counted as `counts` says: `p_k = Σ_{i: y_i = k} count_i / Σ count_i`.
/// Errors as [`class_prior`], and when the counts are not one per label or all zero.
pub(crate) fn counted_class_prior(
    labels: &[usize],
    counts: RowCounts,
    c: usize,
) -> Result<Vec<f64>> {
    const EMPTY: &str = "no rows to estimate a class prior from";
    if c == 0 {
        return Err(Error::param("c", c, "need at least one class"));
    }
    if labels.is_empty() {
        return Err(Error::bad_data("labels", EMPTY));
    }
    counts.check(labels.len(), "row counts")?;
    check_labels(labels, c, "labels")?;
    let mut p = vec![0.0; c];
    for (i, &y) in labels.iter().enumerate() {
        p[y] += counts.at(i);
    }
    let n = counts.total(labels.len());
    if n == 0.0 {
        return Err(Error::bad_data("labels", EMPTY));
    }
    p.iter_mut().for_each(|v| *v /= n);
    Ok(p)
}

/// ℓ1 distance `Σ_k |a_k − b_k|` between two distributions over the same classes (the error
/// of an estimated prior, or the label shift ‖pˢ − pᵗ‖₁ of a task).
pub fn l1_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
}

/// Predicted class distribution on the target: `q_j = (1/n) Σ_i P(ŷ_i = j)` (length c).
///
/// `probs` is n × c (rows are class probabilities summing to 1 within 1e-3). `soft = false`
/// counts the one-hot argmax of each row (ties go to the lowest index); `soft = true` averages
/// the probabilities (each row renormalised to sum exactly 1).
pub fn predicted_distribution(probs: ArrayView2<f32>, soft: bool) -> Result<Vec<f64>> {
    counted_predicted_distribution(probs, RowCounts::ONCE, soft)
}

/// [`predicted_distribution`] with each row counted as `counts` says:
/// `q_j = Σ_i count_i P(ŷ_i = j) / Σ_i count_i`. Errors also when the counts are not one per
/// row or all zero.
pub(crate) fn counted_predicted_distribution(
    probs: ArrayView2<f32>,
    counts: RowCounts,
    soft: bool,
) -> Result<Vec<f64>> {
    check_probs(probs, "target probabilities")?;
    let (n, c) = probs.dim();
    counts.check(n, "target row counts")?;
    let mut q = vec![0.0; c];
    for (i, row) in probs.rows().into_iter().enumerate() {
        let times = counts.at(i);
        add_prediction(row, soft, |j, v| q[j] += v * times);
    }
    let total = counts.total(n);
    if total == 0.0 {
        return Err(Error::bad_data("target row counts", "every row counts 0"));
    }
    q.iter_mut().for_each(|v| *v /= total);
    Ok(q)
}

/// Calls `add(j, P(ŷ = j))` for the prediction of one (already checked) row.
pub(crate) fn add_prediction(row: ArrayView1<f32>, soft: bool, mut add: impl FnMut(usize, f64)) {
    if soft {
        let s: f64 = row.iter().map(|&v| v as f64).sum();
        row.iter().enumerate().for_each(|(j, &v)| add(j, v as f64 / s));
    } else {
        let mut best = 0;
        for (j, &v) in row.iter().enumerate() {
            if v > row[best] {
                best = j;
            }
        }
        add(best, 1.0);
    }
}

/// Every label `< c`.
pub(crate) fn check_labels(labels: &[usize], c: usize, what: &str) -> Result<()> {
    match labels.iter().enumerate().find(|&(_, &y)| y >= c) {
        Some((i, y)) => Err(Error::bad_data(
            what,
            format!("label {y} at row {i} is out of range for {c} classes"),
        )),
        None => Ok(()),
    }
}

/// n × c with n, c ≥ 1, entries finite and ≥ 0, rows summing to 1 within [`ROW_SUM_TOL`].
pub(crate) fn check_probs(probs: ArrayView2<f32>, what: &str) -> Result<()> {
    let (n, c) = probs.dim();
    if n == 0 || c == 0 {
        return Err(Error::bad_data(what, format!("empty probability matrix ({n} × {c})")));
    }
    for (i, row) in probs.rows().into_iter().enumerate() {
        let mut s = 0.0f64;
        for (j, &v) in row.iter().enumerate() {
            if !v.is_finite() || v < 0.0 {
                return Err(Error::bad_data(
                    what,
                    format!("entry ({i}, {j}) = {v} is not a finite non-negative probability"),
                ));
            }
            s += v as f64;
        }
        if (s - 1.0).abs() > ROW_SUM_TOL {
            return Err(Error::bad_data(what, format!("row {i} sums to {s}, not 1")));
        }
    }
    Ok(())
}

/// Length c, entries finite and ≥ 0, summing to 1 within [`PRIOR_SUM_TOL`].
pub(crate) fn check_prior(prior: &[f64], c: usize, what: &str) -> Result<()> {
    check_len(prior.len(), c, what)?;
    if let Some((k, v)) = prior.iter().enumerate().find(|&(_, v)| !v.is_finite() || *v < 0.0) {
        return Err(Error::bad_data(
            what,
            format!("entry {k} = {v} is not a finite non-negative probability"),
        ));
    }
    let s: f64 = prior.iter().sum();
    if (s - 1.0).abs() > PRIOR_SUM_TOL {
        return Err(Error::bad_data(what, format!("sums to {s}, not 1")));
    }
    Ok(())
}

/// [`Error::Shape`] unless `found == expected`.
pub(crate) fn check_len(found: usize, expected: usize, what: &str) -> Result<()> {
    if found == expected {
        return Ok(());
    }
    Err(Error::Shape {
        what: what.to_string(),
        expected: format!("length {expected}"),
        found: format!("length {found}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    #[test]
    fn class_prior_counts_frequencies_and_rejects_bad_labels() {
        let p = class_prior(&[0, 2, 2, 1, 2], 4).unwrap();
        assert_eq!(p, vec![0.2, 0.2, 0.6, 0.0]);
        assert!(class_prior(&[], 3).is_err());
        assert!(class_prior(&[0, 3], 3).is_err());
        assert!(class_prior(&[0], 0).is_err());
    }

    #[test]
    fn predicted_distribution_hard_counts_argmax_soft_averages() {
        let probs = array![[0.7f32, 0.2, 0.1], [0.1, 0.5, 0.4], [0.2, 0.2, 0.6], [0.6, 0.3, 0.1]];
        let hard = predicted_distribution(probs.view(), false).unwrap();
        assert_eq!(hard, vec![0.5, 0.25, 0.25]);
        let soft = predicted_distribution(probs.view(), true).unwrap();
        let expect = [1.6 / 4.0, 1.2 / 4.0, 1.2 / 4.0];
        for (a, b) in soft.iter().zip(expect) {
            assert!((a - b).abs() < 1e-6, "{soft:?}");
        }
    }

    #[test]
    fn predicted_distribution_rejects_nan_negative_and_unnormalised_rows() {
        assert!(predicted_distribution(array![[f32::NAN, 1.0]].view(), false).is_err());
        assert!(predicted_distribution(array![[f32::INFINITY, 0.0]].view(), true).is_err());
        assert!(predicted_distribution(array![[-0.1f32, 1.1]].view(), true).is_err());
        assert!(predicted_distribution(array![[0.5f32, 0.49]].view(), true).is_err());
        assert!(predicted_distribution(ndarray::Array2::<f32>::zeros((0, 3)).view(), true).is_err());
        // within the 1e-3 tolerance
        assert!(predicted_distribution(array![[0.5f32, 0.4995]].view(), true).is_ok());
    }

    #[test]
    fn l1_matches_hand_values() {
        assert!((l1_distance(&[0.5, 0.5], &[1.0, 0.0]) - 1.0).abs() < 1e-12);
    }
}
